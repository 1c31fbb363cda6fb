"""The ``elastic`` section without pydantic: the plugin's defaults, the rendezvous settings, and the merge.

Everything here is needed to merge and print profiles that the cache already validated, so it stays free of
pydantic (which takes a tenth of a second to import and build); the models live in :mod:`kfdefaults._model`.
"""

from __future__ import annotations

from typing import Any

PLUGIN_ELASTIC_DEFAULTS: dict[str, Any] = {
    "nnodes": 1,
    "nproc_per_node": 1,
    "start_method": "spawn",
    "monitor_interval": 5,
    "max_restarts": 0,
    "rdzv_configs": {"timeout": 900, "join_timeout": 900},
}
"""The defaults of ``flytekitplugins.kfpytorch.Elastic`` (1.16), the layer below every profile.

Kept here so that rendering does not import flytekit; a test compares them with the installed plugin.
"""

RDZV_SETTINGS: dict[str, tuple[str, str]] = {
    "join_timeout": ("seconds", "c10d: time for every node to join the rendezvous; torch's default 600 s "
                     "(dynamic_rendezvous.RendezvousTimeout)"),
    "last_call_timeout": ("seconds", "c10d: extra wait once nnodes MIN have joined; default 30 s"),
    "close_timeout": ("seconds", "c10d: time for the rendezvous to close; default 30 s"),
    "heartbeat_timeout": ("seconds", "c10d: time for a keep-alive heartbeat to complete; default 5 s"),
    "keep_alive_interval": ("seconds", "c10d: seconds between keep-alive heartbeats; default 5"),
    "keep_alive_max_attempt": ("count", "c10d: missed heartbeats before a node counts as dead; default 3"),
    "read_timeout": ("seconds", "c10d TCPStore: time for a store read; default 60 s "
                     "(c10d_rendezvous_backend._create_tcp_store)"),
    "is_host": ("bool", "c10d TCPStore: whether this node hosts the store; guessed from the hostname if unset"),
    "store_type": ("store", "c10d: the store, tcp (default) or file"),
    "timeout": ("seconds", "torch.distributed.launcher.LaunchConfig (default 900 s); read by the static and "
                "etcd backends, not by c10d, which the kfpytorch plugin uses"),
}
"""Every ``rdzv_configs`` key that the rendezvous of a kfpytorch task reads, with its kind and what reads it.

The plugin always uses the c10d backend (``rdzv_backend="c10d"``): ``DynamicRendezvousHandler`` reads the
``*_timeout`` keys through ``RendezvousParameters.get_as_int`` and the keep-alive settings;
``C10dRendezvousBackend`` reads ``read_timeout``, ``is_host`` and ``store_type``. Kinds: ``seconds`` (an
int > 0), ``count`` (an int >= 1), ``bool``, ``store`` (``tcp`` or ``file``)."""

RDZV_INT_SECONDS = tuple(k for k, (kind, _) in RDZV_SETTINGS.items() if kind == "seconds")
"""Rendezvous settings in whole seconds."""

RDZV_KEYS = tuple(RDZV_SETTINGS)
"""Every ``rdzv_configs`` key that torch's rendezvous backends read (torch.distributed.elastic.rendezvous)."""

RDZV_STORE_TYPES = ("tcp", "file")
"""``store_type`` values c10d accepts (``c10d_rendezvous_backend.create_backend``)."""

def merge_elastic(base: dict[str, Any], layer: dict[str, Any]) -> dict[str, Any]:
    """Merge one layer's ``elastic`` section onto the settings below it.

    Keys merge one by one; ``rdzv_configs`` and ``run_policy`` merge per key inside; ``null`` deletes a key.

    Args:
        base: Settings so far (not modified).
        layer: The section as written in one layer, ``None`` values included.

    Returns:
        New settings.
    """
    import copy

    return _ELASTIC_MERGER.merge(copy.deepcopy(base), copy.deepcopy(layer))


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    return value


def _merge_dicts_deleting_nulls(config: Any, path: list, base: dict, nxt: dict) -> dict:
    for key, value in nxt.items():
        if value is None:
            base.pop(key, None)
        elif key in base:
            base[key] = config.value_strategy(path + [key], base[key], value)
        else:
            base[key] = _strip_nulls(value)
    return base


def _make_merger() -> Any:
    from deepmerge import Merger

    return Merger([(dict, _merge_dicts_deleting_nulls)], ["override"], ["override"])


class _LazyMerger:
    def __getattr__(self, name: str) -> Any:
        merger = _make_merger()
        globals()["_ELASTIC_MERGER"] = merger
        return getattr(merger, name)


_ELASTIC_MERGER: Any = _LazyMerger()
