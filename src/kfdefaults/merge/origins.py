"""Where a fragment set or changed a value: the layer, and the FILE:LINE:COLUMN (or the label) in it.

A set value is located where the fragment wrote it: the path in the file is found by walking the fragment's own
data, a list item named ``[name=primary]`` becoming the index of that item in the file. A removal (or any other
change, such as a broken lock's) is located at what made it: the ``null``, the ``$patch`` directive, the
replacing list. Task-layer values name the ``--set KEY=VALUE`` (or keyword argument) that set them; values no
layer set name the SDK default. Which fragment set which value is :mod:`.provenance`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from ..errors import Location
from ..paths import PathT, Select, format_path
from ..targets import Target
from ..validate.fragment import Fragment
from ..validate.task_layer import task_label
from .leaves import directive_only, item_index, value_at

DEFAULT_LAYER = "default"
"""The layer of values no profile set: the target plugin's ``Elastic`` defaults, the SDK's primary container name."""


@dataclass(frozen=True)
class Origin:
    """Who set or removed a value.

    Attributes:
        layer: ``default``, ``builtin``, ``platform``, ``team`` or ``task``.
        source: The profile file, or what else set it (``--set elastic.nnodes=2``, ``plugin default``).
        location: Where: a file, line and column, or a label (``--set elastic.nnodes=2``) with line 0.
    """

    layer: str
    source: str
    location: Location

    @property
    def where(self) -> str:
        """``FILE:LINE`` or the label."""
        loc = self.location
        return f"{loc.file}:{loc.line}" if loc.line else loc.file

    def to_dict(self) -> dict[str, Any]:
        """``{"layer", "source", "file", "line", "column"}``; ``file``, ``line``, ``column`` are ``None`` for a value
        not set in a file, which has a ``label`` instead (``--set elastic.nnodes=2``, the SDK default's name)."""
        loc = self.location
        in_file = bool(loc.line)
        out = {"layer": self.layer, "source": self.source, "file": loc.file if in_file else None,
               "line": loc.line if in_file else None, "column": (loc.column or 1) if in_file else None}
        if not in_file:
            out["label"] = loc.file
        return out


def fragment_profile(fragment: Fragment) -> dict[str, Any]:
    """A fragment in the shape of a profile file (``labels`` and ``annotations`` back under ``pod_template``).

    Its containers carry the names :func:`~kfdefaults.merge.primary.assign_primary_container` gave them; list
    items are in the order of the file, so an item's index here is its index in the file.
    """
    out: dict[str, Any] = {}
    if fragment.description is not None:
        out["description"] = fragment.description
    if fragment.elastic:
        out["elastic"] = fragment.elastic
    pod: dict[str, Any] = {}
    if fragment.primary_container_name is not None:
        pod["primary_container_name"] = fragment.primary_container_name
    patch = fragment.pod_template or {}
    metadata = patch.get("metadata")
    if isinstance(metadata, Mapping):
        pod.update(metadata)
    if "spec" in patch:
        pod["spec"] = patch["spec"]
    if pod:
        out["pod_template"] = pod
    return out


def _walk(data: Any, path: PathT, *, stop_at_index: bool = False) -> list[tuple[PathT, Any]]:
    """Follow a leaf path into a fragment's data as far as it goes.

    Returns:
        ``[(file_path, node), ...]`` from the root to the deepest node reached; ``file_path`` is in the
        shape :meth:`Fragment.location` takes (``Select`` items turned into the item's index in the list).
    """
    trail: list[tuple[PathT, Any]] = [((), data)]
    node, file_path = data, ()
    for part in path:
        if isinstance(part, Select):
            if not isinstance(node, list):
                break
            index = item_index(node, part)
            if index is None:
                break
            node, file_path = node[index], file_path + (index,)
        elif isinstance(part, int) and not isinstance(part, bool):
            # the merged list's item `part`, counted in the file without its directives ($patch: replace)
            items = [i for i, item in enumerate(node) if not directive_only(item)] if isinstance(node, list) else []
            if stop_at_index or part >= len(items):
                break
            node, file_path = node[items[part]], file_path + (items[part],)
        else:
            if not isinstance(node, Mapping) or part not in node:
                break
            node, file_path = node[part], file_path + (part,)
        trail.append((file_path, node))
    return trail


def _origin(fragment: Fragment, location: Location) -> Origin:
    """An origin in ``fragment``; a task-layer value's source is what set it (``--set KEY=VALUE``)."""
    source = location.file if fragment.document is None and not location.line else fragment.source
    return Origin(fragment.layer, source, location)


def set_origin(fragment: Fragment, path: PathT) -> Origin:
    """Where ``fragment`` writes the value at ``path`` (a leaf, or a list item or mapping holding leaves)."""
    trail = _walk(fragment_profile(fragment), path)
    return _origin(fragment, location_in(fragment, path, trail[-1][0]))


def change_origin(fragment: Fragment, path: PathT) -> Origin:
    """What in ``fragment`` removed or changed the value at ``path``: the deepest ``null`` or directive on the way,
    else the deepest key (or scalar) of the path that it writes."""
    trail = _walk(fragment_profile(fragment), path, stop_at_index=True)
    depth = len(trail) - 1
    for i in range(depth, 0, -1):
        file_path, node = trail[i]
        if node is None:
            return _origin(fragment, location_in(fragment, path, file_path, key=True))
        cause: PathT | None = None
        if isinstance(node, Mapping):
            nxt = path[i] if i < len(path) else None
            if node.get("$patch") in ("delete", "replace"):
                cause = file_path + ("$patch",)
            elif "$retainKeys" in node:
                cause = file_path + ("$retainKeys",)
            elif isinstance(nxt, str) and f"$deleteFromPrimitiveList/{nxt}" in node:
                cause = file_path + (f"$deleteFromPrimitiveList/{nxt}",)
        elif isinstance(node, list):
            j = next((j for j, item in enumerate(node) if isinstance(item, Mapping) and item.get("$patch") == "replace"), None)
            if j is not None:
                cause = file_path + (j, "$patch")
        if cause is not None:
            return _origin(fragment, location_in(fragment, path, cause))
    file_path, node = trail[depth]
    return _origin(fragment,
                  location_in(fragment, path, file_path, key=isinstance(node, (list, Mapping))))


def location_in(fragment: Fragment, leaf_path: PathT, file_path: PathT, *, key: bool = False) -> Location:
    """Where ``fragment`` wrote the value at ``file_path`` (``leaf_path`` is the same place, as a leaf path)."""
    if fragment.document is None:
        if len(leaf_path) >= 2 and isinstance(leaf_path[-2], Select) and leaf_path[-1] == leaf_path[-2].key:
            leaf_path = leaf_path[:-1]  # an item's merge key: set by whichever --set selected the item
        label = task_label(format_path(leaf_path), fragment.locations)
        return Location(label) if label is not None else fragment.location(file_path)
    doc = fragment.document
    if key and tuple(file_path) in doc.keys:
        return doc.location(file_path, key=True)
    if tuple(file_path) in doc.values or not key:
        return doc.location(file_path)
    return doc.location(file_path, key=True)


def default_origin(path: PathT, target: Target) -> Origin:
    """Where a value no layer set comes from: the target SDK's default that supplies it, named (not a line of
    code)."""
    if path[:1] == ("elastic",):
        source = "kfdefaults default" if path[1] in target.kfdefaults_defaults else "plugin default"
        return Origin(DEFAULT_LAYER, source, Location(target.default_label(str(path[1]))))
    if path == ("pod_template", "primary_container_name"):
        return Origin(DEFAULT_LAYER, f"{target.name} default",
                      Location(f"{target.pod_template_class} default (primary_container_name)"))
    return Origin(DEFAULT_LAYER, "empty pod template", Location("empty pod template"))


class Setter(NamedTuple):
    """Who set a value: the position of the fragment among the profile's fragments (-1 for the ``default``
    layer), and the origin (layer, source, where the fragment writes it)."""

    index: int
    origin: Origin


def highest(setters: Iterable[Setter | None]) -> Setter | None:
    """The setter of the highest fragment among ``setters`` (the layer that made a combination), ``None`` when
    none is given."""
    return max((s for s in setters if s is not None), key=lambda s: s.index, default=None)


def where(setter: Setter | None) -> str:
    """``[layer] FILE:LINE:COLUMN`` (or the label) of a setter, for a message that names several places."""
    return f"[{setter.origin.layer}] {setter.origin.location}" if setter else "the defaults"


def written_by(fragments: Sequence[Fragment], path: PathT, *, skip: Sequence[str] = ()) -> Setter | None:
    """The highest of ``fragments`` (but for those of the ``skip`` layers) whose own data writes a value at ``path``
    (a leaf path), located where it writes it, without replaying the merge: what the merge itself names (``auto``
    worked out past its bound) before there is a merged profile to ask :func:`~.provenance.provenance`, and what a
    check asks that needs only the writer of one value."""
    for index in range(len(fragments) - 1, -1, -1):
        if fragments[index].layer not in skip and value_at(fragment_profile(fragments[index]), tuple(path)) is not None:
            return Setter(index, set_origin(fragments[index], tuple(path)))
    return None


def pod_leaf(steps: Sequence[Any]) -> PathT:
    """A PodTemplateSpec path (``["spec", "containers", ("name", "primary"), "image"]``, ``["metadata", "labels",
    KEY]``) as the profile's leaf path (``pod_template.spec.containers[name=primary].image``,
    ``pod_template.labels.KEY``)."""
    steps = list(steps)
    if steps[:1] == ["metadata"]:
        steps = steps[1:]
    return ("pod_template", *(Select(*s) if isinstance(s, tuple) else s for s in steps))
