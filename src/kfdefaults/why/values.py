"""Where ``kfdefaults why`` takes a failure's settings from, best first: the receipt the task printed in the log
(what the pod ran with, who set each value, and what the pod had), the settings registered with the task when the
log carries them (``KFDEFAULTS_ELASTIC`` in ``kubectl describe pod`` or a manifest), else the profile as it
renders now (named by ``--profile``, the receipt or the pod's ``kfdefaults.io/profile`` annotation).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Iterable, Mapping

from ..check import torch_defaults
from ..errors import shown
from ..k8s.mounts import is_shm_mount
from ..k8s.resources import is_fabric_device
from ..merge.provenance import provenance
from ..merge.result import Resolved
from ..paths import Select, format_path, value_at
from ..receipt.compare import byte_quantity
from ..receipt.document import pod_problem
from ..receipt.expect import _fabric as expected_fabric
from ..settings import RUNTIME_ENV

DEFAULTS = {
    "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "the store is shared",
    "shm": "the container runtime's 64Mi",
    "memory": "no limit",
}
"""What applies where nothing sets a value and it is not torch's (docs/timeouts.md); torch's: :data:`TORCH`."""

TORCH = {"elastic.rdzv_configs.join_timeout": "join_timeout", "elastic.rdzv_configs.read_timeout": "read_timeout",
         "elastic.rdzv_configs.last_call_timeout": "last_call_timeout",
         "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "nccl_heartbeat"}
"""Key -> its default in torch's table by release (:mod:`kfdefaults.check.torch_defaults`)."""


def default_text(key: str, torch: str | None) -> str | None:
    """What applies where nothing sets ``key``: ``600 s, torch 2.5.1 default (dynamic_rendezvous.py ...)`` for a
    default of torch's (of the ``torch`` release, the facts'; else the assumed one, said so), else
    :data:`DEFAULTS`'."""
    name = TORCH.get(key)
    if name is None:
        return DEFAULTS.get(key)
    found = torch_defaults.default(name, torch_defaults.taken_for(torch)[0])
    value = f"{found.value} s, " if found is not None and found.value is not None else ""
    return value + torch_defaults.label(name, torch)


@dataclass
class Setting:
    """A setting that governs a failure.

    Attributes:
        key: Its profile key (``elastic.rdzv_configs.join_timeout``).
        value: Its value, ``None`` when nothing sets it.
        set_by: Who set it (``team profiles/gpu-large.yaml:6``), ``None`` when nothing does.
        default: What applies when nothing sets it.
        observed: What the pod had, where the receipt says (``64Mi (tmpfs)``).
    """

    key: str
    value: Any
    set_by: str | None
    default: str | None = None
    observed: str | None = None

    def __post_init__(self) -> None:  # a receipt's text may be of any size: each field is shown, bounded
        if not isinstance(self.value, (int, float, type(None))):
            self.value = bounded(self.value)
        self.set_by, self.observed = (None if v is None else bounded(v) for v in (self.set_by, self.observed))

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None or k in ("key", "value")}


MAX_RESOURCE_NAME = 253 + 1 + 63
"""The longest resource name: a DNS subdomain prefix, ``/``, a name of 63 (apimachinery ``IsQualifiedName``)."""

SHOWN = 200
"""Characters of a text from a log (a value, who set it, a name) shown at most."""


def bounded(value: Any) -> str:
    """``value`` as text of at most about :data:`SHOWN` characters (:func:`~kfdefaults.errors.shown`)."""
    return shown(value if isinstance(value, str) else json.dumps(value, default=str)[:SHOWN + 50], SHOWN)


