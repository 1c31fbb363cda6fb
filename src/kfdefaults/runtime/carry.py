"""Profiles carried into a parent's pod, for the tasks compiled or submitted there again.

Two places compile a task on a profile in another task's pod: a ``@dynamic`` (flytekit's
``PythonFunctionTask.compile_into_workflow`` serializes the tasks its body calls, in its own pod) and a Flyte 2 task
that calls another (its controller serializes the child with ``translate_task_to_wire`` in the parent's pod). There
the child's ``Elastic(...)`` runs again, and the pod's image may hold other profile files, or none: the child must
not be resolved from them. The parent carries them instead: :func:`carry_profiles` gives it an environment
variable (:data:`~kfdefaults.settings.CARRIED_ENV`) holding, for each ``Elastic(...)`` call named, the profile as
registration read it (:mod:`kfdefaults.pipeline.carried`); in the parent's pod the call merges that, with the task
layer of the code, and the child compiles as it was registered. A call that finds nothing carried for it there is
an error when its task is compiled or submitted (:func:`not_carried`), never a task built from other files.

Only the parent's registration can carry: a ``@dynamic`` and a plain Flyte 2 environment are the SDK's own objects,
whose serialization kfdefaults takes no part in, so the parent names what it compiles, as it names its
environment and resources.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import Finding, KfdefaultsError, Location, ProfileError
from ..merge.result import SdkObjects
from ..pipeline.carried import decode, encode
from ..settings import CARRIED_ENV

MAX_VALUE = 96 * 1024
"""Bytes of the variable at most: Linux refuses a single environment string over 128 KiB (``MAX_ARG_STRLEN``),
and a pod's environment counts toward the object's size."""

_DECODED: dict[str, dict[str, Any]] = {}
"""The variable's value -> its calls, decoded once per process."""


def carried_calls(sdk: SdkObjects) -> dict[str, Any]:
    """What this pod's parent carries (:data:`~kfdefaults.settings.CARRIED_ENV`): runtime key -> the call's carried
    profile; ``{}`` outside a Flyte pod, whatever the environment says, as for the registered settings."""
    raw = os.environ.get(CARRIED_ENV)
    if not raw or not sdk.running_a_task():
        return {}
    if raw not in _DECODED:
        _DECODED[raw] = decode(raw)
    return _DECODED[raw]


def not_carried(call: str, carried: dict[str, Any], target: str) -> ProfileError:
    """The error of an ``Elastic(...)`` call for ``target``, in a Flyte pod that did not register it, whose task is
    compiled (a ``@dynamic``'s pod) or submitted (a Flyte 2 parent's) there with nothing carried for it."""
    where, fix = (("a Flyte 2 parent's pod that submits it", "flyte.TaskEnvironment(..., "
                   "env_vars=kfdefaults.carry_profiles(child_environment))") if target == "flyte2" else
                  ("a @dynamic's pod that compiles it", "@dynamic(environment=kfdefaults.carry_profiles(task))"))
    if carried:
        profiles = sorted({str(entry.get("profile")) for entry in carried.values() if isinstance(entry, dict)})
        why = f"the parent carries the profiles of other calls ({', '.join(profiles)}), not this one"
    else:
        why = f"the parent was registered without kfdefaults' settings for it (no {CARRIED_ENV})"
    return ProfileError([Finding(Location(call), "", (
        f"no settings were carried here for {call}: this is {where}, and {why}. kfdefaults never resolves it "
        f"from the profile files of this pod instead; give the parent the profiles of what it calls: {fix}"))])


def carry_profiles(*calls: Any) -> dict[str, str]:
    """The environment of a parent task that compiles or submits tasks on profiles in its own pod:
    ``@dynamic(environment=carry_profiles(train))``,
    ``flyte.TaskEnvironment(name=..., env_vars=carry_profiles(train_env))``.

    Each of ``calls`` is a task on a profile (flytekit's, Flyte 2's), a Flyte 2 ``TaskEnvironment`` whose
    ``plugin_config`` is a ``kfdefaults.flyte2.Elastic``, or an ``Elastic(...)`` itself (either SDK's); it names
    one ``Elastic(...)`` call, whose profile travels as registration read it (:mod:`kfdefaults.pipeline.carried`).
    In a pod (where the parent's module is imported again) it gives what that pod was carried of them, the same
    value.

    Returns:
        ``{"KFDEFAULTS_PROFILES": "..."}`` (:data:`~kfdefaults.settings.CARRIED_ENV`), ``{}`` when nothing is
            carried (a pod that has none of these calls' profiles).

    Raises:
        TypeError: no call given, or something that is no call on a profile.
        KfdefaultsError: the profiles to carry take more than the 98304 bytes (:data:`MAX_VALUE`) an environment
            variable may hold.
    """
    if not calls:  # the parent would carry nothing, and its children fail only when it runs, in its pod
        raise TypeError("carry_profiles() needs the tasks, Flyte 2 environments or Elastic(...) configs whose profiles "
                        "the parent carries: @dynamic(environment=kfdefaults.carry_profiles(train))")
    entries: dict[str, Any] = {}
    for given in calls:
        call = _call_of(given)
        entry = call.carried_entry()
        if entry is not None:
            entries[call.key] = entry
    if not entries:
        return {}
    value = encode(entries)
    if len(value) > MAX_VALUE:
        raise KfdefaultsError(f"carry_profiles(...): {len(entries)} profiles take {len(value)} bytes, more than the "
                              f"{MAX_VALUE} an environment variable may hold: carry only the tasks this parent calls")
    return {CARRIED_ENV: value}


def _call_of(given: Any) -> Any:
    """The ``Elastic(...)`` call (:class:`~kfdefaults.runtime.ProfileCall`) behind a task, an environment or a
    config."""
    for attribute in (None, "task_config", "plugin_config"):
        holder = given if attribute is None else getattr(given, attribute, None)
        call = getattr(holder, "__dict__", {}).get("_call") if holder is not None else None
        if call is not None and hasattr(call, "carried_entry"):
            return call
    raise TypeError(f"carry_profiles() takes tasks, Flyte 2 environments or Elastic(...) configs on a kfdefaults "
                    f"profile, not {given!r}")
