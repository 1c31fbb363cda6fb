"""YAML profile files read as YAML means them: folded block scalars, and the fast path (libyaml) giving the very
document the reader of record (ruamel.yaml) gives."""

from __future__ import annotations

import pytest
import yaml as pyyaml

from kfdefaults.read import parse_text

FOLDED = [
    "d: >\n  a\n  b\n",
    "d: >-\n  a b\n  c\n\n  d\n",
    "d: >+\n  a\n   indented\n  b\n\n",
    "args:\n  - >\n    echo a\n    echo b\n  - x\n",
    "? >\n  folded\n  key\n: 1\n",
]


@pytest.mark.parametrize("text", FOLDED)
def test_folded_block_scalars_read_as_every_yaml_reader_reads_them(text):
    """A folded scalar (``>``) joins its lines with spaces and holds nothing else: the round-trip reader's marks
    of where it folded (BEL characters) never reach a profile, its pod, or the cache."""
    doc = parse_text(text, "f.yaml")
    assert doc.data == pyyaml.safe_load(text)
    assert "\a" not in repr(doc.data)


def test_a_comment_before_a_block_scalar_on_the_next_line_is_read():
    """ruamel.yaml's round-trip reader gives up on this valid file ("overlap in comment", an internal error of
    kfdefaults before); it is read without the round-trip reader's comments, as YAML means it."""
    text = "n: 1\nroot:\n  k:\n    k:\n      k:  # c\n        |-\n            a\n          \n          \n"
    doc = parse_text(text, "f.yaml")
    assert doc.data == pyyaml.safe_load(text)
    assert doc.plain_text == {("n",): "1"} and doc.values[("root", "k", "k", "k")] == (6, 9)

# --- the fast path: libyaml gives the reader of record's document, or declines --------------------------------
#
# kfdefaults.read.fast_yaml reads a file with libyaml only where it gives what ruamel.yaml gives. These tests
# hold it to that: on every YAML file of the repository, on generated YAML (valid and broken), and on the
# inputs it must leave to the reader of record.

import glob  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kfdefaults import ProfileError  # noqa: E402
from kfdefaults.read import PROFILE_BUDGET, Budget  # noqa: E402
from kfdefaults.read import fast_yaml  # noqa: E402
from kfdefaults.read.yaml import parse_yaml, parse_yaml_documents, parse_yaml_of_record  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def same_value(a, b) -> bool:
    """Equal, and of the same types all the way down (``1`` is not ``1.0`` nor ``True``; NaN is NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b


def outcome(text: str):
    """What the fast path makes of ``text`` and what the reader of record makes of it (a Document or the error
    text)."""
    fast = fast_yaml.fast_document(text, "f.yaml", PROFILE_BUDGET)
    try:
        record = parse_yaml_of_record(text, "f.yaml")
    except ProfileError as e:
        record = str(e)
    return fast, record


def assert_agree(text: str) -> bool:
    """The fast path declines ``text`` or gives the reader of record's document; returns whether it took it."""
    fast, record = outcome(text)
    if fast is None:
        return False
    assert not isinstance(record, str), f"the fast path took a file the reader of record refuses: {record}"
    assert same_value(fast.data, record.data)
    assert list(fast.keys.items()) == list(record.keys.items())
    assert list(fast.values.items()) == list(record.values.items())
    assert fast.plain_text == record.plain_text
    return True


def repository_yaml() -> list[str]:
    found = []
    for pattern in ("profiles/**/*.yaml", "tests/**/*.yaml", "docs/**/*.yaml", "docs/**/*.yml"):
        found.extend(sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)))
    return found


def test_libyaml_is_there():
    """The fast path needs PyYAML's C parser (PyYAML's wheels include it); without it every file would take the
    reader of record, correct but slow, and the tests below would check nothing."""
    assert fast_yaml._libyaml()


