"""Warnings to the author of a task, pointed at their own line (the ``@task`` or ``Elastic(...)`` call)."""

from __future__ import annotations

import sys
import warnings

from ..errors import KfdefaultsWarning


def caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the user's code: the first frame outside kfdefaults and
    flytekit (the ``@task`` line), counted from the caller of :func:`warnings.warn`."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.split(".")[0] not in ("kfdefaults", "flytekit", "flytekitplugins"):
            return level
        frame, level = frame.f_back, level + 1
    return 1


def warn_user(message: str) -> None:
    """A :class:`~kfdefaults.KfdefaultsWarning` pointed at the first line of the user's code on the stack."""
    warnings.warn(message, KfdefaultsWarning, stacklevel=caller_stacklevel())
