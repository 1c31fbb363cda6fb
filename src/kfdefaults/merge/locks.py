"""Locked paths in the merge: a profile's ``locked`` list holds each path against every fragment merged after it.

The rule, checked step by step as :func:`kfdefaults.merge.fold.merge_fragments` folds the fragments:

* A lock is declared by the fragment whose file lists it, once that fragment is merged: the locked value is the
  merged value at that point (the file's own value, or what the layers below gave; "absent" is a value too, so
  locking ``pod_template.spec.nodeSelector`` where none is set means no later layer may add one).
* Every fragment merged after it is bound: the higher layers (team files, ``--set``, task arguments) and every
  profile that ``extends`` the locking one, in whatever layer it is defined. Parents come first in the merge, so
  a child keeps its parents' locks.
* A fragment breaks a lock when its step changes the value at the path to anything but the locked value: a
  different scalar, a deletion (``null``, ``delete: [...]``, ``$patch``), a list with another item or order, a
  mapping with another key. Writing the same value is allowed.

The path of a container named like the locking fragment's primary container
(``containers[name=primary]``) follows the primary container when a later layer renames it, as the merge does
(:mod:`.primary`).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..errors import Finding, Location
from ..paths import format_path
from ..validate.fragment import Fragment, Lock
from ..validate.task_layer import task_label
from .primary import DEFAULT_PRIMARY_CONTAINER_NAME
from .result import Resolved

PathT = tuple

ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()
"""The value of a path that is not in the merged profile."""


def primary_views(fragments: Sequence[Fragment]) -> tuple[list[str], str]:
    """The primary container's name as each fragment sees it (its own ``primary_container_name``, else the one
    below it, else flytekit's ``primary``), and the name the merge gives it in the end (the highest one set)."""
    views, view = [], DEFAULT_PRIMARY_CONTAINER_NAME
    for fragment in fragments:
        view = fragment.primary_container_name or view
        views.append(view)
    return views, view


def lock_path(lock: Lock, view: str, final: str) -> PathT:
    """The lock's path in the merged profile: ``containers[name=VIEW]`` becomes ``containers[name=FINAL]``."""
    steps = list(lock.steps)
    if steps[:3] == ["pod_template", "spec", "containers"] and len(steps) > 3 and isinstance(steps[3], tuple):
        key, value = steps[3]
        if key == "name" and value == view:
            steps[3] = (key, final)
    return tuple(steps)


def value_in_state(state: Resolved, steps: PathT) -> Any:
    """The merged value at a locked path (profile-file shape), or :data:`ABSENT`."""
    head, rest = steps[:2], steps[2:]
    if head == ("pod_template", "primary_container_name"):
        return state.primary_container_name
    if head[0] == "elastic":
        node: Any = state.elastic_settings
        rest = steps[1:]
    elif head[1] in ("labels", "annotations"):
        node = (state.pod_template_spec.get("metadata") or {}).get(head[1], ABSENT)
    else:
        node = state.pod_template_spec.get("spec", ABSENT)
    for step in rest:
        if node is ABSENT:
            return ABSENT
        node = _child(node, step)
    return node


def _child(node: Any, step: Any) -> Any:
    if isinstance(step, tuple):
        key, wanted = step
        if not isinstance(node, list):
            return ABSENT
        return next((item for item in node if isinstance(item, dict) and key in item
                     and (item[key] == wanted or str(item[key]) == str(wanted))), ABSENT)
    if not isinstance(node, dict) or step not in node or node[step] is None:
        return ABSENT
    return node[step]


def same(a: Any, b: Any) -> bool:
    """Equal as data, where ``true`` is not ``1`` and ``"8"`` is not ``8`` (mappings in any key order)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def shown(value: Any, limit: int = 70) -> str:
    """A value in a message: compact JSON, cut at ``limit`` characters."""
    if value is ABSENT:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def write_location(fragment: Fragment, steps: PathT) -> Location:
    """Where ``fragment`` writes at (or above) the locked path: the deepest key of the path that it writes."""
    if steps[:2] == ("pod_template", "primary_container_name"):
        return fragment.location(steps, key=True)
    if steps[0] == "elastic":
        node: Any = fragment.elastic
        data_path, file_path = steps[1:], ("elastic",)
    elif steps[1] in ("labels", "annotations"):
        node = fragment.pod_template.get("metadata") or {}
        data_path, file_path = steps[1:], ("pod_template",)
    else:
        node = fragment.pod_template
        data_path, file_path = steps[1:], ("pod_template",)
    reached: list[Any] = list(steps[:1])  # the path written so far, list items by selector
    for step in data_path:
        if isinstance(step, tuple):
            key, wanted = step
            index = next((i for i, item in enumerate(node) if isinstance(item, dict) and key in item
                          and str(item[key]) == str(wanted)), None) if isinstance(node, list) else None
            if index is None:
                break
            node, file_path = node[index], file_path + (index,)
        else:
            if not isinstance(node, dict) or step not in node:
                break
            node, file_path = node[step], file_path + (step,)
        reached.append(step)
    if fragment.document is None:  # the task layer: the --set (or argument) that wrote there
        label = task_label(format_path(reached), fragment.locations)
        return Location(label) if label else fragment.location(file_path)
    return fragment.location(file_path, key=not isinstance(node, (str, int, float, bool)) or node is None)


class LockBook:
    """The locks declared so far in one merge, and the check of each step against them.

    Args:
        fragments: Every fragment of the merge, lowest first, as :func:`~.primary.assign_primary_container`
            names their containers; :meth:`step` is called once for each, in this order.
    """

    def __init__(self, fragments: Sequence[Fragment]) -> None:
        self.views, self.final = primary_views(fragments)
        self.held: list[tuple[Lock, Fragment, PathT, Any]] = []
        self.index = 0

    def step(self, before: Resolved, after: Resolved, fragment: Fragment) -> list[Finding]:
        """Check the step that merged ``fragment`` onto ``before`` (giving ``after``) against the locks declared
        below it, then declare the fragment's own locks.

        Returns:
            One error per lock the step breaks, located where the fragment writes, naming where the lock is.
        """
        findings = []
        for lock, owner, steps, locked in self.held:
            old, new = value_in_state(before, steps), value_in_state(after, steps)
            if same(old, new) or same(new, locked):
                continue
            findings.append(self._broken(lock, owner, steps, locked, old, new, fragment))
        view = self.views[self.index] if self.index < len(self.views) else self.final
        for lock in fragment.locks:
            steps = lock_path(lock, view, self.final)
            self.held.append((lock, fragment, steps, value_in_state(after, steps)))
        self.index += 1
        return findings

    @staticmethod
    def _broken(lock: Lock, owner: Fragment, steps: PathT, locked: Any, old: Any, new: Any,
                fragment: Fragment) -> Finding:
        if old is ABSENT:
            change = f"this adds {shown(new)}"
        elif new is ABSENT:
            change = f"this deletes {shown(old)}"
        else:
            change = f"this changes {shown(old)} to {shown(new)}"
        whole = " (a locked list or mapping takes no new, changed or removed item)" if isinstance(locked, (list, dict)) else ""
        where = "" if owner.profile == fragment.profile else f" in profile `{owner.profile}`, which `{fragment.profile}` extends"
        if locked is ABSENT:
            rule = "it is locked unset, so a layer merged after the lock may not set it"
        else:
            rule = f"a layer merged after the lock may write the locked value ({shown(locked)}) and nothing else"
        message = f"locked by [{owner.layer}] {lock.location}{where}: {rule}; {change}{whole}"
        return Finding(write_location(fragment, steps), format_path(steps), message, layer=fragment.layer)
