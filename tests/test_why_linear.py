"""Every pattern ``kfdefaults why`` matches a log line with takes time linear in the line's length: a log line may be
16 MiB long (the reader keeps one whole), and a pattern that rescans the rest of the line from each place it could
start (``/dev/shm[^\\n]*No space left on device`` did: 13 s for a 576 KB line of ``/dev/shm ``) would take hours.

Each pattern is fed adversarial lines grown from a line it matches: the line's starts repeated, and a start
followed by a long run of one character, from 16 KiB to 1 MiB in steps of 4x (each about 4x the time of the last
when linear, 16x when quadratic), in CPU seconds and the best of a few runs, so that a loaded machine does not
pass for a quadratic pattern. How fast ``why`` is on the captured logs is the benchmark's (benchmarks/why.py).
"""

from __future__ import annotations

import re  # noqa: F401
import time

import pytest

from kfdefaults.receipt.document import MARKER
from kfdefaults.why import failures, logtext, values

EXAMPLES = [  # in the words of the program that writes each (kfdefaults/why/failures.py says where)
    "RuntimeError: DataLoader worker (pid 123) is killed by signal: Bus error. It is possible that dataloader's "
    "workers are out of shared memory.",
    "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
    "RuntimeError: unable to allocate shared memory(shm) for file </torch_123_4567_0>: No space left on device (28)",
    "NCCL WARN Error while creating shared memory segment /dev/shm/nccl-abc (size 9637888)",
    "NCCL WARN Call to posix_fallocate failed : No space left on device; failed to extend /dev/shm/nccl-abc to 96 bytes",
    "      Reason:       OOMKilled",
    "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000)",
    "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued collectives.",
    "Heartbeat monitor timed out! Process will be terminated after dumping debug info.",
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 3000ms for recv "
    "operation to complete",
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:12345",
    "RuntimeError: [pair.cc:598] Connection reset by peer [10.0.0.1]:29500",
    "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
    "torch.distributed.elastic.rendezvous.api.RendezvousClosedError",
    "torch.distributed.DistNetworkError: The client socket has timed out after 2000ms while trying to connect to "
    "(localhost, 12345).",
    "[W socket.cpp:1] TCP client failed to connect/validate to host localhost:12345 - timed out (try=3, timeout=2000ms)",
    "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed. "
    "See inner exception for details.",
    "torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. Did the remote "
    "server shutdown or crash?",
    "RuntimeError: Broken pipe",
    "torch.distributed.DistStoreError: wait timeout after 4000ms, keys: /torch.rendezvous.kfdrun.0/store_key",
    "AttributeError: 'NoneType' object has no attribute 'is_failed'",
    "  Warning  EvictedDueToPodsReadyTimeout  2m  kueue-admission  Exceeded the PodsReady timeout ns/job-1",
    "    reason: PodsReadyTimeout",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "  [0]: failed (exitcode: -9) local_rank: 0 (pid: 31) of binary: /usr/bin/python",
    "  exitcode  : -9 (pid: 31)",
    "      KFDEFAULTS_ELASTIC:  {\"elastic\": {\"nnodes\": 2}, \"pod\": {}}",
    "Annotations:      kfdefaults.io/profile: gpu-large",
    "                  kfdefaults.io/digest: sha256:" + "0" * 64,
    "2026-01-01T00:00:00.000000000Z stderr P KFDEFAULTS_RECEIPT {",
    "algo-1:249:249 [0] ofi_init:1339 NCCL WARN NET/OFI aws-ofi-nccl initialization failed",
    "ip-10-0-0-1:79:79 [0] NCCL WARN NET/OFI No eligible providers were found",
    "get_ofi_provider:312 NCCL WARN NET/OFI Could not find any optimal provider",
    "algo-1:249:249 [0] ofi_init:1288 NCCL WARN NET/OFI Only EFA provider is supported",
    "[0] init.cc:99 CCOM WARN OFI plugin initNet() failed is EFA enabled?",
    "libfabric:85:1747438790::core:core:fi_getinfo_():1392<warn> fi_getinfo: provider efa output empty list",
    "misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory",
    "[5] register_mr_buffers:465 NCCL WARN NET/OFI Unable to register memory (type = 1) for device 0. RC: 12",
    "ip-172-31-12-210:45305:45305 [0] NCCL INFO NET/Socket : Using [0]ens3:172.31.12.210<0>",
    "user:852750:852802 [0] NCCL INFO Using network Socket",
    "user:852750:852802 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.",
    "ip-172-31-12-21:45361:45361 [0] NCCL INFO NET/IB : No device found.",
    "64:215:576 [0] NCCL INFO Using network IB",
    "64:215:576 [0] NCCL INFO NET/IB : Using [0]mlx5_bond_0:1/RoCE [RO]; OOB bond1:30.14.4.51<0>",
]
"""A line each pattern matches."""

