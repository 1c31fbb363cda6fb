"""Properties of the merge engine: layering equals applying one by one (as kubectl does it); idempotence.

Layering is what kfdefaults does with profiles: fragments are applied in order onto an empty pod template.
The first property checks that folding N generated fragments with the engine equals kubectl applying them
one after another (one kubectl process per step, the object carried from one to the next). The second checks
that a patch without directives, applied twice, changes nothing the second time.
"""

from __future__ import annotations

from kfdefaults.errors import SchemaLookupError
import functools
from typing import Any

import pytest
from budgets import examples
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from smp_oracle import canonical, kubectl_apply
from smp_strategies import originals, patches

from kfdefaults import MergeError, strategic_merge_patch
from kfdefaults.smp.schema import schema_type

_SETTINGS = dict(suppress_health_check=list(HealthCheck))  # seed, database, deadline: the Hypothesis profile's


def without_directives(value: Any) -> Any:
    """``value`` with every directive removed: ``$``-keys, and list items that carry ``$patch``."""
    if isinstance(value, dict):
        return {k: without_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [without_directives(v) for v in value if not (isinstance(v, dict) and "$patch" in v)]
    return value


def engine_fold(original: dict, layers: list[dict]) -> tuple[bool, Any]:
    try:
        return True, functools.reduce(lambda acc, p: strategic_merge_patch(acc, p), layers, original)
    except MergeError as e:
        return False, str(e)


def kubectl_fold(original: dict, layers: list[dict]) -> tuple[bool, Any]:
    [outcome] = kubectl_fold_each([original], layers)
    return outcome


def kubectl_fold_each(originals: list[dict], layers: list[dict]) -> list[tuple[bool, Any]]:
    """kubectl applying ``layers`` one after another to each of ``originals``, each object carried from one step
    to the next; one kubectl process per step serves every original (the step's patch is the same for all)."""
    current: list[tuple[bool, Any]] = [(True, original) for original in originals]
    for layer in layers:
        alive = [i for i, (ok, _) in enumerate(current) if ok]
        if not alive:
            break
        for i, outcome in zip(alive, kubectl_apply([(current[i][1], layer) for i in alive])):
            current[i] = (True, outcome.result) if outcome.ok else (False, outcome.error)
    return current


@pytest.mark.slow
@settings(max_examples=examples(13), **_SETTINGS)
@given(starts=st.lists(originals(), min_size=2, max_size=3), layers=st.lists(patches(), min_size=2, max_size=4))
def test_layering_n_fragments_equals_kubectl_applying_them_one_by_one(kubectl: str, starts: list[dict],
                                                                      layers: list[dict]) -> None:
    """The same 2 to 4 layers onto 2 or 3 originals (about 30 folds over the examples)."""
    for original, (theirs_ok, theirs) in zip(starts, kubectl_fold_each(starts, layers)):
        ours_ok, ours = engine_fold(original, layers)
        assert ours_ok == theirs_ok, (original, ours, theirs)
        if ours_ok:
            assert canonical(ours) == canonical(theirs), original


@pytest.mark.slow
@settings(max_examples=examples(25), **_SETTINGS)
@given(layers=st.lists(patches().map(without_directives), min_size=2, max_size=5))
def test_directive_free_layers_from_empty_equal_kubectl(kubectl: str, layers: list[dict]) -> None:
    """The way profiles are merged: from an empty pod template, fragment after fragment."""
    ours_ok, ours = engine_fold({}, layers)
    theirs_ok, theirs = kubectl_fold({}, layers)
    assert ours_ok == theirs_ok, (ours, theirs)
    if ours_ok:
        assert canonical(ours) == canonical(theirs)


@pytest.mark.slow
@settings(max_examples=examples(300), **_SETTINGS)
@given(original=originals(), patch=patches().map(without_directives))
def test_a_patch_without_directives_applied_twice_changes_nothing_the_second_time(original: dict, patch: dict) -> None:
    """Idempotence, where strategic merge patch has it; where it does not, exactly as kubectl.

    Two things make a directive-free patch change a document a second time, in kubectl as in the engine:
    items with one merge key (each application merges the second into the first), and ``null`` inside a
    list item the patch adds (kept the first time, a deletion the second). Those cases must match kubectl.
    """
    schema = schema_type("PodTemplateSpec")
    assume(not has_list_at_object_field(patch, schema))  # kubectl's answer depends on Go pointers there
    try:
        once = strategic_merge_patch(original, patch)
    except MergeError:
        # not an example of this property (a patch refused at once is never applied twice); that the engine
        # refuses exactly what kubectl refuses is the layering tests' to check, where every refusal is asked of it
        assume(False)
    try:
        twice = strategic_merge_patch(once, patch)
    except MergeError:
        # A malformed patch can be taken once and refused the second time: a list item without its merge key
        # is copied into a list the original lacks, then cannot be matched. kubectl does the same.
        [outcome] = kubectl_apply([(once, patch)])
        assert not outcome.ok
        return
    if canonical(twice) != canonical(once):
        assert has_duplicate_merge_keys(patch, schema) or has_null_in_list_item(patch)
        [outcome] = kubectl_apply([(once, patch)])
        assert outcome.ok and canonical(outcome.result) == canonical(twice)


def _walk(value: Any, schema: Any, visit) -> bool:
    """Call ``visit(key, item, schema)`` on every field of ``value`` the schema knows; True if one returns True."""
    if not isinstance(value, dict) or schema is None:
        return False
    for key, item in value.items():
        try:
            if visit(key, item, schema):
                return True
            if isinstance(item, list):
                elem, _ = schema.lookup_slice(key)
                if any(_walk(i, elem, visit) for i in item):
                    return True
            elif isinstance(item, dict) and _walk(item, schema.lookup_struct(key)[0], visit):
                return True
        except SchemaLookupError:
            continue
    return False


def has_duplicate_merge_keys(value: Any, schema: Any) -> bool:
    """Whether a list with a patch merge key, anywhere in ``value``, has two items with one key value."""

    def visit(key: str, item: Any, parent: Any) -> bool:
        if not isinstance(item, list):
            return False
        _, meta = parent.lookup_slice(key)
        keys = [canonical(i.get(meta.merge_key)) for i in item if isinstance(i, dict) and meta.merge_key in i]
        return bool(meta.merge_key) and len(keys) != len(set(keys))

    return _walk(value, schema, visit)


def has_list_at_object_field(value: Any, schema: Any) -> bool:
    """Whether ``value`` puts a list where the schema has an object or a scalar."""

    def visit(key: str, item: Any, parent: Any) -> bool:
        if not isinstance(item, list):
            return False
        field_type, _ = parent.lookup_struct(key)
        return field_type.kind != "slice"

    return _walk(value, schema, visit)


def has_null_in_list_item(value: Any, inside_item: bool = False) -> bool:
    """Whether a ``null`` stands anywhere inside a list item."""
    if isinstance(value, dict):
        return any((v is None and inside_item) or has_null_in_list_item(v, inside_item) for v in value.values())
    if isinstance(value, list):
        return any(has_null_in_list_item(v, True) for v in value)
    return False


def test_values_that_are_not_json_data_are_rejected_with_their_path() -> None:
    cases = [
        ({}, {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": float("nan")}]}]}},
         "spec.containers[0].ports[0].containerPort", "nan is not a JSON number"),
        ({}, {"metadata": {"labels": {1: "x"}}}, "metadata.labels", "object keys must be strings, not int 1"),
        ({"spec": {"volumes": [{"name": "v", "x": {2: 3}}]}}, {}, "spec.volumes[0].x", "keys must be strings"),
        ({}, {"spec": {"priority": 10**400}}, "spec.priority", "beyond the range of a JSON number"),
        ({}, {"spec": {"nodeSelector": {"a": object()}}}, "spec.nodeSelector.a", "not JSON data: object"),
    ]
    for original, patch, path, words in cases:
        try:
            strategic_merge_patch(original, patch)
        except MergeError as e:
            assert e.path == path and words in str(e), (str(e), path)
        else:
            raise AssertionError(f"{patch} was accepted")


@pytest.mark.parametrize(("directive", "shown"), [("remove", '"remove"'), (["x"], '["x"]'), ({"a": 1}, '{"a": 1}')])
def test_a_bad_directive_is_shown_as_written(directive, shown):
    with pytest.raises(MergeError) as excinfo:
        strategic_merge_patch({}, {"$patch": directive})
    assert f"unknown patch type {shown} in a map" in str(excinfo.value)
