"""Leaves printed: a value as one line of text, and paths in the order ``render`` prints them.

What a leaf is, and when two values are the same, is :mod:`kfdefaults.merge.leaves`.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

from ..escape import has_unsafe
from ..paths import PathT, format_path
from ..read.scalars import resolve_plain_scalar
from .output import escaped_strings, needs_quotes_for_yaml11, yaml_quoted


def format_value(value: Any) -> str:
    """A leaf value as one line of text, the way a YAML 1.2 flow scalar (and ``--set``) writes it.

    Strings stay bare unless a reader would take them for something else or they hold whitespace, YAML
    indicators or a character a terminal would act on (:func:`kfdefaults.escape.is_unsafe`); then they are
    double-quoted, those characters escaped (``"2:4"``, ``"no"``, ``"8 x A100"``, ``"a\\u001bb"``:
    :func:`kfdefaults.show.output.yaml_quoted`). Numbers, booleans and ``null`` are written as YAML writes them;
    empty containers as ``{}`` and ``[]``, others as JSON (a flow collection), their strings escaped alike. The
    result is always one line of visible characters.
    """
    if isinstance(value, str):
        return yaml_quoted(value) if _needs_quotes(value) else value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    return escaped_strings(json.dumps(value, ensure_ascii=False, sort_keys=True), None, astral="yaml")


def _needs_quotes(text: str) -> bool:
    if not text or text != text.strip() or any(c.isspace() for c in text) or has_unsafe(text):
        return True
    if text[0] in "-?:,[]{}#&*!|>'\"%@`" or ": " in text or " #" in text:
        return True
    return needs_quotes_for_yaml11(text) or resolve_plain_scalar(text) != text


def tree_order(paths: Iterable[PathT], reference: Iterable[PathT]) -> list[PathT]:
    """``paths`` sorted in the tree order of ``reference`` (normally the leaves of the rendered profile).

    A segment that ``reference`` holds keeps its position among its siblings there; others follow their
    known siblings, sorted by their text. Equal paths keep their order (the sort is stable).
    """
    children: dict[PathT, dict[Any, int]] = {}
    for path in reference:
        for depth in range(len(path)):
            siblings = children.setdefault(path[:depth], {})
            siblings.setdefault(path[depth], len(siblings))

    def sort_key(path: PathT) -> tuple:
        key = []
        for depth, part in enumerate(path):
            rank = children.get(path[:depth], {}).get(part)
            key.append((0, rank, "") if rank is not None else (1, 0, format_path((part,))))
        return tuple(key)

    return sorted(paths, key=sort_key)
