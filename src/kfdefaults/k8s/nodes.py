"""Nodes as ``kubectl get nodes -o json`` prints them: what a node must hold, and node pools.

**A pool** is what a cloud calls one: the nodes that carry the same value of its node-pool label
(:data:`POOL_LABELS`: GKE, EKS, eksctl, Karpenter, AKS), whatever else differs between them. Nodes without such a
label form a pool by their labels once the per-node and topology labels are left out (:func:`is_per_node_label`:
the host name, zone and region, ``topology.*`` labels, a block or rack label of topology-aware scheduling, an
instance id): six nodes in two blocks of three, each with its rack, are one pool. Taints, allocatable amounts and
``spec.unschedulable`` never split a pool: a cordoned node, a node that reports a few MiB less memory, a node tainted
``node.kubernetes.io/not-ready`` are states of nodes of their pool.

Within a pool, :attr:`NodePool.kinds` groups the nodes the scheduler's filters (:mod:`.scheduling`) cannot tell
apart but by per-node labels: the same labels (per-node ones left out), taints (as a set: their order only changes
which one a reason names), ``spec.unschedulable`` and allocatable amounts (exact: ``1000m`` is ``1``). A pod that
selects no per-node label gets one verdict per kind, judged once; one that does (a host name, a zone, a rack) is
decided node by node. Grouping is one pass over the list, a dictionary lookup per node.

**A pool's name** is the value of its pool label, else its nodes' ``node.kubernetes.io/instance-type``, else its
first node's name; when two pools would share a name, the later ones are called ``NAME (2)``, ``NAME (3)``, in the
order of the list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple

from ..errors import shown
from .names import is_dns1123_subdomain, label_value_problem, qualified_name_problem, resource_value_problem
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

PER_NODE_LABELS = ("kubernetes.io/hostname", *ZONE_LABELS, "failure-domain.beta.kubernetes.io/region",
                   "cloud.google.com/gce-topology-block", "cloud.google.com/gce-topology-subblock",
                   "cloud.google.com/gce-topology-host", "alpha.eksctl.io/instance-id")
"""Labels known to differ from node to node of one pool that :func:`is_per_node_label` would not tell by their
words: the host name, the zone and region (well_known_labels.go), GKE's topology labels of compact placement,
eksctl's instance id."""

PER_NODE_WORDS = frozenset({"hostname", "host", "zone", "region", "rack", "block", "subblock", "superblock",
                            "topology", "id", "ip"})
"""Words of a label's name (split at ``-``, ``.`` and ``_``) that mark it per node: ``topology.k8s.aws/zone-id``,
``cloud.provider.com/topology-rack`` (Kueue's topology examples), ``example.com/block``."""

_WORDS = re.compile(r"[-._]")

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
"""core/v1 ``TaintEffect`` values (pkg/apis/core/validation ``validateTaintEffect``)."""


def is_per_node_label(key: str) -> bool:
    """Whether label ``key`` differs from node to node of one pool, and so never decides what a pool is: one of
    :data:`PER_NODE_LABELS`, a label of a ``topology.*`` prefix (``topology.kubernetes.io/*``, ``topology.gke.io``,
    the storage drivers' zones) or with ``topology`` in its name, or one whose name holds a word of
    :data:`PER_NODE_WORDS` (a zone, a rack, a block, an instance id)."""
    if key in PER_NODE_LABELS:
        return True
    prefix, _, name = key.rpartition("/")
    return prefix.startswith("topology.") or "topology" in name or any(w in PER_NODE_WORDS for w in _WORDS.split(name))


def node_labels(node: Mapping[str, Any]) -> dict[str, str]:
    """A node's ``metadata.labels``, per-node ones included."""
    return dict((node.get("metadata") or {}).get("labels") or {})


