"""What the pod has against what was registered: one :class:`Difference` per value that differs, with its likely
cause and the profile line it departs from.

What a difference is, facet by facet:

* ``/dev/shm``: a registered memory-backed volume that is not a tmpfs at ``/dev/shm``, or a tmpfs of another size
  than the kubelet makes of the registered volume: the smallest of its ``sizeLimit`` and the pod's memory limit
  (the sum of its containers' limits, when each has one), rounded up to whole pages (``calculateEmptyDirMemorySize``,
  pkg/volume/emptydir). Without a registered ``/dev/shm`` the pod has the container runtime's, which is noted, not
  compared. Without a size limit or a pod memory limit the kubelet sizes it by the node's allocatable memory, which
  a pod cannot know: only the medium is compared then.
* The memory, CPU and GPU limits of the primary container, against its cgroup and devices (:mod:`.probe`); a limit
  registered and none in the pod is a difference too, and the other way round.
* Each literal environment variable the task registered, present with the same value; Flyte 2's NCCL settings,
  which its plugin writes into the environment only where the pod has no such variable (``TorchFunctionTask.pre``,
  flyteplugins.pytorch), against a variable of the pod that would win over them.
* The training operator's ``PET_NNODES``, ``PET_NPROC_PER_NODE`` and ``PET_MAX_RESTARTS`` (set from the
  PyTorchJob's ``elasticPolicy``: ``ElasticEnvVarGenerator.Generate``, kubeflow training-operator
  pkg/controller.v1/pytorch/elastic.go), against the registered settings; and the launch settings the plugin will
  hand torch (the task's ``Elastic`` in this process) against the registered ones.
* The fabric the task registered (docs/fabric.md): a fabric device resource and no device file under
  ``/dev/infiniband`` (a device plugin hands each allocated device's files to the container: the EFA plugin its
  ``uverbsN``, the RDMA shared device plugin the HCA's; a shared HCA's count is not a number of files, so only
  none is a difference); ``IPC_LOCK`` added and not in the effective capabilities; ``hostNetwork`` and a pod
  whose ``/etc/hosts`` the kubelet wrote for the pod network. The fabric's variables are the environment's.
* Labels and annotations, where a downward API volume shows them.
"""

from __future__ import annotations

import math
import os
from typing import Any, Mapping

from ..errors import shown
from ..k8s.quantity import quantity_text as byte_quantity, quantity_value  # byte_quantity: for why/values
from ..paths import Select, format_path
from ..targets import NCCL_ENV, OFF
from .probe import MAX_NAMES

CAUSES = {
    "shm-medium": "the volume mounted at /dev/shm is not the registered memory-backed one: the cluster's PodTemplate "
                  "or an admission policy replaced or dropped it",
    "shm-runtime": "64Mi is the container runtime's own /dev/shm: the registered volume is not mounted there (the "
                   "cluster's PodTemplate or an admission policy dropped it)",
    "shm-memory": "the kubelet sizes this /dev/shm by the pod's memory limit, which differs from the registered one",
    "shm-size": "the volume's sizeLimit was changed after registration: the cluster's PodTemplate, an admission "
                "policy, or Flyte's shared memory",
    "limit-added": "a LimitRange default or an admission policy: the task registered no such limit",
    "limit-removed": "the pod runs without the registered limit: a run-time resource override, or an admission "
                     "policy removed it",
    "limit-changed": "a resource override at run time (a workflow node's with_overrides(limits=...), the "
                     "execution's resource overrides), a LimitRange or an admission policy",
    "gpus": "the node's device plugin gave the container other GPUs than its registered limit: a run-time override "
            "of the GPU limit, or an image that makes every GPU visible (NVIDIA_VISIBLE_DEVICES=all)",
    "env": "the cluster's PodTemplate, a PodDefault or an admission policy set the variable again (Kubernetes keeps "
           "the last of a name)",
    "nccl-env": "the pod's environment sets the variable already, and Flyte 2's plugin sets it from the elastic "
                "setting only where it is unset: the cluster's PodTemplate, the image or an admission policy set it",
    "pet": "the PyTorchJob's elasticPolicy was changed after registration (the training operator sets PET_* from "
           "it); the agent runs with the registered value",
    "launch": "the task's Elastic in this process holds other settings than were registered: code changed it after "
              "the module was imported",
    "fabric-devices": "the container got no device file of its fabric: the device plugin allocated it none (a "
                      "run-time resource override or an admission policy removed the request, or the node runs no "
                      "device plugin for it); NCCL will use TCP sockets",
    "ipc-lock": "the container runs without the capability its securityContext adds: an admission policy dropped "
                "it, or the runtime does not grant it",
    "host-network": "the pod is on the pod network, not the host's: an admission policy or the cluster's PodTemplate "
                    "changed hostNetwork, which NCCL needs to see the node's RoCE interfaces",
    "metadata-kueue": "Kueue's admission (a ResourceFlavor's or an admission check's pod set updates)",
    "metadata": "an admission policy (a mutating webhook) or the cluster's PodTemplate",
}
"""The likely cause of each kind of difference, as the receipt says it."""


