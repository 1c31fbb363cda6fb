"""Run time equals registration: the settings resolved when a task is registered travel with it.

In the pod, flytekit imports the task's module again, and the image may not hold the profile files. The
settings resolved at registration are in the primary container's environment (:data:`RUNTIME_ENV`), keyed by
the ``Elastic(...)`` call that made them, and ``Elastic(...)`` uses them there instead of reading files.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..cache import digest
from ..settings import RUNTIME_ENV

FLYTE_POD_SIGNAL = "FLYTE_INTERNAL_EXECUTION_ID"
"""Set by Flyte's backend in every task pod, never at registration."""


def runtime_key(profile: str, platform: list[str], team: list[str], overrides: dict[str, Any]) -> str:
    """Identifies one ``Elastic(...)`` call of the source code, the same at registration and in the pod."""
    text = json.dumps([profile, platform, team, overrides], sort_keys=True, default=repr)
    return digest(text.encode())[:16]


def embedded_settings(key: str) -> dict[str, Any] | None:
    """The settings registered for ``key``, when running in a pod whose environment carries them."""
    raw = os.environ.get(RUNTIME_ENV)
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("key") == key and isinstance(data.get("elastic"), dict):
        return data["elastic"]
    return None
