"""Where a key or value of a JSON text is written, found without reading the text with positions.

``kubectl get nodes -o json`` writes 15 KiB or more per node, most of it ``status.images``: a thousand nodes is
15 MiB, which Python's :mod:`json` reads in about 0.15 s and the YAML reader of record (about 4.5 s per MiB) would
take over a minute to read with positions. :class:`JsonDocument` finds a position the other way: it walks down
the path asked for, one level at a time, skipping each value it passes with the standard library's C scanner
(``json.JSONDecoder.raw_decode``, ``json.decoder.scanstring``), and keeps what it learnt of each level it walked.
Finding the positions of a few values of one node costs one pass over the items before it, once.
"""

from __future__ import annotations

import bisect
import json
import re
from json.decoder import scanstring
from typing import Any

from ..errors import Location

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NEWLINE = re.compile(r"\n")
_DECODER = json.JSONDecoder()


class JsonDocument:
    """A JSON text and its data, with the :meth:`location` of any path, as :class:`~.document.Document` gives it.

    Args:
        file: The file, for locations.
        text: The JSON text, as read.
        data: The text's data (``json.loads(text)``): the caller has read it already.
    """

    __slots__ = ("file", "text", "data", "_children", "_lines")

    def __init__(self, file: str, text: str, data: Any) -> None:
        self.file, self.text, self.data = file, text, data
        self._children: dict[tuple, dict[Any, tuple[int, int]]] = {}
        self._lines: list[int] | None = None

    def __repr__(self) -> str:
        return f"JsonDocument({self.file!r})"

    def location(self, path: tuple, *, key: bool = False) -> Location:
        """Where the value (or, with ``key=True``, the key) at ``path`` (keys and list indices) is written; the
        nearest enclosing value that is there when the path goes further than the text does."""
        offset = self._offset(tuple(path), key)
        if self._lines is None:  # where each line ends, found once: a node list has some 40 lines a node
            self._lines = [m.start() for m in _NEWLINE.finditer(self.text)]
        line = bisect.bisect_left(self._lines, offset)
        return Location(self.file, line + 1, offset - (self._lines[line - 1] if line else -1))

    def _offset(self, path: tuple, key: bool) -> int:
        start = _skip(self.text, 0)
        for depth, step in enumerate(path):
            children = self._level(path[:depth], start)
            if step not in children:
                return start
            key_at, start = children[step]
            if key and depth == len(path) - 1 and isinstance(step, str):
                return key_at
        return start

    def _level(self, prefix: tuple, start: int) -> dict[Any, tuple[int, int]]:
        """Key (or index) -> (where its key starts, where its value starts), for the object or array at
        ``start``; ``{}`` for a scalar. Computed once per path."""
        if prefix in self._children:
            return self._children[prefix]
        text, children = self.text, {}
        opening = text[start:start + 1]
        if opening in ("{", "["):
            closing, at = ("}" if opening == "{" else "]"), _skip(text, start + 1)
            index = 0
            while at < len(text) and text[at] != closing:
                key_at = at
                if opening == "{":
                    name, at = scanstring(text, at + 1)
                    at = _skip(text, _skip(text, at) + 1)  # past the colon
                else:
                    name, index = index, index + 1
                children[name] = (key_at, at)  # Python's json keeps the last of a duplicate key, as here
                _, at = _DECODER.raw_decode(text, at)
                at = _skip(text, at)
                if text[at:at + 1] == ",":
                    at = _skip(text, at + 1)
        self._children[prefix] = children
        return children


def _skip(text: str, at: int) -> int:
    match = _WHITESPACE.match(text, at)
    return match.end() if match else at
