"""Each recognised failure answered: the settings that govern it (key, value, who set it, what the pod had) and what
to change, worked out from those values, the numbers the log gives and the cluster's facts, never guessed: where
nothing gives a number, the answer says what to measure instead.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from ..backend.elastic_config import nnodes_range
from ..check.fit_causes import fabric_advice
from ..check.start import ColdStart
from ..check.torch_defaults import RDZV_DEFAULTS
from .failures import Found
from .values import Setting, Values, bounded


@dataclass
class Cluster:
    """What the cluster says for an answer: its facts, and how late a cold node of the task starts there.

    Attributes:
        facts: The cluster's facts (:class:`~kfdefaults.validate.facts.ClusterFacts`), or ``None``.
        start: The start times of a cold node, on the pool the task runs on where it is known
            (:meth:`kfdefaults.pipeline.Pipeline.cold_start`: the figures ``kfdefaults timeline`` shows); ``None``
            without facts.
        fabric: What the pools the task may run on offer of a fabric, each ``(pool p5 offers 32
            vpc.amazonaws.com/efa per node (FILE:LINE:COLUMN), the device or None for a label)``
            (:func:`kfdefaults.check.fit_causes.fabric_offer`).
    """

    facts: Any = None
    start: ColdStart | None = None
    fabric: list[tuple[str, str | None]] = field(default_factory=list)

    def worst_start(self) -> tuple[int, str] | None:
        """``(seconds, where they come from)`` of the slowest cold start the facts state, ``None`` when they state
        none: ``pool h100's worst cold start (node_start worst 1500 s at FILE:LINE:COLUMN; ...)``."""
        if self.start is None or self.start.span.worst is None:
            return None
        return self.start.span.worst, f"{self.start.whose} worst cold start {self.start.span.sources('worst')}"


@dataclass
class Answer:
    """A recognised failure and what governs it.

    Attributes:
        found: The failure and the lines that show it.
        settings: The settings that govern it.
        change: What to change, in sentences.
    """

    found: Found
    settings: list[Setting] = field(default_factory=list)
    change: list[str] = field(default_factory=list)
    known: bool = True

    def now(self, setting: Setting, unit: str = "") -> str:
        """`` (VALUE now)`` for a text, with the default where nothing sets it; ``""`` when values are unknown."""
        if not self.known:
            return ""
        if setting.value is None:
            return f" (unset now: {setting.default})" if setting.default else " (unset now)"
        return f" ({setting.value}{unit} now)"


MAX_DIGITS = 18
"""A number of the log with more digits is not read (Python reads at most 4300 into an int)."""


def _number(found: Found, pattern: str) -> int | None:
    for _, text in found.evidence:
        match = re.search(pattern, text)
        if match and len(match.group(1)) <= MAX_DIGITS:
            return int(match.group(1))
    return None


def _seconds(setting: Setting, default: int) -> int:
    value = setting.value
    if isinstance(value, float) and not math.isfinite(value):  # a receipt's JSON may hold Infinity and NaN
        return default
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _range(nnodes: Setting) -> tuple[int, int] | None:
    """``nnodes`` as ``(min, max)``; ``None`` when unknown or unreadable (a log may hold anything)."""
    try:
        return nnodes_range(nnodes.value) if nnodes.value is not None else None
    except ValueError:
        return None


def _by(setting: Setting) -> str:
    """`` (set by LAYER FILE:LINE)``, or ``""`` for a value nobody set."""
    return f" (set by {setting.set_by})" if setting.set_by else ""


