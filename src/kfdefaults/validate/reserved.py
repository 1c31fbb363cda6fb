"""Names and ports that belong to the training operator, torch elastic, Flyte or kfdefaults, not to a profile.

A value a profile writes for one of them never takes effect, or breaks the job, so writing one in any layer is an
error that says who sets it:

* ``PET_*``: the Kubeflow training operator appends them to every container of a PyTorchJob from its elastic
  policy (``PET_NNODES``, ``PET_RDZV_ENDPOINT``, ``PET_NPROC_PER_NODE``, ...; kubeflow/training-operator
  pkg/controller.v1/pytorch/elastic.go), after the pod template's own ``env``, and the last entry of a name wins.
  The elastic setting each one comes from is the way to change it.
* ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE``, ``RANK``: the operator sets them (envvar.go), and torch
  elastic sets them again for every worker process, with ``LOCAL_RANK``, ``GROUP_RANK``, ``LOCAL_WORLD_SIZE``
  and the rest (torch/distributed/elastic/agent/server/local_elastic_agent.py), over the container's values.
  In a clustered task's JobSet, Flyte's clustered plugin sets ``MASTER_PORT`` to 29500 (runtime_torch.go) and
  its launcher ``MASTER_ADDR`` (flyte/_bin/clustered.py).
* ``TORCHELASTIC_SIGNALS_TO_HANDLE``: torch's launcher overwrites it (torch/distributed/launcher/api.py).
* ``FLYTE_INTERNAL_*``: Flyte's backend sets them in the task's pod; kfdefaults reads
  ``FLYTE_INTERNAL_EXECUTION_ID`` to tell a running pod from a registration.
* ``KFDEFAULTS_ELASTIC``: kfdefaults carries the settings resolved at registration into the pod in it.
* Port 23456 and the port name ``pytorchjob-port``: the operator gives the primary (``pytorch``) container the
  port ``pytorchjob-port`` (23456 unless that container names another), and the rendezvous store and
  ``MASTER_PORT`` listen on it; the pod's containers share one network namespace.
"""

from __future__ import annotations

from typing import Any

from ..errors import Finding
from ..paths import Select, format_path
from ..read import Document
from ..settings import RUNTIME_ENV

OPERATOR_PORT = 23456
"""``PytorchJobDefaultPort`` of the Kubeflow training operator (kubeflow.org/v1 pytorch defaults)."""

OPERATOR_PORT_NAME = "pytorchjob-port"
"""``PytorchJobDefaultPortName``: the port of the ``pytorch`` container the operator uses for the rendezvous."""

_PET_SETTINGS = {
    "PET_NNODES": "elastic.nnodes", "PET_NPROC_PER_NODE": "elastic.nproc_per_node",
    "PET_MAX_RESTARTS": "elastic.max_restarts", "PET_RDZV_CONF": "elastic.rdzv_configs",
    "PET_MONITOR_INTERVAL": "elastic.monitor_interval", "PET_START_METHOD": "elastic.start_method",
}

_OPERATOR_AND_TORCH = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")
_TORCH_WORKER = ("LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_NAME",
                 "ROLE_WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
                 "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE")


