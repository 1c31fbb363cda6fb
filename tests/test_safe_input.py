"""Hostile input fails fast with a located ProfileError: aliases, nesting, size, tags, duplicates."""

from __future__ import annotations

import pytest

from kfdefaults import ProfileError
from kfdefaults.read import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, parse_text, read_document
from kfdefaults.read.document import MAX_EXPANDED_BYTES
from kfdefaults.read.yaml import _flow_depth_overrun


# How fast these inputs are rejected is measured by benchmarks/hostile_input.py; the tests check that each is
# stopped by the mechanism that bounds the work (the node count before expansion, the bracket prescan, the
# composer's budget), not the time it takes.


def rejected(text: str, name: str = "bad.yaml") -> str:
    with pytest.raises(ProfileError) as excinfo:
        parse_text(text, name)
    [finding] = excinfo.value.findings
    return str(finding)


def test_billion_laughs_is_rejected_before_expansion():
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    message = rejected("\n".join(lines) + "\n")  # 10**9 values once expanded
    assert f"expands to more than {MAX_NODES} values" in message


def test_aliases_of_a_large_string_cannot_amplify_the_document():
    """A 54 KB file whose one 30 KB string is used 6,000 times stands for 180 MB: refused by the byte budget,
    located at the list whose aliases add up (the node budget alone let it through)."""
    big = "x" * 30_000
    text = ("pod_template:\n  spec:\n    containers:\n    - name: primary\n      image: &b " + big
            + "\n      args: [" + ", ".join(["*b"] * 6000) + "]\n")
    assert len(text) < MAX_FILE_BYTES and 6000 + 10 < MAX_NODES
    message = rejected(text)
    assert message.startswith("bad.yaml:6:13: document expands to more than 64 KiB of text")


def test_the_byte_budget_counts_each_use_of_an_alias():
    unit = "y" * 1000
    uses = MAX_EXPANDED_BYTES // 1000
    fits = "a: &u " + unit + "\nb: [" + ", ".join(["*u"] * (uses - 5)) + "]\n"
    assert len(parse_text(fits, "ok.yaml").data["b"]) == uses - 5
    message = rejected("a: &u " + unit + "\nb: [" + ", ".join(["*u"] * (uses + 5)) + "]\n")
    assert message.startswith("bad.yaml:2:4: document expands to more than")


@pytest.mark.parametrize("text, where", [
    ("a: " + "[" * 2000 + "]" * 2000 + "\n", ":1:68:"),
    ("a: " + "{b: " * 200 + "1" + "}" * 200 + "\n", ":1:260:"),
    ("".join("  " * i + "-\n" for i in range(MAX_DEPTH + 5)) + "x\n", f":{MAX_DEPTH + 1}:"),
])
def test_deep_nesting_is_rejected(text, where):
    message = rejected(text)
    assert where in message and f"nest deeper than {MAX_DEPTH} levels" in message


@pytest.mark.parametrize("text", [
    "a: " + "[" * 2000 + "]" * 2000 + "\n",
    "a: " + "{b: " * 200 + "1" + "}" * 200 + "\n",
    "a: |\n  text\nb: " + "[" * 100 + "]" * 100 + "\n",
    "- k: |\n    text\n  j: " + "[" * 100 + "]" * 100 + "\n",
])
def test_deep_flow_nesting_is_caught_before_the_yaml_scanner(text):
    assert _flow_depth_overrun(text) is not None


def test_brackets_in_block_scalars_do_not_count_as_nesting():
    text = ("a: |\n  " + "[" * 100 + "\n\n  {{{" + "{" * 100 + "\nb:\n- >-\n  " + "[" * 70
            + "\n- k: |+\n    " + "[" * 70 + "\n  j: x\n")
    assert _flow_depth_overrun(text) is None
    doc = parse_text(text, "ok.yaml")
    assert doc.data["a"] == "[" * 100 + "\n\n{{{" + "{" * 100 + "\n"
    assert doc.data["b"] == ["[" * 70, {"k": "[" * 70 + "\n", "j": "x"}]


def test_deep_toml_nesting_is_located():
    message = rejected("a = " + "[" * 100 + "]" * 100 + "\n", "bad.toml")
    assert message.startswith("bad.toml:1:") and "nest deeper" in message
    message = rejected("a = " + "[" * 5000 + "]" * 5000 + "\n", "bad.toml")
    assert "nest deeper" in message


def test_brackets_in_strings_and_comments_do_not_count_as_nesting():
    text = "a: '" + "[" * 100 + "'\nb: x" + "[" * 100 + "\n# " + "{" * 100 + "\nc: \"\\\"" + "[" * 100 + "\"\n"
    doc = parse_text(text, "ok.yaml")
    assert doc.data["a"] == "[" * 100 and doc.data["b"] == "x" + "[" * 100


