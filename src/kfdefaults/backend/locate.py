"""Which layer of a merged profile wrote a value, and where: the place a backend problem is reported at."""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from ..errors import Location
from ..merge.result import Resolved
from ..paths import Select, format_path
from ..validate.fragment import Fragment


class Setter(NamedTuple):
    """The fragment that wrote a value, its position among the profile's fragments, and where it wrote it."""

    index: int
    fragment: Fragment
    location: Location


def _find(data: Any, steps: Sequence[Any]) -> tuple | None:
    """Follow ``steps`` (keys, and ``(merge key, value)`` pairs for list items) into ``data``: the concrete path
    (keys and list indices) to a non-null value, or ``None``."""
    path: list[Any] = []
    node = data
    for step in steps:
        if isinstance(step, tuple):
            key, wanted = step
            index = next((i for i, item in enumerate(node) if isinstance(item, dict) and item.get(key) == wanted),
                         None) if isinstance(node, list) else None
            if index is None:
                return None
            path.append(index)
            node = node[index]
        else:
            if not isinstance(node, dict) or step not in node:
                return None
            path.append(step)
            node = node[step]
    return tuple(path) if node is not None else None


def pod_setter(resolved: Resolved, steps: Sequence[Any], *, skip_layers: Sequence[str] = ("cluster",)) -> Setter | None:
    """The highest fragment that writes the pod template value at ``steps`` (PodTemplateSpec shape:
    ``["spec", "containers", ("name", "primary"), "volumeMounts", ("mountPath", "/dev/shm")]``)."""
    for index in range(len(resolved.fragments) - 1, -1, -1):
        fragment = resolved.fragments[index]
        if fragment.layer in skip_layers:
            continue
        found = _find(fragment.pod_template, steps)
        if found is None:
            continue
        file_path = ("pod_template",) + (found[1:] if found[:1] == ("metadata",) else found)
        return Setter(index, fragment, fragment.location(file_path))
    return None


def elastic_setter(resolved: Resolved, steps: Sequence[Any]) -> Setter | None:
    """The highest fragment that writes the ``elastic`` setting at ``steps`` (``["run_policy",
    "active_deadline_seconds"]``)."""
    for index in range(len(resolved.fragments) - 1, -1, -1):
        fragment = resolved.fragments[index]
        found = _find(fragment.elastic, steps)
        if found is not None:
            return Setter(index, fragment, fragment.location(("elastic",) + found))
    return None


def primary_name_setter(resolved: Resolved) -> Setter | None:
    """The highest fragment that sets ``primary_container_name``."""
    for index in range(len(resolved.fragments) - 1, -1, -1):
        fragment = resolved.fragments[index]
        if fragment.primary_container_name is not None:
            return Setter(index, fragment, fragment.location(("pod_template", "primary_container_name")))
    return None


def profile_path(steps: Sequence[Any]) -> str:
    """``steps`` written as the profile's dotted path (``pod_template.spec.containers[name=primary]...``)."""
    parts: list[Any] = ["pod_template"]
    steps = list(steps)
    for step in steps[1:] if steps[:1] == ["metadata"] else steps:
        parts.append(Select(*step) if isinstance(step, tuple) else step)
    return format_path(parts)


def where(setter: Setter | None) -> str:
    """``[layer] FILE:LINE:COLUMN`` of a setter, for a message that names several places."""
    return f"[{setter.fragment.layer}] {setter.location}" if setter else "no layer (flytekit's default)"
