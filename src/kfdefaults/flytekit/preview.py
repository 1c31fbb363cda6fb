"""``kfdefaults render NAME --as flyte``: the TaskTemplate flytekit registers for a task on a profile.

The template comes from defining a real task with :class:`kfdefaults.Elastic` and serializing it with
flytekit's translator, as ``pyflyte register`` does; nothing here imitates flytekit's output.

One cost is cut: the kfpytorch plugin imports ``torch.distributed.run`` when a task is defined, only to read
``nnodes`` with its ``parse_min_max_nnodes`` (flytekitplugins/kfpytorch/task.py, PytorchElasticFunctionTask),
and importing torch takes seconds. Where torch is not imported yet, :func:`torch_stand_in` gives the plugin that
one function, written as torch 2.13 writes it, for the time the task is defined; a test compares the templates
of both ways. Nothing else of torch is read to serialize a task.
"""

from __future__ import annotations

import contextlib
import sys
import types
import warnings
from collections import OrderedDict
from typing import Any, Iterable, Iterator, Mapping

from ..errors import KfdefaultsWarning
from ..show.output import stable_task_template
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
    with torch_stand_in():
        defined = task(task_config=config, **kwargs)(task_body)
    image_config = ImageConfig.auto_default_image() if image is None else ImageConfig(default_image=Image.look_up_image_info("default", image))
    settings = SerializationSettings(image_config=image_config)
    spec = get_serializable(OrderedDict(), settings, defined)
    return stable_task_template(MessageToDict(spec.template.to_flyte_idl()))


def parse_min_max_nnodes(nnodes: str) -> tuple[int, int]:
    """``"2:4"`` -> ``(2, 4)``, ``"3"`` -> ``(3, 3)``: torch 2.13's ``torch.distributed.run.parse_min_max_nnodes``.

    Raises:
        RuntimeError: more than one ``:`` (as torch raises it); ValueError: not integers.
    """
    parts = nnodes.split(":")
    if len(parts) == 1:
        return int(parts[0]), int(parts[0])
    if len(parts) == 2:
        return int(parts[0]), int(parts[1])
    raise RuntimeError(f'nnodes={nnodes} is not in "MIN:MAX" format')


@contextlib.contextmanager
def torch_stand_in() -> Iterator[None]:
    """While a task is defined, ``torch.distributed.run`` is a module holding :func:`parse_min_max_nnodes` alone,
    unless torch is imported already (then the real one serves). Taken away afterwards."""
    if "torch" in sys.modules:
        yield
        return
    names = ("torch", "torch.distributed", "torch.distributed.run")
    modules = {name: types.ModuleType(name) for name in names}
    for name in names[:-1]:
        modules[name].__path__ = []  # a package: its submodules are looked up in sys.modules
    modules["torch"].distributed = modules["torch.distributed"]  # type: ignore[attr-defined]
    modules["torch.distributed"].run = modules["torch.distributed.run"]  # type: ignore[attr-defined]
    modules["torch.distributed.run"].parse_min_max_nnodes = parse_min_max_nnodes  # type: ignore[attr-defined]
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name in names:
            if sys.modules.get(name) is modules[name]:
                del sys.modules[name]
