"""YAML profile files: the YAML 1.2 core schema, positions kept, hostile input refused early.

The file is parsed by libyaml, the C parser PyYAML's wheels include (PyYAML's own pure-Python parser where it was
built without it), one event at a time; this module composes the events itself, so that it refuses a file as
soon as it holds more values than its budget or nests deeper than
:data:`~kfdefaults.read.document.MAX_DEPTH`, and it never lets PyYAML resolve a value: plain scalars are resolved
by :mod:`kfdefaults.read.scalars` under the YAML 1.2 core schema, whatever the file's YAML version. Explicit tags,
duplicate keys, merge keys, keys that are not scalars and several documents are errors; aliases may not expand
past the budgets of values and of bytes (a "billion laughs" file, or one large string repeated by aliases, fails
fast), nor nest values deeper than the depth limit.

libyaml follows YAML 1.1's syntax, which YAML 1.2 changed in corners no profile needs, each refused at its place:
anchor names other than letters, digits, ``-`` and ``_``; a line break at NEL, LS or PS (U+0085, U+2028, U+2029)
unquoted; a document after ``...`` without its ``---`` (docs/validation.md, "How YAML files are read").
"""

from __future__ import annotations

from ..errors import AmbiguousScalar
import re
from typing import Any

from .document import MAX_DEPTH, PROFILE_BUDGET, Budget, Document, Path, error
from .scalars import resolve_plain_scalar


class _Node:
    """A composed YAML node. ``value`` is a scalar's text, a sequence's list of nodes or a mapping's list of
    ``(key, value)`` node pairs; ``line`` and ``column`` (1-based) are where it starts (its anchor or tag, if
    any); ``plain`` says a scalar was written unquoted, ``mapping`` that a collection is a mapping. An alias is
    the very node its anchor names."""

    __slots__ = ("value", "line", "column", "plain", "mapping")

    def __init__(self, value: Any, line: int, column: int, plain: bool = False, mapping: bool = False) -> None:
        self.value = value
        self.line = line
        self.column = column
        self.plain = plain
        self.mapping = mapping


_INDENTATION = re.compile(r"did not find expected key|did not find expected '-' indicator|expected <block end>, but found")
"""The parser's words for a line that starts where no key or item may (when it is said at a line's start)."""

_YAML_PROBLEMS = (
    (_INDENTATION,
     "this line is indented differently from the lines around it (YAML nests by indentation: line up sibling "
     "keys and list items)"),
    (re.compile(r"found character '\\t' that cannot start any token|found a tab character"),
     "a tab; YAML indents with spaces only"),
    (re.compile(r"^mapping values are not allowed"),
     "`key: value` where a plain value was expected: indent this line like its siblings, or quote a value "
     "that holds ': '"),
)
"""The parser's messages that mean something simpler, and what to say instead (its words follow)."""


def _plain_yaml_problem(problem: str, at_line_start: bool) -> str:
    for pattern, plain in _YAML_PROBLEMS:
        if pattern.search(problem) and (at_line_start or pattern is not _INDENTATION):
            return f"{plain} (the parser: {problem})"
    return problem


def parse_yaml(text: str, file: str) -> Document:
    """Parse YAML profile text.

    Raises:
        ProfileError: not valid YAML 1.2, a second document, a tag, a duplicate or merge key, or over a budget,
            with the line and column of the problem.
    """
    nodes = _compose(text, file, PROFILE_BUDGET)
    if len(nodes) > 1:
        raise error(file, nodes[1].line, nodes[1].column, "one profile per file: found a second YAML document")
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


_LOADER: Any = None
"""PyYAML's loader class whose parser gives the events: libyaml's (``CBaseLoader``), else the pure-Python one."""


def _loader() -> Any:
    global _LOADER
    if _LOADER is None:
        import yaml

        _LOADER = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
    return _LOADER


def _compose(text: str, file: str, budget: Budget) -> list[_Node]:
    """The root node of every non-empty document of ``text``.

    Raises:
        ProfileError: not valid YAML 1.2, a tag, a nesting deeper than MAX_DEPTH, more values than the budget.
    """
    from yaml import MarkedYAMLError, YAMLError

    _check_yaml_version(text, file)
    bad = _NOT_PRINTABLE.search(text)
    if bad is not None:
        lines = _LINE_BREAK.split(text[:bad.start()])
        raise error(file, len(lines), len(lines[-1]) + 1,
                    f"invalid YAML: unacceptable character #x{ord(bad.group()):04x}: control characters are not allowed")
    loader = _loader()(text)
    try:
        return _compose_events(loader.get_event, text, file, budget)
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = _place(text, mark) if mark else (1, 1)
        problem = e.problem or ""
        if "exceeded maximum nesting depth" in problem and mark:
            # libyaml's own limit (1,000 levels), met while it scans ahead in ``[[[[...``: composing the text
            # before that point finds the first value nested past MAX_DEPTH
            _compose(text[:mark.index], file, budget)
            raise error(file, line, col, f"values nest deeper than {MAX_DEPTH} levels") from None
        if problem == "found character that cannot start any token" and mark:  # libyaml does not say which
            problem = f"found character {text[mark.index:mark.index + 1]!r} that cannot start any token"
        problem = " ".join(p for p in (e.context, problem) if p) or "invalid YAML"
        at_line_start = mark is not None and not text[text.rfind("\n", 0, mark.index) + 1:mark.index].strip(" ")
        raise error(file, line, col, f"invalid YAML: {_plain_yaml_problem(problem, at_line_start)}") from None
    except YAMLError as e:  # none other is known; said at the start of the file rather than as an internal error
        raise error(file, 1, 1, f"invalid YAML: {str(e).splitlines()[0]}") from None
    finally:
        loader.dispose()


