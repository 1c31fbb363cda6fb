"""YAML profile files: the YAML 1.2 core schema, positions kept, hostile input refused early.

Explicit tags, duplicate keys, merge keys and several documents are errors; aliases may not expand past the
budgets of values and of bytes (a "billion laughs" file, or one large string repeated by aliases, fails fast);
values may not nest deeper than :data:`~kfdefaults.read.document.MAX_DEPTH`.
Plain scalars are resolved by :mod:`kfdefaults.read.scalars`, not by the YAML library.
"""

from __future__ import annotations

import io
import re
from typing import Any

from ..errors import ProfileError
from .document import MAX_DEPTH, PROFILE_BUDGET, Budget, Document, Path, error
from .fast_yaml import fast_document
from .scalars import AmbiguousScalar, resolve_plain_scalar


class _Rejected(Exception):
    """The composer refused a node (a budget, the depth limit, an explicit tag); carries the position."""

    def __init__(self, mark: Any, message: str) -> None:
        super().__init__(message)
        self.mark = mark
        self.message = message


_PLAIN_TAG: Any = None
"""The tag object the YAML reader gives plain (unquoted, untagged) scalars, to tell them from tagged ones."""


def _yaml_loader(budget: Budget, round_trip: bool = True) -> Any:
    """ruamel.yaml's reader, its composer held to ``budget``: the round-trip reader (``round_trip``), or the one
    that keeps no comments."""
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
        """Stops composing at the first explicit tag, or as soon as the file holds more values than its budget or
        nests deeper than MAX_DEPTH."""

        _count = 0
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self._count += 1
            self._depth += 1
            try:
                if self._count > budget.values:
                    raise _Rejected(self.parser.peek_event().start_mark, f"file holds more than {budget.values} values")
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

    yaml = YAML(typ="rt" if round_trip else "safe", pure=True)
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


def parse_yaml(text: str, file: str) -> Document:
    """Parse YAML profile text.

    Raises:
        ProfileError: not valid YAML 1.2, a second document, a tag, a duplicate or merge key, or over a budget,
            with the line and column of the problem.
    """
    doc = fast_document(text, file, PROFILE_BUDGET)  # None: outside what libyaml is known to read alike
    return doc if doc is not None else parse_yaml_of_record(text, file)


def parse_yaml_of_record(text: str, file: str) -> Document:
    """Parse YAML profile text with ruamel.yaml, the reader of record, which :func:`parse_yaml` uses for every
    file :mod:`.fast_yaml` leaves to it (and for every error).

    Raises:
        ProfileError: as :func:`parse_yaml`.
    """
    nodes = _compose(text, file, PROFILE_BUDGET)
    if len(nodes) > 1:
        mark = nodes[1].start_mark
        raise error(file, mark.line + 1, mark.column + 1, "one profile per file: found a second YAML document")
    return _document(nodes[0], file, PROFILE_BUDGET) if nodes else Document(file, None)


def parse_yaml_documents(text: str, file: str, budget: Budget = PROFILE_BUDGET) -> list[Document]:
    """Parse a stream of YAML documents (``---`` between them), each read as :func:`parse_yaml` reads a profile:
    the YAML 1.2 core schema, positions kept (line and column in the whole text), no tags, no duplicate or merge
    keys; ``budget`` bounds the whole text.

    Returns:
        One :class:`Document` per document that holds something (an empty one, as after a trailing ``---``, is
        left out), in order.

    Raises:
        ProfileError: as :func:`parse_yaml`, a second document aside.
    """
    return [_document(node, file, budget) for node in _compose(text, file, budget)]


def _compose(text: str, file: str, budget: Budget) -> list[Any]:
    """The YAML nodes of every non-empty document of ``text``.

    Raises:
        ProfileError: not valid YAML 1.2, a tag, a nesting deeper than MAX_DEPTH, more values than the budget.
    """
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    overrun = _flow_depth_overrun(text)
    if overrun is not None:
        raise error(file, *overrun, f"values nest deeper than {MAX_DEPTH} levels")
    _check_yaml_version(text, file)
    try:
        try:
            nodes = list(_yaml_loader(budget).compose_all(io.StringIO(text)))
        except NotImplementedError:
            # the round-trip reader's bookkeeping of comments gives up on some valid files ("overlap in comment":
            # a comment before a block scalar on the next line); read them again without it
            nodes = list(_yaml_loader(budget, round_trip=False).compose_all(io.StringIO(text)))
    except _Rejected as e:
        raise error(file, e.mark.line + 1, e.mark.column + 1, e.message) from None
    except RecursionError:
        raise error(file, 1, 1, f"values nest deeper than {MAX_DEPTH} levels") from None
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(str(p) for p in (e.context, e.problem) if p) or "invalid YAML"
        raise error(file, line, col, f"invalid YAML: {_plain_yaml_problem(problem)}") from None
    except YAMLError as e:  # the reader's errors (a NUL byte, say) carry a character position, not a mark
        message = str(e)
        m = re.search(r"position (\d+)", message)
        line, col = 1, 1
        if m:
            before = text[: int(m.group(1))]
            line, col = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
        raise error(file, line, col, f"invalid YAML: {message.splitlines()[0]}") from None
    from ruamel.yaml.nodes import ScalarNode

    # an empty document (after a trailing ``---``) says nothing
    return [n for i, n in enumerate(nodes) if n is not None
            and not (i > 0 and isinstance(n, ScalarNode) and n.value == "" and n.style is None)]


