"""A list without a merge key that a layer replaces whole, dropping what a lower layer put in it: one warning, the
same whichever layer replaces it (a platform file over the builtin profile, ``@task(pod_template=...)`` over the
profile).

Strategic merge patch replaces such a list whole (``tolerations``, ``args``, ``command``: no
``x-kubernetes-patch-merge-key``; apimachinery ``mergeSliceHandler`` takes the patch's list as it is), as
``kubectl patch`` does: a platform profile that sets ``tolerations`` drops the builtin GPU toleration. The
provenance records each such replacement (:func:`kfdefaults.merge.provenance.provenance`: the lower list, who set
it, who replaced it, the items dropped); this check says it, at the replacing line, naming the lower list's line.
A replacement that keeps every item of the lower list drops nothing and is not said; one whose list holds a
``$patch: replace`` item is meant, and is not said either (:func:`kfdefaults.merge.leaves.without_replace_marks`).

Who set what is worked out by replaying the merge; a profile none of whose layers writes a list that a layer
below it wrote, leaving out one of its items, loses nothing, and is told so from its fragments alone
(:func:`may_replace_a_list`).
"""

from __future__ import annotations

import json
from typing import Collection, Sequence

from ..errors import Finding
from ..merge.leaves import directive_only, profile_leaves, same, value_at
from ..merge.origins import fragment_profile
from ..merge.provenance import provenance, written_lists
from ..merge.result import Resolved
from ..paths import PathT, format_path
from ..validate.fragment import Fragment

SHOWN_ITEMS = 3
"""How many dropped items a warning quotes (then ``...``)."""


def may_replace_a_list(fragments: Sequence[Fragment], kubernetes_version: str | None,
                       layers: Collection[str] | None = None) -> bool:
    """Whether a fragment (of ``layers``, or any) writes a list without a merge key that a fragment below it wrote
    too, without an item of that lower list and without ``$patch: replace``: only then can a list be replaced
    whole with a loss, and only then is the merge replayed to say so. Read from the fragments alone."""
    below: dict[PathT, list] = {}
    for fragment in fragments:
        if not fragment.pod_template:
            continue
        profile, meant = fragment_profile(fragment), set()
        written = profile_leaves(profile, kubernetes_version=kubernetes_version, patch=True, meant=meant)
        for path in written_lists(written):
            items = [item for item in value_at(profile, path) or [] if not directive_only(item)]
            lost = [item for item in below.get(path, []) if not any(same(item, kept) for kept in items)]
            if lost and path not in meant and (layers is None or fragment.layer in layers):
                return True
            below[path] = items
    return False


def replaced_lists(resolved: Resolved, layers: Collection[str] | None = None) -> list[Finding]:
    """A warning for each list without a merge key that a layer (of ``layers``, or any) replaces whole while
    dropping items of the list below it, unless the replacing list says ``$patch: replace``.

    Each is located where the replacing list is written (a file's line, or the task layer's label:
    ``@task(pod_template=...)``), names the list's path, the lower list's layer and ``FILE:LINE``, and the items
    dropped (:data:`SHOWN_ITEMS` of them, as JSON).
    """
    if not may_replace_a_list(resolved.fragments, resolved.kubernetes_version, layers):
        return []
    found = []
    for entry in provenance(resolved).removed:
        replacer = entry.removed_by
        if entry.items is None or not entry.dropped or entry.meant or replacer is None:
            continue
        if layers is not None and replacer.layer not in layers:
            continue
        count = len(entry.dropped)
        items = ", ".join(json.dumps(item, sort_keys=True) for item in entry.dropped[:SHOWN_ITEMS])
        more = ", ..." if count > SHOWN_ITEMS else ""
        them = "them" if count != 1 else "it"
        dropped = (f"its {count} item{'s are' if count != 1 else ' is'}" if count == entry.items
                   else f"{count} of its {entry.items} items {'are' if count != 1 else 'is'}")
        mark = (f", or make `$patch: replace` an item of the list to say that dropping {them} is meant"
                if replacer.location.line or replacer.location.file.startswith("--set") else "")
        found.append(Finding(replacer.location, format_path(entry.path), (
            f"replaces the `{format_path(entry.path[-1:])}` of {entry.set_by.layer} {entry.set_by.where} whole (a list "
            f"without a merge key is not merged item by item): {dropped} dropped ({items}{more}); repeat {them} here "
            f"to keep {them}{mark}"),
            "warning", replacer.layer))
    return found