@dataclass
class NodePool:
    """Nodes of one pool (see the module's description).

    Attributes:
        name: The pool's name: its pool label's value, the instance type, or the first node's name.
        nodes: The nodes, as read, in the order of the list, each with all its labels (:func:`node_labels`).
        kinds: The nodes again, grouped into those the scheduler's filters tell apart only by per-node labels, in
            the order of their first node.
    """

    name: str
    nodes: list[dict[str, Any]]
    kinds: list[list[dict[str, Any]]]

    @property
    def count(self) -> int:
        """How many nodes the pool has."""
        return len(self.nodes)

    @property
    def node_names(self) -> list[str]:
        """Its nodes' names, in the order of the list."""
        return [n["metadata"]["name"] for n in self.nodes]

    @property
    def zones(self) -> tuple[str, ...]:
        """The zones its nodes are in (``topology.kubernetes.io/zone``, else the deprecated beta label), sorted."""
        return tuple(sorted(set(self.domains(ZONE_LABELS[0])) | set(self.domains(ZONE_LABELS[1]))))

    def domains(self, level: str) -> dict[str, list[dict[str, Any]]]:
        """The pool's nodes by their value of the label ``level`` (a topology level: ``topology.kubernetes.io/zone``,
        ``cloud.google.com/gce-topology-block``, a rack label), in the order of the list; nodes without the label
        are left out."""
        found: dict[str, list[dict[str, Any]]] = {}
        for node in self.nodes:
            value = node_labels(node).get(level)
            if value is not None:
                found.setdefault(value, []).append(node)
        return found


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


def _kind(node: Mapping[str, Any], shared: frozenset) -> tuple:
    spec = node.get("spec") or {}
    return (shared,
            frozenset((t.get("key"), t.get("value") or "", t.get("effect")) for t in spec.get("taints") or []),
            spec.get("unschedulable") is True,
            frozenset((k, quantity_value(v)) for k, v in _allocatable(node).items()))


def node_pools(nodes: list[dict[str, Any]]) -> list[NodePool]:
    """The pools of ``nodes`` (see the module's description), in the order their first node comes in the list: the
    one grouping of nodes into pools that ``fit``, ``validate``, ``timeline`` and ``diff`` read (through
    :func:`kfdefaults.validate.pools.load_pools`).

    Args:
        nodes: Nodes as ``kubectl get nodes -o json`` prints each item, each with a ``metadata.name`` (as
            :func:`node_problems` checks).
    """
    groups: dict[tuple, tuple[list[dict[str, Any]], dict[tuple, list[dict[str, Any]]]]] = {}
    for node in nodes:
        labels = node_labels(node)
        shared = frozenset((k, v) for k, v in labels.items() if not is_per_node_label(k))
        label = next((k for k in POOL_LABELS if k in labels), None)
        members, kinds = groups.setdefault(("pool label", label, labels[label]) if label is not None
                                           else ("labels", shared), ([], {}))
        members.append(node)
        kinds.setdefault(_kind(node, shared), []).append(node)
    pools, taken = [], {}
    for key, (members, kinds) in groups.items():
        first = members[0]
        name = key[2] if key[0] == "pool label" else node_labels(first).get(INSTANCE_TYPE_LABEL, first["metadata"]["name"])
        taken[name] = taken.get(name, 0) + 1
        pools.append(NodePool(name if taken[name] == 1 else f"{name} ({taken[name]})", members, list(kinds.values())))
    return pools


def _mapping_problem(value: Any, what: str) -> str | None:
    return None if value is None or isinstance(value, dict) else f"{what} must be an object"


def node_problems(node: Any) -> list[NodeProblem]:
    """What in ``node`` is not what the API server keeps of a Node, as far as the scheduler's filters read it.

    Checked: the node is an object of ``kind: Node`` (when it says), ``metadata.name`` is a DNS subdomain
    (``ValidateNodeName``, apimachinery ``NameIsDNSSubdomain``), ``metadata.labels`` map qualified names to label
    values, ``spec.taints`` have a qualified name as key, a label value as value and an effect of
    :data:`TAINT_EFFECTS` (``validateNodeTaints``), ``spec.unschedulable`` is true or false, and
    ``status.allocatable`` and ``status.capacity`` map resource names to quantities that are not negative, and whole
    for ``pods`` and extended resources (pkg/apis/core/validation ``ValidateNodeResources``, through
    :func:`kfdefaults.k8s.names.resource_value_problem`). So a name or a taint that fit, timeline and diff print is one the API server keeps: short,
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
            if (why := qualified_name_problem(name) if isinstance(name, str) else "it is not text") is not None:
                problems.append(NodeProblem(("status", key, name), f"{shown(repr(name), 80)} is not a resource "
                                            f"name: {why}", key=True))
            elif (problem := quantity_problem(value) or resource_value_problem(name, value)) is not None:
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
