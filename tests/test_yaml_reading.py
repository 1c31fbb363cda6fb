"""YAML profile files read as YAML 1.2 means them, at the place each value was written; and every file, valid or
broken, read or refused with a located ProfileError, whichever parser PyYAML has."""

from __future__ import annotations

import os
import re

import pytest
import yaml as pyyaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfdefaults import ProfileError
from kfdefaults.read import Budget, parse_text
from kfdefaults.read import yaml as reader
from kfdefaults.read.yaml import parse_yaml_documents

FOLDED = [
    ("d: >\n  a\n  b\n", {"d": "a b\n"}),
    ("d: >-\n  a b\n  c\n\n  d\n", {"d": "a b c\nd"}),
    ("d: >+\n  a\n   indented\n  b\n\n", {"d": "a\n indented\nb\n\n"}),
    ("args:\n  - >\n    echo a\n    echo b\n  - x\n", {"args": ["echo a echo b\n", "x"]}),
    ("? >\n  folded\n  key\n: 1\n", {"folded key\n": 1}),
]


@pytest.mark.parametrize("text, data", FOLDED)
def test_folded_block_scalars_join_their_lines(text, data):
    """A folded scalar (``>``) joins its lines with spaces and holds nothing else (a BEL character once reached a
    rendered pod from each fold)."""
    assert parse_text(text, "f.yaml").data == data


def test_a_comment_before_a_block_scalar_on_the_next_line_is_read():
    """A valid file that was once an internal error ("overlap in comment")."""
    text = "n: 1\nroot:\n  k:\n    k:\n      k:  # c\n        |-\n            a\n          \n          \n"
    doc = parse_text(text, "f.yaml")
    assert doc.data == {"n": 1, "root": {"k": {"k": {"k": "a"}}}}
    assert doc.plain_text == {("n",): "1"} and doc.values[("root", "k", "k", "k")] == (6, 9)


def test_libyaml_parses():
    """The profiles are parsed by libyaml, the C parser PyYAML's wheels include: about 0.1 ms for a profile
    where a pure-Python parser takes a few milliseconds (docs/performance.md)."""
    assert reader._loader() is pyyaml.CBaseLoader


@pytest.mark.parametrize("text, data, where", [
    ("a: 1\r\nb: 2\r\n", {"a": 1, "b": 2}, {("b",): (2, 4)}),
    ("\u00e9: [x, y\u00e9, z]\n", {"\u00e9": ["x", "y\u00e9", "z"]}, {("\u00e9", 2): (1, 12)}),  # columns count characters
    ("%YAML 1.2\n---\na: 1\n", {"a": 1}, {("a",): (3, 4)}),
    ("a: &x {b: 1}\nc: *x\n", {"a": {"b": 1}, "c": {"b": 1}}, {("c",): (1, 4), ("c", "b"): (1, 11)}),  # where written
    ("a: &x 1\nb: &x 2\nc: *x\n", {"a": 1, "b": 2, "c": 2}, {("c",): (2, 4)}),  # an alias names the latest anchor
    ("a:\nb: 1\n", {"a": None, "b": 1}, {("a",): (1, 3)}),  # an empty value: after its key, not on the next line
    ("a: {b, c: }\n", {"a": {"b": None, "c": None}}, {("a", "c"): (1, 11)}),
    ("a: 1\n---\n", {"a": 1}, {("a",): (1, 4)}),  # an empty document after a trailing ---
    ("--- # c", None, {(): (1, 8)}),  # at the end of a file with no line break at its end, not on the line after
    ("- a\n", ["a"], {(0,): (1, 3)}),  # not a profile, which validation says; the reader reads it
])
def test_yaml_read_as_written(text, data, where):
    doc = parse_text(text, "f.yaml")
    assert doc.data == data
    for path, position in where.items():
        assert doc.values[path] == position, path


