"""Record the torch elastic LaunchConfig a task launches with, then launch for real.

``install(path)`` replaces ``torch.distributed.launcher.api.elastic_launch`` (which the kfpytorch plugin looks
up at every run) with a wrapper that appends the configuration, as JSON, to ``path``.
"""

from __future__ import annotations

import json


def install(path: str) -> None:
    import torch.distributed.launcher.api as api

    real = api.elastic_launch

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
        return real(config, entrypoint)

    api.elastic_launch = recording_launch