_NOT_PRINTABLE = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""A character YAML files may not hold (outside YAML's printable set: control characters, a NUL, surrogates)."""

_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
"""What ends a line for the parser (YAML 1.1's line breaks)."""


def _place(text: str, mark: Any) -> tuple[int, int]:
    """The 1-based line and column of the parser's ``mark``; the end of a file that does not end with a line
    break is the end of its last line (the parser, which ends such a file with one, says the line after it)."""
    if mark.index >= len(text) and mark.column == 0 and text and _LINE_BREAK.match(text[-1]) is None:
        return mark.line, len(_LINE_BREAK.split(text)[-1]) + 1
    return mark.line + 1, mark.column + 1


def _compose_events(get_event: Any, text: str, file: str, budget: Budget) -> list[_Node]:
    """The root node of every non-empty document of the parser's events (``get_event``) of ``text``, in a loop over
    them with no recursion: a file may nest far deeper than the limit before it is refused.

    Raises:
        ProfileError: over the budget of values, deeper than MAX_DEPTH, a tag, an unknown alias.
    """
    from yaml import events

    scalar_event, alias_event, document_start = events.ScalarEvent, events.AliasEvent, events.DocumentStartEvent
    collection_end = (events.MappingEndEvent, events.SequenceEndEvent)
    roots: list[_Node] = []
    anchors: dict[str, _Node] = {}
    open_nodes: list[list[Any]] = []  # the open collections, innermost last: [node, a mapping's key awaiting its value]
    count = 0
    while True:
        event = get_event()
        kind = type(event)
        if kind in collection_end:
            open_nodes.pop()
            continue
        if kind is document_start:
            anchors = {}  # anchors name nodes of their own document only
            continue
        if kind is events.StreamEndEvent:
            break
        if kind is events.StreamStartEvent or kind is events.DocumentEndEvent:
            continue
        mark = event.start_mark
        line, column = mark.line + 1, mark.column + 1
        count += 1
        if count > budget.values:
            raise error(file, line, column, f"file holds more than {budget.values} values")
        if len(open_nodes) >= MAX_DEPTH:
            raise error(file, line, column, f"values nest deeper than {MAX_DEPTH} levels")
        if kind is alias_event:
            node = anchors.get(event.anchor)
            if node is None:
                raise error(file, line, column, f"invalid YAML: found undefined alias {event.anchor!r}")
        else:
            if event.tag is not None:  # even ``!``, which PyYAML-style readers resolve as if untagged
                tag = event.tag.replace("tag:yaml.org,2002:", "!!")
                raise error(file, line, column, f"YAML tags are not supported ({tag}): remove the tag, and quote the "
                            "value if it is meant as text")
            if kind is scalar_event:
                if not event.value:  # an empty value may be placed at the end of the file
                    line, column = _place(text, mark)
                node = _Node(event.value, line, column, event.implicit[0])
            else:
                node = _Node([], line, column, mapping=kind is events.MappingStartEvent)
            if event.anchor is not None:
                anchors[event.anchor] = node
        if open_nodes:
            _attach(open_nodes[-1], node)
        else:
            roots.append(node)
        if kind is not scalar_event and kind is not alias_event:
            open_nodes.append([node, None])
    # an empty document (after a trailing ``---``) says nothing
    return [n for i, n in enumerate(roots) if not (i > 0 and n.plain and n.value == "")]


def _attach(parent: list[Any], node: _Node) -> None:
    """Add ``node`` to the open collection ``parent`` (``[its node, a mapping's key awaiting its value]``)."""
    if not parent[0].mapping:
        parent[0].value.append(node)
    elif parent[1] is None:
        parent[1] = node
    else:
        parent[0].value.append((parent[1], node))
        parent[1] = None


def _document(node: _Node, file: str, budget: Budget) -> Document:
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


def _expanded_size(node: _Node, memo: dict[int, tuple[int, int]], budget: Budget = PROFILE_BUDGET) -> tuple[int, int]:
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
        text = node.value
        values, size = 1, len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    memo[id(node)] = (values, size)
    return values, size


def _overflowing(node: _Node, memo: dict[int, tuple[int, int]], budget: Budget = PROFILE_BUDGET) -> _Node:
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


class _YamlConverter:
    def __init__(self, doc: Document) -> None:
        self.doc = doc

    def fail(self, node: _Node, message: str) -> Exception:
        return error(self.doc.file, node.line, node.column, message)

    def convert(self, node: _Node, path: Path) -> Any:
        self.doc.values.setdefault(path, (node.line, node.column))
        if not isinstance(node.value, list):
            if not node.plain:  # quoted (tags were refused while composing)
                return node.value
            try:
                value = resolve_plain_scalar(node.value)
            except AmbiguousScalar as e:
                raise self.fail(node, str(e)) from None
            if not isinstance(value, str):
                self.doc.plain_text[path] = node.value
            return value
        if len(path) >= MAX_DEPTH:  # only aliases reach here: the composer refused deeper nesting as written
            raise self.fail(node, f"values nest deeper than {MAX_DEPTH} levels once aliases are expanded")
        if not node.mapping:
            return [self.convert(item, path + (i,)) for i, item in enumerate(node.value)]
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node.value, list):
                raise self.fail(key_node, "mapping keys must be plain strings")
            key = key_node.value
            if key_node.plain and key == "<<":
                raise self.fail(key_node, "YAML merge keys (<<) are not supported; write the keys out")
            if key in out:
                first = self.doc.keys[path + (key,)]
                raise self.fail(key_node, f"duplicate key {key!r} (first at line {first[0]})")
            self.doc.keys[path + (key,)] = (key_node.line, key_node.column)
            out[key] = self.convert(value_node, path + (key,))
        return out