def reserved_reason(name: str) -> str | None:
    """Why an environment variable may not be set by a profile, or ``None`` when it may."""
    if name.startswith("PET_"):
        setting = _PET_SETTINGS.get(name)
        instead = f"; set `{setting}` instead" if setting else ""
        return (f"the training operator sets `{name}` in every container of a PyTorchJob (PET_* carry the job's "
                f"elastic policy to torch elastic), after the pod template's env, so this value never counts{instead}")
    if name in _OPERATOR_AND_TORCH:
        clustered = {"MASTER_PORT": ", Flyte's clustered plugin sets it to 29500 in a clustered task's JobSet "
                                    "(runtime_torch.go, over the container's entry)",
                     "MASTER_ADDR": ", the clustered launcher sets it to worker 0's name in a clustered task's "
                                    "pods (flyte/_bin/clustered.py)"}.get(name, "")
        return (f"the training operator sets `{name}` for a PyTorchJob{clustered}, and torch elastic sets it again "
                "for every worker process from the rendezvous, over the container's value")
    if name in _TORCH_WORKER:
        return f"torch elastic's agent sets `{name}` for every worker process, over the container's value"
    if name == "TORCHELASTIC_SIGNALS_TO_HANDLE":
        return "torch's launcher overwrites it with LaunchConfig.signals_to_handle, which the kfpytorch plugin leaves at its default"
    if name.startswith("FLYTE_INTERNAL_"):
        return (f"Flyte's backend sets `FLYTE_INTERNAL_*` in the task's pod; a profile's `{name}` would at best be "
                "overwritten, and kfdefaults takes FLYTE_INTERNAL_EXECUTION_ID for a sign that it runs in a pod")
    if name == RUNTIME_ENV:
        return f"kfdefaults sets `{RUNTIME_ENV}`: it carries the settings resolved at registration into the pod"
    return None


def check_reserved(document: Document, spec: dict[str, Any], layer: str | None,
                   path: tuple = ("pod_template", "spec")) -> list[Finding]:
    """Errors for reserved environment variable names and ports in a PodSpec fragment.

    Args:
        document: The parsed file (for positions).
        spec: The PodSpec fragment as written.
        layer: The file's layer, named in the findings.
        path: Where the fragment sits in the document.

    Returns:
        One error per reserved name (at the ``name`` of its ``env`` entry) and per reserved port (at its
        ``containerPort`` or ``name``), with who sets it.
    """
    findings: list[Finding] = []

    def add(at: tuple, items: list[tuple[Any, str]], message: str) -> None:
        findings.append(Finding(document.location(at), named(at, items), message, layer=layer))

    for field in ("containers", "initContainers"):
        items = spec.get(field)
        for i, container in enumerate(items if isinstance(items, list) else []):
            if not isinstance(container, dict) or container.get("$patch") == "delete":
                continue
            base = path + (field, i)
            for j, entry in enumerate(container.get("env") if isinstance(container.get("env"), list) else []):
                name = entry.get("name") if isinstance(entry, dict) else None
                reason = reserved_reason(name) if isinstance(name, str) and entry.get("$patch") != "delete" else None
                if reason:
                    add(base + ("env", j, "name"), [(container, "name"), (entry, "name")], f"`{name}` is reserved: {reason}")
            for j, port in enumerate(container.get("ports") if isinstance(container.get("ports"), list) else []):
                if not isinstance(port, dict) or port.get("$patch") == "delete":
                    continue
                if port.get("containerPort") == OPERATOR_PORT:
                    add(base + ("ports", j, "containerPort"), [(container, "name"), (port, "containerPort")], f"port {OPERATOR_PORT} is reserved: the training operator "
                        f"gives it (as `{OPERATOR_PORT_NAME}`) to the primary container of a PyTorchJob, and the "
                        "rendezvous store and MASTER_PORT listen on it; the pod's containers share one network, so "
                        "pick another port")
                elif port.get("name") == OPERATOR_PORT_NAME:
                    add(base + ("ports", j, "name"), [(container, "name"), (port, "containerPort")], f"the port name `{OPERATOR_PORT_NAME}` is reserved: the training "
                        "operator reads it on the primary container as the rendezvous and MASTER_PORT port and adds "
                        f"it ({OPERATOR_PORT}) itself; name this port otherwise")
    return findings


def named(path: tuple, items: list[tuple[Any, str]]) -> str:
    """A document path written the way messages write it, list items by their merge key: ``path`` is the file's
    path (list positions as ints), ``items`` the ``(item, merge key)`` of each list item on the way, in order."""
    parts, k = [], 0
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool) and k < len(items):
            item, key = items[k]
            k += 1
            if isinstance(item, dict) and isinstance(item.get(key), (str, int)):
                parts.append(Select(key, item[key]))
                continue
        parts.append(part)
    return format_path(parts)
