"""What :mod:`.fit` finds, as data: a pool's verdict, the job's reserve, the whole report, and where a figure or a
request is written. Both :mod:`.fit`, which fills them, and :mod:`.fit_causes`, which says why a pool is not a
fit, use them; neither imports the other for them."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

from ..errors import Location
from ..k8s.scheduling import Verdict
from ..validate.pools import Pool


class Origin(NamedTuple):
    """Where the profile asks for what stops the fit.

    Attributes:
        layer: The layer that wrote it (``cluster`` for the cluster's PodTemplate).
        location: ``FILE:LINE:COLUMN``.
        path: The profile's dotted path of the value.
    """

    layer: str | None
    location: Location
    path: str


class Figure(NamedTuple):
    """A number and where it is written.

    Attributes:
        value: The number (seconds, nodes, a price).
        what: The setting or fact it is (``elastic.run_policy.active_deadline_seconds``, ``flyte.task_timeout``).
        at: ``FILE:LINE:COLUMN``.
        layer: The profile layer that wrote it; ``None`` for a fact of the cluster.
    """

    value: Any
    what: str
    at: Location
    layer: str | None = None


@dataclass
class JudgedPod:
    """The pod judged against the pools.

    Attributes:
        spec: Its PodSpec, camelCase.
        source: ``"backend"`` (the pod Flyte's backend builds, with the cluster's template) or ``"profile"``.
        template: The cluster's template file, for ``"backend"``.
        requests: What the scheduler counts it requesting (:func:`kfdefaults.k8s.scheduling.pod_requests`):
            resource -> exact amount (cores, bytes, a count).
        origins: Resource -> where its largest request is written (:func:`.fit_causes.request_origin`); filled
            by :func:`fit`.
    """

    spec: dict[str, Any]
    source: str
    template: str | None
    requests: dict[str, Fraction]
    origins: dict[str, Origin | None] = field(default_factory=dict)

    @property
    def gpus(self) -> Fraction:
        """The GPUs it requests: every ``*/gpu`` extended resource (``nvidia.com/gpu``, ``amd.com/gpu``)."""
        return sum((v for r, v in self.requests.items() if "/" in r and r.rsplit("/", 1)[1] == "gpu"), Fraction(0))


@dataclass
class Reserve:
    """What the job holds in a pool at worst: its largest size there for its whole deadline.

    Attributes:
        pods: Pods held (``nnodes``' maximum, or fewer where the pool has not the nodes).
        nodes: Nodes they fill.
        gpus: GPUs they hold.
        deadline: The deadline, or ``None`` when unknown (then no hours nor price).
        price: The pool's ``price_per_node_hour``, or ``None``.
    """

    pods: int
    nodes: int
    gpus: Fraction
    deadline: Figure | None
    price: Figure | None

    @property
    def node_hours(self) -> Fraction | None:
        return None if self.deadline is None else self.nodes * Fraction(self.deadline.value, 3600)

    @property
    def gpu_hours(self) -> Fraction | None:
        return None if self.deadline is None else self.gpus * Fraction(self.deadline.value, 3600)

    @property
    def cost(self) -> Fraction | None:
        """Node-hours times the price per node-hour, in the price's currency."""
        hours = self.node_hours
        return None if hours is None or self.price is None else hours * Fraction(str(self.price.value))


class FabricGap(NamedTuple):
    """A job of GPUs on more than one node that requests none of the RDMA fabric its pool's nodes offer: NCCL then
    talks over TCP sockets, several times slower, and nothing fails (:func:`.fit_causes.fabric_gap`).

    Attributes:
        offered: What a node of the pool offers, each as text: ``32 vpc.amazonaws.com/efa``, or the label the
            cluster's facts name as a fabric (``fabric_labels``): ``label example.com/roce``.
        advice: What to extend: ``extend fabric-efa``.
        profile: Where the job is made one of several nodes (its ``nnodes``), else where it requests its GPUs.
        pool: Where the pool's fact is written (its allocatable amount, or its label).
        named_by: Where the facts name the label as a fabric, for a label; else ``None``.
        resource: The device the advice names (``vpc.amazonaws.com/efa``); ``None`` for a label.
    """

    offered: tuple[str, ...]
    advice: str
    profile: Origin | None
    pool: Location
    named_by: Location | None = None
    resource: str | None = None

    def offer(self, pool: str) -> str:
        """``pool p5 offers 32 vpc.amazonaws.com/efa per node``."""
        return f"pool {pool} offers {' and '.join(self.offered)} per node"

    def message(self, pool: str) -> str:
        """``pool p5 offers 32 vpc.amazonaws.com/efa per node; this job requests none: NCCL will use TCP sockets;
        extend fabric-efa``."""
        return f"{self.offer(pool)}; this job requests none: NCCL will use TCP sockets; {self.advice}"


@dataclass
class PoolFit:
    """One pool's verdict.

    Attributes:
        pool: The pool.
        verdicts: The scheduler's filters on the node judged (:data:`kfdefaults.k8s.scheduling.FILTER_ORDER`), a
            resource the pool leaves unknown taken out of ``NodeResourcesFit``'s reasons.
        node: The node judged: one that fits when the pod selects per-node labels, else the pool's first.
        usable: How many listed nodes take a pod of the job; ``None`` for a pool only described.
        per_node: Pods of the job one node holds (0: none).
        needed: ``(min, max)`` nodes ``nnodes`` needs, or ``None`` when a node holds none.
        have: The most nodes that may take a pod of the job (the facts' ``nodes`` less the listed nodes that take
            none, else those listed that take one, else ``None``), and where that is written.
        reserve: What the job holds there at worst (:func:`reserve`), when it fits.
        causes: Why it does not fit, each traced (:func:`.fit_causes.causes`); filled by :func:`fit`.
        others: The pool's other kinds of nodes that take no pod (a cordoned node, one with less memory): each
            kind's nodes and the filters' verdicts on its first.
        pending: Pods of the job that find no node in the pool, at its largest size there, and so stay Pending;
            ``None`` when unknown.
        fabric: The fabric of the pool the job does not ask for (:class:`FabricGap`), or ``None``; filled by
            :func:`fit`.
        takers: Its listed nodes that take a pod of the job, each with the pods it holds (``[]`` for a pool only
            described): the nodes of the topology domains (:mod:`.topology`).
        pod: The pod judged on this pool when a device count written ``auto`` is this pool's
            (:func:`kfdefaults.merge.auto.resolve_devices`), else ``None``: the report's pod.
    """

    pool: Pool
    verdicts: list[Verdict]
    node: dict[str, Any]
    usable: int | None
    per_node: int
    needed: tuple[int, int] | None
    have: Figure | None
    reserve: Reserve | None = None
    causes: list[Any] = field(default_factory=list)
    others: list[tuple[list[dict[str, Any]], list[Verdict]]] = field(default_factory=list)
    pending: int | None = None
    fabric: FabricGap | None = None
    takers: list[tuple[dict[str, Any], int]] = field(default_factory=list)
    pod: JudgedPod | None = None

    @property
    def schedulable(self) -> bool:
        """Whether one pod of the job passes every filter on a node of the pool."""
        return all(v.fits for v in self.verdicts) and (self.usable is None or self.usable > 0)

    @property
    def enough_nodes(self) -> bool | None:
        """Whether the pool may have the nodes the smallest job (``nnodes``' minimum) needs; ``None``: unknown."""
        if self.needed is None or self.have is None:
            return None
        return self.have.value >= self.needed[0]

    @property
    def fits(self) -> bool:
        """Schedulable, and not short of nodes for the smallest job."""
        return self.schedulable and self.enough_nodes is not False


@dataclass
class FitReport:
    """A profile against the cluster's pools.

    Attributes:
        profile: The profile's name.
        target: The SDK it was resolved for.
        pod: The pod judged.
        replicas: ``nnodes`` as ``(min, max)`` pods, and where it is set (``None``: the plugin's default, 1).
        deadline: The job's deadline (:func:`deadline`), or ``None``.
        pools: Each pool's verdict, in the pools' order.
        created: The pods the task creates (:func:`.topology.worker_pods`: the PyTorchJob's ``Worker``
            replicas, a JobSet's replicas).
        kueue: Kueue's ``waitForPodsReady`` clock (:func:`.kueue.kueue_clocks`) when the facts state Kueue, else ``None``.
        topology: The domains of the topology level the profile asks Kueue for, or ``fit --topology`` names
            (:class:`.topology.TopologyFit`); ``None`` when neither, or no pool lists nodes.
    """

    profile: str
    target: str
    pod: JudgedPod
    replicas: tuple[int, int]
    replicas_at: Figure | None
    deadline: Figure | None
    pools: list[PoolFit]
    created: int = 1
    kueue: Any = None
    topology: Any = None

    @property
    def fits(self) -> bool:
        """Whether the profile fits some pool."""
        return any(p.fits for p in self.pools)

    def pool_counts(self) -> dict[str, tuple[Origin | None, dict[str, Fraction | None]]]:
        """Each request the profile writes ``auto`` (a fabric device count): where it is written, and the count
        each pool was judged with (``None``: the pool offers none, so its pod requests none), in the pools' order."""
        found: dict[str, tuple[Origin | None, dict[str, Fraction | None]]] = {}
        for verdict in self.pools:
            judged = verdict.pod
            if judged is None:
                continue
            for name in judged.requests.keys() - self.pod.requests.keys():
                found.setdefault(name, (judged.origins.get(name), {}))
        for name, (_, counts) in found.items():
            for verdict in self.pools:
                counts[verdict.pool.name] = None if verdict.pod is None else verdict.pod.requests.get(name)
        return found
