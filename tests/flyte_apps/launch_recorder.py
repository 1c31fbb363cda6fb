"""Record the torch elastic LaunchConfig a task launches with, then launch for real (or end the process there).

``install(path)`` replaces ``torch.distributed.launcher.api.elastic_launch`` (which flytekit's kfpytorch plugin
looks up at every run) with a wrapper that appends the configuration, as JSON, to ``path``; ``install_flyte2(path)``
does the same for Flyte 2's plugin, which imported the function by name (``flyteplugins.pytorch.task``).
"""

from __future__ import annotations

import json


def _recording(path: str, real, launch: bool = True):
    def recording_launch(config, entrypoint):
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({
                "min_nodes": config.min_nodes,
                "max_nodes": config.max_nodes,
                "nproc_per_node": config.nproc_per_node,
                "start_method": config.start_method,
                "monitor_interval": config.monitor_interval,
                "max_restarts": config.max_restarts,
                "rdzv_backend": config.rdzv_backend,
                "rdzv_configs": dict(config.rdzv_configs),
            }) + "\n")
        if not launch:  # what torch receives is recorded: the process ends here, as the pod would not
            import os

            os._exit(0)
        return real(config, entrypoint)

    return recording_launch


def install(path: str, launch: bool = True) -> None:
    """Record each LaunchConfig in ``path``; with ``launch=False`` the process then ends (exit 0) without
    starting workers."""
    import torch.distributed.launcher.api as api

    api.elastic_launch = _recording(path, api.elastic_launch, launch)


def install_flyte2(path: str, launch: bool = True) -> None:
    """Record each LaunchConfig of Flyte 2's plugin in ``path``; with ``launch=False`` the process then ends."""
    import flyteplugins.pytorch.task as plugin

    plugin.elastic_launch = _recording(path, plugin.elastic_launch, launch)
