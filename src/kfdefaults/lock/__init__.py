"""Step 5, hold to the lock: ``kfdefaults.lock`` records the files each profile of a project is made of and what
they merge to; a merge that differs from it is an error, not a different result.

:mod:`.file` reads and writes the file, :mod:`.entries` names files the same on every machine, :mod:`.check`
compares a profile as it resolves now with its entry, :mod:`.scan` finds the profiles a project's code uses.
"""

from .check import lock_findings, locked_but_missing, platform_fallback_warning
from .entries import profile_files
from .file import LOCK_FILE, Lock, read_lock, sha256, write_lock
from .scan import Use, profiles_used

__all__ = ["LOCK_FILE", "Lock", "Use", "lock_findings", "locked_but_missing", "platform_fallback_warning", "profile_files", "profiles_used",
           "read_lock", "sha256", "write_lock"]
