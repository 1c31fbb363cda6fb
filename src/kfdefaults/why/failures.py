"""The known failures of distributed training, each recognised by the lines torch, NCCL, Kubernetes or Kueue write
for it, and the profile keys that govern it.

Each pattern is a line as the program writes it, read from its source and, where it runs on a CPU, seen in the logs
of real failures on this machine (``tests/torch_logs``, docs/clocks-measured.md):

* ``RendezvousTimeoutError``, ``RendezvousClosedError``: raised by ``_RendezvousOpExecutor.run``
  (torch/distributed/elastic/rendezvous/dynamic_rendezvous.py), with no message.
* The store never reached: ``The client socket has timed out after ...ms while trying to connect to (HOST, PORT)``
  (c10d ``socket.cpp``), ``TCP client failed to connect/validate to host ... - timed out`` (``TCPStore.cpp``),
  then ``RendezvousConnectionError: The connection to the C10d store has failed``
  (``C10dRendezvousBackend``, c10d_rendezvous_backend.py). The same error after ``Failed to recv, got 0 bytes.
  Connection was likely closed`` or ``Broken pipe`` is the store's host gone, not a timeout.
* The round that admits a late node: ``wait timeout after ...ms, keys: /torch.rendezvous....`` (``DistStoreError``).
* ``/dev/shm`` exhausted: ``DataLoader worker (pid ...) is killed by signal: Bus error`` and ``Unexpected bus error
  encountered in worker`` (torch/utils/data/_utils/signal_handling.py, the C++ handler), ``unable to allocate
  shared memory(shm) for file </torch_...>: No space left on device`` (``_new_using_fd_cpu``), NCCL's ``Error while
  creating shared memory segment`` / ``failed to extend /dev/shm/nccl-...``.
* NCCL: ``Watchdog caught collective operation timeout`` and ``ProcessGroupNCCL's watchdog got stuck for N seconds``
  / ``Heartbeat monitor timed out`` (ProcessGroupNCCL.cpp); gloo's ``Timed out waiting ...ms for recv operation to
  complete`` (``unbound_buffer.cc``), and its ``Connection closed by peer [HOST]:PORT`` when another pod's worker
  died (``pair.cc``).
* ``ChildFailedError`` and the exit code of each failed worker (``exitcode  : -9``, ``failed (exitcode: -7)``:
  torch/distributed/elastic/multiprocessing).
* ``OOMKilled``: the reason ``kubectl describe pod`` and Flyte show for a container the kernel killed at its memory
  limit.
* Kueue's eviction: ``Exceeded the PodsReady timeout NAMESPACE/NAME``, reason ``PodsReadyTimeout``
  (``WorkloadReconciler``, kueue pkg/controller/core/workload_controller.go).
* The fabric, as ``NCCL_DEBUG=INFO`` shows it (NVIDIA/nccl src/transport/net_ib.cc, net_socket.cc, init.cc; aws-ofi-nccl
  src/nccl_ofi_net.c; seen in the public logs of tests/fabric_logs, each with its source): NCCL on TCP sockets
  (``NET/Socket : Using [0]eth0:...``, ``Using network Socket``, after ``NCCL_IB_DISABLE set by environment to 1``),
  no InfiniBand device in the pod (``NET/IB : No device found.``), aws-ofi-nccl that found no EFA device
  (``NET/OFI aws-ofi-nccl initialization failed``, ``No eligible providers``, ``Only EFA provider is supported``,
  libfabric's ``fi_getinfo: provider efa output empty list``), and memory the adapter could not pin
  (``Call to ibv_reg_mr... failed with error Cannot allocate memory``, ``NET/OFI Unable to register memory``). The
  first two are claimed only where the profile asks for a fabric or a pool of the cluster offers one
  (:attr:`Failure.fabric`): NCCL prints them on every machine without one. A log whose NCCL chose the fabric
  (``Using network IB``, ``Using network AWS Libfabric``) has none of them: :func:`fabric_in_use`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Union

MAX_EVIDENCE = 3
"""Lines quoted per failure."""

MAX_EXIT_CODES = 1000
"""Exit codes read of a log at most (a log of a thousand failed workers, say)."""


class After:
    """A line that holds ``first`` and, later on it, the literal ``then``: searched for as the literal first (its last
    place on the line), then ``first`` before it, in time linear in the line's length (``first[^\\n]*then`` as one
    regex is quadratic: it scans to the line's end from every place ``first`` matches).

    Attributes:
        pattern: What a line must hold for :func:`recognise` to look further: the literal, as a regex.
    """

    def __init__(self, first: str, then: str) -> None:
        self.first, self.then = re.compile(first), then
        self.pattern = re.escape(then)

    def search(self, text: str) -> re.Match[str] | None:
        at = text.rfind(self.then)
        return None if at < 0 else self.first.search(text, 0, at)


Pattern = Union["re.Pattern[str]", After]
"""What a line is matched with (``.search(text)``, ``.pattern``): a regex whose time is linear in the line's length
(each repetition bounded, or over characters its literal start cannot be made of), or :class:`After`."""


@dataclass(frozen=True)
class Failure:
    """A kind of failure.

    Attributes:
        name: Its name (``rendezvous-timeout``), in JSON output.
        title: How the answer names it.
        patterns: A line matching any of them is evidence of it.
        worker: It happens in a training process: the ``ChildFailedError`` that carries it is not answered again.
        unless: It is not this failure when any of these match a line of the log.
        requires: It is this failure only when one of these matches a line of the log.
        fabric: It is claimed only where the profile asks for an RDMA fabric or a pool of the cluster offers one
            (:func:`kfdefaults.why.answers.fabric_context`): NCCL prints its lines on any machine without one.
    """

    name: str
    title: str
    patterns: tuple[Pattern, ...]
    worker: bool = False
    unless: tuple[Pattern, ...] = ()
    requires: tuple[Pattern, ...] = ()
    fabric: bool = False


def _re(*texts: str | tuple[str, str]) -> tuple[Pattern, ...]:
    """The patterns of a failure: a regex, or ``(first, then)`` for :class:`After`."""
    return tuple(After(*t) if isinstance(t, tuple) else re.compile(t) for t in texts)


_HOST_GONE = _re(r"Connection was likely closed", r"Broken pipe", r"Connection reset by peer")

FABRIC_IN_USE = _re(r"Using network (?:IB|IBext|AWS Libfabric|Libfabric)\b", r"NET/IB ?: Using \[\d{1,3}\]\S{1,64}")
"""Lines of a run whose NCCL uses the fabric: its IB verbs transport (InfiniBand, RoCE), or aws-ofi-nccl on EFA."""

_SOCKETS = _re(r"NET/Socket ?: Using \[\d", r"Using network Socket\b")

FAILURES = (
    Failure("shm-bus-error", "a DataLoader worker died of a bus error: /dev/shm is full",
            _re(r"is killed by signal: Bus error", r"Unexpected bus error encountered in worker"), worker=True),
    Failure("shm-no-space", "no space left in /dev/shm",
            _re((r"shared memory|/dev/shm|</torch_\d{1,20}_", "No space left on device"),
                r"Error while creating shared memory segment", r"failed to extend /dev/shm/"), worker=True),
    Failure("oom-killed", "the container was OOM-killed at its memory limit", _re(r"\bOOMKilled\b")),
    Failure("fabric-ofi-init", "aws-ofi-nccl found no EFA device: NCCL cannot use the fabric",
            _re(r"NET/OFI aws-ofi-nccl initialization failed", (r"NET/OFI", "No eligible provider"),
                r"NET/OFI Could not find any optimal provider", r"NET/OFI Only EFA provider is supported",
                r"OFI plugin initNet\(\) failed", r"fi_getinfo: provider efa output empty list")),
    Failure("fabric-memory-registration", "the fabric could not pin (register) memory: the locked-memory limit",
            _re(r"Call to ibv_reg_mr\w{0,20} failed", r"NET/OFI Unable to register memory")),
    Failure("fabric-sockets", "NCCL uses TCP sockets between the nodes, not the fabric",
            (*_SOCKETS, *_re(r"NCCL_IB_DISABLE set by environment to 1\b")), unless=FABRIC_IN_USE, requires=_SOCKETS,
            fabric=True),
    Failure("fabric-no-ib-device", "NCCL found no InfiniBand device in the pod",
            _re(r"NET/IB ?: No device found"), unless=FABRIC_IN_USE, fabric=True),
    Failure("nccl-watchdog", "an NCCL collective outlived the process group's timeout",
            _re(r"Watchdog caught collective operation timeout"), worker=True),
    Failure("nccl-heartbeat", "NCCL's watchdog got stuck: the heartbeat monitor ended the process",
            _re(r"watchdog got stuck for \d+ seconds", r"Heartbeat monitor timed out"), worker=True),
    Failure("gloo-timeout", "a gloo collective outlived the process group's timeout",
            _re(r"Timed out waiting \d+ms for (?:recv|send) operation to complete"), worker=True),
    Failure("peer-gone", "a worker of another pod died: gloo lost the connection to it",
            _re(r"Connection closed by peer \[", r"Connection reset by peer \["), worker=True),
    Failure("rendezvous-timeout", "rendezvous timeout: not every node joined within join_timeout",
            _re(r"RendezvousTimeoutError")),
    Failure("rendezvous-closed", "the rendezvous was closed: another node's agent gave up first",
            _re(r"RendezvousClosedError")),
    Failure("store-unreachable", "the rendezvous store was never reached within read_timeout",
            _re(r"The client socket has timed out after \d+ms while trying to connect",
                r"TCP client failed to connect/validate to host \S{1,300} - timed out",
                r"The connection to the C10d store has failed"), unless=_HOST_GONE),
    Failure("store-host-gone", "the rendezvous store's host ended: its agent failed first",
            _re(r"The connection to the C10d store has failed", r"RendezvousConnectionError"), requires=_HOST_GONE),
    Failure("admitting-round", "the round that admits a late node timed out in the shared store",
            _re(r"wait timeout after \d+ms, keys: /torch\.rendezvous\.")),
    Failure("spare-node-closed", "a spare node left a closed rendezvous (torch 2.13 raises AttributeError)",
            _re(r"'NoneType' object has no attribute 'is_failed'")),
    Failure("kueue-pods-ready", "Kueue evicted the job: its pods were not ready within waitForPodsReady's timeout",
            _re(r"Exceeded the PodsReady timeout", r"\bPodsReadyTimeout\b")),
    Failure("worker-failed", "a training process failed (ChildFailedError)",
            _re(r"ChildFailedError", r"failed \(exitcode: -?\d{1,20}\) local_rank", r"exitcode\s{1,40}: -?\d")),
)
"""The catalogue, in the order answers are given: the cause before its echoes."""


@dataclass
class Found:
    """A failure recognised in a log.

    Attributes:
        failure: Which.
        evidence: ``(line number, text)`` of the first lines that show it, one per line of the file (of a JSON log
            line, the longest line of its message that shows it).
        exit_codes: For ``worker-failed``: each failed worker's exit code, in order (about the first
            :data:`MAX_EXIT_CODES`).
    """

    failure: Failure
    evidence: list[tuple[int, str]] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)


_EXIT = re.compile(r"exitcode\s{0,40}:\s{0,40}(-?\d{1,10})(?!\d)")  # an exit code; a longer number is none
_ANY = re.compile("|".join(f"(?:{p.pattern})" for f in FAILURES for p in f.patterns + f.unless + f.requires))


def recognise(lines: Iterable[tuple[int, str]]) -> list[Found]:
    """The failures ``lines`` show, in the catalogue's order; nothing for a log of none of them.

    ``worker-failed`` is answered only where no failure in a training process explains it.
    """
    lines = [(n, t) for n, t in lines if _ANY.search(t)]  # one search per line of a long log, then the few that match

    def anywhere(patterns: tuple[Pattern, ...]) -> bool:
        return any(p.search(t) for _, t in lines for p in patterns)

    candidates = [f for f in FAILURES if not (f.unless and anywhere(f.unless)) and (not f.requires or anywhere(f.requires))]
    found: dict[str, Found] = {}
    for number, text in lines:
        for failure in candidates:
            if not any(p.search(text) for p in failure.patterns):
                continue
            entry = found.setdefault(failure.name, Found(failure))
            same = [i for i, (n, _) in enumerate(entry.evidence) if n == number]
            if same and len(text) > len(entry.evidence[same[0]][1]):  # a JSON line's message: its fullest line
                entry.evidence[same[0]] = (number, text)
            elif not same and len(entry.evidence) < MAX_EVIDENCE:
                entry.evidence.append((number, text))
            if failure.name == "worker-failed" and len(entry.exit_codes) < MAX_EXIT_CODES:
                entry.exit_codes += [int(c) for c in _EXIT.findall(text)]
    if any(found[name].failure.worker for name in found):
        found.pop("worker-failed", None)
    return [found[f.name] for f in FAILURES if f.name in found]


def fabric_in_use(lines: Iterable[tuple[int, str]]) -> tuple[int, str] | None:
    """The first line that shows NCCL on the fabric (:data:`FABRIC_IN_USE`: ``Using network IB``, ``Using network
    AWS Libfabric``): ``(line number, what matched)``, else ``None``."""
    lines = list(lines)
    for pattern in FABRIC_IN_USE:  # `Using network IB` before the `NET/IB : Using [0]mlx5_0:1/IB` it follows
        for number, text in lines:
            match = pattern.search(text)
            if match is not None:
                return number, match.group(0)
    return None