def _rendezvous_timeout(a: Answer, v: Values, cluster: Cluster) -> None:
    join, nnodes = v.elastic("rdzv_configs", "join_timeout"), v.elastic("nnodes")
    a.settings += [join, nnodes]
    waited = _seconds(join, RDZV_DEFAULTS["join_timeout"])
    span = _range(nnodes) if a.known else None
    if span is not None and span[0] < span[1]:
        last_call = v.elastic("rdzv_configs", "last_call_timeout")
        a.settings.append(last_call)
        if span[0] <= 1:  # dynamic_rendezvous' _RendezvousJoinOp: MIN nodes in, the round completes at last call
            a.change.append(f"nnodes {span[0]}:{span[1]}{_by(nnodes)}: no missing node times this rendezvous out, "
                            f"the round closes last_call_timeout ({_seconds(last_call, RDZV_DEFAULTS['last_call_timeout'])}"
                            " s) after the first node is in, with the nodes that are; this node joined no round "
                            f"within join_timeout ({waited} s): it waited for a round after one had closed, and the "
                            "nodes running it did not restart to admit it, or the store did not answer; the other "
                            "pods' logs say which (kfdefaults why on them)")
            return
        a.change.append(f"fewer than nnodes' minimum, {span[0]}, joined within join_timeout{a.now(join, ' s')}")
    start = cluster.worst_start()
    if start is not None and (start[0] >= waited or not a.known):
        a.change.append(f"raise join_timeout{a.now(join, ' s')} above {start[0]} s, {start[1]}")
    elif start is not None:
        a.change.append(f"join_timeout ({waited} s) is already above {start[0]} s, {start[1]}: a node did not come at all; "
                        "look for a pod left Pending (kubectl get pods, kubectl describe pod)")
    else:
        a.change.append(f"raise join_timeout{a.now(join, ' s')} above the longest gap between the first and the last pod "
                        "of the job starting (their start times: kubectl get pods -o wide); no cluster facts state how "
                        "long a node takes to start, so no number is given here")


def _store_unreachable(a: Answer, v: Values, cluster: Cluster) -> None:
    read, join = v.elastic("rdzv_configs", "read_timeout"), v.elastic("rdzv_configs", "join_timeout")
    a.settings += [read, join]
    waited = _number(a.found, r"timed out after (\d+)ms")
    read_s, join_s = _seconds(read, RDZV_DEFAULTS["read_timeout"]), _seconds(join, RDZV_DEFAULTS["join_timeout"])
    other_run = waited is not None and (not a.known or waited != read_s * 1000)
    if other_run:
        a.change.append(f"the log's store client gave up each try after {waited} ms: read_timeout was "
                        f"{waited / 1000:g} s in that run" + (f", not the {read_s} s here" if a.known else ""))
    if a.known and read_s >= join_s:
        reached = f"read_timeout{a.now(read, ' s')} already reaches join_timeout's {join_s} s: "
        a.change.append(reached + ("the run had another read_timeout than the profile's now: check that the pod "
                                   "ran on this profile (kfdefaults verify)" if other_run else
                                   "the job's first pod, which serves the store, started later than that or never; "
                                   "its events say why (kubectl describe pod)"))
        return
    target = f"join_timeout's {join_s} s" if a.known else "join_timeout's value"
    a.change.append(f"raise read_timeout{a.now(read, ' s')} to {target}: the store is served by the job's first pod, "
                    "which may be the slowest to start")


def _store_host_gone(a: Answer, v: Values, cluster: Cluster) -> None:
    a.settings += [v.elastic("monitor_interval")]
    a.change.append("no timeout to change: the pod that serves the rendezvous store (PET_RDZV_ENDPOINT, the job's "
                    "first worker) ended first, and this agent noticed at its next monitor_interval; that pod's own log "
                    "says why (kfdefaults why on it)")


def _admitting_round(a: Answer, v: Values, cluster: Cluster) -> None:
    a.settings += [v.env("TORCH_DISABLE_SHARE_RDZV_TCP_STORE"), v.elastic("rdzv_configs", "read_timeout"),
                   v.elastic("nnodes")]
    a.change.append("set TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 in the primary container's env: in torch 2.13 the round "
                    "that admits a late node waits read_timeout in the shared store for keys nobody writes "
                    "(docs/clocks-measured.md)")


