"""Kubernetes resource quantities: the grammar, their value, and what a near miss probably meant.

The grammar is apimachinery's (``k8s.io/apimachinery/pkg/api/resource``, ``ParseQuantity``)::

    <quantity>        ::= <signedNumber><suffix>
    <signedNumber>    ::= <number> | <sign><number>
    <sign>            ::= "+" | "-"
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei                 (powers of 2**10)
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E     (powers of 10**3)
    <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>    (the exponent an integer)

A JSON or YAML number is a quantity too (the API server reads ``8`` as ``"8"``), except booleans, NaN and
infinities.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?"
)

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -3, "u": -2, "m": -1, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}

# A number and a unit as people write them by mistake: "16GB", "16 gi", "1,5Gi", "512MiB", "2K".
_NEAR_MISS = re.compile(r"\s*(?P<number>[+-]?(?:[0-9]+(?:[.,][0-9]*)?|[.,][0-9]+))\s*(?P<unit>[A-Za-z]*)\s*")


def is_quantity(value: Any) -> bool:
    """Whether ``value`` is a valid Kubernetes quantity: a string in the grammar above, or a finite number."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return math.isfinite(value)
    return isinstance(value, str) and _QUANTITY.fullmatch(value) is not None


def quantity_value(value: Any) -> Fraction | None:
    """The exact value of a quantity (``"16Gi"`` -> ``17179869184``, ``"500m"`` -> ``1/2``), or ``None`` if invalid.

    Binary suffixes are powers of 1024, decimal suffixes powers of 1000, ``e``/``E`` powers of 10; the unit is
    whatever the field measures (bytes for memory, cores for cpu, a count for ``nvidia.com/gpu``).
    """
    if not is_quantity(value):
        return None
    if isinstance(value, (int, float)):
        return Fraction(value)
    m = _QUANTITY.fullmatch(value)
    assert m is not None
    number = Fraction(m.group("number") if not m.group("number").endswith(".") else m.group("number")[:-1])
    if m.group("sign") == "-":
        number = -number
    if m.group("binary"):
        return number * 1024 ** _BINARY[m.group("binary")]
    if m.group("decimal"):
        return number * Fraction(1000) ** _DECIMAL[m.group("decimal")]
    if m.group("exponent"):
        exponent = int(m.group("exponent"))
        if abs(exponent) > 1000:  # apimachinery caps scales far below this; keep the arithmetic small
            return None
        return number * Fraction(10) ** exponent
    return number


def suggest_quantity(text: str) -> list[str]:
    """What a string that is not a quantity was probably meant to be, best guess first; ``[]`` if no idea.

    ``"16GB"`` -> ``["16G", "16Gi"]``, ``"16gi"`` / ``"16GiB"`` -> ``["16Gi"]``, ``"500mb"`` -> ``["500M", "500Mi"]``
    (``m`` is milli, not mega), ``"2K"`` -> ``["2k", "2Ki"]``, ``"1,5 Gi"`` -> ``["1.5Gi"]``, ``"8 bytes"`` -> ``["8"]``.
    """
    m = _NEAR_MISS.fullmatch(text)
    if not m:
        return []
    number = m.group("number").replace(",", ".")
    unit = m.group("unit")
    folded = unit.lower()
    if folded in ("b", "byte", "bytes"):
        return [number]
    if folded.endswith("b") and len(folded) > 1:
        folded = folded[:-1]  # GB, GiB, MB: the B is bytes
    candidates: list[str] = []
    if len(folded) == 2 and folded[1] == "i" and folded[0] in "kmgtpe":
        candidates = [number + folded[0].upper() + "i"]
    elif len(folded) == 1 and folded in "kmgtpe":
        decimal = "k" if folded == "k" else folded.upper()
        candidates = [number + decimal, number + folded.upper() + "i"]
    elif folded == "":
        candidates = [number]
    return [c for c in candidates if c != text and is_quantity(c)]


def quantity_problem(value: Any) -> str | None:
    """Why ``value`` is not a valid quantity, with the likely fix; ``None`` when it is valid.

    Args:
        value: A value from a profile file.

    Returns:
        A message such as ``"`16GB` is not a Kubernetes quantity; did you mean `16G` (10^9) or `16Gi` (2^30)?"``.
    """
    if is_quantity(value):
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        kind = "true or false" if isinstance(value, bool) else f"a {type(value).__name__}"
        return f"expected a Kubernetes quantity such as `8`, `500m` or `16Gi`, got {kind}"
    if isinstance(value, float):
        return f"`{value}` is not a Kubernetes quantity (it must be a finite number)"
    hints = suggest_quantity(value)
    hint = ""
    if len(hints) == 2:
        hint = f"; did you mean `{hints[0]}` (powers of 1000) or `{hints[1]}` (powers of 1024)?"
    elif hints:
        hint = f"; did you mean `{hints[0]}`?"
    else:
        hint = (
            "; write a number with an optional suffix: Ki Mi Gi Ti Pi Ei (powers of 1024), "
            "n u m k M G T P E (powers of 1000), or an exponent e3"
        )
    return f"`{value}` is not a Kubernetes quantity{hint}"
