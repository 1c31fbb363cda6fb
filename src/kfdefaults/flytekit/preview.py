"""``kfdefaults render NAME --as flyte``: the TaskTemplate flytekit registers for a task on a profile.

The template comes from defining a real task with :class:`kfdefaults.Elastic` and serializing it with
flytekit's translator, as ``pyflyte register`` does; nothing here imitates flytekit's output.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any, Iterable, Mapping

from ..errors import KfdefaultsWarning
from ..show.output import order_k8s
from ..smp.schema import schema_type
from .elastic import Elastic
from .objects import flytekit_pod_template


def task_body() -> None:
    """The body of the previewed task (never run)."""


def flyte_task_template(
    name: str,
    *,
    platform: Iterable[str] = (),
    team: Iterable[str] = (),
    overrides: Mapping[str, Any] | None = None,
    image: str | None = None,
) -> dict[str, Any]:
    """Serialize a task using profile ``name`` and return its TaskTemplate as protobuf JSON (camelCase).

    Args:
        name: Profile name.
        platform: Extra platform-layer folders.
        team: Extra team-layer folders.
        overrides: The task layer in profile shape: ``elastic`` becomes ``Elastic(...)`` keyword arguments,
            ``pod_template`` becomes ``@task(pod_template=...)``.
        image: Container image; flytekit's default image when ``None``.

    Returns:
        ``{"id": ..., "type": "pytorch" | "python-task", "custom": ..., "k8sPod": {"podSpec": ...}, ...}``, the
        TaskTemplate message as Flyte stores it (numbers in ``custom`` are JSON doubles). The warnings of the
        overrides are not raised as Python warnings: the caller reports them (``Pipeline.warnings``).
    """
    from flytekit import task
    from flytekit.configuration import Image, ImageConfig, SerializationSettings
    from flytekit.tools.translator import get_serializable
    from google.protobuf.json_format import MessageToDict


    overrides = dict(overrides or {})
    with warnings.catch_warnings():  # the caller reports the warnings of the profile and of the overrides
        warnings.simplefilter("ignore", KfdefaultsWarning)
        config = Elastic(profile=name, platform=platform, team=team, **dict(overrides.get("elastic") or {}))
    kwargs: dict[str, Any] = {}
    section = overrides.get("pod_template")
    if section:
        kwargs["pod_template"] = flytekit_pod_template(
            section.get("spec") or {}, section.get("primary_container_name") or "primary",
            section.get("labels") or {}, section.get("annotations") or {},
        )
    defined = task(task_config=config, **kwargs)(task_body)
    image_config = ImageConfig.auto_default_image() if image is None else ImageConfig(default_image=Image.look_up_image_info("default", image))
    settings = SerializationSettings(image_config=image_config)
    spec = get_serializable(OrderedDict(), settings, defined)
    return _stable(MessageToDict(spec.template.to_flyte_idl()))


def _stable(template: dict[str, Any]) -> dict[str, Any]:
    """The template with its keys in a fixed order: protobuf maps come out in a different order every run.

    Keys are sorted at every level; the pod spec is ordered as ``render`` orders Kubernetes data (list items
    start with their merge key).
    """
    def ordered(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ordered(value[k]) for k in sorted(value)}
        if isinstance(value, list):
            return [ordered(v) for v in value]
        return value

    out = ordered(template)
    pod = out.get("k8sPod")
    if isinstance(pod, dict) and isinstance(pod.get("podSpec"), dict):
        pod["podSpec"] = order_k8s(pod["podSpec"], schema_type("PodSpec"))
    return out
