"""The task layer from the command line: ``--set KEY=VALUE``.

``KEY`` is a dotted path in the shape of a profile file. A list item is named by its merge key in brackets,
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

import re
from typing import Any, Iterable

from ._errors import Finding, Location, ProfileError

_SELECTOR = re.compile(r"\[([^=\]]+)=([^\]]*)\]")


class SetError(ValueError):
    """A ``--set`` argument that cannot be read."""


def split_path(key: str) -> list[Any]:
    """``a.b[name=x].c`` -> ``["a", "b", ("name", "x"), "c"]``; selectors are (merge key, value) tuples.

    Raises:
        SetError: empty segment, unbalanced quote or bracket.
    """
    from ._source import resolve_plain_scalar

    parts: list[Any] = []
    i, n = 0, len(key)
    current = ""
    quoted = False
    while i < n:
        c = key[i]
        if c == "\\" and i + 1 < n:
            current += key[i + 1]
            i += 2
            continue
        if c == '"':
            quoted = not quoted
            i += 1
            continue
        if quoted:
            current += c
            i += 1
            continue
        if c == ".":
            if current:
                parts.append(current)
            elif not parts or not isinstance(parts[-1], tuple):
                raise SetError(f"empty segment in {key!r}")
            current = ""
            i += 1
            continue
        if c == "[":
            m = _SELECTOR.match(key, i)
            if not m:
                raise SetError(f"bad list selector in {key!r}: use [mergeKey=value], like [name=primary]")
            if current:
                parts.append(current)
                current = ""
            if not parts or isinstance(parts[-1], tuple):
                raise SetError(f"a selector must follow a field name in {key!r}")
            parts.append((m.group(1).strip(), resolve_plain_scalar(m.group(2).strip())))
            i = m.end()
            continue
        current += c
        i += 1
    if quoted:
        raise SetError(f"unbalanced quote in {key!r}")
    if current:
        parts.append(current)
    if not parts or isinstance(parts[-1], tuple):
        raise SetError(f"{key!r} must end with a field name")
    return parts


def parse_value(text: str) -> Any:
    """A ``--set`` value: a YAML 1.2 scalar, or a flow list / mapping."""
    from ._source import parse_text, resolve_plain_scalar

    stripped = text.strip()
    if stripped.startswith(("[", "{", '"', "'")):
        try:
            return parse_text(f"v: {stripped}", "--set.yaml").data["v"]
        except ProfileError as e:
            raise SetError(f"cannot read value {text!r}: {e.findings[0].message}") from None
    return resolve_plain_scalar(stripped)


def apply_set(tree: dict[str, Any], key: str, value: Any) -> None:
    """Put ``value`` at ``key`` (see :func:`split_path`) into a profile-shaped ``tree``, in place."""
    parts = split_path(key)
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


def parse_sets(items: Iterable[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Turn ``--set`` arguments into a profile-shaped mapping and the label of each.

    Returns:
        ``(tree, labels)``: labels map the dotted key (as written) to ``--set KEY=VALUE``.

    Raises:
        ProfileError: an argument without ``=``, or a key or value that cannot be read.
    """
    tree: dict[str, Any] = {}
    labels: dict[str, str] = {}
    findings = []
    for item in items:
        key, sep, value = split_assignment(item)
        label = f"--set {item}"
        if not sep or not key.strip():
            findings.append(Finding(Location(label), "", "expected KEY=VALUE"))
            continue
        try:
            apply_set(tree, key.strip(), parse_value(value))
        except SetError as e:
            findings.append(Finding(Location(label), "", str(e)))
            continue
        labels[dotted_key(key.strip())] = label
        labels.setdefault(key.strip(), label)  # the key as written, selectors kept: tells two items apart
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


def dotted_key(key: str) -> str:
    """The dotted form :class:`kfdefaults._resolve.Fragment` uses for locations, selectors dropped."""
    return ".".join(p for p in split_path(key) if not isinstance(p, tuple))
