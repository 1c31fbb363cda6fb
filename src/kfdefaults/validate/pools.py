"""The cluster's node pools, as a platform states them: from its nodes, from its facts file, or both.

Two sources, read through the pipeline's input manifest so that a replayed command sees their edits:

* **a node list** (``kubectl get nodes -o json``, :mod:`.nodes`): given with ``--nodes FILE``, else named by the
  facts file's ``nodes:`` (a path relative to the facts file). Its nodes are grouped into pools by
  :func:`kfdefaults.k8s.nodes.node_pools`: the cloud's node-pool label, else the labels but the per-node and
  topology ones; a cordoned node, a taint or an allocatable amount of one node is a state of a node of its pool;
* **the facts file's** ``node_pools`` (:mod:`.facts`): pools a platform describes (labels, taints, allocatable,
  ``nodes``, ``price_per_node_hour``), for pools a node list cannot show (a pool scaled to zero has no node).

A described pool named like a listed one (``a100``, its GKE, EKS, Karpenter or AKS pool label) adds to it what
a node list cannot say: how many nodes the pool may have (``nodes``: the autoscaler's bounds) and its price; the
listed nodes decide its labels, taints and allocatable resources, and a described value that disagrees with them
is a note. A described pool that no node list shows is a pool of its own, judged on what it states:

* an extended resource (``nvidia.com/gpu``) it does not state is one it does not have, as on a node;
* ``cpu``, ``memory`` and ``ephemeral-storage`` it does not state are unknown, and not checked (every node has
  some: "not stated" is not "none");
* ``pods`` it does not state is the kubelet's default ``maxPods``, :data:`KUBELET_MAX_PODS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..errors import Finding, Location, ProfileError
from ..inputs import Inputs
from ..k8s.nodes import NodePool, node_pools
from ..k8s.quantity import quantity_value
from ..k8s.scheduling import node_allocatable
from .nodes import NodeList, read_nodes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .facts import ClusterFacts

KUBELET_MAX_PODS = 110
"""The kubelet's default ``maxPods`` (``--max-pods``, KubeletConfiguration ``maxPods``): the pods a node takes when
a described pool does not say."""

MAX_POOLS = 1_000
"""Most pools a cluster may state, its node list's and its facts' together: every profile is judged against every
pool (about a millisecond each), and clouds cap a cluster's node pools below it (AKS at 100, EKS's managed node
groups at 30 by default). 10,000 pools of one node each made ``validate`` of the builtin profiles take a minute and
a half."""

BASIC_RESOURCES = ("cpu", "memory", "ephemeral-storage")
"""What every node has some of: a described pool that does not state one leaves it unknown."""

_NODE_PATHS = {"labels": ("metadata", "labels"), "taints": ("spec", "taints"), "unschedulable": ("spec", "unschedulable")}


@dataclass
class Pool:
    """One pool of like nodes, whichever source states it.

    Attributes:
        name: The pool's name (a pool label's value, or the name in ``node_pools``).
        node: What the scheduler's filters read of one of its nodes, as ``kubectl get nodes -o json`` prints a node:
            the first listed node, or one built from the described pool.
        nodes: Its listed nodes (``[]`` for a pool only described).
        listed: The node list its nodes come from, or ``None``.
        group: Its listed nodes as :func:`kfdefaults.k8s.nodes.node_pools` groups them, or ``None``.
        facts: The facts file, when ``node_pools`` describes it (by :attr:`name`).
        unknown: Resources the pool does not state, left unchecked (see the module's description).
        notes: What the two sources disagree on, each with both places.
    """

    name: str
    node: dict[str, Any]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    listed: NodeList | None = None
    group: NodePool | None = None
    facts: ClusterFacts | None = None
    unknown: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    @property
    def kinds(self) -> list[list[dict[str, Any]]]:
        """Its nodes by what the scheduler's filters tell apart (:attr:`kfdefaults.k8s.nodes.NodePool.kinds`); a
        described pool's one node, else."""
        return self.group.kinds if self.group is not None else [[self.node]]

    def domains(self, level: str) -> dict[str, list[dict[str, Any]]]:
        """Its listed nodes, all labels kept, by their value of the topology label ``level``
        (:meth:`kfdefaults.k8s.nodes.NodePool.domains`); ``{}`` for a pool only described."""
        return self.group.domains(level) if self.group is not None else {}

    def described(self, *path: str) -> Any:
        """The fact ``node_pools.NAME.<path>`` of this pool, or ``None``."""
        return self.facts.get("node_pools", self.name, *path) if self.facts is not None else None

    @property
    def bounds(self) -> tuple[int | None, int | None]:
        """``(min, max)`` nodes the pool may have: the facts' ``nodes`` (a number is the max), else the nodes listed
        now as both; ``None`` where unknown."""
        stated = self.described("nodes")
        if isinstance(stated, int):
            return None, stated
        if isinstance(stated, dict):
            return stated.get("min"), stated.get("max")
        return (len(self.nodes), len(self.nodes)) if self.listed is not None else (None, None)

    @property
    def price(self) -> float | None:
        """``price_per_node_hour`` (any currency), or ``None``."""
        return self.described("price_per_node_hour")

    @property
    def allocatable(self) -> dict[str, Fraction]:
        """What one of its nodes offers (its allocatable, else capacity), as exact amounts."""
        return node_allocatable(self.node)

    def location(self, *fact: str | int, node: dict[str, Any] | None = None) -> Location:
        """Where a fact of the pool is written, as a path of a described pool (``"allocatable", "nvidia.com/gpu"``,
        ``"taints", 0``, ``"labels", KEY``, ``"nodes"``, ``"price_per_node_hour"``; ``()``: the pool itself): in the
        node list for what its nodes say (``node``'s, one of :attr:`nodes`; else the first's), in the facts file for
        what only they say."""
        if self.listed is not None and (not fact or fact[0] in (*_NODE_PATHS, "allocatable")):
            node = node if node is not None else self.node
            if not fact:
                return self.listed.location(node, "metadata", "name")
            if fact[0] == "allocatable":
                status = node.get("status") or {}
                kind = "allocatable" if status.get("allocatable") is not None else "capacity"
                return self.listed.location(node, "status", kind, *fact[1:])
            return self.listed.location(node, *_NODE_PATHS[str(fact[0])], *fact[1:])
        if self.facts is not None and not fact:  # the pool's name
            return self.facts.document.location(("node_pools", self.name), key=True)
        if self.facts is not None and (self.listed is None or self.described(str(fact[0])) is not None):
            return self.facts.location("node_pools", self.name, *fact)
        if self.listed is not None:  # the nodes now: the list's items
            return self.listed.document.location(("items",) if self.listed.is_list else ())
        return Location("<pools>")


def load_pools(facts: ClusterFacts | None, nodes_file: str | None, inputs: Inputs | None = None) -> list[Pool] | None:
    """The cluster's pools (see the module's description): the listed ones in the order of the list, then those only
    described, in the order of the facts file; ``None`` when neither source states a pool.

    Args:
        facts: The cluster's facts, or ``None``.
        nodes_file: The ``--nodes`` file, which wins over the facts' ``nodes``; ``None``: the facts' own.
        inputs: Records the node list read.

    Raises:
        ProfileError: the node list cannot be read or is not one (located), the facts name one that is not there
            (at the facts' ``nodes`` line), or there are more than :data:`MAX_POOLS` pools (at the first past it).
    """
    listed = _node_list(facts, nodes_file, inputs)
    described = (facts.get("node_pools") or {}) if facts is not None else {}
    if listed is None and not described:
        return None
    pools = []
    for group in node_pools(listed.nodes) if listed is not None else []:
        pool = Pool(group.name, group.nodes[0], group.nodes, listed, group, facts if group.name in described else None)
        pool.notes += _disagreements(pool)
        pools.append(pool)
    taken = {p.name for p in pools}
    for name in described:
        if name not in taken:
            pools.append(_described_pool(name, facts))
    if len(pools) > MAX_POOLS:
        raise ProfileError([Finding(pools[MAX_POOLS].location(), "", f"more than {MAX_POOLS:,} node pools: kfdefaults "
                                    "judges every profile against each pool, and reads at most that many")])
    return pools


def _node_list(facts: ClusterFacts | None, nodes_file: str | None, inputs: Inputs | None) -> NodeList | None:
    if nodes_file is not None:
        return read_nodes(nodes_file, inputs)
    named = facts.get("nodes") if facts is not None else None
    if facts is None or named is None:
        return None
    path = facts.beside("nodes", what="node list", how="kubectl get nodes -o json", inputs=inputs)
    return read_nodes(path, inputs, pipe=False)


def _described_pool(name: str, facts: ClusterFacts) -> Pool:
    """A pool built from ``node_pools.NAME`` alone, as a node of it would print."""
    stated = dict(facts.get("node_pools", name, "allocatable") or {})
    allocatable = {"pods": KUBELET_MAX_PODS, **stated}
    node = {"metadata": {"name": name, "labels": dict(facts.get("node_pools", name, "labels") or {})},
            "spec": {"taints": [dict(t) for t in facts.get("node_pools", name, "taints") or []]},
            "status": {"allocatable": allocatable}}
    return Pool(name, node, facts=facts, unknown=tuple(r for r in BASIC_RESOURCES if r not in stated))


def _disagreements(pool: Pool) -> list[str]:
    """Notes for what ``node_pools.NAME`` says otherwise than the pool's listed nodes."""
    notes = []
    allocatable = ((pool.node.get("status") or {}).get("allocatable") or (pool.node.get("status") or {}).get("capacity")
                   or {})
    facts = pool.facts
    for resource, amount in (pool.described("allocatable") or {}).items() if facts is not None else ():
        if quantity_value(amount) != quantity_value(allocatable.get(resource, 0)):
            stated = facts.location("node_pools", pool.name, "allocatable", resource)
            notes.append(f"the facts give {resource} {amount} ({stated}) but the nodes "
                         f"{allocatable.get(resource, 'none')} ({pool.location('allocatable', resource)}): the nodes count")
    labels = (pool.node.get("metadata") or {}).get("labels") or {}
    for key, value in (pool.described("labels") or {}).items():
        if labels.get(key) != value:
            notes.append(f"the facts give label {key}={value} but the nodes "
                         f"{key + '=' + labels[key] if key in labels else 'no such label'}: the nodes count")
    return notes
