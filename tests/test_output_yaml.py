"""The YAML that render prints reads back as the same data in YAML 1.2 (kfdefaults) and YAML 1.1 (PyYAML)."""

from __future__ import annotations

import math

import pytest
import yaml
from budgets import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from kfdefaults.read import parse_text
from kfdefaults.show.output import to_yaml

TRICKY = ["no", "on", "y", "Yes", "0755", "1_000", "12:30", "2024-01-01", "~", "null", "", " x", "x ", "a: b", "#x",
          "- x", "[x]", "{x}", "@x", "`x", "*x", "&x", "!x", "%x", "|x", ">x", "'x", '"x', "x #y", "x:", "1e3", ".5",
          "0x1F", "0o17", ".inf", "-.inf", ".nan", "<<", "=", "a\nb", "tab\there", "é", "\u2028", "{{.input}}",
          "--inputs", "-m", "--", "-", "---", "-x:y", "-1", "--1", "\x7f", "\x85", "\U0001F600", "a\u2029b"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(TRICKY), st.text(max_size=12),
)
keys = st.one_of(st.sampled_from(TRICKY), st.text(min_size=1, max_size=8))
documents = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)), max_leaves=25)


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.slow
@settings(max_examples=examples(150))  # seeded under the ci profile; HYPOTHESIS_PROFILE=explore draws 1,500
@given(st.dictionaries(keys, documents, min_size=1, max_size=5))
def test_yaml_output_reads_back_the_same_in_yaml_1_2_and_1_1(data):
    text = to_yaml(data)
    assert same(parse_text(text, "out.yaml").data, data), text
    assert same(yaml.safe_load(text), data), text


def test_kubernetes_looking_strings_stay_plain():
    text = to_yaml({"image": "registry.example.com/vision/train:2.1", "path": "/dev/shm", "gpu": "nvidia.com/gpu"})
    assert text == "image: registry.example.com/vision/train:2.1\npath: /dev/shm\ngpu: nvidia.com/gpu\n"


def test_strings_yaml_1_1_would_misread_are_quoted():
    assert to_yaml({"a": "no", "b": "0755", "c": "12:30"}) == 'a: "no"\nb: "0755"\nc: "12:30"\n'
