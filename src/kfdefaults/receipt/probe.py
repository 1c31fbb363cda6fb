"""What the pod a task runs in actually has, read from inside it: ``/dev/shm``, the memory and CPU limits, the GPUs,
the environment torch reads, and the pod's labels and annotations where the downward API exposes them.

Every reading is a few small files (no process is started, nothing is imported), each opened without waiting (a
FIFO or a device in a file's place is refused, never read) and read at most :data:`MAX_FILE` bytes; a folder is
listed at most :data:`MAX_ENTRIES` entries. None is fatal: what cannot be read is ``None``, with the reason in
``problems``.

* ``/dev/shm``: its file system from ``/proc/self/mountinfo`` (the last mount at ``/dev/shm``; ``tmpfs`` is a
  memory-backed ``emptyDir``, which the kubelet mounts as tmpfs: ``setupTmpfs``, pkg/volume/emptydir) and its size
  from ``statvfs`` (blocks times the fragment size: a tmpfs's ``size=``, rounded up to whole pages).
* The memory and CPU limits from the process's own cgroup (``/proc/self/cgroup``): cgroup v1's
  ``memory.limit_in_bytes`` and ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (under ``/sys/fs/cgroup/memory`` and
  ``/sys/fs/cgroup/cpu``), cgroup v2's ``memory.max`` and ``cpu.max``. The kubelet writes the container's limits
  there (``memory.limit_in_bytes`` = the limit in bytes; the CPU quota = millicores x period / 1000,
  ``MilliCPUToQuota``, pkg/kubelet/cm). A cgroup path that is not under the mount (a container that sees only its
  own cgroup, as with a private cgroup namespace or a v1 bind mount) is read at the mount's top.
* GPUs: the ``/dev/nvidiaN`` devices the container runtime gives the container, and ``CUDA_VISIBLE_DEVICES`` /
  ``NVIDIA_VISIBLE_DEVICES``.
* The fabric (docs/fabric.md): the device files under ``/dev/infiniband`` (the character devices a device plugin
  hands the container: ``uverbsN``, ``rdma_cm``; their count), the RDMA devices of ``/sys/class/infiniband`` (the
  node's, an EFA's ``rdmap*`` or a Mellanox ``mlx5_*``: sysfs shows them whether or not the container got their
  device files), ``CAP_IPC_LOCK`` in the effective set (``CapEff`` of ``/proc/self/status``, bit 14 of
  include/uapi/linux/capability.h), the ``RLIMIT_MEMLOCK`` limits (``getrlimit``), and whether the pod is on the
  host's network: the first line of the ``/etc/hosts`` the kubelet writes into every container, ``# Kubernetes-managed
  hosts file (host network).`` for a ``hostNetwork`` pod and ``# Kubernetes-managed hosts file.`` for another
  (``managedHostsHeaderWithHostNetwork``, ``managedHostsHeader``: pkg/kubelet/kubelet_pods.go); any other file (a
  container that mounts its own, no kubelet) is ``None``. The NCCL and libfabric (``FI_*``) variables are in
  ``env``.
* Labels and annotations: the files ``labels`` and ``annotations`` of a downward API volume, in the folder
  ``KFDEFAULTS_PODINFO`` names (default ``/etc/podinfo``, the folder of the Kubernetes documentation's example).
  Neither flytekit nor Flyte 2 mounts one: a profile that wants them compared mounts it (docs/receipt.md). The
  kubelet writes one ``key="value"`` line per entry, keys sorted, the value quoted as Go's ``%q`` does
  (``FormatMap``, k8s.io/kubernetes pkg/fieldpath).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, Mapping

from ..settings import PODINFO_ENV

DEFAULT_PODINFO = "/etc/podinfo"
"""Where the receipt looks for a downward API volume when ``KFDEFAULTS_PODINFO`` does not say."""

ENV_PREFIXES = ("NCCL_", "FI_", "TORCH_NCCL_", "TORCHELASTIC_", "TORCH_ELASTIC_", "PET_", "FLYTE_NCCL_")
"""The variables the receipt records whatever the profile set: NCCL's, libfabric's (``FI_*``, which aws-ofi-nccl's
EFA provider reads), torch's NCCL and elastic settings, the training operator's ``PET_*``, Flyte 2's collective
timeout."""

ENV_NAMES = ("OMP_NUM_THREADS", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "TORCH_DIST_INIT_BARRIER", "LOGLEVEL",
             "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")

MAX_FILE = 1 << 20
"""Bytes read of any one file (a downward API file holds at most 256 KiB of annotations)."""

MAX_ENTRIES = 4096
"""Entries of a folder (``/dev/infiniband``, ``/sys/class/infiniband``) looked at most; names kept at most
:data:`MAX_NAMES`."""

MAX_NAMES = 64

CAP_IPC_LOCK = 14
"""The bit of ``CAP_IPC_LOCK`` (include/uapi/linux/capability.h): lock memory beyond ``RLIMIT_MEMLOCK``, which RDMA
verbs do to register the buffers a fabric reads."""

HOSTS_HEADERS = {"# Kubernetes-managed hosts file (host network).": True, "# Kubernetes-managed hosts file.": False}
"""The first line of the ``/etc/hosts`` the kubelet writes for a container: whether the pod is on the host's network
(pkg/kubelet/kubelet_pods.go, ``managedHostsHeaderWithHostNetwork`` and ``managedHostsHeader``)."""

MAX_ENV = 200
"""Variables recorded at most; each value is cut at :data:`MAX_VALUE` characters."""

MAX_VALUE = 4096

_UNLIMITED_V1 = 1 << 62
"""cgroup v1 writes "no limit" as the largest page-aligned ``int64`` (9223372036854771712): anything this large."""


@dataclass(frozen=True)
class Places:
    """Where the readings are taken: the real ones in a pod; a test points them at a tree of its own."""

    proc: str = "/proc"
    cgroup: str = "/sys/fs/cgroup"
    dev: str = "/dev"
    shm: str = "/dev/shm"
    sys: str = "/sys"
    hosts: str = "/etc/hosts"


def observe(environ: Mapping[str, str], names: Any = (), places: Places = Places()) -> dict[str, Any]:
    """What this process's pod has.

    Args:
        environ: The process's environment.
        names: More variable names to record (those the task registered).
        places: Where to read.

    Returns:
        ``{"shm": {"path", "mount", "fstype", "size"}, "memory": {"limit", "source"}, "cpu": {"limit_millis",
        "source"}, "gpus": {"devices", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"}, "env": {name: value},
        "podinfo": {"path", "labels", "annotations"}, "problems": [...]}``; sizes and limits in bytes, ``None``
        for no limit (or what could not be read, said in ``problems``).
    """
    problems: list[str] = []
    cgroups = _own_cgroups(places, problems)
    podinfo = environ.get(PODINFO_ENV) or DEFAULT_PODINFO
    return {
        "shm": _shm(places, problems),
        "memory": _memory(places, cgroups, problems),
        "cpu": _cpu(places, cgroups, problems),
        "gpus": {"devices": _gpu_devices(places), "CUDA_VISIBLE_DEVICES": environ.get("CUDA_VISIBLE_DEVICES"),
                 "NVIDIA_VISIBLE_DEVICES": environ.get("NVIDIA_VISIBLE_DEVICES")},
        "fabric": _fabric(places, problems),
        "env": _env(environ, names),
        "podinfo": {"path": podinfo, "labels": _podinfo(podinfo, "labels", problems),
                    "annotations": _podinfo(podinfo, "annotations", problems)},
        "problems": problems,
    }


def read_small(path: str) -> str:
    """The text of a small file (at most :data:`MAX_FILE` bytes read), undecodable bytes escaped; opened without
    waiting, so that a FIFO in its place (which no writer opens) is refused, not waited on.

    Raises:
        OSError: it cannot be read, or is not a regular file (``/proc``, ``/sys``, cgroup and downward API files are).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return f.read(MAX_FILE).decode("utf-8", "backslashreplace")


def _shm(places: Places, problems: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"path": places.shm, "mount": False, "fstype": None, "size": None}
    try:
        for line in read_small(os.path.join(places.proc, "self", "mountinfo")).splitlines():
            fields, sep, tail = line.partition(" - ")
            parts = fields.split()
            if sep and len(parts) > 4 and _unescape_mount(parts[4]) == places.shm:
                out["mount"], out["fstype"] = True, (tail.split() or [None])[0]
    except OSError as e:
        problems.append(f"/proc/self/mountinfo: {e.strerror}")
    try:
        stat = os.statvfs(places.shm)
        out["size"] = stat.f_blocks * stat.f_frsize
    except OSError as e:
        problems.append(f"statvfs({places.shm}): {e.strerror}")
    return out


def _unescape_mount(field: str) -> str:
    """A mount point as ``/proc/self/mountinfo`` writes it: space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _own_cgroups(places: Places, problems: list[str]) -> dict[str, str]:
    """Controller (``memory``, ``cpu``; ``""`` for cgroup v2) -> this process's cgroup path."""
    out: dict[str, str] = {}
    try:
        for line in read_small(os.path.join(places.proc, "self", "cgroup")).splitlines():
            parts = line.split(":", 2)
            if len(parts) == 3:
                for controller in parts[1].split(",") if parts[1] else [""]:
                    out[controller] = parts[2]
    except OSError as e:
        problems.append(f"/proc/self/cgroup: {e.strerror}")
    return out


def _cgroup_file(places: Places, cgroups: Mapping[str, str], v1: str, v1_file: str, v2_file: str) -> str | None:
    """The file of this process's cgroup that holds a limit: cgroup v1's where the controller ``v1`` is mounted,
    else cgroup v2's; ``None`` when neither exists."""
    candidates = []
    if v1 in cgroups:
        mount = os.path.join(places.cgroup, v1)
        candidates += [os.path.join(mount, cgroups[v1].lstrip("/"), v1_file), os.path.join(mount, v1_file)]
    if "" in cgroups:
        candidates += [os.path.join(places.cgroup, cgroups[""].lstrip("/"), v2_file), os.path.join(places.cgroup, v2_file)]
    return next((c for c in candidates if os.path.isfile(c)), None)


def _memory(places: Places, cgroups: Mapping[str, str], problems: list[str]) -> dict[str, Any]:
    path = _cgroup_file(places, cgroups, "memory", "memory.limit_in_bytes", "memory.max")
    if path is None:
        problems.append("no memory cgroup file (memory.limit_in_bytes, memory.max) for this process")
        return {"limit": None, "source": None}
    try:
        text = read_small(path).strip()
    except OSError as e:
        problems.append(f"{path}: {e.strerror}")
        return {"limit": None, "source": path}
    value = None if text == "max" or not text.isdigit() or int(text) >= _UNLIMITED_V1 else int(text)
    return {"limit": value, "source": path}


def _cpu(places: Places, cgroups: Mapping[str, str], problems: list[str]) -> dict[str, Any]:
    path = _cgroup_file(places, cgroups, "cpu", "cpu.cfs_quota_us", "cpu.max")
    if path is None:
        problems.append("no CPU cgroup file (cpu.cfs_quota_us, cpu.max) for this process")
        return {"limit_millis": None, "source": None}
    try:
        if path.endswith("cpu.max"):
            quota, _, period = read_small(path).strip().partition(" ")
        else:
            quota = read_small(path).strip()
            period = read_small(os.path.join(os.path.dirname(path), "cpu.cfs_period_us")).strip()
    except OSError as e:
        problems.append(f"{path}: {e.strerror}")
        return {"limit_millis": None, "source": path}
    if not (quota.isdigit() and period.isdigit() and int(period) > 0):  # "max", -1: no limit
        return {"limit_millis": None, "source": path}
    return {"limit_millis": round(int(quota) * 1000 / int(period)), "source": path}


def _gpu_devices(places: Places) -> int:
    try:
        return sum(1 for name in os.listdir(places.dev) if re.fullmatch(r"nvidia[0-9]+", name))
    except OSError:
        return 0


def _fabric(places: Places, problems: list[str]) -> dict[str, Any]:
    devices, count = _entries(os.path.join(places.dev, "infiniband"), problems, stat.S_ISCHR)
    rdma, _ = _entries(os.path.join(places.sys, "class", "infiniband"), problems)
    return {"dev_infiniband": devices, "dev_infiniband_count": count, "sys_infiniband": rdma,
            "ipc_lock": _ipc_lock(places, problems), "memlock": _memlock(problems),
            "host_network": _host_network(places, problems)}


def _entries(folder: str, problems: list[str], kind: Any = None) -> tuple[list[str], int]:
    """The names in ``folder`` (of entries whose ``lstat`` mode ``kind`` accepts; any when ``None``), at most
    :data:`MAX_NAMES` of them sorted, and how many there are among the first :data:`MAX_ENTRIES`; none when there
    is no such folder."""
    names = []
    try:
        with os.scandir(folder) as entries:
            for number, entry in enumerate(entries):
                if number >= MAX_ENTRIES:
                    problems.append(f"{folder}: more than {MAX_ENTRIES} entries, the first counted")
                    break
                try:
                    if kind is None or kind(entry.stat(follow_symlinks=False).st_mode):
                        names.append(entry.name)
                except OSError:
                    continue  # gone meanwhile
    except FileNotFoundError:
        return [], 0
    except OSError as e:
        problems.append(f"{folder}: {e.strerror}")
        return [], 0
    return sorted(names)[:MAX_NAMES], len(names)


def _ipc_lock(places: Places, problems: list[str]) -> bool | None:
    path = os.path.join(places.proc, "self", "status")
    try:
        text = read_small(path)
    except OSError as e:
        problems.append(f"{path}: {e.strerror}")
        return None
    found = re.search(r"^CapEff:\s*([0-9a-fA-F]+)\s*$", text, re.MULTILINE)
    if found is None:
        problems.append(f"{path}: no CapEff line")
        return None
    return bool(int(found.group(1), 16) >> CAP_IPC_LOCK & 1)


def _memlock(problems: list[str]) -> dict[str, int | None]:
    """``RLIMIT_MEMLOCK`` in bytes (``None``: unlimited, or not known, said in ``problems``)."""
    try:
        import resource

        limits = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    except (ImportError, AttributeError, OSError, ValueError) as e:
        problems.append(f"getrlimit(RLIMIT_MEMLOCK): {e}")
        return {"soft": None, "hard": None}
    return {side: None if value == resource.RLIM_INFINITY else value for side, value in zip(("soft", "hard"), limits)}


def _host_network(places: Places, problems: list[str]) -> bool | None:
    try:
        first = read_small(places.hosts).partition("\n")[0].strip()
    except FileNotFoundError:
        return None
    except OSError as e:
        problems.append(f"{places.hosts}: {e.strerror}")
        return None
    return HOSTS_HEADERS.get(first)


def _env(environ: Mapping[str, str], names: Any) -> dict[str, str]:
    wanted = set(names) | set(ENV_NAMES)
    found = sorted(k for k in environ if k in wanted or k.startswith(ENV_PREFIXES))
    return {k: environ[k][:MAX_VALUE] for k in found[:MAX_ENV]}


def _podinfo(folder: str, name: str, problems: list[str]) -> dict[str, str] | None:
    path = os.path.join(folder, name)
    try:
        text = read_small(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        problems.append(f"{path}: {e.strerror}")
        return None
    out = {}
    for number, line in enumerate(text.splitlines(), 1):
        key, sep, quoted = line.partition("=")
        value = go_unquote(quoted) if sep else None
        if value is None:
            problems.append(f"{path}:{number}: not a key=\"value\" line of the downward API")
            continue
        out[key] = value
    return out


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"', "'": "'"}


def go_unquote(text: str) -> str | None:
    """A string quoted as Go's ``strconv.Quote`` (``%q``) writes it, read back; ``None`` if it is not one.

    Go's escapes: ``\\a \\b \\f \\n \\r \\t \\v \\\\ \\"``, ``\\xNN`` (a byte), ``\\NNN`` (octal, a byte),
    ``\\uNNNN`` and ``\\UNNNNNNNN`` (a character); bytes that are not UTF-8 are kept as backslash escapes.
    """
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return None
    out, raw, i, body = [], bytearray(), 0, text[1:-1]

    def flush() -> None:
        if raw:
            out.append(raw.decode("utf-8", "backslashreplace"))
            raw.clear()

    while i < len(body):
        c = body[i]
        if c != "\\":
            if c == '"':
                return None
            flush()
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt in _ESCAPES:
            flush()
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", body[i + 2:i + 4]):
            raw.append(int(body[i + 2:i + 4], 16))
            i += 4
        elif nxt in ("u", "U") and re.fullmatch(r"[0-9a-fA-F]{%d}" % (4 if nxt == "u" else 8), body[i + 2:i + (6 if nxt == "u" else 10)]):
            width = 4 if nxt == "u" else 8
            code = int(body[i + 2:i + 2 + width], 16)
            if code > 0x10FFFF:
                return None
            flush()
            out.append(chr(code))
            i += 2 + width
        elif re.fullmatch(r"[0-7]{3}", body[i + 1:i + 4]) and int(body[i + 1:i + 4], 8) < 256:
            raw.append(int(body[i + 1:i + 4], 8))
            i += 4
        else:
            return None
    flush()
    return "".join(out)
