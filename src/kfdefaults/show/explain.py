"""Provenance: which layer, file and line set each leaf of a merged profile, and who removed what.

Computed without touching the merge engine, by replaying the merge. The state below every layer is the
plugin's ``Elastic`` defaults and an empty pod template (:meth:`kfdefaults.Resolved.initial`);
each fragment is applied with :func:`kfdefaults.merge.fold.merge_step`, the very step
:func:`~kfdefaults.merge.fold.merge_fragments` takes; after each step the leaves of the new state
(:mod:`kfdefaults.show.leaves`) are compared with the leaves before it:

* a leaf that is new, changed, or written by the fragment (even to the value it already had) is set by that
  fragment: when a lower layer's file changes, the value still comes from the higher one;
* a leaf present before and absent after was removed by the fragment (a ``null``, a ``$patch: delete`` item,
  ``$patch: replace``, ``$retainKeys``, a replaced atomic list);
* a leaf of an atomic list (named by index) whose value changed was removed too: the list was replaced, and
  what the lower layer had in that item is gone, not merged;
* a mapping or list that was empty and is now filled is not a removal.

After the last fragment the target plugin's defaults fill the ``elastic`` keys a layer deleted (as
:func:`~kfdefaults.merge.fold.fill_plugin_defaults` does), attributed to the ``default`` layer, named by
the SDK default that supplied it (``flytekitplugins.kfpytorch.Elastic default (monitor_interval)`` for
flytekit, ``flyteplugins.pytorch.Elastic default (monitor_interval)`` for Flyte 2).

The location of a set leaf is where the fragment wrote its value: the path in the file is found by walking
the fragment's own data, a list item named ``[name=primary]`` becoming the index of that item in the file.
The location of a removal points at what removed it: the ``null``, the ``$patch`` directive, the replacing list.
Task-layer values name the ``--set KEY=VALUE`` (or keyword argument) that set them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import Location
from ..merge.fold import fill_plugin_defaults, merge_step
from ..merge.result import Resolved
from ..paths import PathError, PathT, Select, format_path, parse_path
from ..targets import Target
from ..validate.fragment import Fragment
from ..validate.sets import split_assignment
from .leaves import has_index, profile_leaves, same, tree_order
from .output import ELASTIC_ORDER, POD_TEMPLATE_ORDER, order_profile

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


@dataclass
class Entry:
    """One leaf of the merged profile, or one value a layer removed.

    Attributes:
        path: The leaf path (see :mod:`kfdefaults.show.leaves`).
        value: The value (for a removed entry: the value it had).
        set_by: Who set the value.
        removed_by: Who removed it; ``None`` when the value is in the merged profile.
        overrides: Values that lower layers had written at this path, lowest first, each as ``(value, Origin)``.
    """

    path: PathT
    value: Any
    set_by: Origin
    removed_by: Origin | None = None
    overrides: list[tuple[Any, Origin]] = field(default_factory=list)

    @property
    def removed(self) -> bool:
        return self.removed_by is not None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"path", "value", "status": "set" | "removed", "set_by", "removed_by"?, "overrides"}``."""
        out: dict[str, Any] = {"path": format_path(self.path), "value": self.value,
                               "status": "removed" if self.removed else "set", "set_by": self.set_by.to_dict()}
        if self.removed_by is not None:
            out["removed_by"] = self.removed_by.to_dict()
        out["overrides"] = [{"value": v, "set_by": o.to_dict()} for v, o in self.overrides]
        return out


def explain(merged: Resolved, *, kubernetes_version: str | None = None) -> list[Entry]:
    """Every leaf of a merged profile with who set it, and every value a layer removed, in output order.

    Args:
        merged: A :class:`~kfdefaults.Resolved`; its ``fragments`` (as
            :func:`~kfdefaults.merge.fold.merge_fragments` returns them) are replayed.
        kubernetes_version: The version the profile was merged with.

    Returns:
        Entries sorted as ``render`` prints the leaves; a removed value comes right after the value now at
        its path, or after its surviving siblings.
    """
    fragments: Sequence[Fragment] = merged.fragments
    target = merged.target
    state = Resolved.initial(merged.name, target=target)
    prev = _state_leaves(state, fragments, kubernetes_version)
    origins: dict[PathT, Origin] = {p: _default_origin(p, target) for p in prev}
    history: dict[PathT, list[tuple[Any, Origin]]] = {}
    removed: list[Entry] = []

    def step(cur: dict[PathT, Any], written: Mapping[PathT, Any], fragment: Fragment | None) -> None:
        nonlocal prev
        containers = {p[:i] for p in cur for i in range(len(p))}
        for path, old in prev.items():
            if path not in cur and isinstance(old, (dict, list)) and path in containers:  # filled, not removed
                history.pop(path, None)
                continue
            replaced = path in cur and has_index(path) and not same(cur[path], old)
            if path not in cur or replaced:
                assert fragment is not None  # the defaults never remove
                removed.append(Entry(path, old, origins[path], _removal_origin(fragment, path),
                                     history.pop(path, [])))
        for path, value in cur.items():
            if path in prev and same(prev[path], value) and path not in written:
                continue
            if path in prev and not (has_index(path) and not same(prev[path], value)):
                history.setdefault(path, []).append((prev[path], origins[path]))
            origins[path] = _set_origin(fragment, path) if fragment is not None else _default_origin(path, target)
        for path in list(origins):
            if path not in cur:
                del origins[path]
        prev = cur

    for fragment in fragments:
        state = merge_step(state, fragment, kubernetes_version=kubernetes_version)
        step(_state_leaves(state, fragments, kubernetes_version), _written(fragment, kubernetes_version), fragment)
    final = state.replace(elastic_settings=fill_plugin_defaults(copy.deepcopy(state.elastic_settings), target))
    step(_state_leaves(final, fragments, kubernetes_version), {}, None)

    entries = [Entry(p, v, origins[p], None, history.get(p, [])) for p, v in prev.items()]
    reference = skeleton() + list(_rendered_leaves(final, fragments, kubernetes_version))
    order = {id(e): i for i, e in enumerate(entries + removed)}
    by_path: dict[PathT, list[Entry]] = {}
    for entry in entries + removed:
        by_path.setdefault(entry.path, []).append(entry)
    out = []
    for path in tree_order(by_path, reference):
        out.extend(sorted(by_path[path], key=lambda e: order[id(e)]))
    return out


