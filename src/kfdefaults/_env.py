"""Yes/no settings read from the environment (``KFDEFAULTS_NO_CACHE``, ``KFDEFAULTS_NO_ENTRY_POINTS``, ...)."""

from __future__ import annotations

import os
from typing import Mapping

_OFF = frozenset({"", "0", "false", "no", "off", "n", "f"})
"""Values that leave a flag off, compared case-insensitively: unset and empty, and the usual spellings of no."""


def flag(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment variable ``name`` turns its setting on.

    Any value but an empty one, ``0``, ``false``, ``no``, ``off``, ``n`` or ``f`` (any case, spaces ignored)
    turns it on, so that ``KFDEFAULTS_NO_CACHE=false`` means what it says.
    """
    environ = os.environ if environ is None else environ
    return environ.get(name, "").strip().lower() not in _OFF
