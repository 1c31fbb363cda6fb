"""Structural differences between two merged profiles, leaf by leaf.

Both sides are flattened into leaves as ``render --explain`` names them (:mod:`kfdefaults.merge.leaves`): list items
by their patch merge key where the list has one (``containers[name=primary]``), by index otherwise
(``tolerations[1]``). A difference is a leaf path whose value is only on one side or differs
(:func:`kfdefaults.merge.leaves.same`: ``8`` and ``"8"`` differ, ``1`` and ``1.0`` do not). ``name`` is not compared (it is what was asked for); where a value came from is
not a difference either, but each difference carries the origin of both sides, so that a reviewer sees which
file caused it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Sequence

from ..escape import code_span, table_cell
from ..merge.leaves import atomic_list, same
from ..merge.origins import Origin
from ..merge.provenance import Entry
from ..paths import PathT, Select, format_path
from .explain import explain, skeleton
from .leaves import format_value, tree_order

ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()
"""Stands for "no value at this path on this side"."""


@dataclass
class Side:
    """One side of a comparison.

    Attributes:
        label: How to name it in output (``gpu-large``, ``before``).
        name: The profile name.
        folders: Layer -> the folders that side read, for the record.
        entries: The live leaves from :func:`kfdefaults.show.explain.explain` (removed ones left out).
        fit: With the cluster's node pools known: pool name -> ``(fits, why not)``, the reasons joined by ``; ``
            (:func:`kfdefaults.check.fit.fit`); ``None`` when no pool is known.
    """

    label: str
    name: str
    folders: dict[str, list[str]]
    entries: list[Entry]
    fit: dict[str, tuple[bool, str]] | None = None

    def leaves(self) -> dict[PathT, Entry]:
        return {e.path: e for e in self.entries if not e.removed}

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "name": self.name, "folders": self.folders}


@dataclass
class Difference:
    """One leaf that differs.

    Attributes:
        path: The leaf path.
        change: ``"added"`` (only in B), ``"removed"`` (only in A) or ``"changed"``.
        before: The value in A, or :data:`ABSENT`.
        after: The value in B, or :data:`ABSENT`.
        before_origin: Who set it in A, ``None`` when absent.
        after_origin: Who set it in B, ``None`` when absent.
        after_removed_by: When B has no value here because a layer of B removed it: who did.
    """

    path: PathT
    change: str
    before: Any
    after: Any
    before_origin: Origin | None
    after_origin: Origin | None
    after_removed_by: Origin | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "change", "a"?, "b"?, "a_set_by"?, "b_set_by"?}``: a side's keys are left out where it has no value."""
        out: dict[str, Any] = {"path": format_path(self.path), "change": self.change}
        if self.before is not ABSENT:
            out["a"] = self.before
        if self.after is not ABSENT:
            out["b"] = self.after
        if self.before_origin is not None:
            out["a_set_by"] = self.before_origin.to_dict()
        if self.after_origin is not None:
            out["b_set_by"] = self.after_origin.to_dict()
        if self.after_removed_by is not None:
            out["b_removed_by"] = self.after_removed_by.to_dict()
        return out

    def where(self) -> tuple[str, Origin | None]:
        """What to show as the cause: ``("", B's origin)``, ``("removed by", who)`` or ``("was", A's origin)``."""
        if self.after_origin is not None:
            return "", self.after_origin
        if self.after_removed_by is not None:
            return "removed by ", self.after_removed_by
        return "was ", self.before_origin

    def cause(self, code: Any = str, name: Any = None) -> str:
        """The "set by" text: who set B's value (or removed it, or set A's), and, when a value changed layer
        (a team now overriding the platform), which layer set the value before. ``code`` formats a location;
        ``name`` names an origin instead (``LAYER FILE:LINE``, the file shortened: the terminal's view)."""
        prefix, origin = self.where()
        if origin is None:
            return ""
        name = name or (lambda o: f"{o.layer} {code(o.where)}")
        text = f"{prefix}{name(origin)}"
        before = self.before_origin
        if self.change == "changed" and before is not None and before.layer != origin.layer:
            # the builtin files are the package's own: their layer says enough, and their path is the machine's
            text += " (was builtin)" if before.layer == "builtin" else f" (was {name(before)})"
        return text


