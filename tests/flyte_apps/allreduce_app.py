"""A workflow on the builtin cpu-small profile: two CPU workers sum their ranks with a gloo all-reduce."""

from flytekit import task, workflow

from kfdefaults import Elastic


@task(task_config=Elastic(profile="cpu-small"))
def allreduce(x: int) -> int:
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    value = torch.tensor([x + dist.get_rank()])
    dist.all_reduce(value)
    world = dist.get_world_size()
    dist.destroy_process_group()
    return int(value.item()) * 100 + world


@workflow
def wf(x: int) -> int:
    return allreduce(x=x)
