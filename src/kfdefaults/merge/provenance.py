"""Who set each leaf of a merged profile, what lower layers had there, and who removed what: the one answer that
``--explain``, ``diff``, ``verify``, the locks, the checks and the backend's messages give.

It is worked out by replaying the merge (:func:`provenance`, once per :class:`~.result.Resolved`, when first
asked: a merge read from the cache, or a render that nothing asks about, pays nothing). The state below every
layer is the plugin's ``Elastic`` defaults and an empty pod template (:meth:`Resolved.initial`); each fragment is
applied with :func:`~.step.merge_step`, the very step :func:`~.fold.merge_fragments` takes; after each step the
leaves of the new state (:mod:`.leaves`) are compared with the leaves before it, by :func:`~.leaves.same`:

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
:func:`~.step.fill_plugin_defaults` does), attributed to the ``default`` layer, named by the SDK default that
supplied it (``flytekitplugins.kfpytorch.Elastic default (monitor_interval)``), and the ``auto`` values are
worked out (:mod:`.auto`). The merge records the same steps as it folds when a fragment locks a path
(:mod:`.locks`). Where each origin is located: :mod:`.origins`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..paths import PathT, Select, format_path
from ..validate.fragment import Fragment
from .auto import resolve_auto
from .leaves import atomic_list, has_index, profile_leaves, same, value_at
from .origins import (
    Origin,
    Setter,
    change_origin,
    default_origin,
    fragment_profile,
    highest,
    set_origin,
    where,
    written_by,
)

__all__ = ["Entry", "Provenance", "Setter", "highest", "provenance", "where", "written_by", "written_lists"]
from .result import Resolved, copy_plain
from .step import fill_plugin_defaults, merge_step


@dataclass
class Entry:
    """One leaf of the merged profile, one value a layer removed, or one atomic list a layer replaced whole.

    Attributes:
        path: The leaf path (see :mod:`.leaves`); for a replaced list, the list's path.
        value: The value (for a removed entry: the value it had; for a replaced list: the whole lower list).
        set_by: Who set the value (for a replaced list: who set its first item).
        removed_by: Who removed it (for a replaced list: where the replacing list is written); ``None`` when the
            value is in the merged profile.
        overrides: Values that lower layers had written at this path, lowest first, each as ``(value, Origin)``.
        items: For a replaced list, how many items went; ``None`` for a leaf.
        note: For a value written ``auto``, the rule that gave it (``auto: the nvidia.com/gpu limit of the
            primary container `primary```); ``None`` otherwise.
        locked_by: Where a profile locks this value (its ``locked`` entry); ``None`` when no lock covers it.
        dropped: For a replaced list, the items of the lower list that the new one does not hold (by
            :func:`~.leaves.same`): what the replacement loses; ``None`` for a leaf.
        meant: For a replaced list, whether the replacing list says so with a ``$patch: replace`` item
            (:func:`~.leaves.without_replace_marks`).
    """

    path: PathT
    value: Any
    set_by: Origin
    removed_by: Origin | None = None
    overrides: list[tuple[Any, Origin]] = field(default_factory=list)
    items: int | None = None
    note: str | None = None
    locked_by: Origin | None = None
    dropped: list[Any] | None = None
    meant: bool = False

    @property
    def removed(self) -> bool:
        return self.removed_by is not None

    @property
    def status(self) -> str:
        """``set``, ``removed`` or ``replaced`` (a whole list)."""
        return "replaced" if self.items is not None else "removed" if self.removed else "set"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"path", "value", "status": "set" | "removed" | "replaced", "set_by", "removed_by"?,
        "items"?, "dropped"?, "overrides", "note"?, "locked_by"?}`` (``items`` and ``dropped``: a replaced list's)."""
        out: dict[str, Any] = {"path": format_path(self.path), "value": self.value, "status": self.status,
                               "set_by": self.set_by.to_dict()}
        if self.removed_by is not None:
            out["removed_by"] = self.removed_by.to_dict()
        if self.items is not None:
            out["items"] = self.items
        if self.dropped is not None:
            out["dropped"] = self.dropped
        out["overrides"] = [{"value": v, "set_by": o.to_dict()} for v, o in self.overrides]
        if self.note is not None:
            out["note"] = self.note
        if self.locked_by is not None:
            out["locked_by"] = self.locked_by.to_dict()
        return out


