"""``render --explain``: every leaf of a merged profile with who set it, every value a layer removed and every
atomic list a layer replaced whole, in the order ``render`` prints the profile.

Who set what is the merge's provenance (:mod:`kfdefaults.merge.provenance`), the one answer the locks, the checks
and the backend's messages give too; here it is put in output order, with the locks that hold each value
(:func:`kfdefaults.merge.locks.locked_by`). :mod:`.explain_view` prints it.
"""

from __future__ import annotations

from ..merge.leaves import profile_leaves
from ..merge.locks import held_locks, locked_by
from ..merge.provenance import Entry, provenance
from ..merge.result import Resolved
from ..paths import PathT
from .leaves import tree_order
from .output import ELASTIC_ORDER, POD_TEMPLATE_ORDER, order_profile


def explain(merged: Resolved) -> list[Entry]:
    """Every leaf of a merged profile with who set it, every value a layer removed and every atomic list a layer
    replaced whole, in output order.

    Args:
        merged: A :class:`~kfdefaults.Resolved`; its provenance is worked out if nothing asked for it yet.

    Returns:
        Entries sorted as ``render`` prints the leaves; a removed value comes right after the value now at
        its path, or after its surviving siblings; a replaced list before its new items.
    """
    record = provenance(merged)
    locks = held_locks(merged.fragments, merged.kubernetes_version)
    everything = record.entries()
    for entry in everything:
        if not entry.removed:
            entry.locked_by = locked_by(entry.path, locks)
    version = merged.kubernetes_version
    reference = skeleton() + list(profile_leaves(order_profile(record.state.to_dict(), version),
                                                 kubernetes_version=version))
    order = {id(e): i for i, e in enumerate(everything)}
    by_path: dict[PathT, list[Entry]] = {}
    for entry in everything:
        by_path.setdefault(entry.path, []).append(entry)
    out = []
    for path in tree_order(by_path, reference):
        out.extend(sorted(by_path[path], key=lambda e: (e.items is None, order[id(e)])))
    return out


def skeleton() -> list[PathT]:
    """The top of a profile in output order, so that a removed section sorts where ``render`` would print it."""
    return [("description",)] + [("elastic", k) for k in ELASTIC_ORDER] + [("pod_template", k) for k in POD_TEMPLATE_ORDER]
