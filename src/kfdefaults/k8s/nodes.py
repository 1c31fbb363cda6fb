"""Nodes as ``kubectl get nodes -o json`` prints them: what a node must hold, and node pools.

**A pool** is a set of nodes the scheduler's filters (:mod:`.scheduling`) tell apart only by the labels in
:data:`PER_NODE_LABELS`: nodes with the same labels once those are left out, the same taints (as a set: their
order only changes which one a reason names), the same ``spec.unschedulable`` and the same allocatable resources
(exact amounts: ``1000m`` is ``1``) form one pool. So a pod that selects no per-node label gets the same verdict
on every node of a pool, and one that does (``kubernetes.io/hostname``, a zone) is decided node by node
(:attr:`NodePool.nodes` holds them all).

Zones are per-node labels: a cloud node pool spans zones, and is one pool here, whose :attr:`NodePool.zones`
lists them. Nodes whose allocatable differs (an instance type of the same cloud pool that reports a few MiB less
memory, a cordoned node) are pools of their own, since a pod may fit one and not the other.

**A pool's name** is the value of the first well-known pool label its nodes carry (:data:`POOL_LABELS`: GKE,
EKS, eksctl, Karpenter, AKS), else their ``node.kubernetes.io/instance-type``, else its first node's name; when
two pools would share a name, the later ones are called ``NAME (2)``, ``NAME (3)``, in the order of the list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple

from ..errors import shown
from .names import is_dns1123_subdomain, label_value_problem, qualified_name_problem
from .quantity import quantity_problem, quantity_value

POOL_LABELS = (
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
)
"""Labels that name a node's pool, by cloud: GKE, EKS managed node groups, eksctl, Karpenter, AKS (new and old)."""

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"

ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
"""The well-known zone labels (k8s.io/api core/v1 well_known_labels.go ``LabelTopologyZone``, and its deprecated
``LabelFailureDomainBetaZone``)."""

PER_NODE_LABELS = ("kubernetes.io/hostname", *ZONE_LABELS, "topology.gke.io/zone", "topology.ebs.csi.aws.com/zone",
                   "topology.k8s.aws/zone-id", "topology.disk.csi.azure.com/zone")
"""Labels that differ from node to node of one pool, left out of a pool's identity: the host name, and the zone
as Kubernetes, GKE and the AWS and Azure storage drivers write it."""

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
"""core/v1 ``TaintEffect`` values (pkg/apis/core/validation ``validateTaintEffect``)."""


@dataclass
class NodePool:
    """Nodes the scheduler treats alike (see the module's description).

    Attributes:
        name: The pool's name: a pool label's value, the instance type, or the first node's name.
        nodes: The nodes, as read, in the order of the list.
        labels: The labels of its nodes, those of :data:`PER_NODE_LABELS` left out.
        taints: Its nodes' taints, as the first node lists them.
        allocatable: Its nodes' allocatable resources (``status.allocatable``, else ``status.capacity``), as the
            first node writes them: resource name -> quantity.
        unschedulable: Whether its nodes are cordoned (``spec.unschedulable``).
        zones: The zones its nodes are in (``topology.kubernetes.io/zone``, else the deprecated beta label), sorted.
    """

    name: str
    nodes: list[dict[str, Any]]
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    allocatable: dict[str, Any]
    unschedulable: bool
    zones: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """How many nodes the pool has."""
        return len(self.nodes)

    @property
    def node_names(self) -> list[str]:
        """Its nodes' names, in the order of the list."""
        return [n["metadata"]["name"] for n in self.nodes]


class NodeProblem(NamedTuple):
    """What is wrong in a node, and where: ``path`` relative to the node (``("spec", "taints", 0, "effect")``), at
    the key rather than the value when ``key`` is true (a label whose name is wrong)."""

    path: tuple
    message: str
    key: bool = False


def _allocatable(node: Mapping[str, Any]) -> dict[str, Any]:
    status = node.get("status") or {}
    allocatable = status.get("allocatable")
    return dict(allocatable if allocatable is not None else status.get("capacity") or {})


def _identity(node: Mapping[str, Any]) -> tuple:
    labels = (node.get("metadata") or {}).get("labels") or {}
    spec = node.get("spec") or {}
    return (frozenset((k, v) for k, v in labels.items() if k not in PER_NODE_LABELS),
            frozenset((t.get("key"), t.get("value") or "", t.get("effect")) for t in spec.get("taints") or []),
            spec.get("unschedulable") is True,
            frozenset((k, quantity_value(v)) for k, v in _allocatable(node).items()))


def _zone(labels: Mapping[str, str]) -> str | None:
    return next((labels[k] for k in ZONE_LABELS if k in labels), None)


