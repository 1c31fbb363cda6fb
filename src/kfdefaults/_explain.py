"""Provenance: which layer, file and line set each leaf of a merged profile, and who removed what.

Computed without touching the merge engine, by replaying the merge. The state below every layer is the
plugin's ``Elastic`` defaults and an empty pod template (:meth:`kfdefaults._resolve.MergeState.initial`);
each fragment is applied with :func:`kfdefaults._resolve.merge_step`, the very step
:func:`~kfdefaults._resolve.merge_fragments` takes; after each step the leaves of the new state
(:mod:`kfdefaults._leaves`) are compared with the leaves before it:

* a leaf that is new, changed, or written by the fragment (even to the value it already had) is set by that
  fragment: when a lower layer's file changes, the value still comes from the higher one;
* a leaf present before and absent after was removed by the fragment (a ``null``, a ``$patch: delete`` item,
  ``$patch: replace``, ``$retainKeys``, a replaced atomic list);
* a leaf of an atomic list (named by index) whose value changed was removed too: the list was replaced, and
  what the lower layer had in that item is gone, not merged;
* a mapping or list that was empty and is now filled is not a removal.

After the last fragment the plugin's defaults fill the ``elastic`` keys a layer deleted (as
:func:`~kfdefaults._resolve.fill_plugin_defaults` does), attributed to the ``default`` layer.

The location of a set leaf is where the fragment wrote its value: the path in the file is found by walking
the fragment's own data, a list item named ``[name=primary]`` becoming the index of that item in the file.
The location of a removal points at what removed it: the ``null``, the ``$patch`` directive, the replacing list.
Task-layer values name the ``--set KEY=VALUE`` (or keyword argument) that set them.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ._errors import Location
from ._leaves import PathT, Select, format_path, format_value, has_index, profile_leaves, same, tree_order
from ._resolve import Fragment, MergeState, Merged, fill_plugin_defaults, merge_step

DEFAULT_LAYER = "default"
"""The layer of values no profile set: the plugin's ``Elastic`` defaults, flytekit's primary container name."""


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
        """``{"layer", "source", "file", "line", "column"}``; ``file``, ``line``, ``column`` are ``None`` for a label."""
        loc = self.location
        in_file = bool(loc.line)
        return {"layer": self.layer, "source": self.source, "file": loc.file if in_file else None,
                "line": loc.line if in_file else None, "column": (loc.column or 1) if in_file else None}


@dataclass
class Entry:
    """One leaf of the merged profile, or one value a layer removed.

    Attributes:
        path: The leaf path (see :mod:`kfdefaults._leaves`).
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


def explain(merged: Merged | Any, *, kubernetes_version: str | None = None) -> list[Entry]:
    """Every leaf of a merged profile with who set it, and every value a layer removed, in output order.

    Args:
        merged: A :class:`~kfdefaults._resolve.Merged` or :class:`~kfdefaults.Resolved`; its ``fragments``
            (as :func:`~kfdefaults._resolve.merge_fragments` returns them) are replayed.
        kubernetes_version: The version the profile was merged with.

    Returns:
        Entries sorted as ``render`` prints the leaves; a removed value comes right after the value now at
        its path, or after its surviving siblings.
    """
    fragments: Sequence[Fragment] = merged.fragments
    state = MergeState.initial()
    prev = _state_leaves(state, fragments, kubernetes_version)
    origins: dict[PathT, Origin] = {p: _default_origin(p) for p in prev}
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
            origins[path] = _set_origin(fragment, path) if fragment is not None else _default_origin(path)
        for path in list(origins):
            if path not in cur:
                del origins[path]
        prev = cur

    for fragment in fragments:
        state = merge_step(state, fragment, kubernetes_version=kubernetes_version)
        step(_state_leaves(state, fragments, kubernetes_version), _written(fragment, kubernetes_version), fragment)
    final = MergeState(fill_plugin_defaults(copy.deepcopy(state.elastic)), state.pod, state.description, state.primary)
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
    from ._output import _ELASTIC_ORDER, _POD_TEMPLATE_ORDER

    return [("description",)] + [("elastic", k) for k in _ELASTIC_ORDER] + [("pod_template", k) for k in _POD_TEMPLATE_ORDER]


def _profile_of(state: MergeState, fragments: Sequence[Fragment]) -> dict[str, Any]:
    """The state in the shape ``render`` prints (``Resolved.to_dict()``)."""
    from ._api import Resolved

    name = fragments[-1].profile if fragments else ""
    return Resolved(Merged(name, state.description, state.elastic, state.pod, state.primary, list(fragments))).to_dict()


def _state_leaves(state: MergeState, fragments: Sequence[Fragment], kubernetes_version: str | None) -> dict[PathT, Any]:
    return profile_leaves(_profile_of(state, fragments), kubernetes_version=kubernetes_version)


def _rendered_leaves(state: MergeState, fragments: Sequence[Fragment], kubernetes_version: str | None) -> dict[PathT, Any]:
    from ._output import order_profile

    return profile_leaves(order_profile(_profile_of(state, fragments)), kubernetes_version=kubernetes_version)


