"""A task's receipt (what its pod had when it started: :mod:`kfdefaults.receipt`) compared with what its profile
renders now: ``kfdefaults verify`` on a receipt, or a log that carries one.

The receipt holds what a pod can read of itself (``/dev/shm``, its memory and CPU limits, its GPUs, its environment,
its labels and annotations where the downward API shows them) and the elastic settings registered with the task.
Both are compared as the pod compared them with what was registered (:func:`kfdefaults.receipt.compare.compare`), but
with the profile as it resolves now; the elastic settings as :func:`~kfdefaults.show.verify.registered_mismatches`
compares a pod's ``KFDEFAULTS_ELASTIC``.
"""

from __future__ import annotations

from typing import Any

from ..merge.result import Resolved
from ..paths import PathT, Select, parse_path
from ..receipt.compare import compare
from ..receipt.expect import expected_pod
from .diff import ABSENT
from .live import LiveObject


def receipt_differences(obj: LiveObject, resolved: Resolved) -> tuple[list[tuple[PathT, Any, Any, str]], list[str]]:
    """What the pod had that the profile, as it resolves now, would not give it.

    Returns:
        ``([(path, what the pod had, what the profile gives now, what differs), ...], notes)``; a side without a
        value is :data:`~kfdefaults.show.diff.ABSENT`. The elastic settings the task ran with (the launch) are left
        to :func:`~kfdefaults.show.verify.registered_mismatches`; the training operator's ``PET_*`` and Flyte 2's
        NCCL variables, which the pod had, are here.
    """
    now = {"elastic": resolved.elastic_settings, "target": resolved.target.name,
           "pod": expected_pod(resolved, resolved.pod_spec, resolved.annotations)}
    differences, notes = compare(now, obj.data.get("observed") or {})
    out = []
    for d in differences:
        if d["path"] is None or d["what"].startswith("launch "):
            continue
        path = tuple(Select(*p) if isinstance(p, tuple) else p for p in parse_path(d["path"], positions=True))
        side = (lambda v: ABSENT if v is None else v)
        out.append((path, side(d["observed"]), side(d["registered"]), d["what"]))
    return out, notes
