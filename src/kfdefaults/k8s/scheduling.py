"""kube-scheduler's filters on plain data: would a pod schedule onto a node, and if not, why not.

A pod is its PodSpec as a dict, camelCase as in a manifest; a node is one item of ``kubectl get nodes -o json``.
Each function below is one scheduler plugin's ``Filter`` (kube-scheduler has one plugin per predicate) and
returns a :class:`Verdict` holding the plugin's own reason strings, so that what it says reads like the
scheduler's ``FailedScheduling`` event. The rules follow Kubernetes 1.3x, file by file:

* NodeUnschedulable: pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go ``Filter``.
* TaintToleration: pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go ``Filter``, through
  k8s.io/component-helpers scheduling/corev1/helpers.go ``FindMatchingUntoleratedTaint`` and k8s.io/api
  core/v1/toleration.go ``(*Toleration).ToleratesTaint`` (:mod:`.tolerations`).
* NodeAffinity: pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go ``Filter``, through
  component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go ``GetRequiredNodeAffinity`` and
  ``LazyErrorNodeSelector.Match``, and apimachinery pkg/labels/selector.go ``NewRequirement`` and
  ``(*Requirement).Matches``.
* NodeResourcesFit: pkg/scheduler/framework/plugins/noderesources/fit.go ``computePodResourceRequest`` and
  ``fitsRequest``, through component-helpers resource/helpers.go ``PodRequests``, after the API server's
  defaulting of a Pod (pkg/apis/core/v1/defaults.go ``SetDefaults_Pod``: a container's limit without a request
  requests its limit; ``defaultPodResources`` for pod-level ``resources``).

The scheduler runs its filters in the order of :data:`FILTER_ORDER` (pkg/scheduler/apis/config/v1/
default_plugins.go ``getDefaultPlugins``) and, for a node, reports only the first that fails
(pkg/scheduler/framework/runtime/framework.go ``RunFilterPlugins``); :func:`filter_node` runs them all, so that
every reason is known, in that order. What is left out, and why, is listed in docs/fit.md ("Not decided
here": plugins that need the cluster's other objects, scheduler arguments, alpha features).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from .names import (HUGEPAGES_PREFIX, NATIVE_RESOURCE_MARK, is_extended_resource, label_value_problem,
                    qualified_name_problem)
from .quantity import quantity_value
from .tolerations import Tolerations

FILTER_ORDER = ("NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit")
"""The filter plugins this module decides, in the order kube-scheduler runs them."""

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
"""core/v1 ``TaintNodeUnschedulable``: a pod that tolerates it tolerates a cordoned node too."""

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
"""Taint effects that filter a node out (plugins/helper ``DoNotScheduleTaintsFilterFunc``); ``PreferNoSchedule``
only lowers the node's score (taint_toleration.go ``Score``)."""

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_TOO_MANY_PODS = "Too many pods"

_INT64 = re.compile(r"[+-]?[0-9]+")
_POD_LEVEL = ("cpu", "memory")  # component-helpers resource ``supportedPodLevelResources``, and hugepages-*


@dataclass(frozen=True)
class Verdict:
    """One plugin's decision on one node.

    Attributes:
        plugin: The plugin's name, one of :data:`FILTER_ORDER`.
        reasons: The scheduler's reason strings (``"Insufficient nvidia.com/gpu"``, ``"node(s) had untolerated
            taint {dedicated: gpu}"``); empty when the node passes.
        preferences: What lowers the node's score without filtering it out: the ``PreferNoSchedule`` taints the
            pod does not tolerate, written as ``Taint.ToString`` writes them (``key=value:PreferNoSchedule``).
        source: The Go file and function the decision follows.
    """

    plugin: str
    reasons: tuple[str, ...] = ()
    preferences: tuple[str, ...] = ()
    source: str = ""

    @property
    def fits(self) -> bool:
        """Whether the node passes this plugin's filter."""
        return not self.reasons


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, Mapping) else None
    return data


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _mapping(value: Any) -> Mapping:
    return value if isinstance(value, Mapping) else {}


# --- NodeUnschedulable and TaintToleration -------------------------------------------------------------------


