"""Locked paths in the merge: a profile's ``locked`` list holds each path against every fragment merged after it.

The rule, checked step by step as :func:`kfdefaults.merge.fold.merge_fragments` folds the fragments, on the
leaves each step changes (:meth:`.provenance.Provenance.apply`, which compares values by :func:`.leaves.same`):

* A lock is declared by the fragment whose file lists it, once that fragment is merged: the locked value is the
  merged value at that point (the file's own value, or what the layers below gave; "absent" is a value too, so
  locking ``pod_template.spec.nodeSelector`` where none is set means no later layer may add one).
* Every fragment merged after it is bound: the higher layers (team files, ``--set``, task arguments) and every
  profile that ``extends`` the locking one, in whatever layer it is defined. Parents come first in the merge, so
  a child keeps its parents' locks.
* A fragment breaks a lock when its step changes the value at the path or anything under it: a different
  scalar, a deletion (``null``, ``delete: [...]``, ``$patch``), an added or removed item or key, items in
  another order. Writing the same value again is allowed (``1`` and ``1.0`` are the same number, ``true`` is
  not ``1``).

The path of a container named like the locking fragment's primary container
(``containers[name=primary]``) follows the primary container when a later layer renames it, as the merge does
(:mod:`.primary`).
"""

from __future__ import annotations

import json
from typing import Any, Collection, Sequence

from ..errors import Finding, SetError
from ..paths import PathT, Select, format_path
from ..validate.fragment import Fragment, Lock
from ..validate.sets import typed_selectors
from .leaves import value_at
from .origins import Origin, change_origin
from .primary import DEFAULT_PRIMARY_CONTAINER_NAME
from .result import Resolved


def primary_views(fragments: Sequence[Fragment]) -> tuple[list[str], str]:
    """The primary container's name as each fragment sees it (its own ``primary_container_name``, else the one
    below it, else flytekit's ``primary``), and the name the merge gives it in the end (the highest one set)."""
    views, view = [], DEFAULT_PRIMARY_CONTAINER_NAME
    for fragment in fragments:
        view = fragment.primary_container_name or view
        views.append(view)
    return views, view


def lock_path(lock: Lock, view: str, final: str, kubernetes_version: str | None) -> PathT:
    """The lock's leaf path in the merged profile: ``containers[name=VIEW]`` becomes ``containers[name=FINAL]``,
    a merge key's value typed as the schema types it (``ports[containerPort=8080]`` names the integer)."""
    try:
        steps = typed_selectors(list(lock.steps), lock.text, kubernetes_version)
    except SetError:  # validated with this schema; another one leaves the selector as written
        steps = list(lock.steps)
    if steps[:3] == ["pod_template", "spec", "containers"] and len(steps) > 3 and steps[3] == ("name", view):
        steps[3] = ("name", final)
    return tuple(Select(*step) if isinstance(step, tuple) else step for step in steps)


def held_locks(fragments: Sequence[Fragment], kubernetes_version: str | None) -> list[tuple[PathT, Origin]]:
    """Every lock of a merge, as ``(path in the merged profile, the Origin of its ``locked`` entry)``."""
    views, final = primary_views(fragments)
    return [(lock_path(lock, view, final, kubernetes_version), Origin(fragment.layer, fragment.source, lock.location))
            for fragment, view in zip(fragments, views) for lock in fragment.locks]


def locked_by(path: PathT, locks: Sequence[tuple[PathT, Origin]]) -> Origin | None:
    """The first lock whose path is ``path`` or holds it (``pod_template.spec.tolerations`` holds its items)."""
    return next((origin for held, origin in locks if path[:len(held)] == held), None)


def shown(value: Any, limit: int = 70) -> str:
    """A value in a message: compact JSON, cut at ``limit`` characters; ``nothing`` for an absent one."""
    if value is None:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class LockBook:
    """The locks declared so far in one merge, and the check of each step against them.

    Args:
        fragments: Every fragment of the merge, lowest first, as :func:`~.primary.assign_primary_container`
            names their containers; :meth:`step` is called once for each, in this order.
        kubernetes_version: The merge's Kubernetes version (its schema types the merge keys of the paths).
    """

    def __init__(self, fragments: Sequence[Fragment], kubernetes_version: str | None) -> None:
        self.views, self.final = primary_views(fragments)
        self.version = kubernetes_version
        self.held: list[tuple[Lock, Fragment, PathT, Any]] = []
        self.any = any(fragment.locks for fragment in fragments)

    def step(self, before: Resolved, after: Resolved, fragment: Fragment, changed: Collection[PathT]) -> list[Finding]:
        """Check the step that merged ``fragment`` onto ``before`` (giving ``after``, changing the leaves
        ``changed``) against the locks declared below it, then declare the fragment's own locks.

        Returns:
            One error per lock the step breaks, located where the fragment writes, naming where the lock is.
        """
        findings = [self._broken(lock, owner, path, locked, before, after, fragment)
                    for lock, owner, path, locked in self.held if any(p[:len(path)] == path for p in changed)]
        view = self.views[len(after.fragments) - 1]
        for lock in fragment.locks:
            path = lock_path(lock, view, self.final, self.version)
            self.held.append((lock, fragment, path, value_at(after.to_dict(), path)))
        return findings

    @staticmethod
    def _broken(lock: Lock, owner: Fragment, path: PathT, locked: Any, before: Resolved, after: Resolved,
                fragment: Fragment) -> Finding:
        old, new = value_at(before.to_dict(), path), value_at(after.to_dict(), path)
        if old is None:
            change = f"this adds {shown(new)}"
        elif new is None:
            change = f"this deletes {shown(old)}"
        else:
            change = f"this changes {shown(old)} to {shown(new)}"
        whole = " (a locked list or mapping takes no new, changed or removed item)" if isinstance(locked, (list, dict)) else ""
        where = "" if owner.profile == fragment.profile else f" in profile `{owner.profile}`, which `{fragment.profile}` extends"
        if locked is None:
            rule = "it is locked unset, so a layer merged after the lock may not set it"
        else:
            rule = f"a layer merged after the lock may write the locked value ({shown(locked)}) and nothing else"
        message = f"locked by [{owner.layer}] {lock.location}{where}: {rule}; {change}{whole}"
        return Finding(change_origin(fragment, path).location, format_path(path), message, layer=fragment.layer)
