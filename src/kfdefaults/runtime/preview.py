"""``kfdefaults render NAME --as flyte``: the TaskTemplate the target SDK registers for a task on a profile.

The template comes from defining a real task with the target adapter's ``Elastic`` (a clustered task's
``ClusteredConfig``) and serializing it with the
SDK's own translator, as registering does; nothing here imitates an SDK's output. What differs between the SDKs
is the adapter's ``serialize`` (:mod:`kfdefaults.flytekit.preview`, :mod:`kfdefaults.flyte2.preview`); the
adapter of a target is :attr:`kfdefaults.targets.Target.adapter`.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Iterable, Mapping

from ..errors import KfdefaultsWarning
from ..show.output import stable_task_template
from ..targets import Target


def task_template(
    target: Target,
    name: str,
    *,
    platform: Iterable[str] = (),
    team: Iterable[str] = (),
    overrides: Mapping[str, Any] | None = None,
    image: str | None = None,
) -> dict[str, Any]:
    """Serialize a task of ``target`` using profile ``name`` and return its TaskTemplate as protobuf JSON (camelCase).

    Args:
        target: The SDK.
        name: Profile name.
        platform: Extra platform-layer folders.
        team: Extra team-layer folders.
        overrides: The task layer in profile shape: ``elastic`` becomes ``Elastic(...)`` keyword arguments,
            ``pod_template`` the task's (flytekit's ``@task(pod_template=...)``, Flyte 2's environment's).
        image: Container image (for Flyte 2, the deployment's default image: what ``flyte deploy --image IMAGE``
            gives an environment whose image is ``"auto"``; it loses to a profile's image, docs/flyte2.md); the
            SDK's default image when ``None``.

    Returns:
        ``{"id": ..., "type": "pytorch" | "python-task" | "clustered-task", "custom": ..., "k8sPod": {"podSpec": ...}, ...}``, the
        TaskTemplate message as the SDK sends it (numbers in ``custom`` are JSON doubles), without the installed
        SDK's version. The warnings of the profile and of the overrides are not raised as Python warnings: the
        caller reports them (``Pipeline.warnings``); those of defining the task are (which image wins).
    """
    # lazy: the adapter imports its SDK (a second or more), for this command only
    adapter = importlib.import_module(f"kfdefaults.{target.adapter}.preview")
    overrides = dict(overrides or {})
    with warnings.catch_warnings():  # the caller reports the warnings of the profile and of the overrides
        warnings.simplefilter("ignore", KfdefaultsWarning)
        config = adapter.config_class(target)(profile=name, platform=platform, team=team,
                                             **dict(overrides.get("elastic") or {}))
    section = overrides.get("pod_template")
    pod_template = None
    if section:
        pod_template = adapter.OBJECTS.plain_pod_template(
            section.get("spec") or {}, section.get("primary_container_name") or "primary",
            section.get("labels") or {}, section.get("annotations") or {})
    return stable_task_template(adapter.serialize(name, config, pod_template, image))