def _parse_int64(text: Any) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: an optional sign and decimal digits, within int64; else ``None``."""
    if not isinstance(text, str) or not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _tolerated(spec: Mapping[str, Any], taint: Mapping[str, Any], comparison_operators: bool) -> bool:
    """component-helpers ``TolerationsTolerateTaint``: some toleration of the pod tolerates ``taint``."""
    return Tolerations(spec.get("tolerations"), comparison_operators).tolerate(taint)


def taint_string(taint: Mapping[str, Any]) -> str:
    """A taint as core/v1 taint.go ``ToString`` writes it: ``key=value:effect``, ``key:effect``, ``key=value:``,
    ``key``."""
    key, value, effect = taint.get("key") or "", taint.get("value") or "", taint.get("effect") or ""
    if not effect:
        return f"{key}={value}:" if value else key
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def node_unschedulable(spec: Mapping[str, Any], node: Mapping[str, Any]) -> Verdict:
    """NodeUnschedulable (nodeunschedulable/node_unschedulable.go ``Filter``): a cordoned node
    (``spec.unschedulable``) takes only pods that tolerate :data:`UNSCHEDULABLE_TAINT`."""
    blocked = _get(node, "spec", "unschedulable") is True and not _tolerated(spec, UNSCHEDULABLE_TAINT, False)
    return Verdict("NodeUnschedulable", (REASON_UNSCHEDULABLE,) if blocked else (),
                   source="pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go Filter")


def taint_toleration(spec: Mapping[str, Any], node: Mapping[str, Any], *,
                     comparison_operators: bool = False) -> Verdict:
    """TaintToleration (tainttoleration/taint_toleration.go ``Filter``): the node's first ``NoSchedule`` or
    ``NoExecute`` taint that no toleration of the pod tolerates blocks it, as ``node(s) had untolerated taint
    {key: value}`` (only the first, as ``FindMatchingUntoleratedTaint`` returns it). Untolerated
    ``PreferNoSchedule`` taints are :attr:`Verdict.preferences`: they only lower the node's score."""
    reasons: tuple[str, ...] = ()
    preferences = []
    tolerations = Tolerations(spec.get("tolerations"), comparison_operators)
    for taint in (_mapping(t) for t in _list(_get(node, "spec", "taints"))):
        if tolerations.tolerate(taint):
            continue
        if taint.get("effect") in BLOCKING_EFFECTS and not reasons:
            reasons = (f"node(s) had untolerated taint {{{taint.get('key') or ''}: {taint.get('value') or ''}}}",)
        elif taint.get("effect") == "PreferNoSchedule":
            preferences.append(taint_string(taint))
    return Verdict("TaintToleration", reasons, tuple(preferences),
                   "pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go Filter")


# --- NodeAffinity ---------------------------------------------------------------------------------------------

_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _requirement_valid(expression: Mapping[str, Any]) -> bool:
    """apimachinery labels ``NewRequirement`` accepts the expression (a term with one it refuses matches nothing)."""
    key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
    if not isinstance(key, str) or qualified_name_problem(key) is not None or operator not in _LABEL_OPERATORS:
        return False
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return False
    if operator in ("In", "NotIn") and not values:
        return False
    if operator in ("Exists", "DoesNotExist") and values:
        return False
    if operator in ("Gt", "Lt") and (len(values) != 1 or _parse_int64(values[0]) is None):
        return False
    return all(label_value_problem(v) is None for v in values)


