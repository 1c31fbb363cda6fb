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
* an atomic list that a fragment writes while a lower layer had one is replaced whole: one more entry says so,
  with the lower list, its FILE:LINE and how many items went, even when some items came back equal;
* a mapping or list that was empty and is now filled is not a removal.

After the last fragment the target plugin's defaults fill the ``elastic`` keys a layer deleted (as
:func:`~kfdefaults.merge.fold.fill_plugin_defaults` does), attributed to the ``default`` layer, named by
the SDK default that supplied it (``flytekitplugins.kfpytorch.Elastic default (monitor_interval)`` for
flytekit, ``flyteplugins.pytorch.Elastic default (monitor_interval)`` for Flyte 2). Where each origin is
located: :mod:`.origins`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..merge.auto import resolve_auto
from ..merge.fold import fill_plugin_defaults, merge_step
from ..merge.locks import lock_path, primary_views
from ..merge.result import Resolved
from ..paths import PathT, Select, format_path
from ..targets import Target
from ..validate.fragment import Fragment
from .leaves import has_index, profile_leaves, same, tree_order
from .origins import (
    DEFAULT_LAYER,
    Origin,
    default_origin,
    fragment_profile,
    removal_origin,
    set_origin,
)
from .output import ELASTIC_ORDER, POD_TEMPLATE_ORDER, order_profile

__all__ = ["DEFAULT_LAYER", "Entry", "Origin", "explain", "skeleton"]