def node_pools(nodes: list[dict[str, Any]]) -> list[NodePool]:
    """The pools of ``nodes`` (see the module's description), in the order their first node comes in the list.

    Args:
        nodes: Nodes as ``kubectl get nodes -o json`` prints each item, each with a ``metadata.name`` (as
            :func:`node_problems` checks).
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for node in nodes:
        groups.setdefault(_identity(node), []).append(node)
    pools, taken = [], {}
    for members in groups.values():
        first = members[0]
        labels = {k: v for k, v in ((first.get("metadata") or {}).get("labels") or {}).items()
                  if k not in PER_NODE_LABELS}
        name = next((labels[k] for k in (*POOL_LABELS, INSTANCE_TYPE_LABEL) if k in labels), first["metadata"]["name"])
        taken[name] = taken.get(name, 0) + 1
        zones = {_zone((n.get("metadata") or {}).get("labels") or {}) for n in members} - {None}
        pools.append(NodePool(name if taken[name] == 1 else f"{name} ({taken[name]})", members, labels,
                              list((first.get("spec") or {}).get("taints") or []), _allocatable(first),
                              (first.get("spec") or {}).get("unschedulable") is True, tuple(sorted(zones))))
    return pools


def _mapping_problem(value: Any, what: str) -> str | None:
    return None if value is None or isinstance(value, dict) else f"{what} must be an object"


def node_problems(node: Any) -> list[NodeProblem]:
    """What in ``node`` is not what the API server keeps of a Node, as far as the scheduler's filters read it.

    Checked: the node is an object of ``kind: Node`` (when it says), ``metadata.name`` is a DNS subdomain
    (``ValidateNodeName``, apimachinery ``NameIsDNSSubdomain``), ``metadata.labels`` map qualified names to label
    values, ``spec.taints`` have a qualified name as key, a label value as value and an effect of
    :data:`TAINT_EFFECTS` (``validateNodeTaints``), ``spec.unschedulable`` is true or false, and
    ``status.allocatable`` and ``status.capacity`` map resource names to quantities (pkg/apis/core/validation
    ``ValidateNode``). So a name or a taint that fit, timeline and diff print is one the API server keeps: short,
    without control characters. Values quoted in a message are quoted short (:func:`kfdefaults.errors.shown`).

    Returns:
        A :class:`NodeProblem` for each problem; ``[]`` when the node is fine.
    """
    if not isinstance(node, dict):
        return [NodeProblem((), "not a Node: each item of `kubectl get nodes -o json` is an object")]
    if node.get("kind", "Node") != "Node":
        return [NodeProblem(("kind",), f"not a Node but a {shown(repr(node.get('kind')), 40)}: give the output of "
                                       "`kubectl get nodes -o json`")]
    problems: list[NodeProblem] = []
    for key in ("metadata", "spec", "status"):
        if (problem := _mapping_problem(node.get(key), key)) is not None:
            problems.append(NodeProblem((key,), problem))
    if problems:
        return problems
    metadata, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    if not isinstance(metadata.get("name"), str) or not metadata.get("name"):
        problems.append(NodeProblem(("metadata", "name") if "name" in metadata else ("metadata",), "a Node has a name"))
    elif not is_dns1123_subdomain(metadata["name"]):
        problems.append(NodeProblem(("metadata", "name"), "a Node's name is a DNS subdomain (at most 253 lowercase "
                                    "letters, digits, '-' and '.'), as the API server keeps it (ValidateNodeName)"))
    labels = metadata.get("labels")
    if (problem := _mapping_problem(labels, "metadata.labels")) is not None:
        problems.append(NodeProblem(("metadata", "labels"), problem))
    for key, value in (labels or {}).items() if isinstance(labels, dict) else ():
        if (why := qualified_name_problem(key)) is not None:
            problems.append(NodeProblem(("metadata", "labels", key), f"label {shown(repr(key), 80)}: {why}", key=True))
        elif (why := label_value_problem(value) if isinstance(value, str) else "it is not text") is not None:
            problems.append(NodeProblem(("metadata", "labels", key), f"the value of label {key!r}: {why}"))
    problems += _taint_problems(spec.get("taints"))
    if spec.get("unschedulable") not in (None, True, False):
        problems.append(NodeProblem(("spec", "unschedulable"), "spec.unschedulable is true or false"))
    for key in ("allocatable", "capacity"):
        resources = status.get(key)
        if (problem := _mapping_problem(resources, f"status.{key}")) is not None:
            problems.append(NodeProblem(("status", key), problem))
            continue
        for name, value in (resources or {}).items():
            if (problem := quantity_problem(value)) is not None:
                problems.append(NodeProblem(("status", key, name), problem))
    return problems


def _taint_problems(taints: Any) -> list[NodeProblem]:
    if taints is None:
        return []
    if not isinstance(taints, list):
        return [NodeProblem(("spec", "taints"), "spec.taints must be a list")]
    problems = []
    for i, taint in enumerate(taints):
        at = ("spec", "taints", i)
        if not isinstance(taint, dict):
            problems.append(NodeProblem(at, "a taint is an object with a key, a value and an effect"))
            continue
        if not isinstance(taint.get("key"), str) or qualified_name_problem(taint["key"]) is not None:
            problems.append(NodeProblem(at + ("key",) if "key" in taint else at,
                                        "a taint's key is a qualified name, such as `nvidia.com/gpu`"))
        if taint.get("value") is not None and not isinstance(taint["value"], str):
            problems.append(NodeProblem(at + ("value",), "a taint's value is text"))
        elif taint.get("value") and (why := label_value_problem(taint["value"])) is not None:
            problems.append(NodeProblem(at + ("value",), f"a taint's value is a label value (validateNodeTaints): {why}"))
        if taint.get("effect") not in TAINT_EFFECTS:
            problems.append(NodeProblem(at + ("effect",) if "effect" in taint else at,
                                        f"a taint's effect is one of {', '.join(TAINT_EFFECTS)}, not "
                                        f"{shown(repr(taint.get('effect')), 40)}"))
    return problems