class Values:
    """A failure's settings as the task registered them (a receipt, or ``KFDEFAULTS_ELASTIC``).

    Args:
        registered: ``{"elastic": {...}, "pod": {...} | None}`` (:mod:`kfdefaults.receipt.expect`).
        observed: The receipt's readings of the pod, ``{}`` without a receipt.
        source: How the answer names where the values come from.
        profile: The profile's name, if known.
        differences: The receipt's differences.

    Attributes:
        known: Whether there are values at all (``Values({}, {}, "", None)`` has only the keys).
        target: The SDK the task was registered for, when known.
        torch: The torch release of the task's image, where the cluster's facts state it: whose defaults apply.
    """

    def __init__(self, registered: Mapping[str, Any], observed: Mapping[str, Any], source: str,
                 profile: str | None, differences: list[dict[str, Any]] | None = None) -> None:
        self.target = registered.get("target") if isinstance(registered.get("target"), str) else None
        self.elastic_settings = registered.get("elastic") or {}
        self.pod = registered.get("pod") or {}
        self.observed = observed
        self.source, self.profile = source, profile
        self.differences = differences or []
        self.known = bool(source)
        self.torch: str | None = None

    def elastic(self, *path: str) -> Setting:
        node = value_at(self.elastic_settings, path)
        key = format_path(("elastic", *path))
        return Setting(key, node, (self.pod.get("elastic") or {}).get(key) if node is not None else None,
                       default_text(key, self.torch))

    def _container(self) -> tuple:
        return ("pod_template", "spec", "containers", Select("name", self.pod.get("primary") or "primary"))

    def shm(self) -> Setting:
        shm = self.pod.get("shm")
        seen = self.observed.get("shm") or {}
        observed = None
        if seen.get("size") is not None:
            observed = f"{byte_quantity(seen['size'])} ({seen.get('fstype') or 'no mount'})"
        if not shm:
            return Setting("/dev/shm", None, None, DEFAULTS["shm"], observed)
        key = format_path(("pod_template", "spec", "volumes", Select("name", shm["volume"]), "emptyDir", "sizeLimit"))
        return Setting(key, shm.get("size_limit"), shm.get("set_by"), "the pod's memory limit, else the node's memory",
                       observed)

    def limit(self, name: str) -> Setting:
        entry = (self.pod.get("limits") or {}).get(name)
        key = format_path(self._container() + ("resources", "limits", name))
        observed = None
        if name == "memory" and (self.observed.get("memory") or {}).get("source"):
            limit = self.observed["memory"].get("limit")
            observed = "no limit" if limit is None else byte_quantity(limit)
        return Setting(key, entry["value"] if entry else None, entry["set_by"] if entry else None,
                       DEFAULTS.get(name), observed)

    def _fabric(self) -> dict[str, Any] | None:
        """What the task registered of the fabric (:func:`kfdefaults.receipt.expect.expected_pod`'s ``fabric``);
        ``None`` where it registered none (an older kfdefaults)."""
        fabric = self.pod.get("fabric")
        return fabric if isinstance(fabric, dict) else None

    def fabric_devices(self) -> list[str]:
        """The fabric devices (:func:`kfdefaults.k8s.resources.is_fabric_device`) the primary container requests,
        in their order; of a receipt (which anyone may write into a log), only names a resource may have
        (:data:`MAX_RESOURCE_NAME` characters at most)."""
        names = (self._fabric() or {}).get("devices") or {}
        return [n for n in names if len(n) <= MAX_RESOURCE_NAME and is_fabric_device(n)]

    def device(self, name: str) -> Setting:
        """The primary container's limit of fabric device ``name``, and how many device files the pod had under
        ``/dev/infiniband`` where the receipt says."""
        entry = ((self._fabric() or {}).get("devices") or {}).get(name)
        key = format_path(self._container() + ("resources", "limits", name))
        seen = self.observed.get("fabric") or {}
        count = seen.get("dev_infiniband_count")
        observed = None if count is None else f"{count} device file{'s' * (count != 1)} under /dev/infiniband"
        return Setting(key, entry["value"] if entry else None, entry["set_by"] if entry else None, None, observed)

    def capabilities(self) -> Setting:
        """``IPC_LOCK`` among the primary container's ``securityContext.capabilities.add`` (RDMA pins memory with
        it), and whether the pod had it effective and its locked-memory limit where the receipt says."""
        key = format_path(self._container() + ("securityContext", "capabilities", "add"))
        fabric = self._fabric()
        if fabric is None:
            return Setting(key, None, None, "not registered with the task: kubectl get pod -o yaml shows it"
                           if self.known else None)
        entry = fabric.get("ipc_lock")
        seen = self.observed.get("fabric") or {}
        observed = None
        if seen.get("ipc_lock") is not None:
            soft = (seen.get("memlock") or {}).get("soft")
            observed = (f"IPC_LOCK {'effective' if seen['ipc_lock'] else 'not effective'}"
                        + (f", RLIMIT_MEMLOCK {'unlimited' if soft is None or soft < 0 else byte_quantity(soft)}"
                           if seen.get("memlock") else ""))
        return Setting(key, entry["value"] if entry else None, entry["set_by"] if entry else None,
                       "the container runtime's default capabilities, without IPC_LOCK", observed)

    def env(self, name: str) -> Setting:
        entry = (self.pod.get("env") or {}).get(name)
        key = format_path(self._container() + ("env", Select("name", name), "value"))
        seen = (self.observed.get("env") or {}).get(name)
        return Setting(key, entry["value"] if entry else None, entry["set_by"] if entry else None,
                       default_text(name, self.torch), seen if self.observed else None)


