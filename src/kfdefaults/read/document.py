"""A parsed profile file: plain data plus the line and column of every key and value; and the budgets every
file must keep.

The budgets bound the work a hostile file causes, and the memory and time of every step after reading: with them
a file at the size cap is read or rejected in a few tens of milliseconds (``benchmarks/hostile_input.py``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import Finding, Location, ProfileError

Path = tuple  # a path into a document: keys (str) and list indices (int)

MAX_FILE_BYTES = 64 << 10
"""Largest profile file read, in bytes (64 KiB); a profile is a few kilobytes."""

MAX_NODES = 10_000
"""Largest number of values one file may hold or expand to, aliases included; a profile holds a few hundred."""

MAX_EXPANDED_BYTES = MAX_FILE_BYTES
"""Most text (keys and scalars, in UTF-8 bytes) one file may stand for once its YAML aliases are expanded: what
a file without aliases could hold. Without it, a 54 KB file of one 30 KB anchor used 6,000 times stood for
180 MB, and every step after reading (validation, the merge, the cache, the output) paid for all of it."""

MAX_DEPTH = 64
"""Deepest nesting of mappings and lists in one file; a PodSpec fragment nests about a dozen levels."""

MAX_INT_DIGITS = 30
"""Most digits of an integer in a file (YAML or TOML). The largest value any consumer takes is an int64
(9,223,372,036,854,775,807: 19 digits); beyond 4,300 digits Python refuses to convert a number to text at all
(``sys.get_int_max_str_digits``), which would fail far from the file."""


class Budget(NamedTuple):
    """What one file may hold: ``file_bytes`` read at most, ``values`` (aliases expanded) and ``expanded_bytes``
    of text once aliases are expanded. Depth is bounded by :data:`MAX_DEPTH` for every file."""

    file_bytes: int
    values: int
    expanded_bytes: int


PROFILE_BUDGET = Budget(MAX_FILE_BYTES, MAX_NODES, MAX_EXPANDED_BYTES)
"""The budget of a profile file (and of the cluster's PodTemplate)."""

MANIFEST_BUDGET = Budget(1 << 20, 100_000, 1 << 20)
"""The budget of the manifests ``kfdefaults verify`` reads (``kubectl get pod -o yaml``, a ``kind: List`` of
them): 1 MiB and 100,000 values, about 100 pods of 10 KiB each. The YAML reader takes about 1 ms of CPU for one
pod of 2 KiB (265 values) and 0.5 s for 100,000 values (370 such pods, 0.6 MB)."""


def error(file: str, line: int, column: int, message: str) -> ProfileError:
    """A :class:`~kfdefaults.ProfileError` with one finding at ``FILE:LINE:COLUMN``."""
    return ProfileError([Finding(Location(file, line, column), "", message)])


class Document:
    """One parsed profile file.

    Attributes:
        file: The path the file was read from, as given.
        data: The document as plain data (dicts, lists, str, int, float, bool, None).
        keys: Path -> (line, column) of the key that holds the value at that path (1-based).
        values: Path -> (line, column) where the value at that path starts (1-based); list items too.
        plain_text: Path -> the text of a plain YAML scalar that was read as something else than a string
            (``0755`` read as 755, ``True`` read as true), for messages that say what to quote.
    """

    __slots__ = ("file", "data", "keys", "values", "plain_text")

    def __init__(
        self,
        file: str,
        data: Any,
        keys: dict[Path, tuple[int, int]] | None = None,
        values: dict[Path, tuple[int, int]] | None = None,
        plain_text: dict[Path, str] | None = None,
    ) -> None:
        self.file = file
        self.data = data
        self.keys: dict[Path, tuple[int, int]] = {} if keys is None else keys
        self.values: dict[Path, tuple[int, int]] = {} if values is None else values
        self.plain_text: dict[Path, str] = {} if plain_text is None else plain_text

    def __repr__(self) -> str:
        return f"Document({self.file!r})"

    def to_json(self) -> dict[str, Any]:
        """The document as plain JSON data (for the cache)."""
        return {
            "data": self.data,
            "keys": [[list(p), *v] for p, v in self.keys.items()],
            "values": [[list(p), *v] for p, v in self.values.items()],
            "plain_text": [[list(p), v] for p, v in self.plain_text.items()],
        }

    @classmethod
    def from_json(cls, file: str, value: dict[str, Any]) -> Document:
        """The inverse of :meth:`to_json`.

        Raises:
            ValueError: ``value`` is not of that shape (a cache entry that is not this code's, or damaged).
        """
        def path(p: Any) -> Path:
            if not isinstance(p, list) or not all(isinstance(part, str) or type(part) is int for part in p):
                raise ValueError("a document path is a list of keys and indices")
            return tuple(p)

        def position(line: Any, column: Any) -> tuple[int, int]:
            if type(line) is not int or type(column) is not int:
                raise ValueError("a position is two ints")
            return line, column

        if not isinstance(value, dict) or not isinstance(value.get("data"), dict):
            raise ValueError("a document of a profile holds a mapping")
        plain = {path(p): text for p, text in value["plain_text"]}
        if not all(isinstance(text, str) for text in plain.values()):
            raise ValueError("plain text is text")
        return cls(
            file,
            value["data"],
            {path(p): position(line, col) for p, line, col in value["keys"]},
            {path(p): position(line, col) for p, line, col in value["values"]},
            plain,
        )

    def location(self, path: Path, *, key: bool = False) -> Location:
        """Where the value (or, with ``key=True``, the key) at ``path`` was written.

        Falls back to the nearest enclosing value that has a position, then to the file's first line.
        """
        path = tuple(path)
        table = self.keys if key else self.values
        if path in table:
            return Location(self.file, *table[path])
        while path:
            path = path[:-1]
            for t in (self.values, self.keys):
                if path in t:
                    return Location(self.file, *t[path])
        return Location(self.file, 1, 1)
