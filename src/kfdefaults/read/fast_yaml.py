"""The fast path of YAML profile files: libyaml's C parser (through PyYAML), for the files it can vouch for.

The YAML reader of record is ruamel.yaml (:mod:`.yaml`): pure Python, about 2.5 ms for a small profile, so
``validate`` of a thousand files spent most of its time there. libyaml reads the same file in a few tens of
microseconds. It reads YAML 1.1 syntax, and its parser is not ruamel's, so it is used only where the two are
known to agree, and for nothing else:

* the text is at most :data:`MAX_FAST_BYTES`, printable ASCII and newlines only (no tab, no carriage return, no
  control or non-ASCII character: the places where YAML 1.1 and 1.2 treat characters differently), no line
  starts with ``%`` (a directive) and none is of spaces only;
* the file is one document whose root is a mapping, with no anchor, alias nor tag, no duplicate key, no merge
  key, no key that is not a scalar, no empty value (``key:``: the two place it differently), no block scalar
  header but the plain forms, no plain scalar the YAML 1.2 core schema refuses (``0755``), and it keeps the
  budgets of values, bytes and depth.

Anything else, an error of libyaml's included, returns ``None``, and the caller reads the file with ruamel.yaml:
every error message and its location comes from the reader of record, unchanged. A file taken here gives the
:class:`~.document.Document` ruamel.yaml gives (the same data, key and value positions, plain texts): checked
by ``tests/test_fast_yaml.py`` over the test suite's profiles and generated YAML. Where PyYAML was installed
without libyaml, every file takes the reader of record.
"""

from __future__ import annotations

import re
from typing import Any

from .document import MAX_DEPTH, Budget, Document, Path
from .scalars import AmbiguousScalar, resolve_plain_scalar

_OUTSIDE = re.compile(r"[^\n\x20-\x7e]|^%|^ +$", re.MULTILINE)
"""A character, a line start or a line the fast path leaves to the reader of record: a directive, or a line of
spaces only (YAML 1.2 refuses one that is more indented than the block scalar it starts; libyaml does not)."""

_BLOCK_HEADER = re.compile(r"[|>](?:[-+]?[1-9]?|[1-9][-+])(?: +#[^\n]*| *)(?:\n|$)")
"""A block scalar's header as the fast path takes it: an indicator, chomping and indentation, then a comment
after a space, or nothing."""

MAX_FAST_BYTES = 16 << 10
"""Largest text the fast path reads (16 KiB; a profile is a few KiB). A larger file goes straight to the reader of
record: a file built to exhaust the budgets (10,000 values in 30 KB) costs what it cost before, not that plus
the fast path's reading up to the budget."""

_C: Any = None
"""``(CParser, the event classes, YAMLError)`` once loaded; ``False`` when libyaml is not there."""


def _libyaml() -> Any:
    global _C
    if _C is None:
        try:
            from yaml import YAMLError, events
            from yaml._yaml import CParser
        except ImportError:  # PyYAML built without libyaml (or absent): the reader of record reads everything
            _C = False
        else:
            _C = (CParser, events, YAMLError)
    return _C


class _Decline(Exception):
    """The file is one the fast path leaves to the reader of record."""


def fast_document(text: str, file: str, budget: Budget) -> Document | None:
    """The :class:`Document` of profile ``text``, read by libyaml, or ``None`` when the reader of record must read
    it (see the module's description): never an error of its own."""
    if len(text) > MAX_FAST_BYTES or _OUTSIDE.search(text) is not None:
        return None
    c = _libyaml()
    if not c:
        return None
    parser_class, events, yaml_error = c
    try:
        return _build(parser_class(text), events, text, file, budget)
    except (_Decline, yaml_error):
        return None


def _build(parser: Any, events: Any, source: str, file: str, budget: Budget) -> Document:
    """The document of the events of ``parser``: one mapping, its positions 1-based as the reader of record
    gives them. Long because it is one loop over the events, each kind a few lines, with no recursion (a file
    may nest deeply before it is declined).

    Raises:
        _Decline: the file is outside what the fast path takes.
    """
    get = parser.get_event
    scalar_event, mapping_start, mapping_end = events.ScalarEvent, events.MappingStartEvent, events.MappingEndEvent
    sequence_start, sequence_end = events.SequenceStartEvent, events.SequenceEndEvent
    if type(get()) is not events.StreamStartEvent:
        raise _Decline
    start = get()
    if type(start) is not events.DocumentStartEvent or start.version is not None or start.tags:
        raise _Decline
    event = get()
    if type(event) is not mapping_start or event.tag is not None or event.anchor is not None:
        raise _Decline
    keys: dict[Path, tuple[int, int]] = {}
    values: dict[Path, tuple[int, int]] = {(): (event.start_mark.line + 1, event.start_mark.column + 1)}
    plain_text: dict[Path, str] = {}
    root: dict[str, Any] = {}
    # the open collections, innermost last: [container, its path, the key awaiting its value (mappings)]
    stack: list[list[Any]] = [[root, (), None]]
    count, size = 1, 0
    max_values, max_bytes = budget.values, budget.expanded_bytes
    while stack:
        event = get()
        kind = type(event)
        top = stack[-1]
        container, path, pending = top
        if kind is mapping_end or kind is sequence_end:
            stack.pop()
            continue
        count += 1
        if count > max_values or len(stack) + 1 > MAX_DEPTH:
            raise _Decline
        if kind is events.AliasEvent or event.anchor is not None:
            raise _Decline
        mark = event.start_mark
        position = (mark.line + 1, mark.column + 1)
        if kind is scalar_event:
            if event.tag is not None:
                raise _Decline
            text = event.value
            plain = event.implicit[0]
            if (not text and plain) or (event.style in ("|", ">") and not _BLOCK_HEADER.match(source, mark.index)):
                raise _Decline  # the readers place an empty value differently; a header of another form
            size += len(text)  # ASCII text: its escapes aside, a character is a byte
            if not text.isascii():  # an escape (``"\u00e9"``): count its UTF-8 bytes
                size += len(text.encode("utf-8", "surrogatepass")) - len(text)
            if size > max_bytes:
                raise _Decline
            if type(container) is dict and pending is None:  # a key
                if (plain and text == "<<") or text in container:
                    raise _Decline  # a merge key or a duplicate: the reader of record says where
                keys[path + (text,)] = position
                top[2] = text
                continue
            if plain:
                try:
                    value = resolve_plain_scalar(text)
                except AmbiguousScalar:
                    raise _Decline from None
            else:
                value = text
        elif kind is mapping_start or kind is sequence_start:
            if event.tag is not None:
                raise _Decline
            if type(container) is dict and pending is None:
                raise _Decline  # a key that is a mapping or a list
            value = {} if kind is mapping_start else []
        else:
            raise _Decline
        if type(container) is dict:
            child = path + (pending,)
            container[pending] = value
            top[2] = None
        else:
            child = path + (len(container),)
            container.append(value)
        values.setdefault(child, position)
        if kind is scalar_event:
            if plain and not isinstance(value, str):
                plain_text[child] = text
        else:
            stack.append([value, child, None])
    if type(get()) is not events.DocumentEndEvent or type(get()) is not events.StreamEndEvent:
        raise _Decline  # a second document
    return Document(file, root, keys, values, plain_text)
