"""The ``elastic`` sections: how one layer merges onto those below.

Everything here is needed to merge profiles that the cache already validated, so it stays free of pydantic
(which takes a tenth of a second to import and build); the models live in :mod:`kfdefaults.validate.model`.
"""

from __future__ import annotations

from typing import Any

from ..targets import FLYTEKIT

PLUGIN_ELASTIC_DEFAULTS: dict[str, Any] = dict(FLYTEKIT.defaults)
"""The defaults of ``flytekitplugins.kfpytorch.Elastic`` (1.16): :data:`kfdefaults.targets.FLYTEKIT`'s.

The layer below every profile depends on the target (:attr:`kfdefaults.targets.Target.defaults`).
"""


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