def _requirement_matches(expression: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """apimachinery labels ``(*Requirement).Matches``."""
    key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if key not in labels:
        return False
    if operator == "In":
        return labels[key] in values
    have, want = _parse_int64(labels[key]), _parse_int64(values[0])
    if have is None or want is None:
        return False
    return have > want if operator == "Gt" else have < want


def _term_matches(term: Mapping[str, Any], labels: Mapping[str, Any], name: str) -> bool:
    """nodeaffinity.go ``nodeSelectorTerm.match``: every expression and field requirement holds; a term that does
    not parse (``newNodeSelectorTerm``) matches nothing. Fields are ``metadata.name`` only, and are not checked on
    a node without a name (``extractNodeFields``)."""
    expressions = [_mapping(e) for e in _list(term.get("matchExpressions"))]
    fields = [_mapping(f) for f in _list(term.get("matchFields"))]
    if not all(_requirement_valid(e) for e in expressions):
        return False
    for field in fields:  # nodeSelectorRequirementsAsFieldSelector: In and NotIn, with one value
        values = field.get("values") or []
        if field.get("operator") not in ("In", "NotIn") or not isinstance(field.get("key", ""), str) \
                or not isinstance(values, list) or len(values) != 1 or not isinstance(values[0], str):
            return False
    if not all(_requirement_matches(e, labels) for e in expressions):
        return False
    node_fields = {"metadata.name": name} if name else {}
    if not node_fields:
        return True
    return all((node_fields.get(f.get("key"), "") == f["values"][0]) == (f["operator"] == "In") for f in fields)


def required_node_affinity_matches(spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """component-helpers nodeaffinity.go ``GetRequiredNodeAffinity(pod).Match(node)``: every ``nodeSelector``
    label is on the node with that value, and, when the pod has
    ``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution``, one of its ``nodeSelectorTerms``
    matches (terms ORed, a term's requirements ANDed). A term with neither ``matchExpressions`` nor
    ``matchFields`` is skipped, so a required affinity whose terms are all empty, or that has none, matches no
    node (``NewLazyErrorNodeSelector``)."""
    labels = _mapping(_get(node, "metadata", "labels"))
    for key, value in _mapping(spec.get("nodeSelector")).items():
        if key not in labels or labels[key] != value:
            return False
    required = _get(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    name = _get(node, "metadata", "name") or ""
    terms = [_mapping(t) for t in _list(_get(required, "nodeSelectorTerms"))]
    return any(_term_matches(t, labels, name) for t in terms if t.get("matchExpressions") or t.get("matchFields"))


def node_affinity(spec: Mapping[str, Any], node: Mapping[str, Any]) -> Verdict:
    """NodeAffinity (nodeaffinity/node_affinity.go ``Filter``): :func:`required_node_affinity_matches`, else
    ``node(s) didn't match Pod's node affinity/selector``."""
    fits = required_node_affinity_matches(spec, node)
    return Verdict("NodeAffinity", () if fits else (REASON_AFFINITY,),
                   source="pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go Filter")


# --- NodeResourcesFit -----------------------------------------------------------------------------------------


def _quantities(resources: Any) -> dict[str, Fraction]:
    return {str(k): v for k, v in ((k, quantity_value(q)) for k, q in _mapping(resources).items()) if v is not None}


def _container_requests(container: Mapping[str, Any]) -> dict[str, Fraction]:
    """A container's requests after ``SetDefaults_Pod``: each limit without a request requests the limit."""
    resources = _mapping(container.get("resources"))
    return {**_quantities(resources.get("limits")), **_quantities(resources.get("requests"))}


def _add(into: dict[str, Fraction], other: Mapping[str, Fraction]) -> None:
    for name, value in other.items():
        into[name] = into.get(name, Fraction(0)) + value


def _max(into: dict[str, Fraction], other: Mapping[str, Fraction]) -> None:
    for name, value in other.items():
        if name not in into or value > into[name]:
            into[name] = value


def _pod_level(name: str) -> bool:
    """component-helpers resource ``IsSupportedPodLevelResource``: cpu, memory and hugepages."""
    return name in _POD_LEVEL or name.startswith(HUGEPAGES_PREFIX)


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Fraction]:
    """The pod's effective requests, as kube-scheduler counts them (component-helpers resource/helpers.go
    ``PodRequests``, called by fit.go ``computePodResourceRequest``).

    The app containers' requests are summed; a restartable init container (a sidecar: ``restartPolicy:
    Always``) adds its requests to that sum; every other init container needs its own requests plus the sidecars
    started before it; the pod needs the larger of the sum and each init container's need, resource by resource.
    Pod-level ``resources.requests`` then replace cpu, memory and hugepages (the PodLevelResources feature, on by
    default since 1.34; pod-level limits without requests request their limit where no container requests that
    resource, as ``defaultPodResources`` does); ``overhead`` is added last. A container's limit without a request
    requests its limit (``SetDefaults_Pod``).

    Returns:
        Resource name -> exact amount, in the resource's unit (cores for cpu, bytes for memory, a count for
        ``nvidia.com/gpu``); values that are not quantities are left out.
    """
    total: dict[str, Fraction] = {}
    for container in _list(spec.get("containers")):
        _add(total, _container_requests(_mapping(container)))
    sidecars: dict[str, Fraction] = {}
    init_need: dict[str, Fraction] = {}
    for container in (_mapping(c) for c in _list(spec.get("initContainers"))):
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, requests)
            _add(sidecars, requests)
            _max(init_need, sidecars)
        else:
            need = dict(requests)
            _add(need, sidecars)
            _max(init_need, need)
    _max(total, init_need)
    pod = _mapping(spec.get("resources"))
    pod_requests_set = {k: v for k, v in _quantities(pod.get("requests")).items() if _pod_level(k)}
    pod_limits = {k: v for k, v in _quantities(pod.get("limits")).items() if _pod_level(k)}
    if pod_requests_set or pod_limits:
        for name, limit in pod_limits.items():  # defaultPodResources, then applyPodLevelResources
            pod_requests_set.setdefault(name, total.get(name, limit))
        total.update(pod_requests_set)
    _add(total, _quantities(spec.get("overhead")))
    return total


def _away_from_zero(value: Fraction) -> int:
    """apimachinery ``Quantity.Value`` and ``MilliValue``: rounded up, away from zero."""
    return math.ceil(value) if value >= 0 else math.floor(value)


def is_scalar_resource(name: str) -> bool:
    """pkg/scheduler/util ``IsScalarResourceName``: extended (``nvidia.com/gpu``), hugepages, ``*kubernetes.io/``
    prefixed and ``attachable-volumes-`` resources; the scheduler ignores any other name it does not know."""
    return (is_extended_resource(name) or name.startswith(HUGEPAGES_PREFIX) or NATIVE_RESOURCE_MARK in name
            or name.startswith("attachable-volumes-"))


def scheduler_amounts(resources: Mapping[str, Fraction]) -> dict[str, int]:
    """A resource list as the scheduler's ``framework.Resource`` holds it (pkg/scheduler/framework/types.go
    ``Add``, ``SetMaxResource``): cpu in millicores, the rest in whole units, each rounded up; ``pods`` is the
    node's allowed pod count; names that are not scalar resources (:func:`is_scalar_resource`) are dropped."""
    amounts: dict[str, int] = {}
    for name, value in resources.items():
        if name == "cpu":
            amounts[name] = _away_from_zero(value * 1000)
        elif name in ("memory", "ephemeral-storage", "pods") or is_scalar_resource(name):
            amounts[name] = _away_from_zero(value)
    return amounts


def node_allocatable(node: Mapping[str, Any]) -> dict[str, Fraction]:
    """The node's ``status.allocatable``, or its ``status.capacity`` when it has none (pkg/apis/core/v1/
    defaults.go ``SetDefaults_NodeStatus``), as exact amounts."""
    status = _mapping(node.get("status"))
    allocatable = status.get("allocatable")
    return _quantities(allocatable if allocatable is not None else status.get("capacity"))


def node_resources_fit(spec: Mapping[str, Any], node: Mapping[str, Any],
                       requested: Mapping[str, Any] | None = None) -> Verdict:
    """NodeResourcesFit (noderesources/fit.go ``fitsRequest``): the node has room for the pod.

    Args:
        spec: The pod's PodSpec.
        node: The node.
        requested: What the pods already on the node request, resource name -> quantity (``"3500m"``, ``8``), and
            ``pods``: how many pods run there; empty for an empty node.

    Returns:
        ``Too many pods`` when the node's allowed pods are taken, then ``Insufficient cpu``, ``Insufficient
        memory``, ``Insufficient ephemeral-storage``, then ``Insufficient NAME`` for each other resource the pod
        requests more of than the node has free, in name order (Go walks a map: its order varies).
    """
    pod = scheduler_amounts(pod_requests(spec))
    pod.pop("pods", None)  # SetMaxResource has no case for pods: a pod never "requests" pods
    allocatable = scheduler_amounts(node_allocatable(node))
    used = scheduler_amounts(_quantities(requested or {}))
    reasons = []
    if used.get("pods", 0) + 1 > allocatable.get("pods", 0):
        reasons.append(REASON_TOO_MANY_PODS)
    for name in ("cpu", "memory", "ephemeral-storage"):
        want = pod.get(name, 0)
        if want > 0 and want > allocatable.get(name, 0) - used.get(name, 0):
            reasons.append(f"Insufficient {name}")
    for name in sorted(n for n in pod if n not in ("cpu", "memory", "ephemeral-storage")):
        if pod[name] != 0 and pod[name] > allocatable.get(name, 0) - used.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return Verdict("NodeResourcesFit", tuple(reasons),
                   source="pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest")


def filter_node(spec: Mapping[str, Any], node: Mapping[str, Any], requested: Mapping[str, Any] | None = None,
                *, comparison_operators: bool = False) -> list[Verdict]:
    """Every filter of :data:`FILTER_ORDER` on one node, in the scheduler's order.

    The node fits when every verdict does (``all(v.fits for v in verdicts)``); the scheduler itself stops at the
    first that fails and reports its reasons only (``next(v for v in verdicts if not v.fits)``).
    """
    return [node_unschedulable(spec, node),
            taint_toleration(spec, node, comparison_operators=comparison_operators),
            node_affinity(spec, node),
            node_resources_fit(spec, node, requested)]
