#!/usr/bin/env python3
"""Write the field kinds of the Kubernetes types a PodTemplate holds, for the model of Flyte's backend merge.

mergo (the Go library Flyte's backend merges pod specs with) treats a field by its reflect kind: a value
scalar, a pointer, a value struct, a slice, a map. JSON cannot tell a pointer from a value, so the kinds are read
from the Go declarations of the Kubernetes version flyteplugins v1.16.8 pins (k8s.io/api and
k8s.io/apimachinery v0.34.1). This script writes two generated files from them:

* ``src/kfdefaults/backend/k8s_kinds.py``: for each struct reachable from ``core/v1.PodTemplate``, each field's
  JSON name and its kind, written as a short Go-like type (``*SecurityContext``, ``[]Container``,
  ``map[string]Quantity``); read by :mod:`kfdefaults.backend.kinds`;
* ``tests/mergo_oracle/k8stypes.go``: Go structs with the same JSON names and the same kinds, on which the
  differential test runs the real mergo (all integers are ``int64`` there: mergo does not look at widths).

Neither file holds code from the Kubernetes sources: only which fields exist and of what kind.

The Go sources are not part of the repository and nothing in the tests needs them. To run this script, save the
two files from the tags named above, e.g. from clones of kubernetes/api and kubernetes/apimachinery::

    git -C api show v0.34.1:core/v1/types.go > core_types.go
    git -C apimachinery show v0.34.1:pkg/apis/meta/v1/types.go > meta_types.go
    python scripts/gen_k8s_kinds.py core_types.go meta_types.go
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS_MODULE = ROOT / "src" / "kfdefaults" / "backend" / "k8s_kinds.py"
GO_MIRROR = ROOT / "tests" / "mergo_oracle" / "k8stypes.go"

STRUCT = re.compile(r"^type (\w+) struct \{\s*$")
NAMED = re.compile(r"^type (\w+) (?:= )?(string|int32|int64|map\[ResourceName\]resource\.Quantity)\s*$")
FIELD = re.compile(r"^\s*(?:(?P<name>[A-Z]\w*)\s+)?(?P<type>[\w.*\[\]]+)\s+`(?P<tags>[^`]*)`")

SCALARS = {"string": "string", "bool": "bool", "int": "int", "int32": "int", "int64": "int", "byte": "int",
           "float32": "float", "float64": "float", "types.UID": "string"}
"""Go scalar types -> the kind written in the table (widths do not matter to mergo)."""

SPECIAL = {"resource.Quantity": "Quantity", "intstr.IntOrString": "IntOrString", "metav1.Time": "Time", "Time": "Time"}
"""Value types with their own behaviour in mergo (kfdefaults.backend.mergo says which)."""


class GoField:
    """One field of a Go struct: its Go name, Go type, JSON name, and whether it is an inline embedded struct."""

    def __init__(self, name: str, go_type: str, json_name: str, omitempty: bool, inline: bool) -> None:
        self.name, self.go_type, self.json_name, self.omitempty, self.inline = name, go_type, json_name, omitempty, inline
        self.kind = ""


def parse(path: Path, prefix: str) -> tuple[dict[str, list[GoField]], dict[str, str]]:
    """The structs (name -> fields) and named scalar types (name -> underlying type) declared in a Go file."""
    structs: dict[str, list[GoField]] = {}
    named: dict[str, str] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if current is None:
            if m := STRUCT.match(line):
                current = structs.setdefault(prefix + m.group(1), [])
            elif m := NAMED.match(line):
                named[prefix + m.group(1)] = m.group(2)
            continue
        if line.startswith("}"):
            current = None
            continue
        m = FIELD.match(line)
        if line.strip().startswith("//") or not m:
            continue
        tag = re.search(r'json:"([^"]*)"', m.group("tags"))
        if tag is None or tag.group(1).startswith("-"):
            continue
        json_name, *options = tag.group(1).split(",")
        inline = m.group("name") is None and "inline" in options
        name = m.group("name") or m.group("type").split(".")[-1].lstrip("*")
        current.append(GoField(name, m.group("type"), json_name, "omitempty" in options, inline))
    return structs, named


def kind_of(go_type: str, package: str, structs: dict, named: dict) -> str:
    """A Go type -> its kind as written in the table: ``*T``, ``[]T``, ``map[string]T``, a scalar, a struct name."""
    if go_type.startswith("*"):
        return "*" + kind_of(go_type[1:], package, structs, named)
    if go_type == "[]byte":
        return "bytes"
    if go_type.startswith("[]"):
        return "[]" + kind_of(go_type[2:], package, structs, named)
    if go_type.startswith("map["):
        return "map[string]" + kind_of(go_type[go_type.index("]") + 1:], package, structs, named)
    if go_type in SPECIAL:
        return SPECIAL[go_type]
    if go_type in SCALARS:
        return SCALARS[go_type]
    qualified = go_type if "." in go_type else package + go_type
    if go_type == "ResourceList" or named.get(qualified) == "map[ResourceName]resource.Quantity":
        return "map[string]Quantity"
    if qualified in named:
        return SCALARS.get(named[qualified], "string")
    if qualified in structs:
        return qualified
    if qualified == "metav1.FieldsV1":
        return "opaque"  # managedFields' raw JSON: never merged by the backend
    raise KeyError(f"unknown Go type {go_type!r} (package {package!r})")


def reachable(structs: dict[str, list[GoField]], named: dict[str, str]) -> dict[str, list[GoField]]:
    """The structs reachable from PodTemplate, each field's kind filled in."""
    out: dict[str, list[GoField]] = {}
    todo = ["PodTemplate"]
    while todo:
        name = todo.pop()
        if name in out:
            continue
        package = "metav1." if name.startswith("metav1.") else ""
        for field in structs[name]:
            field.kind = kind_of(field.go_type, package, structs, named)
            inner = field.kind.lstrip("*")
            while inner.startswith(("[]", "map[string]")):
                inner = inner[2:] if inner.startswith("[]") else inner[len("map[string]"):]
            inner = inner.lstrip("*")
            if inner in structs:
                todo.append(inner)
        out[name] = structs[name]
    return out


