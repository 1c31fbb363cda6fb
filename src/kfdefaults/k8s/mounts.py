"""Mount paths as the kubelet sees them, and the pod's shared memory.

A container's mounts are merged by ``mountPath`` (its patch merge key), compared as written: ``/dev/shm``,
``/dev/shm/`` and ``//dev/shm`` are three merge keys, yet the kubelet mounts all three on the one directory
``/dev/shm``. Every check and adapter that asks "is this /dev/shm?" asks :func:`is_shm_mount`.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

SHM_PATH = "/dev/shm"
"""Where a container's shared memory is: a memory-backed ``emptyDir`` mounted here replaces the 64 MiB default."""


def normal_mount_path(path: Any) -> str:
    """The directory a mount path names: repeated slashes collapsed, ``.`` and ``..`` resolved, no trailing
    slash (``//dev/./shm/`` -> ``/dev/shm``); ``""`` for anything but a non-empty string."""
    if not isinstance(path, str) or not path:
        return ""
    return posixpath.normpath(re.sub(r"/{2,}", "/", path))


def is_shm_mount(path: Any) -> bool:
    """Whether a ``mountPath`` is ``/dev/shm``, however written."""
    return normal_mount_path(path) == SHM_PATH
