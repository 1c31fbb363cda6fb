"""The task layer from the command line: ``--set KEY=VALUE`` -> a profile-shaped mapping.

``KEY`` is a dotted path (:mod:`kfdefaults.paths`) in the shape of a profile file. A list item is named by its merge key in brackets,
so that the value lands where strategic merge patch will merge it::

    --set elastic.nnodes=2
    --set elastic.rdzv_configs.join_timeout=1200
    --set 'pod_template.spec.containers[name=primary].image=repo/img:1'
    --set 'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"=4'

A key containing dots is quoted (``"nvidia.com/gpu"``) or its dots escaped (``nvidia\\.com/gpu``).
``VALUE`` is read as a YAML 1.2 scalar (``2`` is an int, ``no`` a string, ``null`` deletes); a value starting
with ``[`` or ``{`` is read as a YAML flow list or mapping.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..errors import (
    AmbiguousScalar,
    Finding,
    Location,
    PathError,
    ProfileError,
    SchemaLookupError,
    SetError,
    shown,
)
from ..paths import format_path, parse_path
from ..read import parse_text
from ..read.scalars import resolve_plain_scalar
from ..smp.schema import schema_type


def split_path(key: str) -> list[Any]:
    """``a.b[name=x].c`` -> ``["a", "b", ("name", "x"), "c"]`` (:func:`kfdefaults.paths.parse_path`).

    Raises:
        SetError: the key cannot be read.
    """
    try:
        return parse_path(key)
    except PathError as e:
        raise SetError(str(e)) from None


def parse_value(text: str) -> Any:
    """A ``--set`` value: a YAML 1.2 scalar, or a flow list / mapping."""
    stripped = text.strip()
    if stripped.startswith(("[", "{", '"', "'")):
        try:
            return parse_text(f"v: {stripped}", "--set.yaml").data["v"]
        except ProfileError as e:
            raise SetError(f"cannot read value {text!r}: {e.findings[0].message}") from None
    try:
        return resolve_plain_scalar(stripped)
    except AmbiguousScalar as e:
        raise SetError(str(e)) from None


def typed_selectors(parts: list[Any], key: str, kubernetes_version: str | None) -> list[Any]:
    """Check each selector against the Kubernetes schema and give its value the merge key's type.

    A selector names a list item by the list's patch merge key (``containers[name=primary]``,
    ``ports[containerPort=8080]``, which is an integer); a list without one (``tolerations``, ``args``) is
    replaced whole by strategic merge patch, so one of its items cannot be set alone.

    Raises:
        SetError: a selector on a list without a merge key, or by another key than the merge key.
    """
    if parts[:2] != ["pod_template", "spec"]:
        if any(isinstance(p, tuple) for p in parts):
            raise SetError(f"list selectors apply to pod_template.spec lists only, in {key!r}")
        return parts
    parts = list(parts)
    out: list[Any] = parts[:2]
    schema: Any = schema_type("PodSpec", kubernetes_version)
    for i in range(2, len(parts)):
        part = parts[i]
        if isinstance(part, tuple):
            out.append(part)
            continue
        nxt = parts[i + 1] if i + 1 < len(parts) else None
        if schema is None:
            out.append(part)
            continue
        try:
            if isinstance(nxt, tuple):
                schema, meta = schema.lookup_slice(part)
                field = format_path([p for p in parts[:i + 1] if not isinstance(p, tuple)])
                if not meta.merge_key:
                    raise SetError(f"`{field}` has no merge key: strategic merge patch replaces it whole, so set the "
                                   f"whole list (--set '{field}=[...]')")
                if nxt[0] != meta.merge_key:
                    raise SetError(f"`{field}` items are merged by `{meta.merge_key}`: select one with "
                                   f"[{meta.merge_key}=...]")
                if "integer" in schema.property_types(meta.merge_key):
                    try:
                        parts[i + 1] = (nxt[0], int(nxt[1]))
                    except ValueError:
                        raise SetError(f"`{meta.merge_key}` is an integer, not {shown(repr(nxt[1]))}") from None
            else:
                schema = schema.lookup_struct(part)[0]
        except SchemaLookupError:
            schema = None  # an unknown field: validation says so, with a suggestion
        out.append(part)
    return out


def apply_set(tree: dict[str, Any], key: str, value: Any, kubernetes_version: str | None = None) -> None:
    """Put ``value`` at ``key`` (see :func:`split_path`) into a profile-shaped ``tree``, in place."""
    parts = typed_selectors(split_path(key), key, kubernetes_version)
    node: Any = tree
    for i, part in enumerate(parts[:-1]):
        nxt = parts[i + 1]
        if isinstance(part, tuple):
            continue
        if isinstance(nxt, tuple):
            merge_key, merge_value = nxt
            items = node.setdefault(part, [])
            if not isinstance(items, list):
                raise SetError(f"{part!r} is set to a value and also selected as a list in {key!r}")
            for item in items:
                if isinstance(item, dict) and item.get(merge_key) == merge_value:
                    node = item
                    break
            else:
                item = {merge_key: merge_value}
                items.append(item)
                node = item
        else:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise SetError(f"{part!r} is set to a value and also used as a mapping in {key!r}")
            node = child
    node[parts[-1]] = value


def parse_sets(items: Iterable[str], kubernetes_version: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """Turn ``--set`` arguments into a profile-shaped mapping and the label of each.

    Returns:
        ``(tree, labels)``: labels map each key, written as :func:`kfdefaults.paths.format_path` writes it (with
        and without its list selectors), to ``--set KEY=VALUE``.

    Raises:
        ProfileError: an argument without ``=`` or without a value (``KEY=``: write ``KEY=null`` to delete), or a
            key or value that cannot be read.
    """
    tree: dict[str, Any] = {}
    labels: dict[str, str] = {}
    findings = []
    for item in items:
        key, sep, value = split_assignment(item)
        label = f"--set {shown(item, 80)}"  # the label repeats the argument: a hostile one is cut short
        if not sep or not key.strip():
            findings.append(Finding(Location(label), "", "expected KEY=VALUE"))
            continue
        if not value.strip():
            # YAML reads nothing as null, which deletes: too quiet for a value that may have been lost to the shell
            findings.append(Finding(Location(label), "", "no value after `=`: write KEY=null to delete the key, "
                                                         """'KEY=""' (quoted for the shell) for an empty string"""))
            continue
        try:
            apply_set(tree, key.strip(), parse_value(value), kubernetes_version)
        except SetError as e:
            findings.append(Finding(Location(label), "", str(e)))
            continue
        parts = split_path(key.strip())
        labels[format_path([p for p in parts if not isinstance(p, tuple)])] = label
        labels.setdefault(format_path(parts), label)  # selectors kept: tells two items apart
    if findings:
        raise ProfileError(findings)
    return tree, labels


def split_assignment(item: str) -> tuple[str, str, str]:
    """Split ``KEY=VALUE`` at the first ``=`` outside brackets and quotes (``a[name=x].b=1``)."""
    depth, quoted, escaped = 0, False, False
    for i, c in enumerate(item):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            quoted = not quoted
        elif not quoted and c == "[":
            depth += 1
        elif not quoted and c == "]":
            depth = max(0, depth - 1)
        elif not quoted and depth == 0 and c == "=":
            return item[:i], "=", item[i + 1 :]
    return item, "", ""
