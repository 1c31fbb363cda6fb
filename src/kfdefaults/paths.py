"""Dotted paths into a profile: the one way kfdefaults writes them and reads them back.

Every message, ``--explain``, ``--set`` and ``diff`` name a value the same way::

    elastic.rdzv_configs.join_timeout
    pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"
    pod_template.spec.tolerations[0].key

* A mapping key is a segment; a key holding ``.``, brackets, quotes, ``=``, a backslash, whitespace or a character
  a terminal acts on (a control or format character: :func:`kfdefaults.escape.is_unsafe`) is written in double
  quotes, ``\\`` and ``"`` escaped, the rest as :func:`kfdefaults.escape.printable` writes it
  (``limits."nvidia.com/gpu"``, ``rdzv_configs."join.timeout"``, ``labels."a\\x1bb"``): a path is always one
  line of visible text, safe on a terminal, and reads back as the key it names.
* An item of a list that Kubernetes merges by a patch merge key is named by that key, ``[name=primary]``
  (:class:`Select`); its value is written bare, or in double quotes as a key is where it could not be read back
  bare (``[mountPath="/a]b"]``, ``[containerPort=8080]`` stays a number).
* An item of any other list is named by its position: ``[0]``.
* An item whose merge key is missing (only in messages about such an item) is ``[]`` (:data:`ANY_ITEM`).

:func:`format_path` writes a path, :func:`parse_path` reads one (``--set`` keys), and :func:`join` adds one
key to a path already written. Nothing here imports anything of kfdefaults but :mod:`kfdefaults.escape`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from .errors import PathError
from .escape import has_unsafe, quoted, read_escape, unescape

PathT = tuple
"""A path as data: ``str`` keys, :class:`Select` items of merge-keyed lists, ``int`` items of other lists."""

_PLAIN_KEY = re.compile(r"[^.\[\]\"=\s\\]+")
_SELECTOR = re.compile(r'\[([^=\]]+)=("(?:[^"\\]|\\.)*"|[^\]]*)\]')
"""``[mergeKey=value]``; a value holding ``]`` is written in double quotes, escaped (``[mountPath="/a]b"]``)."""


class Select:
    """A list item named by its patch merge key: ``[name=primary]``. Immutable; equal when key and value are (as
    :func:`kfdefaults.merge.leaves.same` compares scalars: ``[port=1]`` is ``[port=1.0]``, not ``[port=true]``).

    Attributes:
        key: The list's patch merge key (``name``, ``mountPath``, ``containerPort``).
        value: The item's value for it (``"primary"``, ``8080``).
    """

    __slots__ = ("key", "value")

    def __init__(self, key: str, value: Any) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "value", value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Select is immutable: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Select) and (self.key, self.value) == (other.key, other.value)
                and isinstance(self.value, bool) == isinstance(other.value, bool))

    def __hash__(self) -> int:
        return hash((Select, self.key, self.value))

    def __repr__(self) -> str:
        return f"Select(key={self.key!r}, value={self.value!r})"

    def __str__(self) -> str:
        value = self.value
        if not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False)
        elif not value or value != value.strip() or any(c in value for c in '[]"\\') or has_unsafe(value):
            value = quoted(value)  # where it could not be read back bare, or a terminal would act on it
        return f"[{self.key}={value}]"


class _AnyItem:
    """An item of a list whose merge key it lacks: written ``[]``."""

    def __str__(self) -> str:
        return "[]"

    def __repr__(self) -> str:
        return "ANY_ITEM"


ANY_ITEM: Any = _AnyItem()


def format_key(key: Any) -> str:
    """One mapping key as a segment: bare, or double-quoted (:func:`kfdefaults.escape.quoted`) when it holds a
    character the path syntax uses or one a terminal would act on."""
    text = str(key)
    if _PLAIN_KEY.fullmatch(text) and not has_unsafe(text):
        return text
    return quoted(text)


def join(prefix: str, key: Any) -> str:
    """``pod_template.spec`` + ``containers`` -> ``pod_template.spec.containers``; ``""`` + ``a.b`` -> ``"a.b"``."""
    segment = format_key(key)
    return f"{prefix}.{segment}" if prefix else segment


def value_at(data: Any, path: Sequence[Any], absent: Any = None) -> Any:
    """The value at ``path`` in nested mappings (``{"a": {"b": 1}}``, ``("a", "b")`` -> ``1``); ``absent`` where a
    key on the way is missing or a value on the way is no mapping."""
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return absent
        data = data[part]
    return data


def format_path(path: Sequence[Any]) -> str:
    """A path as text.

    ``("pod_template", "spec", "containers", Select("name", "primary"), "resources", "limits", "nvidia.com/gpu")``
    -> ``pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"``;
    ``("pod_template", "spec", "tolerations", 0, "key")`` -> ``pod_template.spec.tolerations[0].key``.
    A ``(key, value)`` tuple stands for a :class:`Select`.
    """
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif isinstance(part, (Select, _AnyItem)):
            out += str(part)
        elif isinstance(part, tuple):
            out += str(Select(*part))
        else:
            out = join(out, part)
    return out


def parse_path(text: str, *, positions: bool = False, item: bool = False) -> list[Any]:
    """Read a dotted path: ``a.b[name=x].c`` -> ``["a", "b", ("name", "x"), "c"]``.

    Selectors come back as ``(merge key, value)`` tuples; a value in double quotes is a string, its escapes read
    as :func:`kfdefaults.escape.read_escape` reads them (JSON's among them: ``[name="1"]`` is the string ``"1"``),
    a bare one stays text (the caller types it by the schema). A backslash escape reads the same in a key.
    With ``positions=True``, ``[3]`` is read as the int 3 (paths that messages print); without, it is an error
    (a ``--set`` key cannot name an item of a list that has no merge key). With ``item=True`` (or
    ``positions=True``) a path may end with a selector: it names a whole list item.

    Raises:
        PathError: an empty segment, an unbalanced quote, a selector that does not follow a field name, a path
            ending in a selector, or a list item named by position (``tolerations[0]``: such a list has no merge
            key, and a layer replaces it whole).
    """
    parts: list[Any] = []
    i, n = 0, len(text)
    current = ""
    quoted = False
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            escaped, i = read_escape(text, i)  # \" \\ and the escapes kfdefaults.escape.quoted writes
            current += escaped
        elif c == '"':
            quoted = not quoted
            i += 1
        elif quoted:
            current += c
            i += 1
        elif c == ".":
            if current:
                parts.append(current)
            elif not parts or isinstance(parts[-1], str):
                raise PathError(f"empty segment in {text!r}")
            current = ""
            i += 1
        elif c == "[":
            if current:
                parts.append(current)
                current = ""
            # at most 9 digits: a longer run is no list position (and int() refuses 4,300 digits)
            position = re.match(r"\[\s*([0-9]{1,9})\s*\]", text[i:]) if positions else None
            if position:
                parts.append(int(position.group(1)))
                i += position.end()
                continue
            selector, i = _read_selector(text, i, parts)
            parts.append(selector)
        else:
            current += c
            i += 1
    if quoted:
        raise PathError(f"unbalanced quote in {text!r}")
    if current:
        parts.append(current)
    if not parts or (isinstance(parts[-1], tuple) and not (positions or item)):
        raise PathError(f"{text!r} must end with a field name")
    return parts


def _read_selector(text: str, i: int, parts: list[Any]) -> tuple[tuple[str, Any], int]:
    """The ``[key=value]`` selector at ``text[i]`` and the position after it."""
    m = _SELECTOR.match(text, i)
    if not m:
        if re.match(r"\[\s*\d+\s*\]", text[i:]):
            raise PathError(f"{text!r} names a list item by position: such a list (tolerations, args, ...) has no "
                            "merge key and a layer replaces it whole, so set the whole list, like "
                            "'pod_template.spec.tolerations=[{key: a, operator: Exists}]'")
        raise PathError(f"bad list selector in {text!r}: use [mergeKey=value], like [name=primary]")
    if not parts or isinstance(parts[-1], tuple):
        raise PathError(f"a selector must follow a field name in {text!r}")
    raw = m.group(2).strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        raw = unescape(raw[1:-1])  # [name="1"]: the quotes say string; escapes as quoted() and JSON write them
    elif len(raw) >= 2 and raw[0] == raw[-1] == "'":
        raw = raw[1:-1]
    return (m.group(1).strip(), raw), m.end()


def without_selectors(text: str) -> str:
    """A written path with its list selectors dropped: ``a.b[name=x].c`` -> ``a.b.c`` (keys re-quoted as needed)."""
    return format_path([p for p in parse_path(text) if not isinstance(p, tuple)])