@pytest.mark.parametrize("text, expected", [
    ("a: 1\n---\nb: 2\n", "f.yaml:3:1: one profile per file: found a second YAML document"),
    ("a: [1\n", "f.yaml:2:1: invalid YAML: while parsing a flow sequence"),
    ("a: *x\n", "f.yaml:1:4: invalid YAML: found undefined alias 'x'"),
    ("a: |\n   \n  x\n", "f.yaml:3:3: invalid YAML: this line is indented differently"),  # a leading line of more spaces
    ("a: 1\n\tb: 2\n", "f.yaml:2:1: invalid YAML: a tab; YAML indents with spaces only"),
    ("a:\n  'k'0: 1\n", "f.yaml:2:6: invalid YAML: while parsing a block mapping did not find expected key"),  # not
    # "indented differently": the line is, but it goes on after a quoted key
    ("a: `x\n", "f.yaml:1:4: invalid YAML: while scanning for the next token found character '`' that cannot start"),
    ("\u00e9: 1\nb: \u00e9\x01\n", "f.yaml:2:5: invalid YAML: unacceptable character #x0001"),  # in characters
])
def test_yaml_refused_at_its_place(text, expected):
    with pytest.raises(ProfileError) as excinfo:
        parse_text(text, "f.yaml")
    assert str(excinfo.value).startswith(expected)


@pytest.mark.parametrize("text, values, size", [("a: [x, yy, zzz]\n", 6, 7), ("a: {b: \"\\u00e9\"}\nc: |\n  text\n", 7, 10)])
def test_a_file_is_read_up_to_the_last_value_and_byte_of_its_budget(text, values, size):
    """``values`` values (keys, lists and mappings included) and ``size`` bytes of keys and scalars in UTF-8 (``é`` is
    two): read within a budget of exactly that, refused one below (budgets made small here)."""
    assert parse_yaml_documents(text, "f.yaml", Budget(1 << 16, values, size))
    with pytest.raises(ProfileError, match=f"more than {values - 1} values"):
        parse_yaml_documents(text, "f.yaml", Budget(1 << 16, values - 1, size))
    with pytest.raises(ProfileError, match="expands to more than 0 KiB of text"):
        parse_yaml_documents(text, "f.yaml", Budget(1 << 16, values, size - 1))


def test_without_libyaml_pyyaml_s_own_parser_reads_alike(monkeypatch):
    """Where PyYAML was built without libyaml, its pure-Python parser gives the same events: the same document,
    and errors at the same places, in PyYAML's own words."""
    text = "a: 1\nb: [x, 'y', {c: 0o17}]\nd: &q |\n  text\ne: *q\n"
    expected = parse_text(text, "f.yaml")
    monkeypatch.setattr(reader, "_LOADER", pyyaml.BaseLoader)
    doc = parse_text(text, "f.yaml")
    assert (doc.data, doc.keys, doc.values, doc.plain_text) == (expected.data, expected.keys, expected.values,
                                                                  expected.plain_text)
    with pytest.raises(ProfileError, match=r"^f.yaml:2:1: invalid YAML: a tab; YAML indents with spaces only"):
        parse_text("a:\n\tb: 1\n", "f.yaml")
    with pytest.raises(ProfileError, match=r"^f.yaml:1:4: YAML tags are not supported"):
        parse_text("a: !!str 1\n", "f.yaml")


# --- generated YAML, valid and broken: read, or refused at a place in the file ---------------------------------

SCALARS = ["x", "a b", "x:y", "http://h/p", "a#b", "-x", ":x", "?x", "x-", "1", "-0", "+1", "0", "0o17", "0x1F", "1_000",
           "1.5", "1e3", ".5", "0.", "+.inf", ".nan", "true", "True", "FALSE", "yes", "on", "~", "null", "2024-01-01",
           "1:2", "@x", "`x", "0755", "''", "'it''s'", "'a #b'", "'a\n\n  b'", '""', '"q\\"r"', '"\\x41\\/\\u00e9\\t"',
           '"\\U0001F600\\N\\_\\L\\P\\e\\0\\a"', '"a\\\n  b"', '"a\n  b"', '" x "', "a\n  b", "[]", "{}", "[a, b]",
           "[a,b]", "{a: 1}", "{a:1}", "{'a': 1}", '{"a":1}', "{a, b: }", "[a: b]", "[a, ]", "{a: 1,}", "[a, [b, {c: d}]]",
           "[\n  a,\n  b\n]", "{\n  a: 1\n}", "|\n  text\n  more", "|-\n  a\n\n", "|+\n  a\n\n", "|2\n   x", ">\n  a\n  b",
           ">-\n  a\n\n  b", "> # c\n  a\n   b\n  c", "", "x # c", "x#c", "--", "---", "...", "a ,b", "!x", "&x y", "*x", "%",
           "caf\u00e9", "a\tb", "\u65e5\u672c"]