def _closed(a: Answer, v: Values, cluster: Cluster) -> None:
    restarts, nnodes = v.elastic("max_restarts"), v.elastic("nnodes")
    span = _range(nnodes) if a.known else None
    if span is not None and span[0] < span[1]:  # the job may have run, and ended, without this node
        last_call = v.elastic("rdzv_configs", "last_call_timeout")
        lc = _seconds(last_call, RDZV_DEFAULTS["last_call_timeout"])
        a.settings += [nnodes, last_call]
        a.change.append(f"nnodes {span[0]}:{span[1]} let the job start without this node: its round closed "
                        f"last_call_timeout ({lc} s) after {span[0]} node{'s' * (span[0] != 1)} were in, the job ran "
                        "without it, and its agents closed the rendezvous when they ended, before this node came")
        start = cluster.worst_start()
        a.change.append(f"to have every node in the job, fix its size, nnodes: {span[1]}{_by(nnodes)}: the round then "
                        f"waits up to join_timeout for all of them; or raise last_call_timeout ({lc} s now)"
                        f"{_by(last_call)} above " + (f"{start[0]} s, {start[1]}" if start else "how late a node starts"))
        a.change.append("if the job failed rather than finished, its first failure is in another pod's log (kfdefaults "
                        "why on it)")
        return
    a.settings += [restarts]
    a.change.append("the rendezvous closes when an agent gives up (its workers failed with no restarts left), and a pod "
                    "restarted into it cannot join: the first failure is in another pod's log"
                    + ("" if a.known else "; with nnodes MIN:MAX it also closes when the job ran and ended without "
                                          "this node (last_call_timeout)"))
    a.change.append(f"to restart failed workers in place instead, raise max_restarts{a.now(restarts)}")


def _spare(a: Answer, v: Values, cluster: Cluster) -> None:
    a.settings += [v.elastic("nnodes")]
    a.change.append("nothing to change here: a node beyond nnodes' maximum waited as a spare and left when the "
                    "rendezvous closed (torch 2.13 turns that exit into this AttributeError); the first failure is in "
                    "another pod's log")


def _shm(a: Answer, v: Values, cluster: Cluster) -> None:
    shm, memory = v.shm(), v.limit("memory")
    a.settings += [shm, memory]
    if a.known and shm.value is None and shm.set_by is None and shm.key == "/dev/shm":
        a.change.append("mount a memory-backed emptyDir at /dev/shm in the primary container (every builtin profile "
                        "has one, dshm): without it the pod has the container runtime's 64Mi")
        return
    key = shm.key if shm.key != "/dev/shm" else "the sizeLimit of the memory-backed volume at /dev/shm"
    a.change.append(f"raise {key}{a.now(shm)} above what the DataLoader holds there at once: num_workers x "
                    "prefetch_factor (2 by default) batches")
    a.change.append(f"a memory-backed /dev/shm counts against the container's memory limit{a.now(memory)}: raise it "
                    "by as much")


def _oom(a: Answer, v: Values, cluster: Cluster) -> None:
    memory, shm = v.limit("memory"), v.shm()
    a.settings += [memory, shm]
    headroom = cluster.facts.get("shm_headroom") if cluster.facts is not None else None
    a.change.append(f"raise the memory limit{a.now(memory)} above what the processes need plus what /dev/shm may "
                    f"hold{a.now(shm)}: the pages of a memory-backed /dev/shm count against the limit"
                    + (f"; the cluster's facts keep {headroom} beside /dev/shm (shm_headroom)" if headroom else ""))


def _nccl_watchdog(a: Answer, v: Values, cluster: Cluster) -> None:
    a.settings += [v.elastic("nccl_collective_timeout_sec"), v.env("TORCH_NCCL_ASYNC_ERROR_HANDLING")]
    timeout = _number(a.found, r"Timeout\(ms\)=(\d+)")
    a.change.append(f"the collective outlived the process group's timeout{f' ({timeout} ms)' if timeout else ''}: a "
                    "rank is missing or stuck; the timeout is init_process_group(timeout=...) in the training code "
                    "(10 minutes for nccl), which Flyte 2's elastic.nccl_collective_timeout_sec sets the default of")


