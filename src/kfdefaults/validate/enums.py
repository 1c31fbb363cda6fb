"""Allowed values of Kubernetes string fields, read from the schema's own descriptions.

The schemas carry no ``enum`` for core fields; the allowed values are in the field's description ("One of
Always, Never, IfNotPresent.", "Valid operators are Exists and Equal.").
"""

from __future__ import annotations

import functools
import re

# The description of emptyDir.medium lists "" and Memory only; the kubelet's emptyDir plugin also mounts
# hugetlbfs for HugePages and HugePages-<size> (k8s.io/kubernetes pkg/volume/emptydir). The one value set the
# schema's text leaves incomplete.
ENUM_EXTRA = {("io.k8s.api.core.v1.EmptyDirVolumeSource", "medium"): re.compile(r"HugePages(-[0-9A-Za-z]+)?")}

_ENUM_TRIGGER = re.compile(r"\b(?:One of|Must be|[Vv]alid (?:values|operators) are|[Aa]llowed values are)\s+")
_ENUM_ITEM = re.compile(r"'([^'\s]*)'|\"([^\"\s]*)\"|([A-Z][A-Za-z0-9]*)\b|(an empty string(?: \(default\))?)")
_ENUM_SEP = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+")
_ENUM_NEXT_SENTENCE = re.compile(r"\.\s+")


@functools.lru_cache(maxsize=None)
def enum_values(description: str) -> frozenset[str] | None:
    """The values a field's description lists as the only ones allowed, or ``None`` when it lists none.

    Recognises the phrasings of the Kubernetes API documentation: "One of A, B, C.", "Must be A, B, or C.",
    "Valid values are 'A', 'B' or 'C'.", "Valid operators are A and B.", "allowed values are A, B and C.",
    "Must be an empty string (default) or Memory." A list must have two values or more, written as quoted
    strings or capitalised identifiers, and end a sentence; anything else is not taken for an enumeration.

    Args:
        description: The ``description`` of a property in the Kubernetes schema.

    Returns:
        The allowed values (``""`` stands for "an empty string"), or ``None``.
    """
    for trigger in _ENUM_TRIGGER.finditer(description):
        values = _enum_list(description, trigger.end())
        if values:
            return frozenset(values)
    return None


def _enum_list(text: str, pos: int) -> list[str] | None:
    values: list[str] = []
    while True:
        item = _ENUM_ITEM.match(text, pos)
        if not item:
            return None
        quoted1, quoted2, ident, empty = item.groups()
        values.append("" if empty else next(v for v in (quoted1, quoted2, ident) if v is not None))
        pos = item.end()
        sep = _ENUM_SEP.match(text, pos)
        if sep:
            pos = sep.end()
            continue
        # "In, NotIn, Exists, DoesNotExist. Gt, and Lt.": a list that runs on after a full stop
        nxt = _ENUM_NEXT_SENTENCE.match(text, pos)
        if nxt:
            after = _ENUM_ITEM.match(text, nxt.end())
            if after and _ENUM_SEP.match(text, after.end()):
                pos = nxt.end()
                continue
        break
    if len(values) < 2 or (pos < len(text) and text[pos] not in ".;)"):
        return None
    return values
