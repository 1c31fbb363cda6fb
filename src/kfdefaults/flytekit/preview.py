"""``kfdefaults render NAME --as flyte`` for flytekit (:mod:`kfdefaults.runtime.preview`): the task serialized with
flytekit's translator, as ``pyflyte register`` does.

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
from collections import OrderedDict
from typing import Any, Iterator

from .elastic import Elastic  # noqa: F401  (the preview's config, kfdefaults.runtime.preview)
from .objects import OBJECTS  # noqa: F401


def config_class(target: Any) -> type:
    """The config a previewed task is defined with: flytekit's one target's ``Elastic``."""
    return Elastic


def task_body() -> None:
    """The body of the previewed task (never run; its name is the task's)."""


def serialize(name: str, config: Elastic, pod_template: Any, image: str | None) -> dict[str, Any]:
    """``@task(task_config=config, pod_template=pod_template)`` on :func:`task_body`, serialized with flytekit's translator
    (``image``, else flytekit's default image): its TaskTemplate as protobuf JSON."""
    from flytekit import task
    from flytekit.configuration import Image, ImageConfig, SerializationSettings
    from flytekit.tools.translator import get_serializable
    from google.protobuf.json_format import MessageToDict

    kwargs = {"pod_template": pod_template} if pod_template is not None else {}
    with torch_stand_in():
        defined = task(task_config=config, **kwargs)(task_body)
    image_config = ImageConfig.auto_default_image() if image is None else ImageConfig(default_image=Image.look_up_image_info("default", image))
    spec = get_serializable(OrderedDict(), SerializationSettings(image_config=image_config), defined)
    return MessageToDict(spec.template.to_flyte_idl())


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