def provenance(resolved: Resolved) -> Provenance:
    """Who set what in ``resolved``, worked out on the first call (by replaying its merge) and kept with it.

    Raises:
        ProfileError: a step of the merge fails, as the merge itself did (it cannot, for a profile it merged).
    """
    if resolved.provenance_memo is None:
        record = Provenance(Resolved.initial(resolved.name, target=resolved.target,
                                             kubernetes_version=resolved.kubernetes_version))
        for fragment in resolved.fragments:
            record.apply(merge_step(record.state, fragment), fragment)
        record.finish()
        resolved.provenance_memo = record
    return resolved.provenance_memo


class Provenance:
    """The merge of one profile, step by step, with the origin of every leaf kept as it goes.

    Args:
        initial: What lies below every layer (:meth:`Resolved.initial`, with the merge's target and Kubernetes
            version); each :meth:`apply` then takes the state after one more fragment, :meth:`finish` the end.

    Attributes:
        state: The state after the last step.
        leaves: Its leaves, path -> value.
        setters: Who set each leaf (:class:`Setter`).
        history: Per leaf, the values lower layers had written there, lowest first, each as ``(value, Origin)``.
        removed: The values a layer removed and the atomic lists a layer replaced, as removed :class:`Entry` s.
        notes: Per value written ``auto``, the rule that gave it.
    """

    def __init__(self, initial: Resolved) -> None:
        self.state = initial
        self.fragments: list[Fragment] = []
        self.leaves = self._leaves_of(initial)
        self.setters = {p: Setter(-1, default_origin(p, initial.target)) for p in self.leaves}
        self.history: dict[PathT, list[tuple[Any, Origin]]] = {}
        self.removed: list[Entry] = []
        self.removers: dict[PathT, Setter] = {}
        self.notes: dict[PathT, str] = {}
        self._under: dict[str, dict[PathT, Setter]] = {}  # per table, the highest setter under each path

    def _leaves_of(self, state: Resolved) -> dict[PathT, Any]:
        return profile_leaves(state.to_dict(), kubernetes_version=state.kubernetes_version)

    def apply(self, state: Resolved, fragment: Fragment) -> set[PathT]:
        """Record the step that merged ``fragment`` on :attr:`state`, which gave ``state``.

        Returns:
            The leaf paths whose value the step changed (:func:`~.leaves.same` tells): new, removed, or another
            value. Writing the value a path already had changes nothing.
        """
        before, self.state = self.state, state
        self.fragments.append(fragment)
        meant: set[PathT] = set()
        written = profile_leaves(fragment_profile(fragment), kubernetes_version=state.kubernetes_version, patch=True,
                                 meant=meant)
        self._replaced_lists(before, state, written, fragment, meant)
        return self._step(self._leaves_of(state), written, fragment)

    def finish(self) -> Resolved:
        """The plugin's defaults filled in where a layer deleted an ``elastic`` key, and ``auto`` values resolved
        (:func:`~.auto.resolve_auto`): the final state, the merged profile's data."""
        final = self.state.replace(elastic_settings=fill_plugin_defaults(copy_plain(self.state.elastic_settings),
                                                                        self.state.target))
        self._step(self._leaves_of(final), {}, None)
        final, rules = resolve_auto(final)
        for path, (value, rule) in rules.items():  # still set by the layer that wrote ``auto``, with its rule
            if value is not None and path in self.setters:
                self.notes[path] = rule
            else:  # a key the rule leaves out (no memory for a sizeLimit to follow): not shown, as render does
                self.history.pop(path, None)
        if rules:
            self.leaves = self._leaves_of(final)
            self.setters = {p: s for p, s in self.setters.items() if p in self.leaves}
            self._under.clear()
        self.state = final
        return final

    def setter(self, path: PathT, *, defaults: bool = False) -> Setter | None:
        """Who set the value at ``path``: a leaf's setter; for a list item or a mapping, the highest fragment
        that set a leaf of it, located where that fragment writes ``path``.

        Args:
            path: A leaf path, or the path of anything holding leaves.
            defaults: Also answer for a value that only the ``default`` layer set (else ``None``).
        """
        path = tuple(path)
        if path in self.setters:
            found = self.setters[path]
            return found if defaults or found.index >= 0 else None
        top = self._highest_under("setters", path)
        if top is None or top.index < 0:
            return top if defaults else None
        return Setter(top.index, set_origin(self.fragments[top.index], path))

    def remover(self, path: PathT) -> Setter | None:
        """Who last removed the value at ``path`` or a leaf under it (a ``null``, ``delete = [...]``, a ``$patch``,
        a replaced list), located where it removes it; ``None`` when no layer removed one."""
        path = tuple(path)
        return self._highest_under("removers", path)

    def _highest_under(self, table: str, path: PathT) -> Setter | None:
        """:func:`highest` of the setters (or removers) of ``path`` and the paths under it, from an index of every
        path's prefixes built once per step: looked for path by path, ``verify`` of a pod of thousands of list items
        against as many took minutes. Of several as high, the first recorded, as :func:`highest` takes it."""
        under = self._under.get(table)
        if under is None:
            under = self._under[table] = {}
            for p, s in getattr(self, table).items():
                for i in range(len(p) + 1):
                    if (top := under.get(p[:i])) is None or s.index > top.index:
                        under[p[:i]] = s
        return under.get(path)

    def entries(self) -> list[Entry]:
        """Every leaf with who set it, then every removed value and replaced list, in the order they came."""
        return [Entry(p, v, self.setters[p].origin, None, self.history.get(p, []), note=self.notes.get(p))
                for p, v in self.leaves.items()] + self.removed

    def _step(self, cur: dict[PathT, Any], written: Mapping[PathT, Any], fragment: Fragment | None) -> set[PathT]:
        prev, index = self.leaves, len(self.fragments) - 1
        changed = {p for p in cur if p not in prev or not same(prev[p], cur[p])} | (prev.keys() - cur.keys())
        changed |= _moved_lists(prev, cur)
        containers = {p[:i] for p in cur for i in range(len(p))}
        for path, old in prev.items():
            if path not in cur and isinstance(old, (dict, list)) and path in containers:  # filled, not removed
                self.history.pop(path, None)
                continue
            replaced = path in cur and has_index(path) and not same(cur[path], old)
            if path not in cur or replaced:
                assert fragment is not None  # the defaults never remove
                self.removed.append(Entry(path, old, self.setters[path].origin, change_origin(fragment, path),
                                          self.history.pop(path, [])))
                self.removers[path] = Setter(index, self.removed[-1].removed_by)
        for path, value in cur.items():
            if path in prev and path not in changed and path not in written:
                continue
            if path in prev and not (has_index(path) and path in changed):
                self.history.setdefault(path, []).append((prev[path], self.setters[path].origin))
            self.setters[path] = (Setter(index, set_origin(fragment, path)) if fragment is not None
                                  else Setter(-1, default_origin(path, self.state.target)))
        for path in [p for p in self.setters if p not in cur]:
            del self.setters[path]
        self.leaves = cur
        self._under.clear()
        return changed

    def _replaced_lists(self, before: Resolved, after: Resolved, written: Mapping[PathT, Any], fragment: Fragment,
                        meant: set[PathT]) -> None:
        """An entry for each atomic list ``fragment`` writes where a lower layer had a non-empty one, with the
        items the new list drops and whether the fragment says the replacement is meant (``meant``)."""
        lists = written_lists(written) | meant
        old_profile = before.to_dict() if lists else {}
        new_profile = after.to_dict() if lists else {}
        for path in sorted(lists, key=format_path):
            old = value_at(old_profile, path)
            if not isinstance(old, list) or not old:
                continue
            first = next((p for p in self.leaves if p[:len(path)] == path and len(p) > len(path)), None)
            if first is None:
                continue
            new = value_at(new_profile, path)
            new = new if isinstance(new, list) else []
            dropped = [copy_plain(item) for item in old if not any(same(item, kept) for kept in new)]
            self.removed.append(Entry(path, copy_plain(old), self.setters[first].origin, change_origin(fragment, path),
                                      [], len(old), dropped=dropped, meant=path in meant))


def written_lists(written: Mapping[PathT, Any]) -> set[PathT]:
    """The lists without a merge key that one layer's leaves (``profile_leaves(..., patch=True)``) write: each
    replaces whole the list a lower layer had there, an empty one included."""
    return {atomic_list(path) or path for path, value in written.items() if atomic_list(path) or value == []}


def _moved_lists(prev: Mapping[PathT, Any], cur: Mapping[PathT, Any]) -> set[PathT]:
    """The lists merged by key whose items (the ones in both) are in another order after a step (lists compare
    in order, :func:`~.leaves.same`): a ``$setElementOrder`` directive moves items without changing a leaf."""
    orders = []
    for leaves in (prev, cur):
        order: dict[PathT, dict[Select, None]] = {}  # each list's items in order, as a dict: found in one lookup
        for path in leaves:
            for i, part in enumerate(path):
                if isinstance(part, Select):
                    order.setdefault(path[:i], {}).setdefault(part, None)
        orders.append(order)
    old, new = orders
    return {p for p in old.keys() & new.keys() if [s for s in old[p] if s in new[p]] != [s for s in new[p] if s in old[p]]}