def write_kinds(types: dict[str, list[GoField]]) -> None:
    table = {}
    for name, fields in types.items():
        entry: dict[str, object] = {f.json_name: f.kind for f in fields if not f.inline}
        inline = [f.kind for f in fields if f.inline]
        if inline:
            entry["__inline__"] = inline
        table[name] = entry
    header = (
        '"""Field kinds of the Kubernetes types reachable from core/v1.PodTemplate (k8s.io/api v0.34.1).\n\n'
        "Generated by scripts/gen_k8s_kinds.py from the Go type declarations of k8s.io/api and k8s.io/apimachinery\n"
        "v0.34.1 (not kept in this repository: the script says how to fetch them); do not edit. Data only: for each\n"
        "struct, JSON field name -> kind, written as a Go-like type: ``string``, ``int``, ``bool``, ``float``\n"
        "(value scalars), ``*T`` (a pointer), ``[]T``, ``map[string]T``, a struct name (a value struct),\n"
        "``Quantity``, ``IntOrString``, ``Time`` (resource.Quantity, intstr.IntOrString, metav1.Time), ``bytes``,\n"
        "``opaque`` (raw JSON). ``__inline__`` lists the structs embedded with ``json:\",inline\"``.\n"
        '"""\n\n'
    )
    lines = ["KINDS = {"]
    for name in sorted(table):
        items = [f"{k!r}: {v!r}" for k, v in sorted(table[name].items())]
        line = f"    {name!r}: {{" + ("}" if not items else "")
        for i, item in enumerate(items):
            piece = item + ("," if i < len(items) - 1 else "}")
            if len(line) + 1 + len(piece) > 118:
                lines.append(line)
                line = "        " + piece
            else:
                line += ("" if line.endswith("{") else " ") + piece
        lines.append(line + ",")
    lines.append("}")
    KINDS_MODULE.write_text(header + "\n".join(lines) + "\n", encoding="utf-8")


def go_type(kind: str) -> str:
    if kind.startswith("*"):
        return "*" + go_type(kind[1:])
    if kind.startswith("[]"):
        return "[]" + go_type(kind[2:])
    if kind.startswith("map[string]"):
        return "map[string]" + go_type(kind[len("map[string]"):])
    simple = {"string": "string", "int": "int64", "bool": "bool", "float": "float64", "bytes": "[]byte",
              "opaque": "RawJSON"}
    return simple.get(kind, kind.replace("metav1.", "Meta"))


def write_go(types: dict[str, list[GoField]]) -> None:
    lines = ["// Code generated by scripts/gen_k8s_kinds.py; DO NOT EDIT.",
             "// Mirrors of the Kubernetes types reachable from core/v1.PodTemplate (k8s.io/api v0.34.1): the same",
             "// JSON names and the same reflect kinds (value or pointer, slice, map), which is all mergo looks at.",
             "", "package main", ""]
    for name in sorted(types):
        lines.append(f"type {go_type(name)} struct {{")
        for f in types[name]:
            if f.inline:
                lines.append(f'\t{go_type(f.kind)} `json:",inline"`')
            else:
                lines.append(f'\t{f.name} {go_type(f.kind)} `json:"{f.json_name}{",omitempty" if f.omitempty else ""}"`')
        lines += ["}", ""]
    lines += ["// newByName returns a pointer to a new zero value of the named mirror type.",
              "func newByName(name string) interface{} {", "\tswitch name {"]
    for name in sorted(types):
        lines += [f'\tcase "{name}":', f"\t\treturn &{go_type(name)}{{}}"]
    lines += ["\t}", "\treturn nil", "}", ""]
    GO_MIRROR.write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("core_types", type=Path, help="k8s.io/api core/v1/types.go (v0.34.1)")
    parser.add_argument("meta_types", type=Path, help="k8s.io/apimachinery pkg/apis/meta/v1/types.go (v0.34.1)")
    args = parser.parse_args()
    core, core_named = parse(args.core_types, "")
    meta, meta_named = parse(args.meta_types, "metav1.")
    types = reachable({**core, **meta}, {**core_named, **meta_named})
    write_kinds(types)
    write_go(types)
    print(f"wrote {KINDS_MODULE.relative_to(ROOT)} and {GO_MIRROR.relative_to(ROOT)}: {len(types)} types")


if __name__ == "__main__":
    main()
