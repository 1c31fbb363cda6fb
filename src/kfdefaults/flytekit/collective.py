"""``elastic.nccl_collective_timeout_sec`` under flytekit: the default of ``init_process_group(backend="nccl")`` in
every worker, set by kfdefaults as Flyte 2's plugin sets it.

flytekitplugins-kfpytorch passes no timeout to ``init_process_group``: the training code calls it, and without
``timeout=`` torch takes its default (10 minutes for NCCL from torch 2.2). Flyte 2's plugin has
``nccl_collective_timeout_sec``: each worker, before the task function runs, sets the module globals
``default_pg_nccl_timeout`` of ``torch.distributed.constants`` and ``torch.distributed.distributed_c10d``, which
``_get_default_timeout`` reads when ``init_process_group`` is called (``flyteplugins.pytorch.task.launcher_entrypoint``).
:class:`~kfdefaults.flytekit.task.ProfileElasticTask` does the same for flytekit: the task function the plugin
hands to ``elastic_launch`` (pickled for ``spawn``, called in the fork for ``fork``) is :class:`WithCollectiveTimeout`.

The same profile setting means the same on both SDKs: it changes the default for ``backend="nccl"`` only; a
``timeout=`` the code passes wins, and gloo or no backend (``init_process_group()``, whose default is 30 minutes
even when NCCL runs the GPU collectives) keep theirs. ``kfdefaults timeline`` says which applies.
"""

from __future__ import annotations

from typing import Any, Callable


def set_nccl_default(seconds: int) -> None:
    """Make ``seconds`` the default timeout of ``init_process_group(backend="nccl")`` in this process (torch 2.2 and
    later: ``_get_default_timeout``, ``torch/distributed/distributed_c10d.py``)."""
    from datetime import timedelta

    import torch.distributed.constants as constants
    import torch.distributed.distributed_c10d as c10d

    value = timedelta(seconds=seconds)
    constants.default_pg_nccl_timeout = value
    c10d.default_pg_nccl_timeout = value


class WithCollectiveTimeout:
    """A task function that sets the NCCL default timeout in its worker, then runs.

    A class of an importable module, so that ``cloudpickle`` (the plugin's ``spawn`` path) pickles it by reference
    and the function it holds by value, as it did the function alone.

    Attributes:
        function: The task function.
        seconds: The timeout, in seconds.
    """

    def __init__(self, function: Callable[..., Any], seconds: int) -> None:
        self.function = function
        self.seconds = seconds

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        set_nccl_default(self.seconds)
        return self.function(*args, **kwargs)
