"""The task every agent of ``torch_agents.py`` runs, and the workloads its training processes run.

The task's ``Elastic`` is built from the merged elastic settings in ``KFD_TORCH_ELASTIC`` (JSON, the shape
``kfdefaults render NAME -o json`` prints under ``elastic``) by ``kfdefaults.flytekit.objects.plugin_elastic``,
the function through which ``kfdefaults.Elastic`` hands a profile's settings to flytekit's kfpytorch plugin. The
plugin's ``PytorchElasticFunctionTask._execute`` then builds torch's ``LaunchConfig`` and calls ``elastic_launch``
as in a pod.

The workload is ``KFD_TORCH_WORKLOAD`` (JSON, ``{"name": ..., parameters}``), read in each training process;
``agent`` names the agent (``KFD_TORCH_AGENT``, the pod) whose workers misbehave, 1 unless given:

* ``allreduce``: a gloo all-reduce of the ranks, then ``hold`` seconds of sleep (0); returns the sum x 100 + the
  world size;
* ``sigkill``: one all-reduce, then the agent's worker kills itself with SIGKILL ``after`` seconds (1) later
  while the others enter a second all-reduce; with ``first_attempt_only`` the restarted workers
  (``TORCHELASTIC_RESTART_COUNT`` above 0) are spared and succeed;
* ``raise``: the agent's worker raises ``ValueError`` ``after`` seconds (0); the others sleep ``hold`` seconds
  (20) and return;
* ``collective_timeout``: every worker but the agent's calls an all-reduce; that one sleeps ``hold`` seconds (20)
  and returns, so the others' all-reduce outlives the process group's timeout;
* ``dataloader``: a DataLoader with 2 worker processes and batches of 4 items of 1 MiB. ``via: tensors``: the
  batches reach the training process through shared memory (``/dev/shm``), as every DataLoader's do; ``via:
  mmap``: each item is also written into a 2 MiB sparse file mapped from ``/dev/shm`` (what a dataset caching
  samples in shared memory does).

Each training process prints ``KFD_START restart=N`` when it starts and, once in its process group,
``KFD_WORKER rank=R world=W restart=N`` (``N``: ``TORCHELASTIC_RESTART_COUNT``). Every workload passes ``pg_timeout`` (seconds, 60) to ``init_process_group(backend="gloo", timeout=...)``.
"""

import json
import os

from flytekit import task

from kfdefaults.flytekit.objects import plugin_elastic

ELASTIC = json.loads(os.environ["KFD_TORCH_ELASTIC"])


def _allreduce(dist, value: int) -> int:
    import torch

    tensor = torch.tensor([value])
    dist.all_reduce(tensor)
    return int(tensor.item())


def _fill_shared_mapping(item: int) -> None:
    import mmap

    path = f"/dev/shm/kfd-sample-{os.getpid()}-{item}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.unlink(path)
        os.ftruncate(fd, 2 << 20)  # sparse: the pages are taken when written
        with mmap.mmap(fd, 2 << 20) as mapping:
            for offset in range(0, 2 << 20, 4096):
                mapping[offset] = 1
    finally:
        os.close(fd)


def _dataloader(workload: dict) -> int:
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Samples(Dataset):
        def __len__(self) -> int:
            return 16

        def __getitem__(self, item: int):
            if workload.get("via") == "mmap":
                _fill_shared_mapping(item)
            return torch.full((1 << 18,), float(item))  # 1 MiB of float32

    return sum(int(batch.sum().item() > 0) for batch in DataLoader(Samples(), batch_size=4, num_workers=2))


@task(task_config=plugin_elastic(ELASTIC))
def work(x: int) -> int:
    import datetime
    import signal
    import time

    import torch.distributed as dist

    workload = json.loads(os.environ["KFD_TORCH_WORKLOAD"])
    name = workload["name"]
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    print(f"KFD_START restart={restart}", flush=True)
    if name == "dataloader":
        return _dataloader(workload)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=workload.get("pg_timeout", 60)))
    rank, world = dist.get_rank(), dist.get_world_size()
    chosen = os.environ["KFD_TORCH_AGENT"] == str(workload.get("agent", 1))
    print(f"KFD_WORKER rank={rank} world={world} restart={restart}", flush=True)
    if name == "raise":
        if chosen:
            time.sleep(workload.get("after", 0))
            raise ValueError(f"rank {rank} fails on purpose")
        time.sleep(workload.get("hold", 20))
        return 0
    if name == "collective_timeout" and chosen:
        time.sleep(workload.get("hold", 20))
        return 0
    total = _allreduce(dist, x + rank)
    if name == "sigkill":
        if chosen and (restart == "0" or not workload.get("first_attempt_only")):
            time.sleep(workload.get("after", 1))
            os.kill(os.getpid(), signal.SIGKILL)
        total = _allreduce(dist, total)
    time.sleep(workload.get("hold", 0))
    dist.destroy_process_group()
    return total * 100 + world
