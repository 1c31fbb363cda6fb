"""What a test needs to run a task's pod the way the kubelet starts it, on this machine: the container's limits in
cgroups of its own, and ``/dev/shm`` mounted at the size of the pod's memory-backed volume
(``flyte_apps/as_kubelet.py``); and the receipt the task printed, read back from its log.

    with kubelet_cgroups(memory=3 << 30, cpu_millis=2000) as cgroups:
        proc = python.run([AS_KUBELET, json.dumps({"shm_size": str(512 << 20), "cgroups": cgroups}), POD_RUNNER, ...], ...)
    [receipt] = receipts(proc.stderr)

The cgroups are made under this process's own (cgroup v1's ``memory`` and ``cpu`` hierarchies, which this machine
has): a limit there is what the kubelet writes for a container (``memory.limit_in_bytes``; ``cpu.cfs_quota_us`` =
millicores x 100 for the 100 ms period, ``MilliCPUToQuota``). Both need root; :func:`why_not_kubelet` says why a
machine cannot.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from pathlib import Path
from typing import Iterator

from kfdefaults.receipt.document import receipts_in

AS_KUBELET = Path(__file__).resolve().parent / "flyte_apps" / "as_kubelet.py"
ROOT = Path("/sys/fs/cgroup")
_COUNT = itertools.count()


def _own(controller: str) -> Path | None:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            folder = ROOT / controller / path.lstrip("/")
            return folder if folder.is_dir() else ROOT / controller
    return None


def why_not_kubelet() -> str | None:
    """Why this machine cannot play the kubelet (not root, no cgroup v1 memory and cpu hierarchies to write), or
    ``None``."""
    if os.geteuid() != 0:
        return "not root: mounting a tmpfs and writing cgroups need it"
    for controller in ("memory", "cpu"):
        folder = _own(controller)
        if folder is None or not os.access(folder, os.W_OK):
            return f"no writable cgroup v1 {controller} hierarchy under {ROOT} (cgroup v2 only, or read-only)"
    return None


@contextlib.contextmanager
def kubelet_cgroups(memory: int | None = None, cpu_millis: int | None = None) -> Iterator[list[str]]:
    """Cgroups for one container: a ``memory`` one limited to ``memory`` bytes and a ``cpu`` one to ``cpu_millis``
    (``None``: no limit), removed afterwards. Yields their folders, for ``as_kubelet.py``'s ``cgroups``."""
    name = f"kfd-receipt-{os.getpid()}-{next(_COUNT)}"
    made = []
    try:
        for controller in ("memory", "cpu"):
            own = _own(controller)
            assert own is not None, why_not_kubelet()
            folder = own / name
            folder.mkdir()
            made.append(folder)
            if controller == "memory" and memory is not None:
                (folder / "memory.limit_in_bytes").write_text(str(memory))
            if controller == "cpu" and cpu_millis is not None:
                (folder / "cpu.cfs_period_us").write_text("100000")
                (folder / "cpu.cfs_quota_us").write_text(str(cpu_millis * 100))
        yield [str(f) for f in made]
    finally:
        for folder in made:
            for _ in range(50):  # the processes of the run may take a moment to leave it
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


def receipts(stderr: str) -> list[dict]:
    """The receipts a task printed on its standard error (its ``KFDEFAULTS_RECEIPT`` lines)."""
    found, bad = receipts_in(enumerate(stderr.splitlines(), 1), "<stderr>")
    assert not bad, bad
    return [r for _, r in found]


def receipt_lines(stderr: str) -> list[str]:
    """The human lines of the receipts (``kfdefaults receipt: ...``)."""
    return [line for line in stderr.splitlines() if line.startswith("kfdefaults receipt:")]
