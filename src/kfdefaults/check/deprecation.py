"""``deprecated: "use gpu-large-v2"``: a profile its owners want users to leave, and the warnings that say so.

A profile file's ``deprecated`` text marks the profile it defines. Everyone who uses the profile is warned, with
the text and where it is written: ``render``, ``list`` and ``Elastic(profile=...)`` for the profile itself, and
every profile that ``extends`` it (the warning then names both). ``validate`` warns the same way, except about
the files it was given: for the file that declares it, a deprecation is a deliberate choice of its owners, so it
is a note, which ``--strict`` does not count.
"""

from __future__ import annotations

from typing import Any, Collection

from ..errors import Finding

DEPRECATED_KEY = "deprecated"

NOTE = "note"
"""The severity of a finding that informs and never fails a run, not even with ``--strict``."""


def deprecations(resolved: Any, own_files: Collection[str] = ()) -> list[Finding]:
    """One finding per deprecated profile among the fragments of a merged profile.

    Args:
        resolved: A :class:`kfdefaults.Resolved` (anything with ``name`` and ``fragments``).
        own_files: Files whose own deprecation is a note rather than a warning (``validate``'s given files).

    Returns:
        Findings located at each ``deprecated`` key, in merge order: ``profile `X` is deprecated: TEXT``, or
        ``profile `Y` extends `X`, which is deprecated: TEXT`` for a parent.
    """
    findings, seen = [], set()
    for fragment in getattr(resolved, "fragments", []):
        text = getattr(fragment, "deprecated", None)
        if not text or fragment.source in seen:
            continue
        seen.add(fragment.source)
        if fragment.profile == resolved.name:
            message = f"profile `{fragment.profile}` is deprecated: {text}"
        else:
            message = f"profile `{resolved.name}` extends `{fragment.profile}`, which is deprecated: {text}"
        severity = NOTE if fragment.source in own_files else "warning"
        findings.append(Finding(fragment.location((DEPRECATED_KEY,)), DEPRECATED_KEY, message, severity,
                                fragment.layer))
    return findings