def _document(node: Any, file: str, budget: Budget) -> Document:
    """One composed YAML document as a :class:`Document`, once its aliases are known to keep the budget."""
    doc = Document(file, None)
    converter = _YamlConverter(doc)
    memo: dict[int, tuple[int, int]] = {}
    values, size = _expanded_size(node, memo, budget)
    if values > budget.values:
        raise converter.fail(_overflowing(node, memo, budget), f"document expands to more than {budget.values} values "
                                                               "(aliases?)")
    if size > budget.expanded_bytes:
        raise converter.fail(_overflowing(node, memo, budget), f"document expands to more than "
                             f"{budget.expanded_bytes // 1024} KiB of text (aliases repeating a large value?); a file "
                             "may stand for what it could hold written out")
    doc.data = converter.convert(node, ())
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
            raise error(file, number, 1, f"%YAML {m.group(1)}: kfdefaults reads YAML 1.2 only, where yes, no, on "
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


def _expanded_size(node: Any, memo: dict[int, tuple[int, int]], budget: Budget = PROFILE_BUDGET) -> tuple[int, int]:
    """How many values, and how many bytes of text (keys and scalars, UTF-8), ``node`` stands for once its
    aliases are expanded: an alias counts again each time it is used. Counting stops soon after a budget is
    passed, so a "billion laughs" file is measured in a few steps per node."""
    known = memo.get(id(node))
    if known is not None:
        return known
    memo[id(node)] = (budget.values + 1, budget.expanded_bytes + 1)  # a cycle expands without end
    if isinstance(node.value, list):
        values, size = 1, 0
        for child in node.value:
            for part in child if isinstance(child, tuple) else (child,):
                v, b = _expanded_size(part, memo, budget)
                values, size = values + v, size + b
            if values > budget.values or size > budget.expanded_bytes:
                break
    else:
        text = _scalar_text(node)
        values, size = 1, len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    memo[id(node)] = (values, size)
    return values, size


def _overflowing(node: Any, memo: dict[int, tuple[int, int]], budget: Budget = PROFILE_BUDGET) -> Any:
    """The node to blame for a document over budget: going down from ``node``, the first node none of whose
    children is over budget alone (the list or mapping whose aliases add up; an alias has no position of its own)."""
    seen: set[int] = set()
    while isinstance(node.value, list) and id(node) not in seen:
        seen.add(id(node))
        over = None
        for child in node.value:
            for part in child if isinstance(child, tuple) else (child,):
                values, size = _expanded_size(part, memo, budget)
                if values > budget.values or size > budget.expanded_bytes:
                    over = part
                    break
            if over is not None:
                break
        if over is None:
            return node
        node = over
    return node


def _scalar_text(node: Any) -> str:
    """The text of a scalar node. In a folded block scalar (``>``), the round-trip reader marks each place where
    it folded a line break with a BEL character (``\\a``), for its own writer; the value has none (a BEL cannot be
    written in a block scalar: it is not printable), as every other YAML reader says."""
    return node.value.replace("\a", "") if node.style == ">" else str(node.value)


class _YamlConverter:
    def __init__(self, doc: Document) -> None:
        self.doc = doc

    def fail(self, node: Any, message: str) -> ProfileError:
        return error(self.doc.file, node.start_mark.line + 1, node.start_mark.column + 1, message)

    def convert(self, node: Any, path: Path) -> Any:
        from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

        self.doc.values.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, ScalarNode):
            if node.ctag is not _PLAIN_TAG:  # quoted (tags were refused while composing)
                return _scalar_text(node)
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
                key = _scalar_text(key_node)
                if key_node.style is None and key == "<<":
                    raise self.fail(key_node, "YAML merge keys (<<) are not supported; write the keys out")
                if key in out:
                    first = self.doc.keys[path + (key,)]
                    raise self.fail(key_node, f"duplicate key {key!r} (first at line {first[0]})")
                self.doc.keys[path + (key,)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                out[key] = self.convert(value_node, path + (key,))
            return out
        raise self.fail(node, "unsupported YAML node")
