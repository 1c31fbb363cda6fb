"""kfdefaults: layered profiles of pod templates and torch elastic settings for Flyte's kfpytorch plugin.

The public surface is small: :func:`resolve` and :class:`Resolved`, :class:`Elastic` (a drop-in for
``flytekitplugins.kfpytorch.Elastic`` with ``profile=``), :func:`carry_profiles` (the environment of a parent task
that compiles tasks on profiles in its pod), :func:`strategic_merge_patch`, and the errors.

A profile travels through the package in the order of its subpackages: :mod:`.read` (files -> documents),
:mod:`.layers` (where each layer reads), :mod:`.validate` (documents -> fragments), :mod:`.merge` (fragments ->
one :class:`Resolved`, merged by :mod:`.smp`), :mod:`.show` (text) and :mod:`.flytekit` (flytekit's objects);
:mod:`.pipeline` is the one pipeline every entry point walks, :mod:`.api` and :mod:`.cli` the entry points.

Every name is imported when first used: ``import kfdefaults`` costs next to nothing, and only
:class:`Elastic` imports flytekit (which takes over a second).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

from .version import __version__

_WHERE = {
    "Elastic": ".flytekit",
    "Finding": ".errors",
    "KfdefaultsError": ".errors",
    "KfdefaultsWarning": ".errors",
    "Location": ".errors",
    "MergeError": ".errors",
    "ProfileError": ".errors",
    "Resolved": ".merge.result",
    "carry_profiles": ".runtime.carry",
    "resolve": ".api",
    "strategic_merge_patch": ".smp.patch",
}

__all__ = sorted(_WHERE)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and editors (the names are in __all__ above)
    from .api import resolve  # noqa: F401
    from .errors import (  # noqa: F401
        Finding,
        KfdefaultsError,
        KfdefaultsWarning,
        Location,
        MergeError,
        ProfileError,
    )
    from .flytekit import Elastic  # noqa: F401
    from .merge.result import Resolved  # noqa: F401
    from .runtime.carry import carry_profiles  # noqa: F401
    from .smp.patch import strategic_merge_patch  # noqa: F401


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kfdefaults' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