def side(label: str, resolved: Any, folders: Mapping[str, Sequence[str]], *, fit: Any = None) -> Side:
    """A :class:`Side` from a :class:`~kfdefaults.Resolved` profile, and its :class:`~kfdefaults.check.fit.FitReport`
    when the cluster's pools are known."""
    entries = explain(resolved)
    fits = None if fit is None else {v.pool.name: (v.fits, "; ".join(c.reason for c in v.causes)) for v in fit.pools}
    return Side(label, resolved.name, {k: list(v) for k, v in folders.items()}, entries, fits)


class FitChange(NamedTuple):
    """A pool the profile fits on one side and not on the other (or that one side has no such pool).

    Attributes:
        pool: The pool's name.
        before: ``(fits, why not)`` on side A, ``None`` when A has no such pool.
        after: The same on side B.
    """

    pool: str
    before: tuple[bool, str] | None
    after: tuple[bool, str] | None


def fit_changes(a: Side, b: Side) -> list[FitChange]:
    """The pools whose fit differs between ``a`` and ``b``, in B's order then A's; ``[]`` when neither side knows
    its pools."""
    if a.fit is None and b.fit is None:
        return []
    before, after = a.fit or {}, b.fit or {}
    names = list(after) + [n for n in before if n not in after]
    return [FitChange(n, before.get(n), after.get(n)) for n in names
            if (before.get(n) or (None,))[0] != (after.get(n) or (None,))[0]]


def _state(state: tuple[bool, str] | None, code: Any = str) -> str:
    if state is None:
        return "no such pool"
    return "fits" if state[0] else f"does not fit ({code(state[1])})" if state[1] else "does not fit"


def fit_lines(changes: Sequence[FitChange], code: Any = str, arrow: str = "->") -> list[str]:
    """One line per pool whose fit changes: ``pool a100: fits -> does not fit (Insufficient nvidia.com/gpu)``;
    ``code`` formats the text that comes from files (a pool's name, a reason)."""
    return [f"pool {code(c.pool)}: {_state(c.before, code)} {arrow} {_state(c.after, code)}" for c in changes]


def differences(a: Side, b: Side) -> list[Difference]:
    """Leaves that differ between ``a`` and ``b``, in output order (B's order, then what only A has).

    A list without a merge key (``tolerations``, ``args``) is replaced whole by a layer, and its items have no
    identity to compare by: when it differs, it is one difference at the list's path with both lists, not a
    difference per position (which would show a replaced GPU toleration as an edited one).

    Returns:
        One :class:`Difference` per leaf path or per differing list without a merge key; ``[]`` when the two
        merged profiles carry the same data.
    """
    left, right = a.leaves(), b.leaves()
    removed_in_b = {e.path: e.removed_by for e in b.entries if e.removed_by is not None}
    out: list[Difference] = []
    lists_done: set[PathT] = set()
    for path in tree_order(set(left) | set(right), skeleton() + list(right) + list(left)):
        x, y = left.get(path), right.get(path)
        if x is not None and y is not None and same(x.value, y.value):
            continue
        whole = atomic_list(path) or (path if any(e is not None and e.value == [] for e in (x, y)) else None)
        if whole is not None:
            if whole not in lists_done:
                lists_done.add(whole)
                out.append(_list_difference(whole, left, right, removed_in_b))
            continue
        if x is not None and y is not None:
            out.append(Difference(path, "changed", x.value, y.value, x.set_by, y.set_by))
        elif x is not None:
            out.append(Difference(path, "removed", x.value, ABSENT, x.set_by, None, removed_in_b.get(path)))
        else:
            assert y is not None
            out.append(Difference(path, "added", ABSENT, y.value, None, y.set_by))
    return out


def _list_difference(at: PathT, left: Mapping[PathT, Entry], right: Mapping[PathT, Entry],
                     removed_in_b: Mapping[PathT, Origin | None]) -> Difference:
    """One difference for the whole list at ``at``, each side's list rebuilt from its leaves."""
    def gather(leaves: Mapping[PathT, Entry]) -> tuple[Any, Origin | None]:
        empty = leaves.get(at)
        if empty is not None and empty.value == []:  # an empty list is a leaf of its own
            return [], empty.set_by
        under = sorted((p[len(at):], e) for p, e in leaves.items() if p[:len(at)] == at and len(p) > len(at)
                       and isinstance(p[len(at)], int))
        if not under:
            return ABSENT, None
        items: list[Any] = []
        for rest, entry in under:
            _place(items, rest, entry.value)
        return items, under[0][1].set_by

    before, before_origin = gather(left)
    after, after_origin = gather(right)
    change = "added" if before is ABSENT else "removed" if after is ABSENT else "changed"
    removed_by = next((who for p, who in removed_in_b.items() if p[:len(at)] == at and who is not None), None)
    return Difference(at, change, before, after, before_origin, after_origin,
                      removed_by if after is ABSENT else None)