def _nccl_heartbeat(a: Answer, v: Values, cluster: Cluster) -> None:
    a.settings += [v.env("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"), v.elastic("nccl_heartbeat_timeout_sec")]
    stuck = _number(a.found, r"got stuck for (\d+) seconds")
    a.change.append(f"NCCL's watchdog was stuck{f' {stuck} s' if stuck else ''} (a hung CUDA or NCCL call); raise "
                    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC only if such a call is expected to last longer, else find the "
                    "stuck rank (TORCH_NCCL_DUMP_ON_TIMEOUT's flight recorder)")


def _peer_gone(a: Answer, v: Values, cluster: Cluster) -> None:
    a.settings += [v.elastic("max_restarts")]
    a.change.append("no setting of this pod to change: a worker of another pod died first, and gloo closed the "
                    "connection to it; that pod's log has the first failure (kfdefaults why on it)")


def _gloo(a: Answer, v: Values, cluster: Cluster) -> None:
    waited = _number(a.found, r"Timed out waiting (\d+)ms")
    a.change.append(f"a rank never entered the collective within the process group's timeout"
                    f"{f' ({waited} ms)' if waited else ''}: init_process_group(timeout=...) in the training code; find "
                    "the rank that did not arrive (its pod's log)")


def _kueue(a: Answer, v: Values, cluster: Cluster) -> None:
    from ..check.kueue import kueue  # lazy: Kueue's settings, only for an answer about its eviction

    k = kueue(cluster.facts)
    timeout, at = (k.pods_ready.value, k.pods_ready.source) if k is not None else (None, None)
    if timeout is not None and at is not None:
        where = f"{at.layer} {at.location.file}:{at.location.line}" if at.location is not None else at.default or ""
        a.settings.append(Setting("kueue.wait_for_pods_ready.timeout (cluster facts)" if at.layer == "facts" else
                                  "waitForPodsReady.timeout (Kueue's configuration)", timeout, where))
    start = cluster.worst_start()
    if timeout is not None and start is not None:
        a.change.append(f"the pods must be ready within {timeout} s, and a node may take {start[0]} s to start and "
                        f"pull the image, {start[1]}: ask the platform to raise Kueue's waitForPodsReady.timeout "
                        "above that, or run on a pool with warm nodes")
    else:
        a.change.append("the pods were not all ready within Kueue's waitForPodsReady.timeout (Kueue's default: 5 "
                        "minutes in a v1beta1 configuration, 30 minutes from Kueue 0.19 in a v1beta2 one): no profile "
                        "key sets it; state Kueue's configuration (kueue.config) and node_start / image_pull in the "
                        "cluster's facts to have a number here")


def fabric_context(values: Values | None, cluster: Cluster | None) -> list[str]:
    """Why a fabric was expected, as sentences: the fabric devices the profile requests and who set them, and
    what the cluster's pools offer; ``[]`` when neither (then ``why`` claims no socket fallback: NCCL prints
    ``NET/Socket`` and ``NET/IB : No device found`` on any machine without a fabric)."""
    found = []
    for name in values.fabric_devices() if values is not None else []:
        device = values.device(name)
        found.append(f"the profile requests {name} {device.value}{_by(device)}")
    found += [offer for offer, _ in (cluster.fabric if cluster is not None else [])]
    return found


def _fabric_devices(v: Values, cluster: Cluster, default: str) -> list[str]:
    """The fabric devices an answer names: the profile's, else those the pools offer, else ``default``."""
    named = v.fabric_devices() or list(dict.fromkeys(r for _, r in cluster.fabric if r is not None))
    return named or [default]


def _fragment(device: str) -> str:
    """``fabric-efa`` for EFA, ``fabric-ib`` for the rest (:func:`kfdefaults.check.fit_causes.fabric_advice`)."""
    return fabric_advice(device).removeprefix("extend ")


def _expected(a: Answer, v: Values, cluster: Cluster) -> str:
    context = fabric_context(v, cluster)
    return "; ".join(context) if context else "no fabric is known to be expected"


