"""Reading profile files: YAML or TOML in, plain data plus the line and column of every key and value out.

YAML is read with the YAML 1.2 core schema, whatever the file's YAML version: ``no``, ``on`` and ``y`` stay
strings, ``1234567`` is an int, ``2024-01-01`` is a string. Plain scalars are resolved here, not by the YAML
library, so that what a value means does not depend on the library's version. The reader is defensive:
explicit tags, duplicate keys and several documents are errors, aliases may not expand past a node budget
(a "billion laughs" file fails fast), values may not nest deeper than :data:`MAX_DEPTH` and a file may not
exceed :data:`MAX_FILE_BYTES`. The budgets bound the work a hostile file causes: the YAML parser is pure
Python, and with them a file at the size cap is read or rejected in a second or two.

TOML is parsed by :mod:`tomllib` (``tomli`` before Python 3.11), which is authoritative for its syntax;
a small scanner then finds where each key and value was written, since tomllib keeps no positions.
"""

from __future__ import annotations

import errno
import io
import math
import os
import re
import stat
import sys
from typing import Any

from ._errors import Finding, Location, ProfileError

MAX_FILE_BYTES = 64 << 10
"""Largest profile file read, in bytes (64 KiB); a profile is a few kilobytes, and the pure-Python YAML reader
takes about a second for 64 KiB of the slowest input (one long comment)."""

MAX_NODES = 10_000
"""Largest number of values one file may hold or expand to, aliases included; a profile holds a few hundred."""

MAX_DEPTH = 64
"""Deepest nesting of mappings and lists in one file; a PodSpec fragment nests about a dozen levels."""

YAML_SUFFIXES = (".yaml", ".yml")
TOML_SUFFIXES = (".toml",)
PROFILE_SUFFIXES = YAML_SUFFIXES + TOML_SUFFIXES

