"""kfdefaults: layered profiles of pod templates and torch elastic settings for Flyte's kfpytorch plugin.

The public surface is small: :func:`resolve` and :class:`Resolved`, :class:`Elastic` (a drop-in for
``flytekitplugins.kfpytorch.Elastic`` with ``profile=``), :func:`strategic_merge_patch`, and the errors.

Every name is imported when first used: ``import kfdefaults`` costs next to nothing, and only
:class:`Elastic` imports flytekit (which takes over a second).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

__version__ = "0.1.0"

_WHERE = {
    "Elastic": "._flyte",
    "Finding": "._errors",
    "KfdefaultsError": "._errors",
    "KfdefaultsWarning": "._flyte",
    "Location": "._errors",
    "MergeError": "._errors",
    "ProfileError": "._errors",
    "Resolved": "._api",
    "resolve": "._api",
    "strategic_merge_patch": "._smp",
}

__all__ = sorted(_WHERE)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and editors
    from ._api import Resolved, resolve
    from ._errors import Finding, KfdefaultsError, Location, MergeError, ProfileError
    from ._flyte import Elastic, KfdefaultsWarning
    from ._smp import strategic_merge_patch


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kfdefaults' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
