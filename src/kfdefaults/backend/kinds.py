"""The Go kind of every field of a PodTemplate, as mergo sees it: the generated table (:mod:`.k8s_kinds`), read.

A kind is a tuple: ``("str",)``, ``("int",)``, ``("bool",)``, ``("float",)`` for value scalars; ``("ptr", kind)``;
``("struct", name)`` for a value struct; ``("slice", kind)``; ``("map", kind)`` (keys are strings);
``("quantity",)``, ``("intorstr",)``, ``("time",)`` for resource.Quantity, intstr.IntOrString and metav1.Time,
whose behaviour in mergo is their own; ``("bytes",)`` and ``("opaque",)`` for raw data.
"""

from __future__ import annotations

import functools

from .k8s_kinds import KINDS

Kind = tuple
"""A field's kind, as described above."""

_SIMPLE = {"string": ("str",), "int": ("int",), "bool": ("bool",), "float": ("float",), "Quantity": ("quantity",),
           "IntOrString": ("intorstr",), "Time": ("time",), "bytes": ("bytes",), "opaque": ("opaque",)}

SCALAR_TAGS = frozenset({"str", "int", "bool", "float"})
"""The tags of value scalars: mergo sets them from the source only when the source is not its zero value."""


@functools.lru_cache(maxsize=None)
def parse_kind(text: str) -> Kind:
    """A kind as the table writes it (``*SecurityContext``, ``[]Container``, ``map[string]Quantity``) -> its tuple.

    Raises:
        KeyError: a type the table does not know.
    """
    if text.startswith("*"):
        return ("ptr", parse_kind(text[1:]))
    if text.startswith("[]"):
        return ("slice", parse_kind(text[2:]))
    if text.startswith("map[string]"):
        return ("map", parse_kind(text[len("map[string]"):]))
    if text in _SIMPLE:
        return _SIMPLE[text]
    if text not in KINDS:
        raise KeyError(f"no field kinds for type {text!r}")
    return ("struct", text)


@functools.lru_cache(maxsize=None)
def fields(type_name: str) -> tuple[tuple[str, Kind], ...]:
    """``(JSON name, kind)`` of every field of the struct ``type_name``, in name order.

    The fields of structs embedded with ``json:",inline"`` are flattened in, as JSON writes them; mergo sees such
    a struct as one value-struct field, which merges field by field: the same thing.
    """
    out: list[tuple[str, Kind]] = []
    for name, kind in KINDS[type_name].items():
        if name == "__inline__":
            for inner in kind:
                out.extend(fields(inner))
        else:
            out.append((name, parse_kind(kind)))
    return tuple(out)