def test_too_many_values_are_rejected_by_the_composer_budget():
    message = rejected("a: [" + "1, " * (MAX_NODES + 10) + "]\n")
    assert message.startswith("bad.yaml:1:") and f"more than {MAX_NODES} values" in message
    assert _flow_depth_overrun("a: [" + "1, " * (MAX_NODES + 10) + "]\n") is None


def test_size_cap(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * MAX_FILE_BYTES + "\n", encoding="utf-8")
    with pytest.raises(ProfileError) as excinfo:
        read_document(str(path))
    assert str(excinfo.value).startswith(f"{path}:1:1: file is larger than {MAX_FILE_BYTES // 1024} KiB")


@pytest.mark.parametrize("text, where, words", [
    ("a: !!str 1\n", ":1:4:", "tags are not supported"),
    ("a: !!binary aGVsbG8=\n", ":1:4:", "tags are not supported"),
    ("a: !!python/name:os.system x\n", ":1:4:", "tags are not supported"),
    ("!!python/name:os.system a: 1\n", ":1:1:", "tags are not supported"),
    ("? [a, b]\n: 1\n", ":1:3:", "mapping keys must be plain strings"),
    ("a: !custom x\n", ":1:4:", "tags are not supported"),
    ("a: ! 12\n", ":1:4:", "tags are not supported (!)"),  # YAML says "12", PyYAML-style readers 12: refused
    ("a: !!map {b: 1}\n", ":1:4:", "tags are not supported (!!map)"),
    ("a: !!seq [1]\n", ":1:4:", "tags are not supported (!!seq)"),
    ("a:\n  !!str b: 1\n", ":2:3:", "tags are not supported (!!str)"),
    ("a: {b: 1, b: 2}\n", ":1:11:", "duplicate key 'b'"),
])
def test_tags_and_duplicates(text, where, words):
    message = rejected(text)
    assert where in message and words in message


def test_quoted_and_plain_scalars_keep_their_meaning_and_text():
    doc = parse_text("a: '1'\nb: 1\nc: 0o755\nd: True\ne: no\n", "ok.yaml")
    assert doc.data == {"a": "1", "b": 1, "c": 493, "d": True, "e": "no"}
    assert doc.plain_text == {("b",): "1", ("c",): "0o755", ("d",): "True"}


def test_a_leading_zero_is_an_error_not_a_guess():
    message = rejected("a: 0755\n")
    assert message.startswith("bad.yaml:1:4: `0755` is the decimal 755 in YAML 1.2 but the octal 493")


@pytest.mark.parametrize("text, expected", [
    ("[elastic]\nnnodes = 2\n  nnodes = 4\n", "bad.toml:3:3: invalid TOML: duplicate key nnodes: this table already sets it"),
    ("[elastic]\nnnodes = 2\n[elastic]\nmax_restarts = 1\n", "bad.toml:3:1: invalid TOML: table [elastic] is declared twice"),
    ("[elastic]\nnnodes = 2\n[elastic.nnodes]\n", "bad.toml:3:1: invalid TOML: table [elastic.nnodes] names a key that"),
])
def test_toml_duplicates_are_named_at_the_key(text, expected):
    assert rejected(text, "bad.toml").startswith(expected)


@pytest.mark.parametrize("text, where", [
    ("[elastic]\nnnodes = " + "9" * 4400 + "\n", "bad.toml:2:10:"),  # past Python's 4,300-digit int() limit
    ("[elastic]\nnproc_per_node = [1,\n  " + "1" * 40 + "]\n", "bad.toml:3:3:"),
    ("[elastic]\nnnodes = 0x" + "f" * 5000 + "\n", "bad.toml:2:10:"),  # hex has no int() limit: as large as written
    ("[elastic]\nnnodes = -" + "1_000" * 10 + "\n", "bad.toml:2:10:"),
])
def test_toml_integers_of_more_than_30_digits_are_located_errors(text, where):
    message = rejected(text, "bad.toml")
    assert message.startswith(where) and "no profile value is that large" in message


def test_yaml_and_toml_refuse_the_same_integers():
    assert "is that large" in rejected("a: " + "1" * 31 + "\n")
    assert parse_text("a = " + "1" * 30 + "\n", "ok.toml").data == {"a": int("1" * 30)}
    assert parse_text("a: " + "1" * 30 + "\n", "ok.yaml").data == {"a": int("1" * 30)}
    assert "is that large" in rejected("a = " + "1" * 31 + "\n", "bad.toml")