Path = tuple  # a path into a document: keys (str) and list indices (int)


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
        """The inverse of :meth:`to_json`."""
        return cls(
            file,
            value["data"],
            {tuple(p): (line, col) for p, line, col in value["keys"]},
            {tuple(p): (line, col) for p, line, col in value["values"]},
            {tuple(p): text for p, text in value["plain_text"]},
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


def _error(file: str, line: int, column: int, message: str) -> ProfileError:
    return ProfileError([Finding(Location(file, line, column), "", message)])


def read_document(file: str) -> Document:
    """Read one YAML or TOML profile file.

    Args:
        file: Path of a ``.yaml``, ``.yml`` or ``.toml`` file.

    Returns:
        The parsed :class:`Document`.

    Raises:
        ProfileError: the file cannot be read, is too large, or is not valid YAML 1.2 / TOML 1.0, with the
            line and column of the problem.
    """
    return parse_bytes(read_bytes(file), file)


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def path_problem(path: str, want: str) -> str | None:
    """Why ``path`` cannot be read as ``want`` (``"file"`` or ``"folder"``), or ``None`` when it can.

    Says what is there instead: nothing, a broken or looping symbolic link, a pipe or device (which would
    block or never end), a file where a folder is wanted, or no permission to read it.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if os.path.islink(path):
            if e.errno == errno.ELOOP:
                return "a symbolic link that loops (too many levels of symbolic links)"
            return f"a symbolic link to a missing {want} ({os.readlink(path)})"
        return f"no such {want}" if e.errno == errno.ENOENT else f"cannot read: {e.strerror or e}"
    if want == "folder":
        if not stat.S_ISDIR(mode):
            return "not a folder" if stat.S_ISREG(mode) else f"not a folder ({_kind_of(mode)})"
        if not os.access(path, os.R_OK | os.X_OK):
            return "cannot read this folder: permission denied"
        return None
    if not stat.S_ISREG(mode):
        return f"not a profile file ({_kind_of(mode)})"
    if not os.access(path, os.R_OK):
        return "cannot read file: permission denied"
    return None


def read_bytes(file: str) -> bytes:
    """A profile file's bytes.

    Raises:
        ProfileError: the file cannot be read (missing, a broken link, a folder, a pipe, a device, no
            permission) or is larger than :data:`MAX_FILE_BYTES`.
    """
    problem = path_problem(file, "file")
    if problem is not None:  # checked first: opening a pipe would block, a device may never end
        raise _error(file, 1, 1, problem)
    try:
        with open(file, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise _error(file, 1, 1, f"cannot read file: {e.strerror or e}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise _error(file, 1, 1, f"file is larger than {MAX_FILE_BYTES // 1024} KiB; a profile is a few KiB")
    return raw


def parse_bytes(raw: bytes, file: str) -> Document:
    """Parse a profile file's bytes (UTF-8); the format is chosen by ``file``'s suffix.

    Raises:
        ProfileError: not UTF-8, or not valid YAML 1.2 / TOML 1.0, with the line and column of the problem.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise _error(file, line, 1, "file is not UTF-8 text") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return parse_text(text, file)


def parse_text(text: str, file: str) -> Document:
    """Parse profile text; the format is chosen by ``file``'s suffix (``.toml`` for TOML, else YAML).

    Raises:
        ProfileError: as :func:`read_document`.
    """
    if file.endswith(TOML_SUFFIXES):
        return _parse_toml(text, file)
    return _parse_yaml(text, file)


# --- YAML ------------------------------------------------------------------------------------------

_CORE_NULL = re.compile(r"~|null|Null|NULL|")
_CORE_BOOL = re.compile(r"true|True|TRUE|false|False|FALSE")
_CORE_INT = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_CORE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_CORE_INF = re.compile(r"[-+]?\.(inf|Inf|INF)")
_CORE_NAN = re.compile(r"\.(nan|NaN|NAN)")


_LEADING_ZERO = re.compile(r"[-+]?0[0-9]+")


class AmbiguousScalar(ValueError):
    """A plain scalar that YAML readers disagree on (``0755``) or that no profile holds (a 5,000-digit number)."""


def resolve_plain_scalar(value: str) -> Any:
    """The value of a plain (unquoted) YAML scalar under the YAML 1.2 core schema.

    ``"no"`` -> ``"no"``, ``"1234567"`` -> ``1234567``, ``"0x1F"`` -> ``31``, ``"1e3"`` -> ``1000.0``,
    ``"~"`` -> ``None``.

    Raises:
        AmbiguousScalar: an integer with a leading zero (``0755``: decimal 755 in YAML 1.2, octal 493 in YAML 1.1,
            which kubectl reads), or one of more than 30 digits.
    """
    if _CORE_NULL.fullmatch(value):
        return None
    if _CORE_BOOL.fullmatch(value):
        return value[0] in "tT"
    if _CORE_INT.fullmatch(value):
        if len(value) > 30:
            raise AmbiguousScalar(f"`{value[:20]}...` is an integer of {len(value)} digits; no profile value is that large")
        if value.startswith("0o"):
            return int(value[2:], 8)
        if value.startswith("0x"):
            return int(value[2:], 16)
        if _LEADING_ZERO.fullmatch(value):
            digits = value.lstrip("+-0") or "0"
            octal = f"the octal {int(digits, 8)}" if set(digits) <= set("01234567") else "an error"
            raise AmbiguousScalar(
                f"`{value}` is the decimal {int(value)} in YAML 1.2 but {octal} for YAML 1.1 readers such as "
                f"kubectl: write `0o{digits}` for an octal value (a file mode), `{int(value)}` for a decimal, "
                f"or quote it for a string"
            )
        return int(value)
    if _CORE_FLOAT.fullmatch(value):
        return float(value)
    if _CORE_INF.fullmatch(value):
        return -math.inf if value.startswith("-") else math.inf
    if _CORE_NAN.fullmatch(value):
        return math.nan
    return value


class _Rejected(Exception):
    """The composer refused a node (a budget, the depth limit, an explicit tag); carries the position."""

    def __init__(self, mark: Any, message: str) -> None:
        super().__init__(message)
        self.mark = mark
        self.message = message


_PLAIN_TAG: Any = None
"""The tag object the YAML reader gives plain (unquoted, untagged) scalars, to tell them from tagged ones."""


def _yaml_loader() -> Any:
    global _PLAIN_TAG
    from ruamel.yaml import YAML
    from ruamel.yaml.composer import Composer
    from ruamel.yaml.nodes import ScalarNode
    from ruamel.yaml.resolver import VersionedResolver
    from ruamel.yaml.tag import Tag

    if _PLAIN_TAG is None:
        _PLAIN_TAG = Tag(suffix="tag:yaml.org,2002:str")

    class _PlainResolver(VersionedResolver):
        """Leaves every plain scalar a string; :func:`resolve_plain_scalar` gives it its 1.2 meaning."""

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is ScalarNode and implicit[0]:
                return _PLAIN_TAG
            return super().resolve(kind, value, implicit)

    class _BudgetComposer(Composer):
        """Stops composing at the first explicit tag, or as soon as the file holds more than MAX_NODES values or
        nests deeper than MAX_DEPTH."""

        _count = 0
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self._count += 1
            self._depth += 1
            try:
                if self._count > MAX_NODES:
                    raise _Rejected(self.parser.peek_event().start_mark, f"file holds more than {MAX_NODES} values")
                if self._depth > MAX_DEPTH:
                    raise _Rejected(self.parser.peek_event().start_mark, f"values nest deeper than {MAX_DEPTH} levels")
                event = self.parser.peek_event()
                tag = getattr(event, "tag", None)
                if tag is not None:  # even ``!``, which PyYAML-style readers resolve as if untagged
                    tag = str(tag).replace("tag:yaml.org,2002:", "!!")
                    raise _Rejected(event.start_mark, f"YAML tags are not supported ({tag}): remove the tag, and quote "
                                    "the value if it is meant as text")
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    yaml = YAML(typ="rt", pure=True)
    yaml.Resolver = _PlainResolver
    yaml.Composer = _BudgetComposer
    return yaml


_YAML_PROBLEMS = (
    (re.compile(r"expected <block end>, but found"),
     "this line is indented differently from the lines around it (YAML nests by indentation: line up sibling "
     "keys and list items)"),
    (re.compile(r"found character '\\t' that cannot start any token"), "a tab; YAML indents with spaces only"),
    (re.compile(r"^mapping values are not allowed here"),
     "`key: value` where a plain value was expected: indent this line like its siblings, or quote a value "
     "that holds ': '"),
)
"""The YAML parser's messages that mean something simpler, and what to say instead (its words follow)."""


def _plain_yaml_problem(problem: str) -> str:
    for pattern, plain in _YAML_PROBLEMS:
        if pattern.search(problem):
            return f"{plain} (the parser: {problem})"
    return problem


def _parse_yaml(text: str, file: str) -> Document:
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    overrun = _flow_depth_overrun(text)
    if overrun is not None:
        raise _error(file, *overrun, f"values nest deeper than {MAX_DEPTH} levels")
    _check_yaml_version(text, file)
    yaml = _yaml_loader()
    try:
        nodes = list(yaml.compose_all(io.StringIO(text)))
    except _Rejected as e:
        raise _error(file, e.mark.line + 1, e.mark.column + 1, e.message) from None
    except RecursionError:
        raise _error(file, 1, 1, f"values nest deeper than {MAX_DEPTH} levels") from None
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(str(p) for p in (e.context, e.problem) if p) or "invalid YAML"
        raise _error(file, line, col, f"invalid YAML: {_plain_yaml_problem(problem)}") from None
    except YAMLError as e:  # the reader's errors (a NUL byte, say) carry a character position, not a mark
        message = str(e)
        m = re.search(r"position (\d+)", message)
        line, col = 1, 1
        if m:
            before = text[: int(m.group(1))]
            line, col = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
        raise _error(file, line, col, f"invalid YAML: {message.splitlines()[0]}") from None
    from ruamel.yaml.nodes import ScalarNode

    # an empty document (after a trailing ``---``) says nothing; a second document with content is an error below
    nodes = [n for i, n in enumerate(nodes) if n is not None
             and not (i > 0 and isinstance(n, ScalarNode) and n.value == "" and n.style is None)]
    if len(nodes) > 1:
        mark = nodes[1].start_mark
        raise _error(file, mark.line + 1, mark.column + 1, "one profile per file: found a second YAML document")
    doc = Document(file, None)
    if nodes:
        converter = _YamlConverter(doc)
        if _expanded_size(nodes[0], {}) > MAX_NODES:
            raise converter.fail(nodes[0], f"document expands to more than {MAX_NODES} values (aliases?)")
        doc.data = converter.convert(nodes[0], ())
    return doc


def _check_yaml_version(text: str, file: str) -> None:
    """Refuse a ``%YAML`` directive for another version than 1.2, the only one kfdefaults reads.

    A file that says ``%YAML 1.1`` expects ``yes``, ``on`` and ``0755`` to mean what YAML 1.1 makes of them;
    reading it as 1.2 would silently mean something else. Directives come before the first ``---``.

    Raises:
        ProfileError: at the directive's line.
    """
    if "%YAML" not in text:
        return
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not line.startswith("%"):
            return  # the document has begun
        m = re.match(r"%YAML[ \t]+([^\s#]+)", line)
        if m and m.group(1) != "1.2":
            raise _error(file, number, 1, f"%YAML {m.group(1)}: kfdefaults reads YAML 1.2 only, where yes, no, on "
                                          "and off are strings and 0755 is 755; remove the directive and write "
                                          "true or false for a boolean")


_FLOW_SPECIAL = re.compile(r"[\[\]{}\"'#\n|>]")
_TOKEN_START = " \t\n[{,:-?"
_BLOCK_SCALAR_HEADER = re.compile(r"[|>][-+0-9]*[ \t]*(?:#[^\n]*)?(?:\n|$)")
_LINE_PREFIX = re.compile(r"[ \t]*(?:-[ \t]+)*")


def _block_scalar_end(text: str, i: int) -> int:
    """Where the block scalar (``key: |``) whose header starts at ``i`` ends: after its last content line.

    Its content is every following line that is blank or indented deeper than the node holding the scalar: the
    key's column on the header's line (``- key: |``), or the column of the last ``-`` for ``- |``.
    """
    line_start = text.rfind("\n", 0, i) + 1
    prefix = _LINE_PREFIX.match(text, line_start, i).end()
    if prefix == i:  # ``- |``: deeper than the dash
        indent = text.rfind("-", line_start, i) - line_start if "-" in text[line_start:i] else i - line_start - 1
    else:
        indent = prefix - line_start
    pos = text.find("\n", i)
    while pos >= 0:
        nxt = text.find("\n", pos + 1)
        line = text[pos + 1: len(text) if nxt < 0 else nxt]
        if line.strip() and len(line) - len(line.lstrip(" ")) <= indent:
            return pos  # the newline before the first line that is not content
        pos = nxt
    return len(text)


def _flow_depth_overrun(text: str) -> tuple[int, int] | None:
    """Where YAML flow collections (``[[[...``) first nest deeper than MAX_DEPTH, if they do.

    The YAML scanner looks ahead up to 1024 characters for a key after every ``[`` and ``{``, which makes
    deeply nested flow collections take seconds to reject; this pass finds them first. Brackets in quoted
    scalars, block scalars (``|``, ``>``) and comments do not count, nor brackets inside a plain scalar
    (``image: repo/x[1]``).
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    depth = 0
    i = 0
    last_open = -2  # where the last counted bracket was: "[[" opens twice, "x[[" not at all
    while True:
        m = _FLOW_SPECIAL.search(text, i)
        if m is None:
            return None
        i = m.start()
        c = text[i]
        at_token = i == 0 or text[i - 1] in _TOKEN_START and (text[i - 1] not in "[{" or last_open == i - 1)
        if c in "[{" and at_token:
            last_open = i
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, i) + 1
                return line, i - (text.rfind("\n", 0, i) + 1) + 1
        elif c in "]}" and depth:
            depth -= 1
        elif c in "|>":
            if depth == 0 and at_token and _BLOCK_SCALAR_HEADER.match(text, i):
                i = _block_scalar_end(text, i)
                continue
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n"):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif c in "\"'" and at_token:
            j = i + 1
            while True:
                j = text.find(c, j)
                if j < 0:
                    return None  # unterminated: the YAML reader says so
                if c == '"':
                    k = j
                    while k > i + 1 and text[k - 1] == "\\":
                        k -= 1
                    if (j - k) % 2:
                        j += 1
                        continue
                if c == "'" and text.startswith("''", j):
                    j += 2
                    continue
                break
            i = j
        i += 1


def _expanded_size(node: Any, memo: dict[int, int]) -> int:
    """How many values ``node`` stands for once its aliases are expanded (shared nodes counted once each)."""
    known = memo.get(id(node))
    if known is not None:
        return known
    memo[id(node)] = MAX_NODES + 1  # a cycle expands without end
    size = 1
    if isinstance(node.value, list):
        for child in node.value:
            for part in child if isinstance(child, tuple) else (child,):
                size += _expanded_size(part, memo)
                if size > MAX_NODES:
                    break
    memo[id(node)] = size
    return size


class _YamlConverter:
    def __init__(self, doc: Document) -> None:
        self.doc = doc

    def fail(self, node: Any, message: str) -> ProfileError:
        return _error(self.doc.file, node.start_mark.line + 1, node.start_mark.column + 1, message)

    def convert(self, node: Any, path: Path) -> Any:
        from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

        self.doc.values.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, ScalarNode):
            if node.ctag is not _PLAIN_TAG:  # quoted (tags were refused while composing)
                return node.value
            try:
                value = resolve_plain_scalar(node.value)
            except AmbiguousScalar as e:
                raise self.fail(node, str(e)) from None
            if not isinstance(value, str):
                self.doc.plain_text[path] = node.value
            return value
        if isinstance(node, SequenceNode):
            return [self.convert(item, path + (i,)) for i, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, ScalarNode):
                    raise self.fail(key_node, "mapping keys must be plain strings")
                key = key_node.value
                if key_node.style is None and key == "<<":
                    raise self.fail(key_node, "YAML merge keys (<<) are not supported; write the keys out")
                if key in out:
                    first = self.doc.keys[path + (key,)]
                    raise self.fail(key_node, f"duplicate key {key!r} (first at line {first[0]})")
                self.doc.keys[path + (key,)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                out[key] = self.convert(value_node, path + (key,))
            return out
        raise self.fail(node, "unsupported YAML node")


# --- TOML ------------------------------------------------------------------------------------------


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


def _parse_toml(text: str, file: str) -> Document:
    tomllib = _tomllib()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_ERROR_POS.search(msg)
        line, col = (int(m.group(1)), int(m.group(2))) if m else (text.count("\n") + 1, 1)
        col, problem = _plain_toml_problem(text, line, col, _TOML_ERROR_POS.sub("", msg).strip())
        raise _error(file, line, col, f"invalid TOML: {problem}") from None
    except RecursionError:
        raise _error(file, 1, 1, f"values nest deeper than {MAX_DEPTH} levels") from None
    over = _over_budget(data)
    doc = Document(file, None)
    try:
        _TomlScanner(text, doc).scan()
    except (IndexError, ValueError, RecursionError):
        pass  # positions are a convenience; tomllib already accepted the file
    if over is not None:
        where = doc.location(over[0])
        raise _error(file, where.line, where.column, over[1])
    dated = _first_date(data, ())
    if dated is not None:
        where = doc.location(dated)
        raise _error(file, where.line, where.column, "TOML dates and times are not profile values; quote it to write a string")
    doc.data = data
    return doc


def _over_budget(data: Any) -> tuple[Path, str] | None:
    """The first path where ``data`` nests deeper than MAX_DEPTH, or the path past MAX_NODES values, if any."""
    count = 0
    stack: list[tuple[Path, Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        count += 1
        if count > MAX_NODES:
            return path, f"file holds more than {MAX_NODES} values"
        if len(path) > MAX_DEPTH:
            return path, f"values nest deeper than {MAX_DEPTH} levels"
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