@dataclass
class Entry:
    """One leaf of the merged profile, one value a layer removed, or one atomic list a layer replaced whole.

    Attributes:
        path: The leaf path (see :mod:`kfdefaults.show.leaves`); for a replaced list, the list's path.
        value: The value (for a removed entry: the value it had; for a replaced list: the whole lower list).
        set_by: Who set the value (for a replaced list: who set its first item).
        removed_by: Who removed it (for a replaced list: where the replacing list is written); ``None`` when the
            value is in the merged profile.
        overrides: Values that lower layers had written at this path, lowest first, each as ``(value, Origin)``.
        items: For a replaced list, how many items went; ``None`` for a leaf.
        note: For a value written ``auto``, the rule that gave it (``auto: the nvidia.com/gpu limit of the
            primary container `primary```); ``None`` otherwise.
        locked_by: Where a profile locks this value (its ``locked`` entry); ``None`` when no lock covers it.
    """

    path: PathT
    value: Any
    set_by: Origin
    removed_by: Origin | None = None
    overrides: list[tuple[Any, Origin]] = field(default_factory=list)
    items: int | None = None
    note: str | None = None
    locked_by: Origin | None = None

    @property
    def removed(self) -> bool:
        return self.removed_by is not None

    @property
    def status(self) -> str:
        """``set``, ``removed`` or ``replaced`` (a whole list)."""
        return "replaced" if self.items is not None else "removed" if self.removed else "set"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"path", "value", "status": "set" | "removed" | "replaced", "set_by", "removed_by"?,
        "items"?, "overrides", "note"?, "locked_by"?}``."""
        out: dict[str, Any] = {"path": format_path(self.path), "value": self.value, "status": self.status,
                               "set_by": self.set_by.to_dict()}
        if self.removed_by is not None:
            out["removed_by"] = self.removed_by.to_dict()
        if self.items is not None:
            out["items"] = self.items
        out["overrides"] = [{"value": v, "set_by": o.to_dict()} for v, o in self.overrides]
        if self.note is not None:
            out["note"] = self.note
        if self.locked_by is not None:
            out["locked_by"] = self.locked_by.to_dict()
        return out


def explain(merged: Resolved, *, kubernetes_version: str | None = None) -> list[Entry]:
    """Every leaf of a merged profile with who set it, every value a layer removed and every atomic list a layer
    replaced whole, in output order.

    Args:
        merged: A :class:`~kfdefaults.Resolved`; its ``fragments`` (as
            :func:`~kfdefaults.merge.fold.merge_fragments` returns them) are replayed.
        kubernetes_version: The version the profile was merged with.

    Returns:
        Entries sorted as ``render`` prints the leaves; a removed value comes right after the value now at
        its path, or after its surviving siblings; a replaced list before its new items.
    """
    replay = _Replay(merged.name, kubernetes_version, merged.target)
    for fragment in merged.fragments:
        replay.apply(fragment)
    final = replay.finish()
    locks = held_locks(merged.fragments)
    entries = [Entry(p, v, replay.origins[p], None, replay.history.get(p, []), note=replay.notes.get(p),
                     locked_by=locked_by(p, locks)) for p, v in replay.leaves.items()]
    reference = skeleton() + list(profile_leaves(order_profile(final.to_dict(), kubernetes_version),
                                                 kubernetes_version=kubernetes_version))
    everything = entries + replay.removed
    order = {id(e): i for i, e in enumerate(everything)}
    by_path: dict[PathT, list[Entry]] = {}
    for entry in everything:
        by_path.setdefault(entry.path, []).append(entry)
    out = []
    for path in tree_order(by_path, reference):
        out.extend(sorted(by_path[path], key=lambda e: (e.items is None, order[id(e)])))
    return out


class _Replay:
    """The merge, replayed one fragment at a time, with the origin of every leaf kept as it goes."""

    def __init__(self, name: str, kubernetes_version: str | None, target: Target) -> None:
        self.version = kubernetes_version
        self.target = target
        self.state = Resolved.initial(name, target=target)
        self.leaves = self._leaves_of(self.state)
        self.origins: dict[PathT, Origin] = {p: default_origin(p, target) for p in self.leaves}
        self.history: dict[PathT, list[tuple[Any, Origin]]] = {}
        self.removed: list[Entry] = []
        self.notes: dict[PathT, str] = {}

    def _leaves_of(self, state: Resolved) -> dict[PathT, Any]:
        return profile_leaves(state.to_dict(), kubernetes_version=self.version)

    def apply(self, fragment: Fragment) -> None:
        """One step of the merge, and who it set and removed."""
        before = self.state
        self.state = merge_step(self.state, fragment, kubernetes_version=self.version)
        written = profile_leaves(fragment_profile(fragment), kubernetes_version=self.version, patch=True)
        self._replaced_lists(before, written, fragment)
        self._step(self._leaves_of(self.state), written, fragment)

    def finish(self) -> Resolved:
        """The plugin's defaults filled in where a layer deleted an ``elastic`` key, and ``auto`` values resolved
        (:func:`~kfdefaults.merge.auto.resolve_auto`): the final state."""
        final = self.state.replace(elastic_settings=fill_plugin_defaults(copy.deepcopy(self.state.elastic_settings),
                                                                        self.target))
        self._step(self._leaves_of(final), {}, None)
        final, rules = resolve_auto(final)
        if rules:
            self._resolved_auto(self._leaves_of(final), rules)
        return final

    def _resolved_auto(self, cur: dict[PathT, Any], rules: Mapping[PathT, tuple[Any, str]]) -> None:
        """Each ``auto`` value becomes its value, still set by the layer that wrote ``auto``, with its rule as a
        note; a key the rule leaves out (a ``sizeLimit`` with no memory to follow) is not shown, as ``render``
        does not show it."""
        for path, (value, rule) in rules.items():
            if path in self.origins and value is not None:
                self.notes[path] = rule
            if value is None:
                self.history.pop(path, None)
        for path in [p for p in self.origins if p not in cur]:
            del self.origins[path]
        self.leaves = cur

    def _step(self, cur: dict[PathT, Any], written: Mapping[PathT, Any], fragment: Fragment | None) -> None:
        prev = self.leaves
        containers = {p[:i] for p in cur for i in range(len(p))}
        for path, old in prev.items():
            if path not in cur and isinstance(old, (dict, list)) and path in containers:  # filled, not removed
                self.history.pop(path, None)
                continue
            replaced = path in cur and has_index(path) and not same(cur[path], old)
            if path not in cur or replaced:
                assert fragment is not None  # the defaults never remove
                self.removed.append(Entry(path, old, self.origins[path], removal_origin(fragment, path),
                                          self.history.pop(path, [])))
        for path, value in cur.items():
            if path in prev and same(prev[path], value) and path not in written:
                continue
            if path in prev and not (has_index(path) and not same(prev[path], value)):
                self.history.setdefault(path, []).append((prev[path], self.origins[path]))
            self.origins[path] = set_origin(fragment, path) if fragment is not None else default_origin(path, self.target)
        for path in list(self.origins):
            if path not in cur:
                del self.origins[path]
        self.leaves = cur

    def _replaced_lists(self, before: Resolved, written: Mapping[PathT, Any], fragment: Fragment) -> None:
        """An entry for each atomic list ``fragment`` writes where a lower layer had a non-empty one."""
        lists = {atomic_list(path) or path for path, value in written.items() if atomic_list(path) or value == []}
        old_profile = before.to_dict()
        for path in sorted(lists, key=format_path):
            old = value_at(old_profile, path)
            if not isinstance(old, list) or not old:
                continue
            first = next((p for p in self.leaves if p[:len(path)] == path and len(p) > len(path)), None)
            owner = self.origins.get(first) if first is not None else None
            if owner is None:
                continue
            self.removed.append(Entry(path, copy.deepcopy(old), owner, removal_origin(fragment, path), [], len(old)))


def held_locks(fragments: list[Fragment]) -> list[tuple[PathT, Origin]]:
    """Every lock of the merge, as ``(path in the merged profile, the Origin of its ``locked`` entry)``."""
    views, final = primary_views(fragments)
    return [(lock_path(lock, view, final), Origin(fragment.layer, fragment.source, lock.location))
            for fragment, view in zip(fragments, views) for lock in fragment.locks]


def locked_by(path: PathT, locks: list[tuple[PathT, Origin]]) -> Origin | None:
    """The first lock whose path is ``path`` or holds it (``pod_template.spec.tolerations`` holds its items)."""
    for steps, origin in locks:
        if len(steps) <= len(path) and all(_step_matches(s, p) for s, p in zip(steps, path)):
            return origin
    return None


def _step_matches(step: Any, part: Any) -> bool:
    if isinstance(step, tuple):
        return isinstance(part, Select) and part.key == step[0] and str(part.value) == str(step[1])
    return not isinstance(part, (Select, int)) and step == part


def atomic_list(path: PathT) -> PathT | None:
    """The path of the outermost list without a merge key (its items named by index) that ``path`` goes through."""
    for i, part in enumerate(path):
        if isinstance(part, int) and not isinstance(part, bool):
            return tuple(path[:i])
    return None


def value_at(data: Any, path: PathT) -> Any:
    """The value at a leaf path in profile-shaped data (``Select`` items by merge key), ``None`` when absent."""
    node = data
    for part in path:
        if isinstance(part, Select):
            node = next((item for item in node if isinstance(item, Mapping) and part.key in item
                         and same(item[part.key], part.value)), None) if isinstance(node, list) else None
        elif isinstance(part, int) and not isinstance(part, bool):
            node = node[part] if isinstance(node, list) and part < len(node) else None
        else:
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is None:
            return None
    return node


def skeleton() -> list[PathT]:
    """The top of a profile in output order, so that a removed section sorts where ``render`` would print it."""
    return [("description",)] + [("elastic", k) for k in ELASTIC_ORDER] + [("pod_template", k) for k in POD_TEMPLATE_ORDER]
