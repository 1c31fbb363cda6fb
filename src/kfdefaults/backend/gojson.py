"""What Go's ``encoding/json`` keeps of a manifest read into the typed Kubernetes structs, and writes back.

Flyte's backend reads the registered pod spec (a protobuf Struct) and the cluster's PodTemplate into
``k8s.io/api/core/v1`` structs before merging them. :func:`decode` does to plain data what that unmarshalling
does: unknown fields are dropped, ``null`` is unset, a value field holding its zero value (``""``, ``0``,
``false``) is indistinguishable from an absent one and is left out, while a pointer keeps a zero target
(``runAsUser: 0`` stays). Quantities come back in the text ``resource.Quantity`` marshals to
(:func:`canonical_quantity`). :func:`canonical` is the form results are compared and printed in.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..errors import BackendError
from ..k8s.quantity import quantity_value
from .kinds import Kind, fields

JSON = dict


def is_zero(value: Any) -> bool:
    """Whether a scalar is its Go type's zero value (``None`` counts: an unset field is zero)."""
    if value is None or value == "" or value is False:
        return True
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value == 0


def decode(obj: Any, type_name: str) -> JSON:
    """``obj`` as Go's ``json.Unmarshal`` into the struct ``type_name`` leaves it, as plain data.

    Empty maps are kept (a non-nil Go map, which mergo writes into where it would replace a nil one).

    Raises:
        BackendError: a value of the wrong shape (a list where an object belongs), as the unmarshalling fails.
    """
    out = _decode(obj, ("struct", type_name), True)
    return out if out is not None else {}


def canonical(obj: Any, type_name: str) -> JSON:
    """Like :func:`decode`, empty maps left out too, pointer cells (:class:`Box`) unwrapped: the form in
    which results are compared and printed."""
    out = _decode(unbox(obj), ("struct", type_name), False)
    return out if out is not None else {}


class Box:
    """The target of a pointer to a non-struct (``*int64``, ``*bool``, ``*string``, ``*Quantity``, ``*Time``).

    In the model's data, pointer-to-scalar fields may hold a Box, so that two structs can share one target, as
    they do in Go once mergo has copied a pointer from one to the other (:mod:`.mergo`). Plain values are
    accepted everywhere too; then nothing is shared.
    """

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __repr__(self) -> str:
        return f"Box({self.v!r})"


