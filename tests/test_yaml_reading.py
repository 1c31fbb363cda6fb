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