def skeleton() -> list[PathT]:
    """The top of a profile in output order, so that a removed section sorts where ``render`` would print it."""
    return [("description",)] + [("elastic", k) for k in ELASTIC_ORDER] + [("pod_template", k) for k in POD_TEMPLATE_ORDER]


def _state_leaves(state: Resolved, fragments: Sequence[Fragment], kubernetes_version: str | None) -> dict[PathT, Any]:
    return profile_leaves(state.to_dict(), kubernetes_version=kubernetes_version)


def _rendered_leaves(state: Resolved, fragments: Sequence[Fragment], kubernetes_version: str | None) -> dict[PathT, Any]:
    return profile_leaves(order_profile(state.to_dict(), kubernetes_version), kubernetes_version=kubernetes_version)


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


def _written(fragment: Fragment, kubernetes_version: str | None) -> dict[PathT, Any]:
    return profile_leaves(fragment_profile(fragment), kubernetes_version=kubernetes_version, patch=True)


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
            index = next((i for i, item in enumerate(node) if isinstance(item, Mapping) and part.key in item
                          and same(item[part.key], part.value)), None)
            if index is None:
                break
            node, file_path = node[index], file_path + (index,)
        elif isinstance(part, int) and not isinstance(part, bool):
            if stop_at_index or not isinstance(node, list) or part >= len(node):
                break
            node, file_path = node[part], file_path + (part,)
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


def _set_origin(fragment: Fragment, path: PathT) -> Origin:
    trail = _walk(fragment_profile(fragment), path)
    return _origin(fragment, _location(fragment, path, trail[-1][0]))


def _removal_origin(fragment: Fragment, path: PathT) -> Origin:
    """What in ``fragment`` removed the value at ``path``: the deepest ``null`` or directive on the way."""
    trail = _walk(fragment_profile(fragment), path, stop_at_index=True)
    depth = len(trail) - 1
    for i in range(depth, 0, -1):
        file_path, node = trail[i]
        if node is None:
            return _origin(fragment, _location(fragment, path, file_path, key=True))
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
            return _origin(fragment, _location(fragment, path, cause))
    file_path, node = trail[depth]
    return _origin(fragment,
                  _location(fragment, path, file_path, key=isinstance(node, (list, Mapping))))


def _location(fragment: Fragment, leaf_path: PathT, file_path: PathT, *, key: bool = False) -> Location:
    """Where ``fragment`` wrote the value at ``file_path`` (``leaf_path`` is the same place, as a leaf path)."""
    if fragment.document is None:
        label = _task_label(fragment, leaf_path)
        if label is not None:
            return Location(label)
        return fragment.location(file_path)
    doc = fragment.document
    if key and tuple(file_path) in doc.keys:
        return doc.location(file_path, key=True)
    if tuple(file_path) in doc.values or not key:
        return doc.location(file_path)
    return doc.location(file_path, key=True)


def _task_label(fragment: Fragment, leaf_path: PathT) -> str | None:
    """The ``--set KEY=VALUE`` whose key is the longest prefix of ``leaf_path`` (or is under it)."""
    if len(leaf_path) >= 2 and isinstance(leaf_path[-2], Select) and leaf_path[-1] == leaf_path[-2].key:
        leaf_path = leaf_path[:-1]  # an item's merge key: set by whichever --set selected the item
    best, best_len = None, -1
    for label in dict.fromkeys(fragment.locations.values()):
        if not label.startswith("--set "):
            continue
        key = split_assignment(label[len("--set "):])[0].strip()
        try:
            parts = tuple(Select(*p) if isinstance(p, tuple) else p for p in parse_path(key))
        except PathError:
            continue
        n = min(len(parts), len(leaf_path))
        if parts[:n] == tuple(leaf_path[:n]) and _selectors_equal(parts[:n], leaf_path[:n]) and len(parts) > best_len:
            best, best_len = label, len(parts)
    return best


def _selectors_equal(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return all(not isinstance(x, Select) or same(x.value, y.value) for x, y in zip(a, b))


# --- the default layer ---------------------------------------------------------------------------------------


def _default_origin(path: PathT, target: Target) -> Origin:
    """Where a value no layer set comes from: the target SDK's default that supplies it, named (not a line of
    code)."""
    if path[:1] == ("elastic",):
        source = "kfdefaults default" if path[1] in target.kfdefaults_defaults else "plugin default"
        return Origin(DEFAULT_LAYER, source, Location(target.default_label(str(path[1]))))
    if path == ("pod_template", "primary_container_name"):
        return Origin(DEFAULT_LAYER, f"{target.name} default",
                      Location(f"{target.pod_template_class} default (primary_container_name)"))
    return Origin(DEFAULT_LAYER, "empty pod template", Location("empty pod template"))
