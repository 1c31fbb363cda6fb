"""Step 5, hold to the lock: ``kfdefaults.lock`` records the files each profile of a project is made of and what
they merge to; a merge that differs from it is an error, not a different result.

:mod:`.file` reads and writes the file, :mod:`.entries` names files the same on every machine, :mod:`.check`
compares a profile as it resolves now with its entry, :mod:`.scan` finds the profiles a project's code uses.

Each name is imported when first used: a project without a lock file (most renders) imports none of them.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

LOCK_FILE = "kfdefaults.lock"
"""The lock file's name, beside the project's ``pyproject.toml``."""

_WHERE = {
    "Lock": ".file", "MAX_LOCK_BYTES": ".file", "read_lock": ".file", "sha256": ".file", "write_lock": ".file",
    "lock_findings": ".check", "locked_but_missing": ".check", "platform_fallback_warning": ".check",
    "profile_files": ".entries", "Use": ".scan", "profiles_used": ".scan",
}

__all__ = sorted(["LOCK_FILE", *_WHERE])

if TYPE_CHECKING:  # pragma: no cover - for type checkers and editors
    from .check import lock_findings, locked_but_missing, platform_fallback_warning  # noqa: F401
    from .entries import profile_files  # noqa: F401
    from .file import Lock, read_lock, sha256, write_lock  # noqa: F401
    from .scan import Use, profiles_used  # noqa: F401


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
