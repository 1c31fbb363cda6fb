"""kube-scheduler's filters (kfdefaults.k8s.scheduling), node pools (kfdefaults.k8s.nodes) and node lists
(kfdefaults.validate.nodes).

Nodes and pods are built with the kubernetes client's models and serialized the way kubectl prints them
(``ApiClient().sanitize_for_serialization``), so that a misspelt field fails here instead of being ignored.
The tables mirror kube-scheduler's own Go tests, case by case, named as there:

* taint_toleration_test.go ``TestTaintTolerationFilter`` and k8s.io/api core/v1 toleration_test.go
  ``TestTolerationToleratesTaint``;
* node_affinity_test.go ``TestNodeAffinity`` (Filter; the scheduler-enforced ``addedAffinity`` cases left out);
* fit_test.go ``TestEnoughRequests``, ``TestNotEnoughRequests``, ``TestStorageRequests``, and component-helpers
  resource/helpers_test.go ``TestPodResourceRequests`` and ``TestPodLevelResourceRequests``.

No Go oracle runs here: Debian 12 packages none of k8s.io/api, k8s.io/apimachinery, k8s.io/component-helpers
or the scheduler (see docs/fit.md).
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from budgets import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.client import (
    ApiClient,
    V1Affinity,
    V1Container,
    V1NodeAffinity,
    V1NodeSelector,
    V1NodeSelectorRequirement,
    V1NodeSelectorTerm,
    V1ObjectMeta,
    V1PodSpec,
    V1ResourceRequirements,
    V1Toleration,
)
from kubernetes.client import V1Node as Node
from node_lists import node, node_list

from kfdefaults.errors import ProfileError
from kfdefaults.k8s.nodes import node_pools
from kfdefaults.k8s.scheduling import (
    FILTER_ORDER,
    filter_node,
    node_affinity,
    node_resources_fit,
    node_unschedulable,
    pod_requests,
    taint_toleration,
)
from kfdefaults.k8s.tolerations import Tolerations, tolerates
from kfdefaults.validate.nodes import read_nodes

plain = ApiClient().sanitize_for_serialization


def container(requests=None, limits=None, name="c", restart_policy=None) -> V1Container:
    return V1Container(name=name, resources=V1ResourceRequirements(requests=requests, limits=limits),
                       restart_policy=restart_policy)


def pod(*containers: V1Container, init=(), **fields) -> dict:
    """A PodSpec as a manifest writes it."""
    return plain(V1PodSpec(containers=list(containers) or [container()], init_containers=list(init) or None, **fields))


def required(*terms: V1NodeSelectorTerm) -> V1Affinity:
    return V1Affinity(node_affinity=V1NodeAffinity(
        required_during_scheduling_ignored_during_execution=V1NodeSelector(node_selector_terms=list(terms))))


def term(*expressions: tuple, fields=()) -> V1NodeSelectorTerm:
    """A node selector term: expressions ``(key, operator[, values])``, fields ``(key, operator, values)``."""
    return V1NodeSelectorTerm(
        match_expressions=[V1NodeSelectorRequirement(key=e[0], operator=e[1], values=list(e[2]) if len(e) > 2 else None)
                           for e in expressions] or None,
        match_fields=[V1NodeSelectorRequirement(key=k, operator=o, values=list(v)) for k, o, v in fields] or None)


# --- TaintToleration ----------------------------------------------------------------------------------------

# taint_toleration_test.go TestTaintTolerationFilter: (name, tolerations, taints, the reason or None)
TAINT_FILTER_CASES = [
    ("A pod having no tolerations can't be scheduled onto a node with nonempty taints",
     [], [dict(key="dedicated", value="user1", effect="NoSchedule")], "node(s) had untolerated taint {dedicated: user1}"),
    ("A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
     [dict(key="dedicated", value="user1", effect="NoSchedule")], [dict(key="dedicated", value="user1", effect="NoSchedule")],
     None),
    ("A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
     [dict(key="dedicated", operator="Equal", value="user2", effect="NoSchedule")],
     [dict(key="dedicated", value="user1", effect="NoSchedule")], "node(s) had untolerated taint {dedicated: user1}"),
    ("A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints on the node",
     [dict(key="foo", operator="Exists", effect="NoSchedule")], [dict(key="foo", value="bar", effect="NoSchedule")], None),
    ("A pod has multiple tolerations, node has multiple taints, all the taints are tolerated",
     [dict(key="dedicated", operator="Equal", value="user2", effect="NoSchedule"),
      dict(key="foo", operator="Exists", effect="NoSchedule")],
     [dict(key="dedicated", value="user2", effect="NoSchedule"), dict(key="foo", value="bar", effect="NoSchedule")], None),
    ("A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect doesn't match",
     [dict(key="foo", operator="Equal", value="bar", effect="PreferNoSchedule")],
     [dict(key="foo", value="bar", effect="NoSchedule")], "node(s) had untolerated taint {foo: bar}"),
    ("The pod has a toleration that keys and values match the taint on the node, the effect of toleration is empty",
     [dict(key="foo", operator="Equal", value="bar")], [dict(key="foo", value="bar", effect="NoSchedule")], None),
    ("The pod has a toleration that key and value don't match the taint, but the taint is PreferNoSchedule",
     [dict(key="dedicated", operator="Equal", value="user2", effect="NoSchedule")],
     [dict(key="dedicated", value="user1", effect="PreferNoSchedule")], None),
    ("The pod has no toleration, but the effect of taint on node is PreferNoSchedule",
     [], [dict(key="dedicated", value="user1", effect="PreferNoSchedule")], None),
]


@pytest.mark.parametrize("name, tolerations, taints, reason", TAINT_FILTER_CASES, ids=[c[0] for c in TAINT_FILTER_CASES])
def test_taint_toleration_filter_as_the_scheduler_tests_it(name, tolerations, taints, reason):
    spec = pod(tolerations=[V1Toleration(**t) for t in tolerations] or None)
    verdict = taint_toleration(spec, node(taints=taints))
    assert verdict.reasons == ((reason,) if reason else ())
    assert verdict.plugin == "TaintToleration" and verdict.source.endswith("taint_toleration.go Filter")


# k8s.io/api core/v1 toleration_test.go TestTolerationToleratesTaint: (toleration, taint, comparison gate, tolerated)
SLA = "node.kubernetes.io/sla"
TOLERATES_CASES = [
    (dict(key="foo", operator="Exists", effect="NoSchedule"), dict(key="foo", effect="NoSchedule"), False, True),
    (dict(key="foo", operator="Exists", effect="NoSchedule"), dict(key="foo", value="bar", effect="NoSchedule"), False, True),
    (dict(key="", operator="Exists", effect="NoSchedule"), dict(key="foo", value="bar", effect="NoSchedule"), False, True),
    (dict(key="foo", operator="Equal", value="bar", effect="NoSchedule"), dict(key="foo", value="bar", effect="NoSchedule"),
     False, True),
    (dict(key="foo", operator="Equal", value="value1", effect="NoSchedule"),
     dict(key="foo", value="value2", effect="NoSchedule"), False, False),
    (dict(key="foo", operator="Equal", value="bar", effect="NoSchedule"), dict(key="foo", value="bar", effect="NoExecute"),
     False, False),
    (dict(key=SLA, operator="Gt", value="950", effect="NoSchedule"), dict(key=SLA, value="800", effect="NoSchedule"), True, False),
    (dict(key=SLA, operator="Gt", value="750", effect="NoSchedule"), dict(key=SLA, value="950", effect="NoSchedule"), True, True),
    (dict(key=SLA, operator="Lt", value="800", effect="NoSchedule"), dict(key=SLA, value="950", effect="NoSchedule"), True, False),
    (dict(key=SLA, operator="Lt", value="950", effect="NoSchedule"), dict(key=SLA, value="800", effect="NoSchedule"), True, True),
    (dict(key=SLA, operator="Gt", value="950", effect="NoSchedule"), dict(key=SLA, value="950", effect="NoSchedule"), True, False),
    (dict(key=SLA, operator="Gt", value="950", effect="NoSchedule"), dict(key=SLA, value="high", effect="NoSchedule"), True, False),
    (dict(key="test-key", operator="Gt", value="-100", effect="NoSchedule"),
     dict(key="test-key", value="-200", effect="NoSchedule"), True, False),
    (dict(key="test-key", operator="Gt", value="9223372036854775806", effect="NoSchedule"),
     dict(key="test-key", value="100", effect="NoSchedule"), True, False),
    # TestCompareNumericValues: values outside the canonical form never compare
    (dict(key="k", operator="Gt", value="0100", effect="NoSchedule"), dict(key="k", value="200", effect="NoSchedule"), True, False),
    (dict(key="k", operator="Gt", value="+100", effect="NoSchedule"), dict(key="k", value="200", effect="NoSchedule"), True, False),
    # with the TaintTolerationComparisonOperators gate off (the default), Gt tolerates nothing
    (dict(key=SLA, operator="Gt", value="750", effect="NoSchedule"), dict(key=SLA, value="950", effect="NoSchedule"), False, False),
]


@pytest.mark.parametrize("toleration, taint, gate, expected", TOLERATES_CASES)
def test_tolerates_taint_as_k8s_api_tests_it(toleration, taint, gate, expected):
    assert tolerates(toleration, taint, comparison_operators=gate) is expected


@pytest.mark.slow
@pytest.mark.parametrize("gate", [False, True])
def test_the_indexed_tolerations_tolerate_exactly_what_each_toleration_tolerates(gate):
    """:class:`Tolerations` (indexed, so that thousands of tolerations against thousands of taints take no
    minutes) answers as :func:`tolerates` tried on each, for every combination of empty, equal, other and non-text
    keys, values, effects and operators."""
    import itertools

    keys, values, effects = ["", "k", "j", None, 5], ["", "v", "10", None, ["v"]], ["", "NoSchedule", "NoExecute", None, 1]
    operators = ["", "Equal", "Exists", "Gt", "Lt", "Bogus", None, ["Exists"]]
    taint_values = ["", "v", "20", 7]
    if gate:  # Gt and Lt compare text only (Kubernetes' types say so: tolerates() reads nothing else with them)
        values, taint_values = [v for v in values if isinstance(v, str) or v is None], taint_values[:-1]
    tolerations = [{"key": k, "operator": o, "value": v, "effect": e}
                   for k, o, v, e in itertools.product(keys, operators, values, effects)] + ["not a toleration", None]
    taints = [{"key": k, "value": v, "effect": e} for k, v, e in itertools.product(keys, taint_values, effects)]
    for toleration in tolerations:
        for taint in taints:
            one = Tolerations([toleration], gate).tolerate(taint)
            assert one is tolerates(toleration if isinstance(toleration, dict) else {}, taint,
                                    comparison_operators=gate), (toleration, taint)
    for taint in taints:
        assert Tolerations(tolerations[::7], gate).tolerate(taint) is any(
            tolerates(t if isinstance(t, dict) else {}, taint, comparison_operators=gate) for t in tolerations[::7])


def test_only_the_first_untolerated_taint_is_named_and_prefer_no_schedule_only_lowers_the_score():
    taints = [dict(key="soft", value="a", effect="PreferNoSchedule"), dict(key="hard", value="b", effect="NoExecute"),
              dict(key="other", effect="NoSchedule"), dict(key="soft2", effect="PreferNoSchedule")]
    verdict = taint_toleration(pod(), node(taints=taints))
    assert verdict.reasons == ("node(s) had untolerated taint {hard: b}",)
    assert verdict.preferences == ("soft=a:PreferNoSchedule", "soft2:PreferNoSchedule")
    tolerant = pod(tolerations=[V1Toleration(operator="Exists")])  # an empty key with Exists tolerates every taint
    assert taint_toleration(tolerant, node(taints=taints)) == taint_toleration(pod(), node())


def test_a_cordoned_node_takes_only_pods_that_tolerate_the_unschedulable_taint():
    cordoned = node(unschedulable=True)
    assert node_unschedulable(pod(), cordoned).reasons == ("node(s) were unschedulable",)
    tolerant = pod(tolerations=[V1Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule")])
    assert node_unschedulable(tolerant, cordoned).fits
    assert node_unschedulable(pod(), node()).fits


# --- NodeAffinity -------------------------------------------------------------------------------------------

AFFINITY = "node(s) didn't match Pod's node affinity/selector"
# node_affinity_test.go TestNodeAffinity: (name, nodeSelector, affinity, node labels, node name, fits)
AFFINITY_CASES = [
    ("missing labels", {"foo": "bar"}, None, None, "", False),
    ("same labels", {"foo": "bar"}, None, {"foo": "bar"}, "", True),
    ("node labels are superset", {"foo": "bar"}, None, {"foo": "bar", "baz": "blah"}, "", True),
    ("node labels are subset", {"foo": "bar", "baz": "blah"}, None, {"foo": "bar"}, "", False),
    ("Pod with matchExpressions using In operator that matches the existing node", None,
     required(term(("foo", "In", ["bar", "value2"]))), {"foo": "bar"}, "", True),
    ("Pod with matchExpressions using Gt operator that matches the existing node", None,
     required(term(("kernel-version", "Gt", ["0204"]))), {"kernel-version": "0206"}, "", True),
    ("Pod with matchExpressions using NotIn operator that matches the existing node", None,
     required(term(("mem-type", "NotIn", ["DDR", "DDR2"]))), {"mem-type": "DDR3"}, "", True),
    ("Pod with matchExpressions using Exists operator that matches the existing node", None,
     required(term(("GPU", "Exists"))), {"GPU": "NVIDIA-GRID-K1"}, "", True),
    ("Pod with affinity that don't match node's labels won't schedule onto the node", None,
     required(term(("foo", "In", ["value1", "value2"]))), {"foo": "bar"}, "", False),
    ("Pod with empty MatchExpressions is not a valid value will match no objects", None,
     required(V1NodeSelectorTerm(match_expressions=[])), {"foo": "bar"}, "", False),
    ("Pod with no Affinity will schedule onto a node", None, None, {"foo": "bar"}, "", True),
    ("Pod with Affinity but nil NodeSelector will schedule onto a node", None,
     V1Affinity(node_affinity=V1NodeAffinity()), {"foo": "bar"}, "", True),
    ("Pod with multiple matchExpressions ANDed that matches the existing node", None,
     required(term(("GPU", "Exists"), ("GPU", "NotIn", ["AMD", "INTER"]))), {"GPU": "NVIDIA-GRID-K1"}, "", True),
    ("Pod with multiple matchExpressions ANDed that doesn't match the existing node", None,
     required(term(("GPU", "Exists"), ("GPU", "In", ["AMD", "INTER"]))), {"GPU": "NVIDIA-GRID-K1"}, "", False),
    ("Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels", None,
     required(term(("foo", "In", ["bar", "value2"])), term(("diffkey", "In", ["wrong", "value2"]))), {"foo": "bar"}, "", True),
    ("Pod with an Affinity and a PodSpec.NodeSelector both are satisfied", {"foo": "bar"},
     required(term(("foo", "Exists"))), {"foo": "bar"}, "", True),
    ("Pod with an Affinity matches node's labels but the PodSpec.NodeSelector is not satisfied", {"foo": "bar"},
     required(term(("foo", "Exists"))), {"foo": "barrrrrr"}, "", False),
    ("Pod with an invalid value in Affinity term won't be scheduled onto the node", None,
     required(term(("foo", "NotIn", ["invalid value: ___@#$%^"]))), {"foo": "bar"}, "", False),
    ("Pod with matchFields using In operator that matches the existing node", None,
     required(term(fields=[("metadata.name", "In", ["node1"])])), None, "node1", True),
    ("Pod with matchFields using In operator that does not match the existing node", None,
     required(term(fields=[("metadata.name", "In", ["node1"])])), None, "node2", False),
    ("Pod with two terms: matchFields does not match, but matchExpressions matches", None,
     required(term(fields=[("metadata.name", "In", ["node1"]), ("metadata.name", "In", ["node2"])]),
              term(("foo", "In", ["bar"]))), {"foo": "bar"}, "node2", True),
    ("Pod with one term: matchFields does not match, but matchExpressions matches", None,
     required(term(("foo", "In", ["bar"]), fields=[("metadata.name", "In", ["node1"])])), {"foo": "bar"}, "node2", False),
    ("Pod with one term: both matchFields and matchExpressions match", None,
     required(term(("foo", "In", ["bar"]), fields=[("metadata.name", "In", ["node1"])])), {"foo": "bar"}, "node1", True),
    ("Pod with two terms: both matchFields and matchExpressions do not match", None,
     required(term(fields=[("metadata.name", "In", ["node1"])]), term(("foo", "In", ["not-match-to-bar"]))),
     {"foo": "bar"}, "node2", False),
    ("Pod with two terms of node.Name affinity", None,
     required(term(fields=[("metadata.name", "In", ["node1"])]), term(fields=[("metadata.name", "In", ["node2"])])),
     None, "node2", True),
    ("Pod with two conflicting mach field requirements", None,
     required(term(fields=[("metadata.name", "In", ["node1"]), ("metadata.name", "In", ["node2"])])),
     {"foo": "bar"}, "node2", False),
    # component-helpers nodeaffinity: an affinity whose terms list is empty matches no node
    ("required affinity without terms", None, required(), {"foo": "bar"}, "node1", False),
    # apimachinery labels: Gt/Lt read both sides as int64; a label that is not one never matches
    ("Lt on a label that is not an integer", None, required(term(("gen", "Lt", ["5"]))), {"gen": "v4"}, "", False),
    ("Lt below", None, required(term(("gen", "Lt", ["5"]))), {"gen": "-4"}, "", True),
    ("Gt with two values does not parse", None, required(term(("gen", "Gt", ["1", "2"]))), {"gen": "4"}, "", False),
    ("DoesNotExist", None, required(term(("gpu", "DoesNotExist"))), {"cpu": "x"}, "", True),
    ("NotIn matches a node without the label", None, required(term(("gpu", "NotIn", ["a"]))), {"cpu": "x"}, "", True),
    ("an invalid key does not parse", None, required(term(("bad key", "Exists"))), {"bad key": "x"}, "", False),
    ("a term that does not parse leaves the others", None,
     required(term(("bad key", "Exists")), term(("foo", "In", ["bar"]))), {"foo": "bar"}, "", True),
]


@pytest.mark.parametrize("name, selector, affinity, labels, node_name, expected", AFFINITY_CASES,
                         ids=[c[0] for c in AFFINITY_CASES])
def test_node_affinity_filter_as_the_scheduler_tests_it(name, selector, affinity, labels, node_name, expected):
    verdict = node_affinity(pod(node_selector=selector, affinity=affinity),
                            plain(Node(metadata=V1ObjectMeta(name=node_name or None, labels=labels))))
    assert verdict.reasons == (() if expected else (AFFINITY,))


# --- NodeResourcesFit ---------------------------------------------------------------------------------------

A, B = "example.com/aaa", "example.com/bbb"
K8S_A, K8S_B, HUGE = "kubernetes.io/something", "subdomain.kubernetes.io/something", "hugepages-2Mi"
TEST_NODE = dict(cpu="10m", memory="20", pods="32", **{A: "5", "ephemeral-storage": "20", HUGE: "5"})
"""fit_test.go makeAllocatableResources(10, 20, 32, 5, 20, 5)."""


def usage(cpu=0, memory=0, storage=0, **scalars) -> dict:
    """fit_test.go framework.Resource{MilliCPU, Memory, EphemeralStorage, ScalarResources} as a ResourceList."""
    return {"cpu": f"{cpu}m", "memory": str(memory), "ephemeral-storage": str(storage),
            **{name.replace("__", "/").replace("_", "-"): str(v) for name, v in scalars.items()}}


def R(**kwargs) -> V1Container:  # noqa: N802 - newResourcePod's one container
    return container(requests=usage(**kwargs))


# fit_test.go TestEnoughRequests: (name, containers, init containers, on the node, overhead, reasons)
ea, eb, ka, kb, hp = ({"example.com__aaa": 1}, {"example.com__bbb": 1}, {"kubernetes.io__something": 1},
                      {"subdomain.kubernetes.io__something": 1}, {"hugepages_2Mi": 1})


def s(one: dict, n: int) -> dict:
    return {k: v * n for k, v in one.items()}


FIT_CASES = [
    ("no resources requested always fits", [], [], usage(10, 20), None, []),
    ("too many resources fails", [R(cpu=1, memory=1)], [], usage(10, 20), None, ["Insufficient cpu", "Insufficient memory"]),
    ("too many resources fails due to init container cpu", [R(cpu=1, memory=1)], [R(cpu=3, memory=1)], usage(8, 19), None,
     ["Insufficient cpu"]),
    ("too many resources fails due to highest init container cpu", [R(cpu=1, memory=1)],
     [R(cpu=3, memory=1), R(cpu=2, memory=1)], usage(8, 19), None, ["Insufficient cpu"]),
    ("too many resources fails due to init container memory", [R(cpu=1, memory=1)], [R(cpu=1, memory=3)], usage(9, 19),
     None, ["Insufficient memory"]),
    ("too many resources fails due to highest init container memory", [R(cpu=1, memory=1)],
     [R(cpu=1, memory=3), R(cpu=1, memory=2)], usage(9, 19), None, ["Insufficient memory"]),
    ("init container fits because it's the max, not sum, of containers and init containers", [R(cpu=1, memory=1)],
     [R(cpu=1, memory=1)], usage(9, 19), None, []),
    ("multiple init containers fit because it's the max, not sum", [R(cpu=1, memory=1)],
     [R(cpu=1, memory=1), R(cpu=1, memory=1)], usage(9, 19), None, []),
    ("both resources fit", [R(cpu=1, memory=1)], [], usage(5, 5), None, []),
    ("one resource memory fits", [R(cpu=2, memory=1)], [], usage(9, 5), None, ["Insufficient cpu"]),
    ("one resource cpu fits", [R(cpu=1, memory=2)], [], usage(5, 19), None, ["Insufficient memory"]),
    ("equal edge case", [R(cpu=5, memory=1)], [], usage(5, 19), None, []),
    ("equal edge case for init container", [R(cpu=4, memory=1)], [R(cpu=5, memory=1)], usage(5, 19), None, []),
    ("extended resource fits", [R(**ea)], [], usage(), None, []),
    ("extended resource fits for init container", [R()], [R(**ea)], usage(), None, []),
    ("extended resource capacity enforced", [R(cpu=1, memory=1, **s(ea, 10))], [], usage(**s(ea, 0)), None,
     [f"Insufficient {A}"]),
    ("extended resource capacity enforced for init container", [R()], [R(cpu=1, memory=1, **s(ea, 10))],
     usage(**s(ea, 0)), None, [f"Insufficient {A}"]),
    ("extended resource allocatable enforced", [R(cpu=1, memory=1, **ea)], [], usage(**s(ea, 5)), None,
     [f"Insufficient {A}"]),
    ("extended resource allocatable enforced for multiple containers",
     [R(cpu=1, memory=1, **s(ea, 3)), R(cpu=1, memory=1, **s(ea, 3))], [], usage(**s(ea, 2)), None, [f"Insufficient {A}"]),
    ("extended resource allocatable admits multiple init containers", [R()],
     [R(cpu=1, memory=1, **s(ea, 3)), R(cpu=1, memory=1, **s(ea, 3))], usage(**s(ea, 2)), None, []),
    ("extended resource allocatable enforced for multiple init containers", [R()],
     [R(cpu=1, memory=1, **s(ea, 6)), R(cpu=1, memory=1, **s(ea, 3))], usage(**s(ea, 2)), None, [f"Insufficient {A}"]),
    ("extended resource allocatable enforced for unknown resource", [R(cpu=1, memory=1, **eb)], [], usage(), None,
     [f"Insufficient {B}"]),
    ("kubernetes.io resource capacity enforced", [R(cpu=1, memory=1, **s(ka, 10))], [], usage(), None,
     [f"Insufficient {K8S_A}"]),
    ("kubernetes.io resource capacity enforced for init container", [R()], [R(cpu=1, memory=1, **s(kb, 10))], usage(),
     None, [f"Insufficient {K8S_B}"]),
    ("hugepages resource capacity enforced", [R(cpu=1, memory=1, **s(hp, 10))], [], usage(**s(hp, 0)), None,
     [f"Insufficient {HUGE}"]),
    ("hugepages resource allocatable enforced for multiple containers",
     [R(cpu=1, memory=1, **s(hp, 3)), R(cpu=1, memory=1, **s(hp, 3))], [], usage(**s(hp, 2)), None, [f"Insufficient {HUGE}"]),
    ("resources + pod overhead fits", [R(cpu=1, memory=1)], [], usage(5, 5), {"cpu": "3m", "memory": "13"}, []),
    ("requests + overhead does not fit for memory", [R(cpu=1, memory=1)], [], usage(5, 5), {"cpu": "1m", "memory": "15"},
     ["Insufficient memory"]),
    ("skip checking extended resource request with quantity zero", [R(cpu=1, memory=1, **s(ea, 0))], [],
     usage(**s(ea, 6)), None, []),
    ("skip checking resource request with quantity zero", [R(**ea)], [], usage(20, 30, **ea), None, []),
    # TestStorageRequests
    ("empty storage requested, and pod fits", [R(cpu=1, memory=1)], [], usage(2, 10), None, []),
    ("storage ephemeral local storage request exceeds allocatable", [R(storage=25)], [], usage(2, 2), None,
     ["Insufficient ephemeral-storage"]),
    ("ephemeral local storage is sufficient", [R(storage=5)], [], usage(2, 2, 10), None, []),
    ("pod fits", [R(storage=10)], [], usage(2, 2), None, []),
]


@pytest.mark.parametrize("name, containers, init, used, overhead, reasons", FIT_CASES, ids=[c[0] for c in FIT_CASES])
def test_node_resources_fit_as_the_scheduler_tests_it(name, containers, init, used, overhead, reasons):
    spec = pod(*containers, init=init, overhead=overhead)
    verdict = node_resources_fit(spec, node(allocatable=TEST_NODE), {**used, "pods": 1})
    assert list(verdict.reasons) == reasons


@pytest.mark.parametrize("containers, init", [
    ([], []), ([R(cpu=1, memory=1)], []), ([R(cpu=5, memory=1)], []), ([R(cpu=5, memory=1)], [R(cpu=5, memory=1)])])
def test_too_many_pods_as_the_scheduler_tests_it(containers, init):
    """fit_test.go TestNotEnoughRequests: a node whose one allowed pod is taken takes no other, even an empty one."""
    verdict = node_resources_fit(pod(*containers, init=init), node(allocatable=dict(TEST_NODE, pods="1")),
                                 {**usage(5, 19), "pods": 1})
    assert verdict.reasons == ("Too many pods",)


# component-helpers resource/helpers_test.go TestPodResourceRequests and TestPodLevelResourceRequests
ALWAYS = "Always"
REQUEST_CASES = [
    ("nil options, larger init container", [container({"cpu": "1"})], [container({"cpu": "4"})], None, {"cpu": 4}),
    ("nil options, larger containers", [container({"cpu": "2"}), container({"cpu": "3"}, name="d")],
     [container({"cpu": "2"})], None, {"cpu": 5}),
    ("restartable init container", [container({"cpu": "1"})], [container({"cpu": "1"}, restart_policy=ALWAYS)], None,
     {"cpu": 2}),
    ("multiple restartable init containers", [container({"cpu": "1"})],
     [container({"cpu": "5"}, name="i1"), container({"cpu": "1"}, name="r1", restart_policy=ALWAYS),
      container({"cpu": "2"}, name="r2", restart_policy=ALWAYS), container({"cpu": "3"}, name="r3", restart_policy=ALWAYS)],
     None, {"cpu": 7}),
    ("multiple restartable and regular init containers", [container({"cpu": "1"})],
     [container({"cpu": "5"}, name="i1"), container({"cpu": "1"}, name="r1", restart_policy=ALWAYS),
      container({"cpu": "2"}, name="r2", restart_policy=ALWAYS), container({"cpu": "5"}, name="i2"),
      container({"cpu": "3"}, name="r3", restart_policy=ALWAYS)], None, {"cpu": 8}),
    ("restartable-init, init and regular", [container({"cpu": "100"})],
     [container({"cpu": "10"}, name="r1", restart_policy=ALWAYS), container({"cpu": "200"}, name="i1")], None, {"cpu": 210}),
    ("pod level memory resource", [container()], [], {"requests": {"memory": "2Mi"}}, {"memory": 2 << 20}),
    ("pod level memory and container level cpu resources", [container({"cpu": "2m"})], [],
     {"requests": {"memory": "2Mi"}}, {"memory": 2 << 20, "cpu": Fraction(2, 1000)}),
    ("pod level unsupported resources set at both pod-level and container-level", [container({"storage": "3Mi"})], [],
     {"requests": {"storage": "2Mi"}}, {"storage": 3 << 20}),
    ("both container-level and pod-level resources set", [container({"memory": "3Mi", "cpu": "2m"})], [],
     {"requests": {"memory": "6Mi", "cpu": "8m"}}, {"memory": 6 << 20, "cpu": Fraction(8, 1000)}),
    # pkg/apis/core/v1 defaults.go SetDefaults_Pod: a limit without a request requests the limit
    ("limits default the requests", [container(limits={"nvidia.com/gpu": "8", "cpu": "4"}, requests={"cpu": "2"})], [],
     None, {"nvidia.com/gpu": 8, "cpu": 2}),
    # defaultPodResources: pod-level limits without requests request the limit where no container requests it
    ("pod-level limits", [container({"cpu": "1"})], [], {"limits": {"cpu": "4", "memory": "1Gi"}},
     {"cpu": 1, "memory": 1 << 30}),
]


@pytest.mark.parametrize("name, containers, init, resources, expected", REQUEST_CASES, ids=[c[0] for c in REQUEST_CASES])
def test_pod_requests_as_component_helpers_tests_them(name, containers, init, resources, expected):
    resources = V1ResourceRequirements(**resources) if resources else None
    assert pod_requests(pod(*containers, init=init, resources=resources)) == expected


def test_quantities_round_up_as_the_scheduler_counts_them_and_capacity_stands_in_for_allocatable():
    """framework.Resource holds millicores and whole units, each rounded up (Quantity.MilliValue, Value);
    SetDefaults_NodeStatus copies capacity into a node status without allocatable."""
    spec = pod(container({"cpu": "0.0001", "memory": "0.5"}), container({"cpu": "0.0001"}, name="d"))
    assert node_resources_fit(spec, node(allocatable={"cpu": "1m", "memory": "1", "pods": "1"})).fits
    assert node_resources_fit(spec, node(capacity={"cpu": "1m", "memory": "1", "pods": "1"})).fits
    assert node_resources_fit(spec, node(allocatable={"cpu": "1m", "pods": "1"})).reasons == ("Insufficient memory",)
    assert node_resources_fit(pod(), node(allocatable={"cpu": "1"})).reasons == ("Too many pods",)


# --- Node lists and pools -----------------------------------------------------------------------------------

GPU_TAINT = dict(key="nvidia.com/gpu", value="present", effect="NoSchedule")
GPU = dict(cpu="95", memory="1300Gi", pods="110", **{"nvidia.com/gpu": "8", "ephemeral-storage": "3000Gi"})
CPU = dict(cpu="31850m", memory="120Gi", pods="110", **{"ephemeral-storage": "100Gi"})


def gpu_node(i: int, zone: str, **overrides) -> dict:
    labels = {"kubernetes.io/hostname": f"gpu-{i}", "topology.kubernetes.io/zone": zone,
              "cloud.google.com/gke-nodepool": "a100", "node.kubernetes.io/instance-type": "a2-ultragpu-8g",
              "nvidia.com/gpu.present": "true"}
    return node(f"gpu-{i}", labels, [GPU_TAINT], GPU, **overrides)


def cpu_node(i: int, zone: str) -> dict:
    return node(f"cpu-{i}", {"kubernetes.io/hostname": f"cpu-{i}", "topology.kubernetes.io/zone": zone,
                             "cloud.google.com/gke-nodepool": "default", "node.kubernetes.io/instance-type": "n2-32"},
                allocatable=CPU)


CLUSTER = node_list(gpu_node(0, "us-c1-a"), cpu_node(0, "us-c1-a"), gpu_node(1, "us-c1-b"), cpu_node(1, "us-c1-b"),
                    gpu_node(2, "us-c1-a", unschedulable=True), node("lonely", {"kubernetes.io/hostname": "lonely"},
                                                                     allocatable=dict(CPU, cpu="2")))


def test_a_node_list_is_read_and_grouped_into_pools(tmp_path):
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(CLUSTER, indent=4))
    pools = node_pools(read_nodes(str(path)).nodes)
    # a cordoned node is a state of a node of its pool: one of the pool's kinds, not a pool of its own
    assert [(p.name, p.count, p.zones, [len(k) for k in p.kinds]) for p in pools] == [
        ("a100", 3, ("us-c1-a", "us-c1-b"), [2, 1]), ("default", 2, ("us-c1-a", "us-c1-b"), [2]),
        ("lonely", 1, (), [1])]
    assert pools[0].node_names == ["gpu-0", "gpu-1", "gpu-2"] and pools[0].nodes[0]["spec"]["taints"] == [GPU_TAINT]
    assert [n["spec"].get("unschedulable", False) for n in pools[0].nodes] == [False, False, True]


def test_a_gpu_profile_fits_the_gpu_pool_only_and_says_why_not_elsewhere():
    gpu_pod = pod(container(limits={"nvidia.com/gpu": "8"}, requests={"cpu": "90", "memory": "1000Gi"}),
                  node_selector={"nvidia.com/gpu.present": "true"},
                  tolerations=[V1Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")])
    reasons = {p.name: [[r for v in filter_node(gpu_pod, k[0]) for r in v.reasons] for k in p.kinds]
               for p in node_pools(CLUSTER["items"])}
    assert reasons == {
        "a100": [[], ["node(s) were unschedulable"]],
        "default": [[AFFINITY, "Insufficient cpu", "Insufficient memory", "Insufficient nvidia.com/gpu"]],
        "lonely": [[AFFINITY, "Insufficient cpu", "Insufficient memory", "Insufficient nvidia.com/gpu"]]}
    untolerating = pod(container(limits={"nvidia.com/gpu": "1"}))
    verdicts = filter_node(untolerating, CLUSTER["items"][0])
    assert [v.plugin for v in verdicts] == list(FILTER_ORDER)
    assert next(v for v in verdicts if not v.fits).reasons == ("node(s) had untolerated taint {nvidia.com/gpu: present}",)
    busy = {"nvidia.com/gpu": "4", "pods": 3}
    assert node_resources_fit(gpu_pod, CLUSTER["items"][0], busy).reasons == ("Insufficient nvidia.com/gpu",)


LABEL_KEYS = ["pool", "gpu", "kubernetes.io/hostname", "topology.kubernetes.io/zone"]


@st.composite
def clusters_and_pods(draw):
    """A few node templates, each instantiated on several hosts and zones, and a pod that may select any label."""
    templates = draw(st.lists(st.fixed_dictionaries({
        "labels": st.dictionaries(st.sampled_from(["pool", "gpu"]), st.sampled_from(["a", "b"]), max_size=2),
        "taints": st.lists(st.builds(dict, key=st.sampled_from(["gpu", "spot"]), value=st.sampled_from(["", "x"]),
                                     effect=st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"])), max_size=2),
        "allocatable": st.builds(dict, cpu=st.sampled_from(["1", "1000m", "4"]), pods=st.sampled_from(["0", "10"]),
                                 **{"nvidia.com/gpu": st.sampled_from(["0", "8"])}),
        "unschedulable": st.sampled_from([None, True])}), min_size=1, max_size=3))
    nodes = []
    for i, template in enumerate(draw(st.lists(st.sampled_from(templates), min_size=1, max_size=8))):
        zone = draw(st.sampled_from(["z1", "z2"]))
        labels = {**template["labels"], "kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": zone}
        nodes.append(node(f"n{i}", labels, template["taints"], template["allocatable"], template["unschedulable"]))
    values = st.sampled_from(["a", "b", "n0", "n1", "z1"])
    selector = draw(st.dictionaries(st.sampled_from(LABEL_KEYS), values, max_size=2))
    expressions = draw(st.lists(st.tuples(st.sampled_from(LABEL_KEYS), st.sampled_from(["In", "NotIn"]),
                                          st.lists(values, min_size=1, max_size=2)), max_size=2))
    tolerations = draw(st.lists(st.builds(V1Toleration, key=st.sampled_from(["gpu", "spot", None]),
                                          operator=st.sampled_from(["Exists", "Equal"]),
                                          value=st.sampled_from([None, "x"]),
                                          effect=st.sampled_from([None, "NoSchedule"])), max_size=2))
    requests = draw(st.dictionaries(st.sampled_from(["cpu", "nvidia.com/gpu"]), st.sampled_from(["1", "2", "8"])))
    spec = pod(container(requests or None), node_selector=selector or None, tolerations=tolerations or None,
               affinity=required(term(*expressions)) if expressions else None)
    return nodes, spec


@pytest.mark.slow
@settings(max_examples=examples(200))
@given(clusters_and_pods())
def test_every_node_of_a_pool_gets_its_verdict_unless_the_pod_selects_a_per_node_label(case):
    """The grouping rule: the nodes of one kind of a pool differ only in per-node labels, so a pod that selects none
    of them gets the same verdicts on each node of a kind; one that does is decided node by node, and may differ."""
    nodes, spec = case
    selects_per_node = any(k in json.dumps(spec.get("nodeSelector") or {}) + json.dumps(spec.get("affinity") or {})
                           for k in ("kubernetes.io/hostname", "topology.kubernetes.io/zone"))
    pools = node_pools(nodes)
    assert sorted(n["metadata"]["name"] for p in pools for n in p.nodes) == sorted(n["metadata"]["name"] for n in nodes)
    for kind in (k for p in pools for k in p.kinds):
        verdicts = [filter_node(spec, n) for n in kind]
        for other in verdicts[1:]:
            assert [v for v in other if v.plugin != "NodeAffinity"] == [v for v in verdicts[0] if v.plugin != "NodeAffinity"]
            if not selects_per_node:
                assert other == verdicts[0]


# --- Reading node lists: errors at FILE:LINE:COLUMN ---------------------------------------------------------


def located(tmp_path, text: str, name="nodes.json") -> str:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ProfileError) as caught:
        read_nodes(str(path))
    return str(caught.value).replace(str(tmp_path) + "/", "")


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_wrong_node_is_reported_where_it_is_written(tmp_path):
    bad = json.loads(json.dumps(CLUSTER))
    bad["items"][3]["spec"]["taints"] = [{"key": "spot", "effect": "NoScheduled"}]
    bad["items"][1]["status"]["allocatable"]["memory"] = "16GB"
    text = json.dumps(bad, indent=4)
    message = located(tmp_path, text)
    effect, memory = line_of(text, '"NoScheduled"'), line_of(text, '"16GB"')
    assert message.splitlines()[0].startswith(f"nodes.json:{memory}:31: items[1].status.allocatable.memory: "
                                              "`16GB` is not a Kubernetes quantity; did you mean `16G`")
    assert f"nodes.json:{effect}:35: items[3].spec.taints[0].effect: a taint's effect is one of NoSchedule, " \
           "PreferNoSchedule, NoExecute, not 'NoScheduled'" in message


@pytest.mark.parametrize("text, expected", [
    ('{\n    "kind": "List",\n    "items": [\n        {"kind": "Node",}\n    ]\n}',
     "nodes.json:4:25: not JSON: Expecting property name enclosed in double quotes"),
    ('{"kind": "List", "items": []}', "nodes.json:1:27: items: the list holds no Node"),
    ('{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}}]}',
     "nodes.json:1:37: items[0].kind: not a Node but a 'Pod'"),
    ('{"kind": "List", "items": [{"kind": "Node", "metadata": {}}]}',
     "nodes.json:1:57: items[0].metadata: a Node has a name"),
    ('{"items": []}', "nodes.json:1:1: a node list says `kind: List`"),
    ('{"kind": "Node", "metadata": {"name": "n", "labels": {"a b": "c"}}}',
     "nodes.json:1:55: metadata.labels.\"a b\": label 'a b': it has a space"),
])
def test_a_node_list_that_is_not_one_is_reported_where_it_goes_wrong(tmp_path, text, expected):
    assert located(tmp_path, text).startswith(expected)


def test_yaml_node_lists_are_read_too_and_a_list_over_a_mebibyte_is_located_all_the_same(tmp_path):
    path = tmp_path / "nodes.yaml"
    path.write_text("kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n  spec:\n    unschedulable: 'yes'\n")
    with pytest.raises(ProfileError, match=r"nodes.yaml:6:20: items\[0\].spec.unschedulable: spec.unschedulable is true"):
        read_nodes(str(path))
    big = node_list(*(gpu_node(i, "z") for i in range(1100)), node("x", allocatable={"cpu": "lots"}))
    text = json.dumps(big, indent=4)
    assert len(text) > 1 << 20
    lots = line_of(text, '"lots"')
    assert located(tmp_path, text).startswith(f"nodes.json:{lots}:28: items[1100].status.allocatable.cpu: `lots` is not")
    (tmp_path / "ok.json").write_text(json.dumps(big["items"][0]))
    assert [n["metadata"]["name"] for n in read_nodes(str(tmp_path / "ok.json")).nodes] == ["gpu-0"]
