"""``kfdefaults render NAME --as flyte --target flyte2``: the TaskTemplate Flyte 2 registers for a task on a profile.

The template comes from defining a real task in a ``flyte.TaskEnvironment`` with :class:`kfdefaults.flyte2.Elastic`
and serializing it with Flyte 2's own translator (``translate_task_to_wire``, what ``flyte deploy`` calls), offline;
nothing here imitates Flyte 2's output.
"""

from __future__ import annotations

import pathlib
from typing import Any, Iterable, Mapping

from ..show.output import stable_task_template
from .objects import flyte_pod_template
from .task import Elastic  # the task module registers Elastic's task plugin


def task_body() -> None:
    """The body of the previewed task (never run)."""


def flyte2_task_template(
    name: str,
    *,
    platform: Iterable[str] = (),
    team: Iterable[str] = (),
    overrides: Mapping[str, Any] | None = None,
    image: str | None = None,
) -> dict[str, Any]:
    """Serialize a Flyte 2 task using profile ``name`` and return its TaskTemplate as protobuf JSON (camelCase).

    Args:
        name: Profile name.
        platform: Extra platform-layer folders.
        team: Extra team-layer folders.
        overrides: The task layer in profile shape: ``elastic`` becomes ``Elastic(...)`` keyword arguments,
            ``pod_template`` the environment's ``pod_template``.
        image: The deployment's default image (what ``flyte deploy --image IMAGE`` gives an environment whose
            image is ``"auto"``: it loses to a profile's image, docs/flyte2.md); Flyte 2's ``"auto"`` image when
            ``None``.

    Returns:
        ``{"id": ..., "type": "pytorch" | "python-task", "custom": ..., "k8sPod": {"podSpec": ...}, ...}``, the
        TaskTemplate message as Flyte 2 sends it (numbers in ``custom`` are JSON doubles), without
        ``metadata.runtime`` (the installed flyte's version).
    """
    import flyte
    from flyte._internal.image_cache import ImageCache
    from flyte._internal.runtime.task_serde import get_proto_task
    from flyte.models import SerializationContext
    from google.protobuf.json_format import MessageToDict

    overrides = dict(overrides or {})
    config = Elastic(profile=name, platform=platform, team=team, **dict(overrides.get("elastic") or {}))
    section = overrides.get("pod_template")
    pod_template = None
    if section:
        pod_template = flyte_pod_template(section.get("spec") or {}, section.get("primary_container_name") or "primary",
                                          section.get("labels") or {}, section.get("annotations") or {})
    env = flyte.TaskEnvironment(name=name, image="auto", plugin_config=config, pod_template=pod_template)
    defined = env.task(task_body)
    package_root = pathlib.Path(__file__).resolve().parents[2]  # the folder holding kfdefaults/, for the resolver
    # flyte deploy --image IMAGE: the image cache names IMAGE for every environment whose image is "auto"
    cache = ImageCache(image_lookup={env.name: image}) if image is not None else None
    context = SerializationContext(version="preview", project="project", domain="development", org="org",
                                   root_dir=package_root, image_cache=cache)
    template = MessageToDict(get_proto_task(defined, context))
    template.get("metadata", {}).pop("runtime", None)
    return stable_task_template(template)