def test_every_yaml_file_of_the_repository_reads_alike():
    taken = 0
    for path in repository_yaml():
        with open(path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        taken += assert_agree(text)
    assert taken >= 50  # the valid profiles and fixtures take the fast path


@pytest.mark.parametrize("text", [
    "a: 1\n\tb: 2\n",                      # a tab
    "a: 1\r\nb: 2\r\n",                    # carriage returns
    "a: caf\u00e9\n",                      # not ASCII
    "%YAML 1.2\n---\na: 1\n",              # a directive
    "a: &x 1\nb: *x\n",                    # an anchor and an alias
    "a: !!str 1\n",                        # a tag
    "a: 1\na: 2\n",                        # a duplicate key
    "a: {<<: {b: 1}}\n",                   # a merge key
    "? [a]\n: 1\n",                        # a key that is a list
    "a: 0755\n",                           # a plain scalar YAML 1.2 readers disagree on
    "a:\nb: 1\n",                          # an empty value: the readers place it differently
    "a: >#c\n  x\n",                       # a block scalar header of another form
    "a: |\n   \n  x\n",                    # a line of spaces only
    "- a\n",                               # not a mapping
    "a: 1\n---\nb: 2\n",                   # a second document
    "a: [1\n",                             # broken
    "a: " + "[" * 70 + "]" * 70 + "\n",    # nesting deeper than the limit
    "a: [" + "1, " * 6_000 + "]\n",        # over 16 KiB
])
def test_what_the_fast_path_leaves_to_the_reader_of_record(text):
    fast, record = outcome(text)
    assert fast is None
    try:
        assert same_value(parse_yaml(text, "f.yaml").data, record.data)
    except ProfileError as e:
        assert str(e) == record


@pytest.mark.parametrize("text", ["a: [x, yy, zzz]\n", "a: {b: \"\\u00e9\"}\nc: |\n  text\n"])
def test_a_file_over_a_budget_is_left_to_the_reader_of_record(text):
    """Up to the last value and byte of a budget the fast path reads a file, past it the reader of record says
    where it is over (budgets made small here: the real ones take the reader of record seconds to reach)."""
    for values in range(1, 9):
        for size in range(1, 14):
            budget = Budget(1 << 16, values, size)
            fast = fast_yaml.fast_document(text, "f.yaml", budget)
            try:
                parse_yaml_documents(text, "f.yaml", budget)
            except ProfileError:
                assert fast is None
            else:
                assert fast is not None


def test_without_libyaml_every_file_takes_the_reader_of_record(monkeypatch):
    monkeypatch.setattr(fast_yaml, "_C", False)
    text = "a: 1\nb: [x, 'y']\n"
    assert fast_yaml.fast_document(text, "f.yaml", PROFILE_BUDGET) is None
    assert parse_yaml(text, "f.yaml").data == {"a": 1, "b": ["x", "y"]}


SCALARS = ["x", "a b", "x:y", "http://h/p", "a#b", "-x", ":x", "?x", "x-", "1", "-0", "+1", "0", "0o17", "0x1F", "1_000",
           "1.5", "1e3", ".5", "0.", "+.inf", ".nan", "true", "True", "FALSE", "yes", "on", "~", "null", "2024-01-01",
           "1:2", "@x", "`x", "0755", "''", "'it''s'", "'a #b'", "'a\n\n  b'", '""', '"q\\"r"', '"\\x41\\/\\u00e9\\t"',
           '"\\U0001F600\\N\\_\\L\\P\\e\\0\\a"', '"a\\\n  b"', '"a\n  b"', '" x "', "a\n  b", "[]", "{}", "[a, b]",
           "[a,b]", "{a: 1}", "{a:1}", "{'a': 1}", '{"a":1}', "{a, b: }", "[a: b]", "[a, ]", "{a: 1,}", "[a, [b, {c: d}]]",
           "[\n  a,\n  b\n]", "{\n  a: 1\n}", "|\n  text\n  more", "|-\n  a\n\n", "|+\n  a\n\n", "|2\n   x", ">\n  a\n  b",
           ">-\n  a\n\n  b", "> # c\n  a\n   b\n  c", "", "x # c", "x#c", "--", "---", "...", "a ,b", "!x", "&x y", "*x", "%"]
KEYS = ["k", "key", "'quoted key'", '"dq"', "a b", "x.y/z", "1", "null", "true", "-k", "? k", "k:", "<<", "'<<'"]


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
    text = (draw(st.sampled_from(["", "---\n", "--- # c\n", "# c\n", "\n"])) + "root: " + draw(yaml_node(2, 0))
            + draw(st.sampled_from(["\n", "", "\n...\n", "\n# end\n", "\nz: 1\n", "\n---\n"])))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["", " ", "  ", ":", ": ", "-", "- ", "#", "'", '"', "\n", "\n  ", "[", "]", "{",
                                     "}", ",", "|", ">", "?", "&", "*", "!", "\\"]))
        text = text[:at] + edit + text[at + draw(st.integers(0, 1)):]
    return text


READS = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "300")), deadline=None, database=None,
                 derandomize="FUZZ_EXAMPLES" not in os.environ, suppress_health_check=list(HealthCheck))
"""The same examples on every run; ``FUZZ_EXAMPLES=20000`` explores that many new random ones."""


@READS
@given(yaml_files())
def test_generated_yaml_reads_alike(text):
    assert_agree(text)
