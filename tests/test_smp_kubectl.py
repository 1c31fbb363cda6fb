"""Differential test: :func:`kfdefaults.strategic_merge_patch` against ``kubectl patch --local``.

Each Hypothesis example is one patch and 8 to 10 originals (one kubectl process applies the patch to all
of them); every case must fail on both sides or succeed on both with the same document. A list of
hand-written edge cases goes through the same comparison. Needs kubectl (v1.32) on ``PATH`` or in
``$KUBECTL``; fails without it, like the rest of the suite.

``scripts/smp_conformance.py`` runs the same comparison over thousands of seeded cases.
"""

from __future__ import annotations

import json

import pytest
from budgets import examples
from hypothesis import HealthCheck, Phase, given, settings
from smp_oracle import find_divergences, kubectl_apply, shrink
from smp_strategies import smp_examples

from kfdefaults import MergeError, strategic_merge_patch

#: Settings shared by the tests (reproducible, no example database, no per-example deadline as kubectl takes
#: 0.1 s to start: those come from the Hypothesis profile, see ``budgets.py``). An example is drawn as one block of bytes (see ``smp_strategies.BytesSource``),
#: which Hypothesis flags as a large base example. No shrink phase: each step would start kubectl, and
#: Hypothesis spent its five minutes on a failing example without making it much smaller; ``_check``
#: shrinks the failing case itself instead, in seconds.
_SETTINGS = dict(
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.large_base_example, HealthCheck.too_slow],
)

#: Cases a failure message shows in full.
_SHOWN = 3


def _check(patch: dict, originals: list[dict], kind: str, *, shrink_it: bool = True) -> None:
    """Fail, showing a few cases and the first one shrunk, if any case differs from kubectl.

    ``shrink_it=False`` for cases of hundreds of items, where shrinking would start kubectl once per item.
    """
    cases = [(original, patch) for original in originals]
    _, divergences = find_divergences(cases, kind)
    if divergences:
        shown = "\n".join(json.dumps(d.to_json(), sort_keys=True) for d in divergences[:_SHOWN])
        smallest = json.dumps(shrink(divergences[0], kind).to_json(), sort_keys=True) if shrink_it else "(not shrunk)"
        pytest.fail(
            f"{len(divergences)} of {len(cases)} {kind} cases differ from kubectl, e.g.:\n{shown}\n"
            f"the first, shrunk:\n{smallest}"
        )


@pytest.mark.slow
@settings(max_examples=examples(60), **_SETTINGS)
@given(smp_examples("PodTemplateSpec"))
def test_pod_template_spec_matches_kubectl(kubectl: str, example: tuple[dict, list[dict]]) -> None:
    """About 540 PodTemplateSpec cases (60 patches, 8 to 10 originals each)."""
    patch, originals = example
    _check(patch, originals, "PodTemplateSpec")


@pytest.mark.slow
@settings(max_examples=examples(15), **_SETTINGS)
@given(smp_examples("PodSpec"))
def test_pod_spec_matches_kubectl(kubectl: str, example: tuple[dict, list[dict]]) -> None:
    """About 135 PodSpec cases: the patch's top level is a PodSpec, as in ``kind="PodSpec"``."""
    patch, originals = example
    _check(patch, originals, "PodSpec")


@pytest.mark.slow
@settings(max_examples=examples(15), **_SETTINGS)
@given(smp_examples("Container"))
def test_container_matches_kubectl(kubectl: str, example: tuple[dict, list[dict]]) -> None:
    """About 135 Container cases, each patched by kubectl as the only item of ``spec.containers``."""
    patch, originals = example
    _check(patch, originals, "Container")


def _containers(*containers: dict) -> dict:
    return {"spec": {"containers": list(containers)}}


