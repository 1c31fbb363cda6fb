"""kfdefaults: layered profiles of pod templates and torch elastic settings for Flyte's kfpytorch plugin.

The public surface is small: :func:`resolve` and :class:`Resolved`, :class:`Elastic` (a drop-in for
``flytekitplugins.kfpytorch.Elastic`` with ``profile=``), :func:`strategic_merge_patch`, and the errors.
``import kfdefaults`` imports neither flytekit nor the kubernetes client; :class:`Elastic` imports flytekit
when first used.
"""

from typing import Any

from ._errors import Finding, KfdefaultsError, Location, MergeError, ProfileError
from ._smp import strategic_merge_patch

__all__ = [
    "Elastic",
    "Finding",
    "KfdefaultsError",
    "Location",
    "MergeError",
    "ProfileError",
    "Resolved",
    "resolve",
    "strategic_merge_patch",
]


def __getattr__(name: str) -> Any:
    if name in ("resolve", "Resolved"):
        from . import _api

        return getattr(_api, name)
    if name == "Elastic":
        from ._flyte import Elastic

        return Elastic
    raise AttributeError(f"module 'kfdefaults' has no attribute {name!r}")