def _place(container: Any, rest: PathT, value: Any) -> None:
    """Put ``value`` at the relative path ``rest`` (indices and keys) inside ``container``, creating what is missing."""
    import copy

    head, tail = rest[0], rest[1:]
    if isinstance(head, int) and not isinstance(head, bool):
        while len(container) <= head:
            container.append(None)
        if not tail:
            container[head] = copy.deepcopy(value)
            return
        if container[head] is None:
            container[head] = [] if isinstance(tail[0], int) and not isinstance(tail[0], bool) else {}
        _place(container[head], tail, value)
        return
    key = head.value if isinstance(head, Select) else head
    if not tail:
        container[key] = copy.deepcopy(value)
        return
    if key not in container:
        container[key] = [] if isinstance(tail[0], int) and not isinstance(tail[0], bool) else {}
    _place(container[key], tail, value)


def diff_document(a: Side, b: Side, diffs: Sequence[Difference]) -> dict[str, Any]:
    """The JSON / YAML form: ``{"a": {...}, "b": {...}, "equal": bool, "differences": [...], "fit_changes":
    [{"pool", "a", "b"}]}``, a side's fit ``{"fits", "why_not"}`` or ``null`` (no such pool)."""
    def state(value: tuple[bool, str] | None) -> dict[str, Any] | None:
        return None if value is None else {"fits": value[0], "why_not": value[1]}

    changes = fit_changes(a, b)
    return {"a": a.to_dict(), "b": b.to_dict(), "equal": not diffs and not changes,
            "differences": [d.to_dict() for d in diffs],
            "fit_changes": [{"pool": c.pool, "a": state(c.before), "b": state(c.after)} for c in changes]}


_MARK = {"added": "+", "removed": "-", "changed": "~"}


def diff_lines(diffs: Sequence[Difference]) -> list[str]:
    """Plain text, one line per difference, stable::

        ~ elastic.nnodes: "2:4" -> 2
        - pod_template.spec.tolerations[1].key: pool
        + pod_template.labels.team: vision

    ``-`` only in A, ``+`` only in B, ``~`` in both with different values; values as
    :func:`kfdefaults.show.leaves.format_value` writes them. Each line is printable as it is: a path and a value
    are written with their control characters escaped (:func:`kfdefaults.paths.format_key`, ``format_value``).
    """
    lines = []
    for d in diffs:
        path = format_path(d.path)
        if d.change == "changed":
            lines.append(f"~ {path}: {format_value(d.before)} -> {format_value(d.after)}")
        elif d.change == "removed":
            lines.append(f"- {path}: {format_value(d.before)}")
        else:
            lines.append(f"+ {path}: {format_value(d.after)}")
    return lines


def diff_markdown(a: Side, b: Side, diffs: Sequence[Difference]) -> str:
    """A Markdown summary and table, ready to paste into a pull-request comment.

    Columns: the change (``+``, ``-``, ``~``), the leaf path, the value on each side, and where the value
    that is now in effect was set (B's origin; A's for a value B no longer has), with the layer that set A's
    value when another layer set it (``team ... (was platform ...)``).

    Every text that came from a file or the command line (the labels, paths, values, file names) is a code span
    (:func:`kfdefaults.escape.code_span`, :func:`~kfdefaults.escape.table_cell`): nothing a profile holds is read
    as Markdown or HTML, and no value ends a table row.
    """
    title = f"**kfdefaults diff** {code_span(a.label)} → {code_span(b.label)}"
    fits = [f"- {line}" for line in fit_lines(fit_changes(a, b), code_span, "→")]
    fit_text = "\n".join(["", "Node pools whose fit changes:", "", *fits]) + "\n" if fits else ""
    if not diffs:
        return f"{title}: no differences.\n" + fit_text
    noun = "difference" if len(diffs) == 1 else "differences"
    lines = [f"{title}: {len(diffs)} {noun}.", "",
             f"| | path | {table_cell(a.label)} | {table_cell(b.label)} | set by |", "|---|---|---|---|---|"]
    for d in diffs:
        before = table_cell(format_value(d.before)) if d.before is not ABSENT else ""
        after = table_cell(format_value(d.after)) if d.after is not ABSENT else ""
        lines.append(f"| {_MARK[d.change]} | {table_cell(format_path(d.path))} | {before} | {after} | "
                     f"{d.cause(table_cell)} |")
    return "\n".join(lines) + "\n" + fit_text