#: Hand-written cases at the edges the generators reach seldom: ``(id, original, patch)``.
EDGE_CASES = [
    # Go compares merge keys and list items with their JSON types: 80 (int64) is not 80.0 (float64). The
    # patch keeps the type its JSON text has; the original does not, since kubectl decodes the object and
    # encodes it again before patching, which prints 80.0 as 80: an original's 80.0 is int64.
    ("port-int-vs-float", _containers({"name": "a", "ports": [{"containerPort": 80}]}),
     _containers({"name": "a", "ports": [{"containerPort": 80.0}]})),
    ("port-float-vs-int", _containers({"name": "a", "ports": [{"containerPort": 80.0}]}),
     _containers({"name": "a", "ports": [{"containerPort": 80, "name": "x"}]})),
    ("port-float-vs-float", _containers({"name": "a", "ports": [{"containerPort": 80.0}]}),
     _containers({"name": "a", "ports": [{"containerPort": 80.0, "name": "x"}]})),
    ("finalizers-float-vs-int", {"metadata": {"finalizers": [1.0, 2]}}, {"metadata": {"finalizers": [3]}}),
    ("ports-int-and-float-in-patch", _containers({"name": "a", "ports": []}),
     _containers({"name": "a", "ports": [{"containerPort": 80}, {"containerPort": 80.0}]})),
    ("port-int-vs-bool", _containers({"name": "a", "ports": [{"containerPort": 1}]}),
     _containers({"name": "a", "ports": [{"containerPort": True, "name": "x"}]})),
    ("finalizers-int-vs-float", {"metadata": {"finalizers": [1, 2]}}, {"metadata": {"finalizers": [2.0, 3]}}),
    ("finalizers-bool-vs-int", {"metadata": {"finalizers": [True]}}, {"metadata": {"finalizers": [1]}}),
    # Numbers beyond int64, and integral floats beyond 2**53: printed as Go's encoding/json writes a float64.
    ("int-beyond-int64", {"spec": {"priority": 1}}, {"spec": {"priority": 2**64}}),
    ("int-below-int64", {"spec": {"priority": 1}}, {"spec": {"priority": -(2**63) - 1}}),
    ("int64-exact", {"spec": {"priority": 1}}, {"spec": {"priority": 2**62 + 1}}),
    ("float-beyond-2-53-in-original", {"spec": {"priority": float(2**60)}}, {"spec": {"hostname": "h"}}),
    ("float-beyond-2-53-in-patch", {"spec": {"priority": 1}}, {"spec": {"priority": float(2**60)}}),
    ("float-1e20-and-1e21", {"metadata": {"labels": {"a": "b"}}},
     {"spec": {"activeDeadlineSeconds": 1.5e20, "terminationGracePeriodSeconds": 1e21}}),
    # A list where the schema has a struct.
    # Merge keys that are null or missing.
    ("null-merge-key", _containers({"name": None, "image": "x"}), _containers({"name": None, "image": "y"})),
    ("null-merge-key-vs-missing", _containers({"image": "x"}), _containers({"name": None, "image": "y"})),
    ("set-element-order-without-merge-key", _containers({"name": "a"}),
     {"spec": {"$setElementOrder/containers": [{"image": "x"}], "containers": [{"name": "a"}]}}),
    # $setElementOrder naming an item twice.
    ("set-element-order-twice", _containers({"name": "a"}, {"name": "b"}),
     {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "b"}, {"name": "a"}]}}),
    ("set-element-order-primitive-twice", {"metadata": {"finalizers": ["a", "b"]}},
     {"metadata": {"$setElementOrder/finalizers": ["b", "b", "a"]}}),
    ("set-element-order-on-atomic-list", _containers({"name": "a", "args": ["x"]}),
     _containers({"name": "a", "$setElementOrder/args": ["x"]})),
    ("set-element-order-new-list", {"metadata": {}},
     {"metadata": {"$setElementOrder/finalizers": ["a"], "finalizers": ["a"]}}),
    # Directives in maps that the original lacks or holds as null.
    ("replace-new-map-with-null", {"spec": {}}, {"spec": {"nodeSelector": {"$patch": "replace", "a": None}}}),
    ("replace-map-with-null", {"spec": {"nodeSelector": {"x": "1"}}},
     {"spec": {"nodeSelector": {"$patch": "replace", "a": None}}}),
    ("delete-in-new-container", {"spec": {}},
     {"spec": {"containers": [{"name": "a", "resources": {"limits": {"$patch": "delete"}}}]}}),
    ("delete-item-of-new-list", {"spec": {}},
     {"spec": {"containers": [{"name": "a", "env": [{"name": "E", "$patch": "delete"}]}]}}),
    ("delete-null-map", {"metadata": {"labels": None}}, {"metadata": {"labels": {"$patch": "delete"}}}),
    ("null-in-new-map", {"metadata": {"labels": None}}, {"metadata": {"labels": {"a": None}}}),
    ("retain-keys-on-string-map", {"metadata": {"labels": {"a": "1"}}},
     {"metadata": {"labels": {"$retainKeys": ["b"], "b": "2"}}}),
    # $retainKeys on volumes.
    ("retain-keys-new-volume", {"spec": {}},
     {"spec": {"volumes": [{"name": "v", "$retainKeys": ["emptyDir"], "emptyDir": {}}]}}),
    ("retain-keys-switch-source", {"spec": {"volumes": [{"name": "v", "hostPath": {"path": "/x"}}]}},
     {"spec": {"volumes": [{"name": "v", "$retainKeys": ["emptyDir", "name"], "emptyDir": {}}]}}),
    ("retain-keys-empty", {"spec": {"volumes": [{"name": "v", "hostPath": {"path": "/x"}}]}},
     {"spec": {"volumes": [{"name": "v", "$retainKeys": [], "emptyDir": None}]}}),
    # Duplicate merge keys and list directives.
    ("delete-duplicates", {"spec": {"containers": [{"name": "a"}, {"name": "a", "image": "2"}]}},
     _containers({"name": "a", "$patch": "delete"})),
    ("merge-into-duplicates", {"spec": {"containers": [{"name": "a"}, {"name": "a", "image": "2"}]}},
     _containers({"name": "a", "image": "3"})),
    ("duplicates-in-patch", _containers({"name": "a"}),
     _containers({"name": "a", "image": "3"}, {"name": "a", "image": "4"})),
    ("replace-item-with-key", _containers({"name": "a"}), _containers({"name": "a", "$patch": "replace"})),
    ("replace-twice", _containers({"name": "a"}), _containers({"$patch": "replace"}, {"$patch": "replace"})),
    ("delete-without-key", _containers({"name": "a"}), _containers({"$patch": "delete"})),
    ("delete-in-atomic-list", {"spec": {"tolerations": [{"key": "a"}]}},
     {"spec": {"tolerations": [{"$patch": "delete", "key": "a"}]}}),
    ("replace-in-atomic-list", {"spec": {"tolerations": [{"key": "a"}]}},
     {"spec": {"tolerations": [{"$patch": "replace"}]}}),
    ("replace-in-primitive-list", _containers({"name": "a", "args": ["x"]}),
     _containers({"name": "a", "args": [{"$patch": "replace"}]})),
    # Primitive lists with duplicates.
    ("merge-finalizers-with-duplicates", {"metadata": {"finalizers": ["a", "a", "b"]}},
     {"metadata": {"finalizers": ["a"]}}),
    ("delete-from-finalizers-with-duplicates", {"metadata": {"finalizers": ["a", "a", "b"]}},
     {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
    ("delete-from-null-list", {"metadata": {"finalizers": None}},
     {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
    ("order-null-list", {"metadata": {"finalizers": None}}, {"metadata": {"$setElementOrder/finalizers": ["a"]}}),
    ("hostnames-atomic", {"spec": {"hostAliases": [{"ip": "1", "hostnames": ["a"]}]}},
     {"spec": {"hostAliases": [{"ip": "1", "hostnames": ["b"]}]}}),
    # Nulls where lists or items are expected, and directives at the top.
    ("null-spec", {"spec": None}, _containers({"name": "a"})),
    ("null-list", {"spec": {"containers": None}}, _containers({"name": "a"})),
    ("null-item-in-original", {"spec": {"containers": [None]}}, _containers({"name": "a"})),
    ("null-item-in-patch", {"spec": {"containers": []}}, {"spec": {"containers": [None]}}),
    ("null-value-in-new-item", _containers({"name": "a", "env": None}),
     _containers({"name": "a", "env": [{"name": "x", "value": None}]})),
    ("delete-at-top", {}, {"$patch": "delete", "spec": {"a": 1}}),
    ("replace-spec-and-null-metadata", {}, {"metadata": None, "spec": {"$patch": "replace"}}),
    # What apimachinery's result owes to the Go runtime (src/kfdefaults/smp/goruntime.py says which piece each
    # of these needs). Slices share their backing array: deleting "cache" shifts "data" left inside it, and
    # "shm" is appended into the freed slot, where the $setElementOrder merge still reads the old slice.
    ("delete-and-add-with-element-order", {"spec": {"volumes": [{"name": "data"}, {"name": "cache"}]}},
     {"spec": {"$setElementOrder/volumes": [{"name": "shm"}],
               "volumes": [{"name": "shm"}, {"name": "cache", "$patch": "delete"}]}}),
    # Three decoded items have room for four: the patch's "c" is appended in place, and removing the duplicate
    # "a" writes "c" into the original list, which then orders the result: a, c, b (not c, a, b).
    ("merge-into-finalizers-with-duplicates-and-room", {"metadata": {"finalizers": ["a", "a", "b"]}},
     {"metadata": {"finalizers": ["c"]}}),
    # An empty $setElementOrder list leaves "c" without a position: sort.SliceStable's own order (c, a, b).
    ("empty-element-order", _containers({"name": "a"}, {"name": "b"}),
     {"spec": {"$setElementOrder/containers": [], "containers": [{"name": "a"}, {"name": "c"}]}}),
    # Go cannot compare two maps: kubectl crashes (comparing uncomparable type, hash of unhashable type).
    ("object-merge-key", _containers({"name": "a"}), _containers({"name": {"x": 1}, "image": "y"})),
    ("element-order-of-objects-for-primitive-list", {"metadata": {"finalizers": ["a"]}},
     {"metadata": {"$setElementOrder/finalizers": [{"x": 1}]}}),
    # The original's 1e19 is printed as 10000000000000000000, beyond int64, so read back as a float64 equal
    # to the patch's; numbers beyond float64 are not JSON numbers kubectl can read.
    ("float-beyond-int64-in-both", {"metadata": {"finalizers": [1e19]}}, {"metadata": {"finalizers": [1e19]}}),
    ("int-beyond-float64", {"spec": {"priority": 1}}, {"spec": {"priority": 2**1100}}),
    ("int-beyond-float64-in-original", {"spec": {"priority": 2**1100}}, {"spec": {"hostname": "h"}}),
]


@pytest.mark.parametrize(("original", "patch"), [c[1:] for c in EDGE_CASES], ids=[c[0] for c in EDGE_CASES])
def test_edge_case_matches_kubectl(kubectl: str, original: dict, patch: dict) -> None:
    """One hand-written PodTemplateSpec case."""
    _check(patch, [original], "PodTemplateSpec")


#: The capacity Go's JSON decoder gives an array of n items (appended one by one: runtime.growslice doubling,
#: then growing by a quarter from 256, rounded up to the allocator's size classes, then to 8 KiB pages).
_DECODED_CAPACITY = {3: 4, 33: 71, 400: 591, 2100: 2560}


def _long_cases() -> list[tuple[str, dict, dict]]:
    """Cases whose result depends on Go's slice capacities and sort at every size where those change rule.

    A finalizers list with a duplicate, merged with k new values: when they fit the decoded capacity they are
    appended in place and the removal of the duplicate shows in the order, one more and they do not. And
    lists longer than 20 items without positions, where sort.SliceStable merges sorted blocks of 20.
    """
    cases = []
    for n, cap in _DECODED_CAPACITY.items():
        original = {"metadata": {"finalizers": ["d", "d"] + [f"f{i}" for i in range(2, n)]}}
        for k, fit in ((cap - n, "fits"), (cap - n + 1, "overflows")):
            cases.append((f"finalizers-{n}-plus-{k}-{fit}", original,
                          {"metadata": {"finalizers": [f"p{i}" for i in range(k)]}}))
    for n, patch_list in ((19, ["f13", "n1", "f6", "f17", "n2", "n0"]), (44, ["f41", "n0", "f30"])):
        cases.append((f"empty-element-order-{n}-items", {"metadata": {"finalizers": [f"f{i}" for i in range(n)]}},
                      {"metadata": {"$setElementOrder/finalizers": [], "finalizers": patch_list}}))
    return cases


@pytest.mark.slow
@pytest.mark.parametrize(("original", "patch"), [c[1:] for c in _long_cases()], ids=[c[0] for c in _long_cases()])
def test_long_list_matches_kubectl(kubectl: str, original: dict, patch: dict) -> None:
    """One case at a size where Go's slice capacity or sort changes rule."""
    _check(patch, [original], "PodTemplateSpec", shrink_it=False)


# Where kubectl's answer depends on whether the Go field is a pointer, which the schema does not say: kubectl
# rejects a list given on both sides of a non-pointer struct or scalar field (metadata, spec, resources, image)
# and replaces the value at a pointer field (affinity, securityContext). The engine rejects in both cases
# (docs/merge-semantics.md): it agrees with kubectl on the first kind and is stricter on the second, which
# these cases pin. The validator rejects such fragments before they are merged.
NON_POINTER_CASES = [
    ("list-for-struct", {"spec": []}, {"spec": []}),
    ("set-element-order-of-struct", {}, {"$setElementOrder/metadata": []}),
    ("list-for-non-pointer-resources", _containers({"name": "a", "resources": [1]}), _containers({"name": "a", "resources": [2]})),
    ("list-for-non-pointer-scalar", _containers({"name": "a", "image": [1]}), _containers({"name": "a", "image": [2]})),
]


@pytest.mark.parametrize(("original", "patch"), [c[1:] for c in NON_POINTER_CASES], ids=[c[0] for c in NON_POINTER_CASES])
def test_lists_at_non_pointer_fields_are_rejected_as_kubectl_does(kubectl: str, original: dict, patch: dict) -> None:
    _check(patch, [original], "PodTemplateSpec")


def test_lists_at_pointer_struct_fields_are_the_documented_difference(kubectl: str) -> None:
    original, patch = {"spec": {"affinity": [1]}}, {"spec": {"affinity": [2]}}
    [theirs] = kubectl_apply([(original, patch)])
    assert theirs.ok and theirs.result == {"spec": {"affinity": [2]}}
    with pytest.raises(MergeError, match="spec.affinity: expected slice or array type"):
        strategic_merge_patch(original, patch)


def test_validation_rejects_lists_where_the_schema_has_objects(tmp_path) -> None:
    from kfdefaults import ProfileError
    from kfdefaults.pipeline import Pipeline

    team = tmp_path / "team"
    team.mkdir()
    (team / "p.yaml").write_text("pod_template:\n  spec:\n    containers:\n      - name: primary\n        resources: []\n")
    with pytest.raises(ProfileError) as excinfo:
        Pipeline.discover(team=[str(team)]).definition("p", "team")
    assert ":5:" in str(excinfo.value) and "resources" in str(excinfo.value)
