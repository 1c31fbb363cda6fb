"""``kfdefaults render NAME --as flyte --target flyte2`` (:mod:`kfdefaults.runtime.preview`): the task defined in a
``flyte.TaskEnvironment`` and serialized with Flyte 2's own translator (``translate_task_to_wire``, what
``flyte deploy`` calls), offline.
"""

from __future__ import annotations

import pathlib
from typing import Any

from .objects import OBJECTS  # noqa: F401  (the preview's builder of pod templates, kfdefaults.runtime.preview)


def config_class(target: Any) -> type:
    """The config a previewed task is defined with: ``Elastic`` (the task module registers its task plugin, and
    imports the PyTorch plugin, and torch), or for clustered tasks :class:`~.clustered.ClusteredConfig` (``flyte``
    alone)."""
    if target.name == "clustered":
        from .clustered import ClusteredConfig  # lazy: the clustered task's modules, for that target only

        return ClusteredConfig
    from .task import Elastic  # lazy: the PyTorch plugin imports torch (seconds), not needed for clustered tasks

    return Elastic


def task_body() -> None:
    """The body of the previewed task (never run; its name is the task's)."""


def serialize(name: str, config: Any, pod_template: Any, image: str | None) -> dict[str, Any]:
    """:func:`task_body` as a task of ``flyte.TaskEnvironment(name=name, plugin_config=config, pod_template=pod_template)``
    (of a :class:`~.clustered.ClusteredTaskEnvironment` for a ``ClusteredConfig``),
    serialized as ``flyte deploy --image IMAGE`` does (the image cache names ``image`` for an environment whose
    image is ``"auto"``; Flyte 2's ``"auto"`` image when ``None``): its TaskTemplate as protobuf JSON, without
    ``metadata.runtime`` (the installed flyte's version)."""
    import flyte
    from flyte._internal.image_cache import ImageCache
    from flyte._internal.runtime.task_serde import get_proto_task
    from flyte.models import SerializationContext
    from google.protobuf.json_format import MessageToDict

    environment = flyte.TaskEnvironment
    if config.TARGET.name == "clustered":
        from .clustered import ClusteredTaskEnvironment as environment  # lazy: as in config_class
    # a profile name may hold `--` or end in `-`, which an environment's name may not (flyte/_environment.py
    # is_snake_or_kebab_with_numbers): the previewed environment is the profile's name with its dashes run together
    env_name = "-".join(part for part in name.split("-") if part)
    env = environment(name=env_name, image="auto", plugin_config=config, pod_template=pod_template)
    defined = env.task(task_body)
    package_root = pathlib.Path(__file__).resolve().parents[2]  # the folder holding kfdefaults/, for the resolver
    cache = ImageCache(image_lookup={env.name: image}) if image is not None else None
    context = SerializationContext(version="preview", project="project", domain="development", org="org",
                                   root_dir=package_root, image_cache=cache)
    template = MessageToDict(get_proto_task(defined, context))
    template.get("metadata", {}).pop("runtime", None)
    return template
