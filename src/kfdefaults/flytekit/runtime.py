"""Run time equals registration: the settings resolved when a task is registered travel with it.

In the pod, flytekit imports the task's module again, and the image may not hold the profile files. The
settings resolved at registration are in the primary container's environment (:data:`RUNTIME_ENV`), keyed by
the ``Elastic(...)`` call that made them, and ``Elastic(...)`` uses them there instead of reading files.

Only there: the variable is read only while a task runs in a Flyte container (:func:`in_flyte_task_container`),
so one left over in a shell or copied from a pod changes neither ``render`` nor a registration.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..cache import digest
from ..settings import RUNTIME_ENV

FLYTE_POD_SIGNALS = ("FLYTE_INTERNAL_EXECUTION_ID", "_F_NM")
"""The execution name Flyte's backend sets in every task pod, never at registration, under its two names
(flytekit.bin.entrypoint.setup_execution reads the first one set)."""


def in_flyte_task_container() -> bool:
    """Whether this process is running a task in a Flyte container, known the way flytekit knows it.

    ``pyflyte-execute`` (the command of every Flyte task container) reads the execution name the backend puts
    in the pod's environment (:data:`FLYTE_POD_SIGNALS`) and imports the task's module inside a context in the
    ``TASK_EXECUTION`` mode (``setup_execution``); a local run (``pyflyte run``, calling the task) uses the
    ``LOCAL_*`` modes, and ``pyflyte register`` or ``kfdefaults render`` none. Both must hold.
    """
    if not any(name in os.environ for name in FLYTE_POD_SIGNALS):
        return False
    from flytekit.core.context_manager import ExecutionState, FlyteContextManager

    state = FlyteContextManager.current_context().execution_state
    return state is not None and state.mode == ExecutionState.Mode.TASK_EXECUTION


def runtime_key(profile: str, platform: list[str], team: list[str], overrides: dict[str, Any]) -> str:
    """Identifies one ``Elastic(...)`` call of the source code, the same at registration and in the pod."""
    text = json.dumps([profile, platform, team, overrides], sort_keys=True, default=repr)
    return digest(text.encode())[:16]


def embedded_settings(key: str) -> dict[str, Any] | None:
    """The settings registered for ``key``, when running a task in a Flyte container whose environment carries
    them; ``None`` anywhere else, whatever the environment says."""
    raw = os.environ.get(RUNTIME_ENV)
    if not raw or not in_flyte_task_container():
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("key") == key and isinstance(data.get("elastic"), dict):
        return data["elastic"]
    return None
