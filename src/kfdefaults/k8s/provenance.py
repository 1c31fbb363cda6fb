"""Where a pod came from: the annotations kfdefaults puts on every registered pod template; and the one a profile
sets to say what the pod's receipt does.

``kubectl get pod -o yaml`` then tells which profile made a pod, which version of it (the digest of the merged
profile, :meth:`kfdefaults.Resolved.digest`) and under which ``kfdefaults.lock``; ``kfdefaults verify`` reads
them back.
"""

from __future__ import annotations

PROFILE_ANNOTATION = "kfdefaults.io/profile"
"""The profile's name."""

DIGEST_ANNOTATION = "kfdefaults.io/digest"
"""The digest of the profile merged across its file layers (builtin, platform, team, and the cluster's template
for flytekit), the task layer left out: the digest ``kfdefaults.lock`` records for it, ``sha256:...``."""

LOCK_ANNOTATION = "kfdefaults.io/lock"
"""The SHA-256 of the ``kfdefaults.lock`` file the profile was checked against, ``sha256:...``; absent without one."""

ANNOTATIONS = (PROFILE_ANNOTATION, DIGEST_ANNOTATION, LOCK_ANNOTATION)


def provenance_annotations(profile: str, digest: str, lock_digest: str | None = None) -> dict[str, str]:
    """The annotations of a pod made from ``profile`` (``{annotation: value}``, in :data:`ANNOTATIONS` order)."""
    out = {PROFILE_ANNOTATION: profile, DIGEST_ANNOTATION: digest}
    if lock_digest is not None:
        out[LOCK_ANNOTATION] = lock_digest
    return out


RECEIPT_ANNOTATION = "kfdefaults.io/receipt"
"""Set by a profile (``pod_template.annotations``): what the pod's receipt does (:mod:`kfdefaults.receipt`)."""

RECEIPT_POLICIES = {
    "report": "print the receipt in the task's log (the default)",
    "strict": "print it, and stop the task before its workers start when the pod differs from what was registered",
    "off": "take no receipt",
}
"""The values of :data:`RECEIPT_ANNOTATION`, and what each does."""