class ProfileValues(Values):
    """A failure's settings as the profile renders them now, each with the layer and ``FILE:LINE`` that sets it
    (:func:`kfdefaults.merge.provenance.provenance`)."""

    def __init__(self, resolved: Resolved, source: str) -> None:
        record = provenance(resolved)
        primary = resolved.primary_container_name
        spec = resolved.pod_spec
        main = next((c for c in spec.get("containers") or [] if c.get("name") == primary), {})

        def by(path: tuple) -> str | None:
            found = record.setter(path, defaults=True)
            if found is None:
                return None
            return found.origin.where if found.origin.layer == "default" else f"{found.origin.layer} {found.origin.where}"

        container = ("pod_template", "spec", "containers", Select("name", primary))
        elastic = {format_path(p): by(p) for p in _elastic_paths(resolved.elastic_settings)}
        mount = next((m for m in main.get("volumeMounts") or [] if is_shm_mount(m.get("mountPath"))), None)
        shm = None
        if mount is not None:
            volume = next((v for v in spec.get("volumes") or [] if v.get("name") == mount.get("name")), {})
            empty_dir = volume.get("emptyDir") or {}
            path = ("pod_template", "spec", "volumes", Select("name", mount.get("name")), "emptyDir", "sizeLimit")
            shm = {"volume": mount.get("name"), "size_limit": empty_dir.get("sizeLimit"),
                   "set_by": by(path) or by(path[:-1] + ("medium",))}
        limits = {k: {"value": str(v), "set_by": by(container + ("resources", "limits", k))}
                  for k, v in ((main.get("resources") or {}).get("limits") or {}).items()}
        env = {e["name"]: {"value": e["value"], "set_by": by(container + ("env", Select("name", e["name"]), "value"))}
               for e in main.get("env") or [] if isinstance(e.get("value"), str)}
        names = SimpleNamespace(of=by)  # who set a value, as the receipt's registered fabric names it
        fabric = expected_fabric(spec, main.get("resources") or {}, main, container, names)
        pod = {"primary": primary, "shm": shm, "limits": limits, "env": env, "elastic": elastic, "fabric": fabric}
        super().__init__({"elastic": resolved.elastic_settings, "pod": pod, "target": resolved.target.name}, {}, source,
                         resolved.name)


def _elastic_paths(settings: Mapping[str, Any], at: tuple = ("elastic",)) -> Iterable[tuple]:
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            yield from _elastic_paths(value, at + (key,))
        else:
            yield at + (key,)


_REGISTERED = re.compile(re.escape(RUNTIME_ENV) + r"""["']?\s*[:=]\s*'?(?=\{)""")


def registered_in(lines: Iterable[tuple[int, str]]) -> tuple[int, dict[str, Any]] | None:
    """The settings registered with the task where the log shows the primary container's ``KFDEFAULTS_ELASTIC``
    on one line (``kubectl describe pod``: ``KFDEFAULTS_ELASTIC:  {...}``): ``(line, settings)``, else ``None``.
    Settings whose ``pod`` is not what registration writes (:func:`~kfdefaults.receipt.document.pod_problem`) are
    passed over."""
    for number, text in lines:
        match = _REGISTERED.search(text)
        if match is None:
            continue
        try:
            data, _ = json.JSONDecoder().raw_decode(text[match.end():])
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict) and isinstance(data.get("elastic"), dict) and pod_problem(data.get("pod")) is None:
            return number, data  # else not what registration writes: a log may hold anything
    return None


_PROFILE = re.compile(r"kfdefaults\.io/profile[\"']?\s*[:=]\s*[\"']?([a-z0-9][a-z0-9-]{0,252})")  # a name's length
_DIGEST = re.compile(r"kfdefaults\.io/digest[\"']?\s*[:=]\s*[\"']?(sha256:[0-9a-f]{64})")


def annotations_in(lines: Iterable[tuple[int, str]]) -> tuple[str | None, str | None]:
    """``(profile, digest)``: the pod's ``kfdefaults.io/profile`` and ``kfdefaults.io/digest`` annotations where the
    log shows them (``kubectl describe pod``, a manifest), else ``None``."""
    profile = digest = None
    for _, text in lines:
        profile = profile or next(iter(_PROFILE.findall(text)), None)
        digest = digest or next(iter(_DIGEST.findall(text)), None)
    return profile, digest
