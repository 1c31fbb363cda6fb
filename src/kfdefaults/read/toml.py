"""TOML profile files: parsed by :mod:`tomllib` (``tomli`` before Python 3.11), authoritative for the syntax.

tomllib keeps no positions, so a small scanner then finds where each key and value was written.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from .document import MAX_DEPTH, MAX_INT_DIGITS, MAX_NODES, Document, Path, error
from .scalars import too_many_digits


def _tomllib() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    return tomllib


_TOML_ERROR_POS = re.compile(r"\(at line (\d+), column (\d+)\)")


def _plain_toml_problem(text: str, line: int, column: int, problem: str) -> tuple[int, str]:
    """tomllib's duplicate-key messages (``Cannot overwrite a value``, pointing past the value) said plainly,
    at the key or table header of the offending line; other messages as they are."""
    if not (problem.startswith("Cannot overwrite a value") or problem.startswith("Cannot declare")):
        return column, problem
    lines = text.split("\n")
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    stripped = source.lstrip()
    start = len(source) - len(stripped) + 1
    if stripped.startswith("["):
        header = stripped.split("]")[0].strip("[ \t")
        if problem.startswith("Cannot declare"):
            return start, f"table [{header}] is declared twice"
        return start, f"table [{header}] names a key that already holds a value"
    key = stripped.split("=", 1)[0].strip()
    if key and "=" in stripped:
        return start, f"duplicate key {key}: this table already sets it"
    return column, problem


def load_toml(text: str, file: str) -> Any:
    """TOML text as plain data, by tomllib, with its errors located; no budgets and no positions (for files that
    are not profiles, such as ``pyproject.toml``).

    Raises:
        ProfileError: not valid TOML 1.0, or an integer past what Python converts (4,300 digits).
    """
    tomllib = _tomllib()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_ERROR_POS.search(msg)
        line, col = (int(m.group(1)), int(m.group(2))) if m else (text.count("\n") + 1, 1)
        col, problem = _plain_toml_problem(text, line, col, _TOML_ERROR_POS.sub("", msg).strip())
        raise error(file, line, col, f"invalid TOML: {problem}") from None
    except RecursionError:
        raise error(file, 1, 1, f"values nest deeper than {MAX_DEPTH} levels") from None
    except ValueError:  # int() refused a decimal integer of over 4,300 digits (sys.get_int_max_str_digits)
        m = _LONG_INTEGER.search(text)
        line, col = _position(text, m.start(1)) if m else (1, 1)
        raise error(file, line, col, too_many_digits(m.group(1) if m else "?")) from None


def toml_positions(text: str, doc: Document) -> Document:
    """Fill ``doc.keys`` and ``doc.values`` with where each key and value of TOML ``text`` is written (text that
    tomllib accepted); returns ``doc``. Positions are a convenience: text the scanner cannot follow leaves them
    partial."""
    try:
        _TomlScanner(text, doc).scan()
    except (IndexError, ValueError, RecursionError):
        pass
    return doc


def parse_toml(text: str, file: str) -> Document:
    """Parse TOML profile text.

    Raises:
        ProfileError: not valid TOML 1.0, a date, or over a budget, with the line and column of the problem.
    """
    data = load_toml(text, file)
    over = _over_budget(data)
    doc = toml_positions(text, Document(file, None))
    if over is not None:
        where = doc.location(over[0])
        raise error(file, where.line, where.column, over[1])
    dated = _first_date(data, ())
    if dated is not None:
        where = doc.location(dated)
        raise error(file, where.line, where.column, "TOML dates and times are not profile values; quote it to write a string")
    doc.data = data
    return doc


_LONG_INTEGER = re.compile(r"(?:^|[=\[,{])[ \t]*([+-]?[0-9][0-9_]{%d,})" % MAX_INT_DIGITS, re.MULTILINE)
"""A TOML integer value of more than MAX_INT_DIGITS digits (the first one is where tomllib gave up)."""

_TOO_LARGE = 10**MAX_INT_DIGITS


def _position(text: str, index: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def _over_budget(data: Any) -> tuple[Path, str] | None:
    """The first path where ``data`` nests deeper than MAX_DEPTH, holds an integer of more than MAX_INT_DIGITS
    digits (``0x`` and ``0o`` integers of any length reach here; YAML's reader refuses them as text), or the
    path past MAX_NODES values, if any."""
    count = 0
    stack: list[tuple[Path, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        count += 1
        if count > MAX_NODES:
            return path, f"file holds more than {MAX_NODES} values"
        if len(path) > MAX_DEPTH:
            return path, f"values nest deeper than {MAX_DEPTH} levels"
        if isinstance(value, int) and not isinstance(value, bool) and not -_TOO_LARGE < value < _TOO_LARGE:
            return path, (f"an integer of more than {MAX_INT_DIGITS} digits; no profile value is that large (at most "
                          f"{MAX_INT_DIGITS} digits are read)")
        if isinstance(value, dict):
            stack.extend((path + (k,), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((path + (i,), v) for i, v in reversed(list(enumerate(value))))
    return None


def _first_date(value: Any, path: Path) -> Path | None:
    """The path of the first TOML date or time in ``value`` (no Kubernetes or elastic field takes one)."""
    if isinstance(value, dict):
        for k, v in value.items():
            found = _first_date(v, path + (k,))
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = _first_date(v, path + (i,))
            if found is not None:
                return found
    elif hasattr(value, "isoformat") and not isinstance(value, (str, int, float, bool)):
        return path
    return None


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class _TomlScanner:
    """Walks TOML text that tomllib accepted and records where each key and value starts."""

    def __init__(self, text: str, doc: Document) -> None:
        self.s = text
        self.i = 0
        self.doc = doc
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.table: Path = ()
        self.aot_index: dict[Path, int] = {}

    def pos(self, i: int) -> tuple[int, int]:
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= i:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, i - self.line_starts[lo] + 1

    def skip_ws(self, newlines: bool) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            elif c == "#":
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            else:
                return

    def read_key_part(self) -> str:
        s = self.s
        if s.startswith('"', self.i) or s.startswith("'", self.i):
            return self.read_string()
        m = _BARE_KEY.match(s, self.i)
        if not m:
            raise ValueError("key expected")
        self.i = m.end()
        return m.group(0)

    def read_dotted_key(self) -> tuple[list[str], list[int]]:
        parts, starts = [], []
        while True:
            self.skip_ws(False)
            starts.append(self.i)
            parts.append(self.read_key_part())
            self.skip_ws(False)
            if self.i < len(self.s) and self.s[self.i] == ".":
                self.i += 1
                continue
            return parts, starts

    def read_string(self) -> str:
        s, i = self.s, self.i
        for quote in ('"""', "'''"):
            if s.startswith(quote, i):
                end = s.index(quote, i + 3)
                while end + 3 < len(s) and s[end + 3] == quote[0]:
                    end += 1
                self.i = end + 3
                return s[i + 3 : end]
        quote = s[i]
        j = i + 1
        while s[j] != quote:
            if quote == '"' and s[j] == "\\":
                j += 1
            j += 1
        self.i = j + 1
        raw = s[i : j + 1]
        if quote == "'":
            return raw[1:-1]
        return _tomllib().loads(f"k = {raw}")["k"]

    def resolve(self, keys: list[str]) -> Path:
        """Map a header's dotted key to a document path, adding the current index of arrays of tables."""
        path: Path = ()
        for k in keys:
            path = path + (k,)
            if path in self.aot_index:
                path = path + (self.aot_index[path],)
        return path

    def record(self, path: Path, key_at: int) -> None:
        self.doc.keys.setdefault(path, self.pos(key_at))

    def scan(self) -> None:
        s = self.s
        while True:
            self.skip_ws(True)
            if self.i >= len(s):
                return
            if s[self.i] == "[":
                aot = s.startswith("[[", self.i)
                start = self.i
                self.i += 2 if aot else 1
                keys, _ = self.read_dotted_key()
                self.skip_ws(False)
                self.i += 2 if aot else 1
                if aot:
                    base = self.resolve(keys[:-1]) + (keys[-1],)
                    self.aot_index[base] = self.aot_index.get(base, -1) + 1
                    self.record(base, start)
                    self.table = base + (self.aot_index[base],)
                    self.doc.values.setdefault(self.table, self.pos(start))
                else:
                    self.table = self.resolve(keys)
                    self.record(self.table, start)
                    self.doc.values.setdefault(self.table, self.pos(start))
                continue
            self.key_value(self.table)

    def key_value(self, table: Path) -> None:
        keys, starts = self.read_dotted_key()
        path = table
        for k, at in zip(keys, starts):
            path = path + (k,)
            self.record(path, at)
        self.skip_ws(False)
        self.i += 1  # '='
        self.skip_ws(False)
        self.value(path)

    def value(self, path: Path) -> None:
        s = self.s
        self.doc.values.setdefault(path, self.pos(self.i))
        c = s[self.i]
        if c in "\"'":
            self.read_string()
        elif c == "[":
            self.i += 1
            index = 0
            while True:
                self.skip_ws(True)
                if s[self.i] == "]":
                    self.i += 1
                    return
                self.value(path + (index,))
                index += 1
                self.skip_ws(True)
                if s[self.i] == ",":
                    self.i += 1
        elif c == "{":
            self.i += 1
            while True:
                self.skip_ws(False)
                if s[self.i] == "}":
                    self.i += 1
                    return
                self.key_value(path)
                self.skip_ws(False)
                if s[self.i] == ",":
                    self.i += 1
        else:
            while self.i < len(s) and s[self.i] not in ",]}\n#":
                self.i += 1