OTHERS = {  # the patterns of why beside the catalogue's: the values, the receipt, a runtime's records, the numbers
    "registered": values._REGISTERED, "profile": values._PROFILE, "digest": values._DIGEST, "cri": logtext._CRI,
    "exit codes": failures._EXIT, "any": failures._ANY,
}

PATTERNS = {f"{f.name} {i}": p for f in failures.FAILURES for i, p in enumerate(f.patterns + f.unless + f.requires)}
PATTERNS.update(OTHERS)


def adversarial(example: str) -> list[str]:
    """Short pieces that, repeated to a line's length, make a pattern try (and fail) at each repetition: the
    example's starts, and a start followed by a run of one character."""
    cuts = sorted({max(1, len(example) * k // 4) for k in (1, 2, 3)} | {len(example) - 1})
    pieces = [example[:cut] for cut in cuts] + [example[:-1] + " "]
    return pieces + [example[:cut] + "\0" + run for cut in cuts for run in (" ", "9", "x", "/")]


def line_of(piece: str, size: int) -> str:
    """``piece`` made into a line of ``size`` characters: repeated, or its start followed by its run repeated."""
    start, _, run = piece.partition("\0")
    return (start + run * size)[:size] if run else (piece * (size // len(piece) + 1))[:size]


SIZES = (16 << 10, 64 << 10, 256 << 10, 1 << 20)
STEP_BOUND = 8
"""Each size is 4 times the last: a linear pattern takes 4 times as long, a quadratic one 16 times; the bound
between them is 8. The steps end at 1 MiB, and a quadratic pattern fails at the first step it is seen at
(seconds), not after hours on the largest line."""

TOO_QUICK = 0.01
"""CPU seconds below which a run tells nothing about growth."""


def cpu_seconds(run) -> float:
    """Seconds of this process's CPU that ``run()`` takes: a loaded machine pauses a run (not counted) or slows
    it (never speeds it)."""
    began = time.process_time()
    run()
    return time.process_time() - began


def within(run, limit: float, tries: int = 2) -> tuple[bool, float]:
    """``(True, seconds)`` as soon as one of ``tries`` runs of ``run()`` takes at most ``limit`` CPU seconds, else
    ``(False, the shortest)``: a slow run is tried again, a quadratic one gives up after ``tries``."""
    best = float("inf")
    for _ in range(tries):
        best = min(best, cpu_seconds(run))
        if best <= limit:
            return True, best
    return False, best


def searching(pattern, line: str):
    def run() -> None:
        if hasattr(pattern, "findall"):
            pattern.findall(line)
        pattern.search(line)
    return run


def growth(run_at) -> str | None:
    """``None`` when ``run_at(size)()`` takes time linear in ``size`` over :data:`SIZES`, else what it took."""
    last = min(cpu_seconds(run_at(SIZES[0])) for _ in range(3))
    for size in SIZES[1:]:
        fast, took = within(run_at(size), max(STEP_BOUND * last, TOO_QUICK))
        if not fast:
            return f"{last:.4f} s for {size // 4 >> 10} KiB, {took:.3f} s for {size >> 10} KiB"
        last = took
    return None


def test_the_whole_catalogue_takes_time_linear_in_the_line_s_length():
    took = growth(lambda size: lambda: failures.recognise([(1, line_of("/dev/shm ", size))]))
    assert took is None, took


def test_every_pattern_has_an_example_it_matches():
    for name, pattern in PATTERNS.items():
        if name != "any":
            assert any(pattern.search(e) for e in EXAMPLES), name


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PATTERNS))
def test_a_pattern_takes_time_linear_in_the_line_s_length(name):
    pattern = PATTERNS[name]
    seeds = [e for e in EXAMPLES if pattern.search(e)] if name != "any" else EXAMPLES
    pieces = [p for e in seeds for p in adversarial(e)] if name != "any" else []
    pieces += ["/dev/shm ", MARKER + " {"]
    for piece in pieces:
        took = growth(lambda size: searching(pattern, line_of(piece, size)))
        assert took is None, f"{name} on {piece[:20]!r}: {took}"
