"""``mergo.Merge(dst, src, mergo.WithOverride, mergo.WithAppendSlice)`` on plain data, with Go's sharing.

Flyte's backend merges the cluster's PodTemplate and a task's pod spec with mergo v0.3.13 (flyteplugins v1.16.8
``go.mod``), options ``WithOverride`` and ``WithAppendSlice`` and nothing else: no transformers. What that does
depends on each field's Go kind (:mod:`.kinds`), read from mergo's ``merge.go``:

* a value scalar (string, integer, bool) is set from ``src`` only when ``src`` is not its zero value: ``""``,
  ``0`` and ``false`` in the task never clear the template's value (``deepMerge``'s default branch,
  ``mustSet = (isEmptyValue(dst) || overwrite) && !isEmptyValue(src)``);
* a pointer: ``src`` nil keeps ``dst``; ``dst`` nil takes ``src``'s pointer (the same target, not a copy); both set
  merge their targets, where a zero target in ``src`` does not override and a non-zero one is written through
  the pointer, into whatever else shares it;
* a value struct is merged field by field; ``metav1.Time`` (no exported field) is replaced by ``src``'s even
  when zero; ``resource.Quantity`` keeps ``dst``'s value (mergo can only reach its ``Format``);
  ``intstr.IntOrString`` merges its ``Type``, ``IntVal`` and ``StrVal`` separately (``"http"`` under ``8080``
  stays ``"http"``);
* a slice: ``src`` appended to ``dst``, never merged by key or index; an empty ``src`` changes nothing;
* a map: every key of ``src`` is written into ``dst`` (an empty-string value too), in place when ``dst``'s map is
  not nil; ``dst``'s other keys stay.

Sharing is modelled where it shows: pointer-to-struct targets and maps are shared dicts, pointer-to-scalar
targets :class:`~.gojson.Box` cells (:func:`box`).
"""

from __future__ import annotations

from typing import Any

from .gojson import JSON, Box, is_zero
from .kinds import SCALAR_TAGS, Kind, fields


def box(obj: JSON, type_name: str) -> JSON:
    """Decoded data -> the same data with every pointer-to-scalar target in a :class:`Box` of its own."""
    return _box(obj, ("struct", type_name)) or {}


def _box(v: Any, kind: Kind) -> Any:
    if v is None:
        return None
    tag = kind[0]
    if tag == "struct":
        return {name: _box(v[name], k) for name, k in fields(kind[1]) if name in v}
    if tag == "ptr":
        if kind[1][0] == "struct":
            return _box(v, kind[1])
        return v if isinstance(v, Box) else Box(v)
    if tag == "slice":
        return [_box(e, kind[1]) for e in v]
    return v


def deep_copy(obj: Any) -> Any:
    """What the generated ``DeepCopy()`` gives: nothing shared with the original, every pointer target copied."""
    if isinstance(obj, Box):
        return Box(deep_copy(obj.v))
    if isinstance(obj, dict):
        return {k: deep_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [deep_copy(v) for v in obj]
    return obj


def go_copy(v: Any, kind: Kind) -> Any:
    """A Go assignment (or ``range`` variable) of a value of ``kind``: value structs are copied; pointer targets,
    maps and slices' arrays stay shared with the original."""
    if v is None:
        return None
    if kind[0] == "struct":
        return {name: go_copy(v[name], k) for name, k in fields(kind[1]) if name in v}
    return v


def mergo_merge(dst: JSON, src: JSON, type_name: str) -> JSON:
    """``mergo.Merge(&dst, src, mergo.WithOverride, mergo.WithAppendSlice)`` for the struct ``type_name``.

    Args:
        dst: Decoded data (:func:`~.gojson.decode`), changed in place.
        src: Decoded data; its pointer targets and maps may end up shared with ``dst``, as in Go.
        type_name: A struct of :mod:`.k8s_kinds` (``PodSpec``, ``Container``, ``metav1.ObjectMeta``).

    Returns:
        ``dst``.
    """
    for name, kind in fields(type_name):
        _merge_field(dst, src, name, kind)
    return dst


def _merge_field(dst: JSON, src: JSON, name: str, kind: Kind) -> None:
    tag = kind[0]
    s = src.get(name)
    d = dst.get(name)
    if tag in SCALAR_TAGS:
        if not is_zero(s):
            dst[name] = s
    elif tag == "struct":
        sub = d if d is not None else {}
        mergo_merge(sub, s if s is not None else {}, kind[1])
        if sub:
            dst[name] = sub
        else:
            dst.pop(name, None)
    elif tag == "time":  # no exported field: replaced whenever settable, even by a zero src
        if s is None:
            dst.pop(name, None)
        else:
            dst[name] = s
    elif tag == "intorstr":
        merged = _merge_int_or_string(d, s)
        if merged is None:
            dst.pop(name, None)
        else:
            dst[name] = merged
    elif tag == "ptr":
        _merge_pointer(dst, name, d, s, kind[1])
    elif tag in ("slice", "bytes"):
        if s:
            item = kind[1] if tag == "slice" else ("int",)
            dst[name] = [go_copy(e, item) for e in (d or [])] + [go_copy(e, item) for e in s]
    elif tag == "map":
        if s is None:
            return
        if d is None:
            d = dst[name] = {}
        d.update(s)
    # "quantity" (only its invisible Format is settable) and "opaque": nothing to do


def _merge_pointer(dst: JSON, name: str, d: Any, s: Any, inner: Kind) -> None:
    if s is None:
        return
    if d is None:
        dst[name] = s  # the very same target: aliased, not copied
        return
    if inner[0] == "struct":
        mergo_merge(d, s, inner[1])
        return
    if inner[0] == "quantity":
        return  # only the invisible Format is settable
    value = s.v if isinstance(s, Box) else s
    if inner[0] != "time" and is_zero(value):
        return  # a zero target never overrides (a Time, a struct without exported fields, always does)
    if isinstance(d, Box):
        d.v = value  # written through, into every struct sharing this target
    else:
        dst[name] = value


def _int_or_string(v: Any) -> tuple[int, int, str]:
    """``(Type, IntVal, StrVal)`` of an IntOrString written as JSON (Type 1 is a string)."""
    if v is None:
        return (0, 0, "")
    if isinstance(v, str):
        return (1, 0, v)
    return (0, int(v), "")


def _merge_int_or_string(d: Any, s: Any) -> Any:
    dt, di, ds = _int_or_string(d)
    st, si, ss = _int_or_string(s)
    kind = st if st != 0 else dt
    number = si if si != 0 else di
    text = ss if ss != "" else ds
    if kind == 1:
        return text
    return number or None