def fragment_profile(fragment: Fragment) -> dict[str, Any]:
    """A fragment in the shape of a profile file (``labels`` and ``annotations`` back under ``pod_template``).

    Its containers carry the names :func:`~kfdefaults._resolve.assign_primary_container` gave them; list
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
    from ._overrides import SetError, split_assignment, split_path

    if len(leaf_path) >= 2 and isinstance(leaf_path[-2], Select) and leaf_path[-1] == leaf_path[-2].key:
        leaf_path = leaf_path[:-1]  # an item's merge key: set by whichever --set selected the item
    best, best_len = None, -1
    for label in dict.fromkeys(fragment.locations.values()):
        if not label.startswith("--set "):
            continue
        key = split_assignment(label[len("--set "):])[0].strip()
        try:
            parts = tuple(Select(*p) if isinstance(p, tuple) else p for p in split_path(key))
        except SetError:
            continue
        n = min(len(parts), len(leaf_path))
        if parts[:n] == tuple(leaf_path[:n]) and _selectors_equal(parts[:n], leaf_path[:n]) and len(parts) > best_len:
            best, best_len = label, len(parts)
    return best


def _selectors_equal(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return all(not isinstance(x, Select) or same(x.value, y.value) for x, y in zip(a, b))


# --- the default layer ---------------------------------------------------------------------------------------


def _default_origin(path: PathT) -> Origin:
    """Where a value no layer set comes from: the plugin's defaults as kfdefaults writes them down."""
    if path[:1] == ("elastic",):
        from . import _elastic

        return Origin(DEFAULT_LAYER, "plugin default", _line_of(_elastic.__file__, rf'^\s*"{re.escape(str(path[1]))}"\s*:'))
    if path == ("pod_template", "primary_container_name"):
        from . import _resolve

        return Origin(DEFAULT_LAYER, "flytekit default", _line_of(_resolve.__file__, r"^DEFAULT_PRIMARY_CONTAINER_NAME\s*="))
    return Origin(DEFAULT_LAYER, "empty pod template", Location("empty pod template"))


@functools.lru_cache(maxsize=None)
def _line_of(module_file: str, pattern: str) -> Location:
    """The first line of a module's source matching ``pattern``; the module's name when it cannot be read."""
    try:
        with open(module_file, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                m = re.search(pattern, line)
                if m:
                    return Location(module_file, number, len(line) - len(line.lstrip()) + 1)
    except OSError:
        pass
    return Location(os.path.basename(module_file))


# --- output ----------------------------------------------------------------------------------------------------


def explain_document(name: str, entries: Sequence[Entry]) -> dict[str, Any]:
    """The JSON / YAML form: ``{"name": NAME, "leaves": [Entry.to_dict(), ...]}``."""
    return {"name": name, "leaves": [e.to_dict() for e in entries]}


def explain_lines(entries: Sequence[Entry]) -> list[str]:
    """The plain-text form, one line per entry, columns separated by at least two spaces::

        PATH  VALUE  LAYER  FILE:LINE
        PATH  VALUE  LAYER  FILE:LINE  removed by LAYER FILE:LINE

    Values are written by :func:`kfdefaults._leaves.format_value` (a value holding whitespace is quoted).
    """
    rows = [(format_path(e.path), format_value(e.value), e.set_by.layer, e.set_by.where,
             f"removed by {e.removed_by.layer} {e.removed_by.where}" if e.removed_by else "") for e in entries]
    widths = [min(max((len(r[i]) for r in rows), default=0), _MAX_PAD[i]) for i in range(4)]
    lines = []
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(4)] + [row[4]]
        lines.append("  ".join(cells).rstrip())
    return lines


_MAX_PAD = (120, 40, 8, 80)
"""Column widths beyond which a long cell overflows its column instead of widening it for every line."""


def print_explain_table(name: str, entries: Sequence[Entry]) -> None:
    """A rich table on the terminal: removed values dimmed, with who removed them in red."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    any_removed = any(e.removed for e in entries)
    table = Table(title=f"{name}: where each value comes from", title_justify="left")
    for column in ("path", "value", "layer", "set at") + (("removed by",) if any_removed else ()):
        # a path stays whole, so it can be pasted into --set; the other columns wrap
        table.add_column(column, overflow="fold", no_wrap=column == "path")
    for e in entries:
        style = "dim" if e.removed else ""
        cells = [Text(format_path(e.path), style=style), Text(format_value(e.value), style=style),
                 Text(e.set_by.layer, style=style or _LAYER_STYLE.get(e.set_by.layer, "")),
                 Text(e.set_by.where, style=style)]
        if any_removed:
            cells.append(Text(f"{e.removed_by.layer} {e.removed_by.where}", style="red") if e.removed_by else Text(""))
        table.add_row(*cells)
    Console().print(table)


_LAYER_STYLE = {"default": "dim", "builtin": "cyan", "platform": "magenta", "team": "green", "task": "yellow"}


def show_explain(resolved: Any, output: str, *, kubernetes_version: str | None = None) -> None:
    """Print the provenance of a resolved profile.

    Args:
        resolved: A :class:`~kfdefaults.Resolved`.
        output: ``table`` (rich, for a terminal), ``text`` (stable plain text), ``json`` or ``yaml``.
        kubernetes_version: The version the profile was merged with.
    """
    import click

    entries = explain(resolved, kubernetes_version=kubernetes_version)
    if output == "table":
        print_explain_table(resolved.name, entries)
    elif output in ("json", "yaml"):
        from ._output import to_json, to_yaml

        document = explain_document(resolved.name, entries)
        click.echo(to_json(document) if output == "json" else to_yaml(document), nl=False)
    else:
        for line in explain_lines(entries):
            click.echo(line)
