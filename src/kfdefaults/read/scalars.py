"""Plain YAML scalars read by the YAML 1.2 core schema, the same whatever the YAML library's version.

``no``, ``on`` and ``y`` stay strings, ``1234567`` is an int, ``2024-01-01`` is a string; an integer with a
leading zero (``0755``), which YAML 1.1 readers such as kubectl take for octal, is refused rather than guessed.
``--set`` values are read by the same rules.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import AmbiguousScalar
from .document import MAX_INT_DIGITS

_CORE_NULL = re.compile(r"~|null|Null|NULL|")
_CORE_BOOL = re.compile(r"true|True|TRUE|false|False|FALSE")
_CORE_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_CORE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_CORE_INF = re.compile(r"[-+]?\.(inf|Inf|INF)")
_CORE_NAN = re.compile(r"\.(nan|NaN|NAN)")


_LEADING_ZERO = re.compile(r"[-+]?0[0-9]+")


def too_many_digits(text: str) -> str:
    """The message for an integer written with more than :data:`MAX_INT_DIGITS` digits."""
    return (f"`{text[:20]}...` is an integer of {len(text)} digits; no profile value is that large (at most "
            f"{MAX_INT_DIGITS} digits are read)")


def resolve_plain_scalar(value: str) -> Any:
    """The value of a plain (unquoted) YAML scalar under the YAML 1.2 core schema.

    ``"no"`` -> ``"no"``, ``"1234567"`` -> ``1234567``, ``"0x1F"`` -> ``31``, ``"1e3"`` -> ``1000.0``,
    ``"~"`` -> ``None``.

    Raises:
        AmbiguousScalar: an integer with a leading zero (``0755``: decimal 755 in YAML 1.2, octal 493 in YAML 1.1,
            which kubectl reads), or one of more than :data:`~kfdefaults.read.document.MAX_INT_DIGITS` digits.
    """
    if _CORE_NULL.fullmatch(value):
        return None
    if _CORE_BOOL.fullmatch(value):
        return value[0] in "tT"
    if _CORE_INT.fullmatch(value):
        if len(value) > MAX_INT_DIGITS:
            raise AmbiguousScalar(too_many_digits(value))
        if value.startswith("0o"):
            return int(value[2:], 8)
        if value.startswith("0x"):
            return int(value[2:], 16)
        if _LEADING_ZERO.fullmatch(value):
            digits = value.lstrip("+-0") or "0"
            octal = f"the octal {int(digits, 8)}" if set(digits) <= set("01234567") else "an error"
            raise AmbiguousScalar(
                f"`{value}` is the decimal {int(value)} in YAML 1.2 but {octal} for YAML 1.1 readers such as "
                f"kubectl: write `0o{digits}` for an octal value (a file mode), `{int(value)}` for a decimal, "
                f"or quote it for a string"
            )
        return int(value)
    if _CORE_FLOAT.fullmatch(value):
        return float(value)
    if _CORE_INF.fullmatch(value):
        return -math.inf if value.startswith("-") else math.inf
    if _CORE_NAN.fullmatch(value):
        return math.nan
    return value