def _sockets(a: Answer, v: Values, cluster: Cluster) -> None:
    devices = _fabric_devices(v, cluster, "vpc.amazonaws.com/efa")
    a.settings += [v.device(d) for d in devices] + [v.env("NCCL_IB_DISABLE"), v.env("NCCL_NET_PLUGIN")]
    disabled = next((n for n, t in a.found.evidence if "NCCL_IB_DISABLE set by environment to 1" in t), None)
    if disabled is not None:
        a.change.append(f"line {disabled}: NCCL_IB_DISABLE=1 turned NCCL's InfiniBand transport off; fabric-ib and "
                        "fabric-roce set it to 0 in the primary container's env")
    if v.fabric_devices():
        a.change.append(f"{_expected(a, v, cluster)}, yet NCCL found no RDMA transport: check that the pod got the "
                        "device (kubectl describe pod: its Limits; devices under /dev/infiniband), that the image has "
                        "the transport (aws-ofi-nccl for EFA: its `NET/OFI` lines), and that NCCL_IB_DISABLE is not 1")
    else:
        label = "extend the fragment the facts name in fabric_labels"
        a.change += [f"{offer}, and this job requests none: {fabric_advice(r) if r else label}"
                     for offer, r in cluster.fabric]
    a.change.append("with NCCL_DEBUG=INFO a run on the fabric logs `Using network IB` (InfiniBand, RoCE) or `Using "
                    "network AWS Libfabric` (EFA) on every rank")


def _no_ib_device(a: Answer, v: Values, cluster: Cluster) -> None:
    devices = _fabric_devices(v, cluster, "rdma/ib")
    a.settings += [v.device(d) for d in devices] + [v.capabilities(), v.env("NCCL_IB_DISABLE")]
    if all(d == "vpc.amazonaws.com/efa" for d in devices):
        a.change.append(f"{_expected(a, v, cluster)}: on EFA, NCCL looks for InfiniBand only when aws-ofi-nccl did "
                        "not load or found no device: the image needs aws-ofi-nccl (its `NET/OFI` lines), and the pod "
                        "vpc.amazonaws.com/efa (fabric-efa: requests = limits, auto: the pool's count)")
        return
    device = next(d for d in devices if d != "vpc.amazonaws.com/efa")
    a.change.append(f"{_expected(a, v, cluster)}: the pod has no InfiniBand device under /dev/infiniband; request "
                    f"{device} in the primary container's requests and limits ({_fragment(device)} sets "
                    f"{'rdma/ib' if _fragment(device) == 'fabric-ib' else device}: auto, the pool's count) and "
                    "IPC_LOCK")


def _ofi_init(a: Answer, v: Values, cluster: Cluster) -> None:
    efa = v.device("vpc.amazonaws.com/efa")
    a.settings += [efa, v.env("FI_PROVIDER"), v.capabilities()]
    only_efa = any("Only EFA provider is supported" in t for _, t in a.found.evidence)
    if only_efa:
        a.change.append("libfabric offers no EFA on this node: the instance type has no EFA, or the pod no EFA device; "
                        "run on a pool whose nodes offer vpc.amazonaws.com/efa, or leave aws-ofi-nccl out "
                        "(NCCL_NET_PLUGIN=none) where a node's own GPUs are all the job uses")
    a.change.append(f"aws-ofi-nccl found no EFA device in the pod: request vpc.amazonaws.com/efa{a.now(efa)} in the "
                    "primary container's requests and limits, every device of the node (fabric-efa: auto, the "
                    "pool's count), with IPC_LOCK and FI_PROVIDER=efa (fabric-efa sets both); "
                    + _expected(a, v, cluster))