def difference(what: str, path: Any, registered: Any, observed: Any, set_by: str | None, cause: str,
               source: str | None = None) -> dict[str, Any]:
    """One difference: ``{"what", "path", "registered", "observed", "set_by", "cause", "source"}``; values as text
    (``"(none)"`` for no value), ``path`` the profile key it departs from (``None`` where no key sets it)."""
    return {"what": what, "path": format_path(path) if isinstance(path, tuple) else path,
            "registered": _text(registered), "observed": _text(observed), "set_by": set_by,
            "cause": CAUSES.get(cause, cause), "source": source}


def compare(registered: Mapping[str, Any], observed: Mapping[str, Any],
            launch: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """The differences between what was registered (the whole ``KFDEFAULTS_ELASTIC`` payload: ``elastic`` and
    ``pod``, :mod:`.expect`) and what the pod has (:func:`kfdefaults.receipt.probe.observe`), and the notes on what
    could not be compared.

    Args:
        registered: The registered settings.
        observed: The pod's readings.
        launch: What the plugin will launch torch with (``min_nodes``, ``max_nodes``, ``nproc_per_node``,
            ``max_restarts``, ``monitor_interval``, ``start_method``, ``rdzv_configs``), or ``None``.
    """
    pod = registered.get("pod") or {}
    elastic = registered.get("elastic") or {}
    origins = pod.get("elastic") or {}
    out: list[dict[str, Any]] = []
    notes = [f"not read: {p}" for p in observed.get("problems") or []]
    out += _shm(pod, observed, notes)
    out += _limits(pod, observed)
    env = observed.get("env") or {}
    out += _env(pod, env)
    out += _fabric(pod, observed, notes)
    if registered.get("target") == "flyte2":
        out += _nccl_env(elastic, pod, env, origins)
    out += _pet(elastic, env, origins)
    if launch is not None:
        out += _launch(elastic, launch, origins)
    out += _metadata(pod, observed, notes)
    return out, notes


def _shm(pod: Mapping[str, Any], observed: Mapping[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    shm, seen = pod.get("shm"), observed.get("shm") or {}
    if shm is None:
        size = seen.get("size")
        notes.append(f"no /dev/shm registered: the pod has the container runtime's ({_bytes(size)}, "
                     f"{seen.get('fstype') or 'no mount'})")
        return []
    volume = ("pod_template", "spec", "volumes", Select("name", shm["volume"]), "emptyDir")
    if shm.get("medium") != "Memory":
        notes.append(f"/dev/shm is registered on volume {shm['volume']!r}, not memory-backed: its size is not compared")
        return []
    fstype = seen.get("fstype") if seen.get("mount") else None
    if fstype != "tmpfs":
        return [difference("/dev/shm medium", volume + ("medium",), "Memory (tmpfs)", fstype or "no mount",
                           shm.get("set_by"), "shm-medium", "/proc/self/mountinfo")]
    limits = [v for v in (quantity_value(shm.get("size_limit")), quantity_value(pod.get("pod_memory_limit"))) if v]
    size = seen.get("size")
    if not limits or size is None:
        notes.append("/dev/shm has no size limit and the pod no memory limit: the kubelet sizes it by the node's "
                     "allocatable memory, which the pod cannot know; its size is not compared")
        return []
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    expected = math.ceil(min(limits) / page) * page
    if size == expected:
        return []
    if size == 64 << 20:
        cause = "shm-runtime"
    elif quantity_value(shm.get("size_limit")) is None or min(limits) != quantity_value(shm.get("size_limit")):
        cause = "shm-memory"
    else:
        cause = "shm-size"
    return [difference("/dev/shm size", volume + ("sizeLimit",), _bytes(expected), _bytes(size), shm.get("set_by"), cause,
                       "statvfs(/dev/shm)")]


def _limits(pod: Mapping[str, Any], observed: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    container = ("pod_template", "spec", "containers", Select("name", pod.get("primary") or "primary"), "resources", "limits")
    limits = pod.get("limits") or {}
    memory, cpu = observed.get("memory") or {}, observed.get("cpu") or {}
    for name, seen, source, unit in (("memory", memory.get("limit"), memory.get("source"), 1),
                                     ("cpu", cpu.get("limit_millis"), cpu.get("source"), 1000)):
        if source is None:
            continue  # the cgroup could not be read: a note already
        entry = limits.get(name)
        value = quantity_value(entry["value"]) if entry else None
        expected = None if value is None else math.ceil(value * unit)
        if name == "cpu" and expected is not None:
            expected = max(expected, 10)  # the kubelet's smallest CFS quota, 1 ms of a 100 ms period
        if expected == seen:
            continue
        cause = "limit-added" if expected is None else "limit-removed" if seen is None else "limit-changed"
        shown = _bytes if name == "memory" else (lambda v: None if v is None else f"{v}m")
        out.append(difference(f"{name} limit", container + (name,), shown(expected), shown(seen),
                              entry["set_by"] if entry else None, cause, source))
    gpus = limits.get("nvidia.com/gpu")
    want = int(quantity_value(gpus["value"]) or 0) if gpus else 0
    have = (observed.get("gpus") or {}).get("devices", 0)
    if want != have:
        out.append(difference("GPUs", container + ("nvidia.com/gpu",), want, have, gpus["set_by"] if gpus else None,
                              "gpus", "/dev/nvidia*"))
    return out


def _env(pod: Mapping[str, Any], env: Mapping[str, str]) -> list[dict[str, Any]]:
    out = []
    container = ("pod_template", "spec", "containers", Select("name", pod.get("primary") or "primary"), "env")
    for name, entry in (pod.get("env") or {}).items():
        if env.get(name) != entry["value"]:
            out.append(difference(f"environment {name}", container + (Select("name", name), "value"), entry["value"],
                                  env.get(name), entry["set_by"], "env", "the environment"))
    return out


def _fabric(pod: Mapping[str, Any], observed: Mapping[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    fabric, seen = pod.get("fabric") or {}, observed.get("fabric")
    if not (fabric.get("devices") or fabric.get("ipc_lock") or fabric.get("host_network")):
        return []
    if not isinstance(seen, Mapping):
        notes.append("the fabric not compared: the receipt holds no fabric readings (taken by an older kfdefaults)")
        return []
    out = []
    container = ("pod_template", "spec", "containers", Select("name", pod.get("primary") or "primary"))
    memlock = seen.get("memlock") or {}
    memlock = "unlimited" if memlock.get("soft") is None else _bytes(memlock.get("soft"))
    rdma = [shown(name, 40) for name in (seen.get("sys_infiniband") or [])[:MAX_NAMES]]  # a receipt read back may
    files = [shown(name, 40) for name in (seen.get("dev_infiniband") or [])[:MAX_NAMES]]  # be anyone's: bounded
    known = {True: "yes", False: "no", None: "not known"}
    notes.append(f"fabric: {seen.get('dev_infiniband_count', 0)} device files under /dev/infiniband"
                 f"{' (' + ', '.join(files) + ')' if files else ''}; the node's "
                 f"RDMA devices (/sys/class/infiniband): {', '.join(rdma) or 'none'}; IPC_LOCK effective: "
                 f"{known[seen.get('ipc_lock')]}; RLIMIT_MEMLOCK {memlock}; host network: "
                 f"{known[seen.get('host_network')]}{' (no /etc/hosts the kubelet wrote)' * (seen.get('host_network') is None)}")
    for name, entry in (fabric.get("devices") or {}).items():
        if (quantity_value(entry["value"]) or 0) > 0 and seen.get("dev_infiniband_count") == 0:
            cause = CAUSES["fabric-devices"] + (f" (the node has RDMA devices {', '.join(rdma)}: "
                                                "/sys/class/infiniband)" if rdma else "")
            out.append(difference(f"{name} devices", container + ("resources", "limits", name), entry["value"], 0,
                                  entry["set_by"], cause, "/dev/infiniband"))
    ipc_lock = fabric.get("ipc_lock")
    if ipc_lock and seen.get("ipc_lock") is False:
        cause = CAUSES["ipc-lock"] + (f"; verbs pin buffers only up to RLIMIT_MEMLOCK ({memlock}) without it: NCCL's "
                                      "memory registration fails (ibv_reg_mr: Cannot allocate memory)"
                                      if memlock != "unlimited" else "; RLIMIT_MEMLOCK is unlimited, which lets verbs "
                                      "pin buffers without it")
        out.append(difference("capability IPC_LOCK", container + ("securityContext", "capabilities", "add"),
                              ipc_lock["value"], None, ipc_lock["set_by"], cause, "/proc/self/status CapEff"))
    host = fabric.get("host_network")
    if host and seen.get("host_network") is False:
        out.append(difference("host network", ("pod_template", "spec", "hostNetwork"), host["value"], "false",
                              host["set_by"], "host-network", "/etc/hosts"))
    return out


def _nccl_env(elastic: Mapping[str, Any], pod: Mapping[str, Any], env: Mapping[str, str],
              origins: Mapping[str, str]) -> list[dict[str, Any]]:
    out = []
    for key, var in NCCL_ENV.items():
        value = elastic.get(key)
        if value in (None, False, OFF) or var in (pod.get("env") or {}) or var not in env:
            continue
        wanted = "1" if value is True else str(value)
        if env[var] != wanted:
            out.append(difference(f"environment {var} (elastic.{key})", ("elastic", key), value, env[var],
                                  origins.get(f"elastic.{key}"), "nccl-env", "the environment"))
    return out


def _nodes(value: Any) -> tuple[int, int] | None:
    low, _, high = str(value).partition(":")
    try:
        return int(low), int(high or low)
    except ValueError:
        return None


def _pet(elastic: Mapping[str, Any], env: Mapping[str, str], origins: Mapping[str, str]) -> list[dict[str, Any]]:
    if "PET_NNODES" not in env:
        return []  # not a PyTorchJob's pod
    out = []
    for var, key, same in (("PET_NNODES", "nnodes", lambda a, b: _nodes(a) == _nodes(b)),
                           ("PET_NPROC_PER_NODE", "nproc_per_node", lambda a, b: str(a) == str(b)),
                           ("PET_MAX_RESTARTS", "max_restarts", lambda a, b: str(a) == str(b))):
        if var in env and key in elastic and not same(env[var], elastic[key]):
            out.append(difference(f"{var} (elastic.{key})", ("elastic", key), elastic[key], env[var],
                                  origins.get(f"elastic.{key}"), "pet", "the environment"))
    return out


def _launch(elastic: Mapping[str, Any], launch: Mapping[str, Any], origins: Mapping[str, str]) -> list[dict[str, Any]]:
    out = []
    nodes = _nodes(elastic.get("nnodes", 1))
    if nodes is not None and (launch.get("min_nodes"), launch.get("max_nodes")) != nodes:
        out.append(difference("launch nnodes", ("elastic", "nnodes"), elastic.get("nnodes"),
                              f"{launch.get('min_nodes')}:{launch.get('max_nodes')}", origins.get("elastic.nnodes"),
                              "launch", "the task's Elastic"))
    for key in ("nproc_per_node", "max_restarts", "monitor_interval", "start_method", "rdzv_backend"):
        if key in elastic and key in launch and str(elastic[key]) != str(launch[key]):
            out.append(difference(f"launch {key}", ("elastic", key), elastic[key], launch[key],
                                  origins.get(f"elastic.{key}"), "launch", "the task's Elastic"))
    mine, theirs = elastic.get("rdzv_configs") or {}, launch.get("rdzv_configs") or {}
    for key in sorted(set(mine) | set(theirs)):
        if str(mine.get(key)) != str(theirs.get(key)):
            out.append(difference(f"launch rdzv_configs.{key}", ("elastic", "rdzv_configs", key), mine.get(key),
                                  theirs.get(key), origins.get(f"elastic.rdzv_configs.{key}"), "launch",
                                  "the task's Elastic"))
    return out


def _metadata(pod: Mapping[str, Any], observed: Mapping[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    info = observed.get("podinfo") or {}
    out = []
    missing = [part for part in ("labels", "annotations") if info.get(part) is None]
    if missing:
        folder = info.get("path", "")
        files = ", ".join(f"{folder}/{m}" for m in missing)
        notes.append(f"{' and '.join(missing)} not compared: no downward API file{'s' * (len(missing) > 1)} {files} "
                     "(neither flytekit nor Flyte 2 mounts one)")
    for part in ("labels", "annotations"):
        seen = info.get(part)
        if seen is None:
            continue
        everything = {**(info.get("labels") or {}), **(info.get("annotations") or {})}
        cause = "metadata-kueue" if any(k.startswith("kueue.x-k8s.io/") for k in everything) else "metadata"
        for key, entry in (pod.get(part) or {}).items():
            if seen.get(key) != entry["value"]:
                out.append(difference(f"{part[:-1]} {key}", ("pod_template", part, key), entry["value"], seen.get(key),
                                      entry["set_by"], cause, f"{info.get('path')}/{part}"))
    return out


def _text(value: Any) -> str | None:
    """A value as the receipt shows it: text, ``None`` as ``None``."""
    return None if value is None else str(value)


def _bytes(n: int | None) -> str | None:
    return None if n is None else byte_quantity(n)
