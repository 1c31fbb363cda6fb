"""Kubernetes resource quantities: the grammar, their value, the bounds kfdefaults reads them within, and what a
near miss probably meant.

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

The value is the one ``ParseQuantity`` keeps: rounded up, away from zero, to a whole number of nano units
(``0.1n`` is ``1n``: "if you want some resources, you should get some resources", quantity.go). apimachinery
sets no bound on the text, so kfdefaults sets three, which every value Kubernetes' consumers can use keeps
(:func:`quantity_problem` says which one a value breaks):

* at most :data:`MAX_QUANTITY_CHARS` characters, checked before any digit is converted (Python refuses to
  convert more than 4,300 digits at all, ``sys.get_int_max_str_digits``);
* an exponent (``e3``) within int32: ``suffixer.interpret`` (suffix.go) parses it as an int64 and keeps its low 32
  bits, so ``1e4294967296`` is ``1`` to the API server;
* a magnitude of at most :data:`MAX_QUANTITY` (2**63 - 1): the kubelet and the scheduler read quantities as
  int64 (``Quantity.Value``, ``MilliValue``), whose result is undefined past it ("an overflowed result is
  undefined and must not be used", quantity.go), and ``ParseQuantity`` itself silently caps a binary-suffixed
  quantity there (``8Ei`` is 2**63 - 1).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from ..errors import shown

_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?"
)

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -3, "u": -2, "m": -1, "k": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}

MAX_QUANTITY_CHARS = 64
"""Longest quantity text read, in characters. The longest exact value Kubernetes' consumers hold, an int64 of nano
units, is 21 characters (``-9223372036854775808n``, ``-9223372036.854775808``); nothing past 64 is a value anyone
meant."""

MAX_QUANTITY = 2**63 - 1
"""Largest magnitude of a quantity, in its unit (bytes, cores, devices): the largest int64."""

_INT32 = 2**31 - 1
_NANO = 10**9

# A number and a unit as people write them by mistake: "16GB", "16 gi", "1,5Gi", "512MiB", "2K".
_NEAR_MISS = re.compile(r"\s*(?P<number>[+-]?(?:[0-9]+(?:[.,][0-9]*)?|[.,][0-9]+))\s*(?P<unit>[A-Za-z]*)\s*")


def _round_up_to_nano(value: Fraction) -> Fraction:
    """``ParseQuantity``'s ``amount.Round(amount, Nano.infScale(), inf.RoundUp)``: up, away from zero."""
    units = abs(value) * _NANO
    whole = -(-units.numerator // units.denominator)
    return Fraction(whole if value >= 0 else -whole, _NANO)


def _parse(value: Any) -> Fraction | str:
    """The value of a quantity (:func:`quantity_value`), or why it is not one (:func:`quantity_problem`)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        kind = "true or false" if isinstance(value, bool) else f"a {type(value).__name__}"
        return f"expected a Kubernetes quantity such as `8`, `500m` or `16Gi`, got {kind}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"`{value}` is not a Kubernetes quantity (it must be a finite number)"
        number = Fraction(repr(value))  # the text a JSON reader and the API server see, not the binary double
    elif isinstance(value, int):
        number = Fraction(value)
    else:
        if len(value) > MAX_QUANTITY_CHARS:
            return (f"`{shown(value)}` is longer than any Kubernetes quantity kfdefaults reads ({MAX_QUANTITY_CHARS} "
                    "characters); write the value with a suffix (`16Gi`, `500m`) or an exponent (`1e9`)")
        m = _QUANTITY.fullmatch(value)
        if m is None:
            return _not_a_quantity(value)
        digits = m.group("number")
        number = Fraction(digits[:-1] if digits.endswith(".") else digits)
        if m.group("sign") == "-":
            number = -number
        if m.group("binary"):
            number *= 1024 ** _BINARY[m.group("binary")]
        elif m.group("decimal"):
            number *= Fraction(1000) ** _DECIMAL[m.group("decimal")]
        elif m.group("exponent"):
            exponent = int(m.group("exponent"))  # at most 62 digits: the text is bounded above
            if not -_INT32 - 1 <= exponent <= _INT32:
                return (f"`{shown(value)}`: the exponent is outside int32, and the API server would read another "
                        "number (apimachinery's suffixer.interpret keeps the exponent's low 32 bits)")
            if number and exponent > 100:  # at least 10**37 with at most 63 digits: far above the bound below
                return _too_large(value)
            if number and exponent < -100:  # below 10**-36: ParseQuantity keeps 1n (or -1n)
                return Fraction(1 if number > 0 else -1, _NANO)
            number *= Fraction(10) ** exponent
    if abs(number) > MAX_QUANTITY:
        return _too_large(value)
    return _round_up_to_nano(number)


def _too_large(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > 4096:  # str() of it would raise (4,300 digits at most)
        text = f"a number of {value.bit_length():,} bits"
    else:
        text = f"`{shown(str(value))}`"
    return (f"{text} is above 9223372036854775807 (2^63 - 1), the largest quantity Kubernetes reads: the kubelet "
            "and the scheduler hold quantities as int64 (apimachinery Quantity.Value)")


def is_quantity(value: Any) -> bool:
    """Whether ``value`` is a Kubernetes quantity kfdefaults reads: a string in the grammar above or a finite
    number, within the bounds above."""
    return isinstance(_parse(value), Fraction)


def quantity_value(value: Any) -> Fraction | None:
    """The value of a quantity as ``ParseQuantity`` keeps it (``"16Gi"`` -> ``17179869184``, ``"500m"`` -> ``1/2``,
    ``"0.1n"`` -> ``1/10**9``), or ``None`` if it is not one or breaks a bound (:func:`quantity_problem` says why).

    Binary suffixes are powers of 1024, decimal suffixes powers of 1000, ``e``/``E`` powers of 10; the unit is
    whatever the field measures (bytes for memory, cores for cpu, a count for ``nvidia.com/gpu``). The value is
    rounded up, away from zero, to a whole number of nano units, as apimachinery rounds it.
    """
    parsed = _parse(value)
    return parsed if isinstance(parsed, Fraction) else None


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
    """Why ``value`` is not a quantity kfdefaults reads, with the likely fix; ``None`` when it is one.

    Args:
        value: A value from a profile file, ``--set``, Python or a live manifest.

    Returns:
        A message such as ``"`16GB` is not a Kubernetes quantity; did you mean `16G` (10^9) or `16Gi` (2^30)?"``;
        text longer than :data:`MAX_QUANTITY_CHARS`, an exponent outside int32 and a magnitude above
        :data:`MAX_QUANTITY` each have their own (the module docstring says why).
    """
    parsed = _parse(value)
    return None if isinstance(parsed, Fraction) else parsed


def _not_a_quantity(value: str) -> str:
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


# --- display --------------------------------------------------------------------------------------------------

_UNITS = {**{s: Fraction(1024) ** p for s, p in _BINARY.items()}, **{s: Fraction(1000) ** p for s, p in _DECIMAL.items()},
          "": Fraction(1)}


def is_byte_resource(resource: str) -> bool:
    """Whether ``resource`` is counted in bytes: ``memory``, ``ephemeral-storage``, ``storage``, ``hugepages-*``."""
    return resource in ("memory", "ephemeral-storage", "storage") or resource.startswith("hugepages-")


def decimal_text(value: Fraction | float | int, digits: int = 1) -> str:
    """A number with at most ``digits`` decimals, trailing zeros dropped (``96``, ``2.5``, ``174.6``)."""
    text = f"{float(value):.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def unit_of(text: str) -> str | None:
    """The suffix of the quantity ``text`` (``Gi`` of ``1000Gi``, ``m`` of ``500m``, ``""`` of ``8``); ``None`` for an
    exponent (``1e9``) or what is no quantity."""
    m = _QUANTITY.fullmatch(str(text))
    if m is None or m.group("exponent") is not None:
        return None
    return m.group("binary") or m.group("decimal") or ""


def quantity_text(amount: Fraction | int | None, resource: str = "memory", unit: str | None = None,
                  digits: int = 1) -> str:
    """An amount of ``resource`` as a Kubernetes quantity, for people; ``none`` for ``None``.

    Without ``unit``, exact: bytes with the largest binary suffix that writes them whole (``60Gi``), else the largest
    decimal one (``1G``), else in bytes; cpu in cores or millicores (``90``, ``500m``); a count as a number. With
    ``unit`` (a suffix: ``Gi``, ``m``, ``""``), in that unit with at most ``digits`` decimals: a node's
    ``183033764Ki`` beside a request of ``1000Gi`` is ``174.6Gi``.
    """
    if amount is None:
        return "none"
    amount = Fraction(amount)
    if amount < 0:
        return "-" + quantity_text(-amount, resource, unit, digits)
    if unit is not None and unit in _UNITS:
        return decimal_text(amount / _UNITS[unit], digits) + unit
    if resource == "cpu":
        return str(int(amount)) if amount.denominator == 1 else f"{math.ceil(amount * 1000)}m"
    if is_byte_resource(resource) and amount:
        amount = Fraction(math.floor(amount))
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki", "E", "P", "T", "G", "M", "k"):
            if amount % _UNITS[suffix] == 0:
                return f"{int(amount // _UNITS[suffix])}{suffix}"
    return str(int(amount)) if amount.denominator == 1 else decimal_text(amount, 3)