def _memory_registration(a: Answer, v: Values, cluster: Cluster) -> None:
    capabilities = v.capabilities()
    a.settings.append(capabilities)
    has = a.known and "IPC_LOCK" in str(capabilities.value or "")
    lost = has and "IPC_LOCK not effective" in str(capabilities.observed or "")
    a.change.append(("IPC_LOCK is added, yet the receipt found it not effective in the pod: an admission policy or "
                     "the runtime dropped it" if lost else "IPC_LOCK is added" if has else
                     f"add IPC_LOCK to the primary container's securityContext.capabilities.add{a.now(capabilities)} "
                     "(every fabric-* fragment adds it)") + ": the adapter pins (mlock) the buffers it registers")
    a.change.append("the container's locked-memory limit (ulimit -l, RLIMIT_MEMLOCK) is the container runtime's, not "
                    "the pod's: it must be unlimited on the node (NCCL's troubleshooting guide, InfiniBand); `ulimit "
                    "-l` in the container shows it")


_SIGNALS = {-9: "SIGKILL: the kernel's OOM killer at the memory limit, or a kill (kubectl describe pod says OOMKilled "
                "when it was the limit)",
            -7: "SIGBUS: most often /dev/shm full (a DataLoader worker, a shared tensor)",
            -6: "SIGABRT: NCCL aborting a timed-out or failed collective, or a failed assertion in C++",
            -11: "SIGSEGV: a crash in native code",
            1: "an exception in the training code: its traceback is in the log above the ChildFailedError"}


MAX_CODES = 5
"""Exit codes an answer names one by one at most; the others are counted."""


def _worker(a: Answer, v: Values, cluster: Cluster) -> None:
    restarts = v.elastic("max_restarts")
    a.settings.append(restarts)
    codes = list(dict.fromkeys(a.found.exit_codes))
    if -9 in codes:
        a.settings.append(v.limit("memory"))
    if -7 in codes:
        a.settings.append(v.shm())
    known = [c for c in codes if c in _SIGNALS]
    a.change += [f"exit code {code}: {_SIGNALS[code]}" for code in known]
    other = [c for c in codes if c not in _SIGNALS]
    if other:
        named = ", ".join(str(c) for c in other[:MAX_CODES]) + (f" and {len(other) - MAX_CODES} more"
                                                               if len(other) > MAX_CODES else "")
        a.change.append(f"exit code{'s' * (len(other) != 1)} {named}: see the worker log above the ChildFailedError")
    a.change.append(f"max_restarts{a.now(restarts)} restarts the workers in place that many times before the task "
                    "fails")


ANSWERS: dict[str, Callable[[Answer, Values, Cluster], None]] = {
    "shm-bus-error": _shm, "shm-no-space": _shm, "oom-killed": _oom, "nccl-watchdog": _nccl_watchdog,
    "nccl-heartbeat": _nccl_heartbeat, "gloo-timeout": _gloo, "peer-gone": _peer_gone, "rendezvous-timeout": _rendezvous_timeout,
    "rendezvous-closed": _closed, "store-unreachable": _store_unreachable, "store-host-gone": _store_host_gone,
    "admitting-round": _admitting_round, "spare-node-closed": _spare, "kueue-pods-ready": _kueue,
    "worker-failed": _worker, "fabric-ofi-init": _ofi_init, "fabric-memory-registration": _memory_registration,
    "fabric-sockets": _sockets, "fabric-no-ib-device": _no_ib_device,
}


def answer(found: Found, values: Values | None, cluster: Cluster | None = None) -> Answer:
    """The answer to one recognised failure, with the settings from ``values`` (``None``: the keys only, without
    values) and what the ``cluster`` says (:class:`Cluster`; ``None``: nothing).

    Where the receipt found that the pod differed from what was registered at a key of the answer, the answer says
    so first: the pod did not have the value the profile set."""
    a = Answer(found, known=values is not None and values.known)
    ANSWERS[found.failure.name](a, values if values is not None else Values({}, {}, "", None), cluster or Cluster())
    if values is not None:
        keys = {s.key for s in a.settings}
        for d in values.differences:
            if d.get("path") in keys:
                said = {k: bounded(d.get(k)) for k in ("observed", "registered", "path", "cause")}
                a.change.insert(0, f"this pod had {said['observed']}, not the {said['registered']} registered at "
                                   f"{said['path']}: likely {said['cause']}; restore it first")
    return a