def unbox(obj: Any) -> Any:
    """A plain copy of data that may hold :class:`Box` cells."""
    if isinstance(obj, Box):
        return unbox(obj.v)
    if isinstance(obj, dict):
        return {k: unbox(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [unbox(v) for v in obj]
    return obj




def _decode(v: Any, kind: Kind, keep_empty_maps: bool) -> Any:
    """One value of ``kind``; ``None`` for what Go would leave unset (the caller drops the field)."""
    tag = kind[0]
    if v is None:
        return None
    if tag == "struct":
        if not isinstance(v, dict):
            raise BackendError(f"expected an object for {kind[1]}, got {v!r}")
        out = {}
        for name, k in fields(kind[1]):
            if name in v:
                d = _decode(v[name], k, keep_empty_maps)
                if d is not None:
                    out[name] = d
        return out or None
    if tag == "ptr":
        inner = kind[1]
        if inner[0] == "struct":
            d = _decode(v, inner, keep_empty_maps)
            return d if d is not None else {}
        if inner[0] == "quantity":
            return decode_quantity(v)
        return v  # a pointer to a scalar (or a Time): a zero target stays
    if tag == "slice":
        if not isinstance(v, list):
            raise BackendError(f"expected a list, got {v!r}")
        return [_decode_item(e, kind[1], keep_empty_maps) for e in v] or None
    if tag == "map":
        if not isinstance(v, dict):
            raise BackendError(f"expected a map, got {v!r}")
        if kind[1][0] == "quantity":
            out_m = {key: decode_quantity(e) if e is not None else "0" for key, e in v.items()}
        else:
            out_m = {key: "" if e is None else e for key, e in v.items()}
        return out_m if (out_m or keep_empty_maps) else None
    if tag == "quantity":
        q = decode_quantity(v)
        return None if q == "0" else q
    if tag == "intorstr":
        return None if v == 0 and not isinstance(v, bool) else v
    if tag in ("str", "int", "bool", "float"):
        if isinstance(v, float) and tag == "int" and v.is_integer():
            v = int(v)  # protobuf Struct numbers are doubles
        return None if is_zero(v) else v
    return v or None  # time, bytes, opaque


def _decode_item(e: Any, kind: Kind, keep_empty_maps: bool) -> Any:
    """A list item: a ``null`` item is the zero value of the item type (Go keeps it), not dropped."""
    if kind[0] == "struct":
        d = _decode(e, kind, keep_empty_maps) if e is not None else None
        return d if d is not None else {}
    if kind[0] == "str":
        return "" if e is None else e
    if kind[0] in ("int", "float"):
        return 0 if e is None else e
    if kind[0] == "bool":
        return bool(e)
    return _decode(e, kind, keep_empty_maps)


# --- quantities -------------------------------------------------------------------------------------------------


def decode_quantity(v: Any) -> str:
    """A quantity as ``resource.Quantity`` reads and writes it back (a JSON number is read as its text).

    Raises:
        BackendError: not a quantity (``quantities must match the regular expression``, as the real type says).
    """
    if isinstance(v, bool):
        raise BackendError(f"quantities must match the regular expression: {v!r}")
    if isinstance(v, (int, float)):
        v = repr(v) if isinstance(v, float) and not v.is_integer() else str(int(v))
    return canonical_quantity(str(v).strip())


def parse_quantity(text: str) -> Fraction:
    """The exact value of a quantity string (:func:`kfdefaults.k8s.quantity.quantity_value`).

    Raises:
        BackendError: not a quantity.
    """
    value = quantity_value(text)
    if value is None:
        raise BackendError(f"quantities must match the regular expression: {text!r}")
    return value


_SI = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY = {0: "", 1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}


def canonical_quantity(text: str) -> str:
    """The text ``resource.Quantity`` marshals ``text`` to: ``1000m`` -> ``1``, ``1.5`` -> ``1500m``,
    ``1024Mi`` -> ``1Gi``, ``1536Mi`` stays, ``0.5Ki`` -> ``512``, ``1e3`` stays.

    Same as apimachinery's ``Quantity.CanonicalizeBytes`` on its int64 fast path: the value is rounded up to
    nano units, written in the format of its suffix (binary SI only for a whole number of at least 1024, else
    decimal SI), with the largest exponent that keeps the mantissa whole.

    Raises:
        BackendError: not a quantity.
    """
    value = parse_quantity(text)
    suffix = text.lstrip("+-0123456789.")
    fmt = "bin" if suffix.endswith("i") else ("exp" if suffix[:1] in ("e", "E") else "si")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    scaled = abs(value) * 10**9
    units = scaled.numerator // scaled.denominator + (1 if scaled.denominator != 1 else 0)  # rounded up
    magnitude = Fraction(units, 10**9)
    if fmt == "bin" and (magnitude < 1024 or magnitude.denominator != 1):
        fmt = "si"
    if fmt == "bin":
        amount, exp = int(magnitude), 0
        while amount % 1024 == 0 and exp < 6:
            amount //= 1024
            exp += 1
        return f"{sign}{amount}{_BINARY[exp]}"
    amount, exp = units, -9  # units * 10**-9
    while amount % 10 == 0:
        amount //= 10
        exp += 1
    while exp % 3 != 0:
        amount *= 10
        exp -= 1
    if fmt == "exp":
        return f"{sign}{amount}" + (f"e{exp}" if exp else "")
    if exp > 18:
        amount *= 10 ** (exp - 18)
        exp = 18
    return f"{sign}{amount}{_SI[exp]}"


def is_zero_quantity(text: str | None) -> bool:
    """Whether a quantity is unset or zero (``Quantity.IsZero``)."""
    return text is None or parse_quantity(text) == 0