KEYS = ["k", "key", "'quoted key'", '"dq"', "a b", "x.y/z", "1", "null", "true", "-k", "? k", "k:", "<<", "'<<'", "&a k"]


@st.composite
def yaml_node(draw, indent: int, depth: int) -> str:
    """A YAML value at ``indent``: a scalar or flow collection (often multi-line), a block mapping or a block
    sequence, with comments and odd spacing here and there."""
    kind = draw(st.sampled_from(["scalar", "scalar", "mapping", "sequence"] if depth < 3 else ["scalar"]))
    if kind == "scalar":
        return draw(st.sampled_from(SCALARS)).replace("\n", "\n" + " " * (indent + 2))
    pad = " " * indent
    if kind == "mapping":
        lines = []
        for i in range(draw(st.integers(1, 3))):
            sep = draw(st.sampled_from([": ", ":\n" + pad + "  ", ":  # c\n" + pad + "  ", ":\n" + pad, ":  "]))
            lines.append(draw(st.sampled_from(KEYS)) + f"{i}" * draw(st.booleans()) + sep
                         + draw(yaml_node(indent + 2, depth + 1)))
        body = ("\n" + pad).join(lines)
    else:
        body = ("\n" + pad).join("-" + draw(st.sampled_from([" ", "  ", "\n" + pad + "  "]))
                                 + draw(yaml_node(indent + 2, depth + 1)) for _ in range(draw(st.integers(1, 3))))
    return "\n" + pad + body if draw(st.booleans()) else body


@st.composite
def yaml_files(draw) -> str:
    """A profile-like YAML file, now and then broken by a few edits."""
    text = (draw(st.sampled_from(["", "---\n", "--- # c\n", "# c\n", "\n", "%YAML 1.2\n---\n"])) + "root: "
            + draw(yaml_node(2, 0)) + draw(st.sampled_from(["\n", "", "\n...\n", "\n# end\n", "\nz: 1\n", "\n---\n"])))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["", " ", "  ", ":", ": ", "-", "- ", "#", "'", '"', "\n", "\n  ", "[", "]", "{",
                                     "}", ",", "|", ">", "?", "&", "*", "!", "\\", "\t", "\r", "\x00", "\u00e9"]))
        text = text[:at] + edit + text[at + draw(st.integers(0, 1)):]
    return text


READS = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "300")), deadline=None, database=None,
                 derandomize="FUZZ_EXAMPLES" not in os.environ, suppress_health_check=list(HealthCheck))
"""The same examples on every run; ``FUZZ_EXAMPLES=20000`` explores that many new random ones."""


def inside(text: str, line: int, column: int) -> bool:
    """``LINE:COLUMN`` (1-based) is a place in ``text``: on one of its lines (YAML 1.1's line breaks, which libyaml
    counts, as editors do), at most one past that line's end."""
    lines = re.split("\r\n|[\r\n\x85\u2028\u2029]", text)
    return 1 <= line <= len(lines) and 1 <= column <= len(lines[line - 1]) + 1


@pytest.mark.slow
@READS
@given(yaml_files())
def test_generated_yaml_is_read_or_refused_at_a_place_in_the_file(text):
    """Whatever the file, the reader gives a document whose every position is in the file, or one ProfileError
    at a place in the file: never another exception."""
    try:
        doc = parse_text(text, "f.yaml")
    except ProfileError as e:
        [finding] = e.findings
        assert finding.location.file == "f.yaml" and inside(text, finding.location.line, finding.location.column), e
    else:
        assert all(inside(text, *position) for position in [*doc.keys.values(), *doc.values.values()]), doc.values
