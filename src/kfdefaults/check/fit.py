"""Would a profile's pods schedule on each node pool, how many nodes its job needs there, and what it holds.

One function per concern, each typed on the merged profile (:class:`~kfdefaults.merge.result.Resolved`) and the
cluster's pools (:class:`~kfdefaults.validate.pools.Pool`):

* :func:`pod_to_judge`: the pod a worker really gets. For flytekit with the cluster's default PodTemplate known,
  the pod Flyte's backend builds (:func:`.backend.backend_pod`: the registered pod spec laid over the template,
  the primary container renamed ``pytorch`` in a PyTorchJob); else the merged profile's pod spec as a task
  registers it (:func:`kfdefaults.backend.registered.registered_pod_spec`). What neither knows is left out: the
  task's own ``@task(requests=...)``, what propeller's configuration adds (GPU tolerations, node selectors).
* :func:`judge_pool`: the scheduler's filters (:func:`kfdefaults.k8s.scheduling.filter_node`) on a node of the
  pool, or on each listed node when the pod selects a per-node label (a host name, a zone); then how many pods
  of the job a node holds (:func:`pods_per_node`) and so how many nodes ``nnodes`` needs. Every ``Worker``
  replica of the PyTorchJob gets the same pod (:mod:`kfdefaults.backend.pytorchjob`) and the training operator
  adds no anti-affinity: the scheduler may put several on one node when its resources allow.
* :func:`deadline` and :func:`reserve`: what the job holds at worst: its largest size (``nnodes``' maximum, as
  far as the pool has nodes for it) for its whole deadline.

Why a pool is not a fit, each reason traced to the profile line and the pool fact behind it, is :mod:`.fit_causes`;
what both find, as data, is :mod:`.fit_report`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Any, Sequence

from ..backend.cluster import ClusterTemplate
from ..backend.elastic_config import nnodes_range
from ..backend.registered import is_multi_node, registered_pod_spec
from ..k8s.nodes import is_per_node_label
from ..k8s.scheduling import Verdict, filter_node, node_allocatable, pod_requests, scheduler_amounts
from ..merge.auto import device_autos, resolve_devices
from ..merge.origins import written_by
from ..merge.result import Resolved
from ..validate.pools import Pool
from .backend import backend_pod
from .fit_causes import causes, fabric_gap, request_origin
from .fit_report import Figure, FitReport, JudgedPod, PoolFit, Reserve
from .topology import asked, topology_fit, worker_pods

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..validate.facts import ClusterFacts


def pod_to_judge(resolved: Resolved, cluster: ClusterTemplate | None) -> JudgedPod:
    """The pod a worker of a task on ``resolved`` gets (see the module's description)."""
    if cluster is not None and resolved.target.name == "flytekit":
        spec, source, template = backend_pod(resolved, cluster), "backend", cluster.path
    else:
        spec, source, template = registered_pod_spec(resolved), "profile", None
    return JudgedPod(spec, source, template, pod_requests(spec))


def selects_per_node(spec: dict[str, Any]) -> bool:
    """Whether the pod's ``nodeSelector`` or required node affinity names a per-node label
    (:func:`kfdefaults.k8s.nodes.is_per_node_label`: a host name, a zone, a rack) or a node field (``matchFields``):
    then the nodes of one kind differ."""
    if any(is_per_node_label(k) for k in spec.get("nodeSelector") or {}):
        return True
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or []:
        if not isinstance(term, dict):
            continue
        if term.get("matchFields") or any(isinstance(e, dict) and isinstance(e.get("key"), str)
                                          and is_per_node_label(e["key"]) for e in term.get("matchExpressions") or []):
            return True
    return False


def pods_per_node(requests: dict[str, Fraction], node: dict[str, Any], unknown: Sequence[str] = ()) -> int:
    """How many pods of these ``requests`` an empty node holds: the node's allowed pods, and for each resource
    requested its allocatable amount divided by the request, rounded down, as the scheduler counts them
    (:func:`kfdefaults.k8s.scheduling.scheduler_amounts`); resources in ``unknown`` do not count."""
    allocatable = scheduler_amounts(node_allocatable(node))
    counts = [allocatable.get("pods", 0)]
    for name, want in scheduler_amounts(requests).items():
        if name != "pods" and want > 0 and name not in unknown:
            counts.append(allocatable.get(name, 0) // want)
    return max(0, min(counts))


def _without_unknown(verdicts: list[Verdict], unknown: Sequence[str]) -> list[Verdict]:
    drop = {f"Insufficient {name}" for name in unknown}
    return [replace(v, reasons=tuple(r for r in v.reasons if r not in drop)) for v in verdicts]


def judge_pool(pod: JudgedPod, pool: Pool, replicas: tuple[int, int], created: int | None = None) -> PoolFit:
    """The verdict of one pool: the filters on one node of each kind (:attr:`kfdefaults.validate.pools.Pool.kinds`;
    on each node when the pod selects a per-node label), the nodes that take a pod, pods per node, nodes needed, the
    nodes it may have, and how many of the ``created`` pods (default: ``nnodes``' maximum) find no node there."""
    per_node_labels = pool.listed is not None and selects_per_node(pod.spec)
    groups = [[n] for n in pool.nodes] if per_node_labels else pool.kinds
    judged = [(g, _without_unknown(filter_node(pod.spec, g[0]), pool.unknown)) for g in groups]
    takes = [all(x.fits for x in v) for _, v in judged]
    fitting = [g for (g, _), ok in zip(judged, takes) if ok]
    group, verdicts = next((gv for gv, ok in zip(judged, takes) if ok), judged[0])
    others = [(g, v) for (g, v), ok in zip(judged, takes) if not ok and g is not group]
    node = group[0]
    per_node = pods_per_node(pod.requests, node, pool.unknown)
    needed = (math.ceil(replicas[0] / per_node), math.ceil(replicas[1] / per_node)) if per_node else None
    usable = sum(len(g) for g in fitting) if pool.listed is not None else None
    most = pool.bounds[1] if pool.described("nodes") is not None or pool.listed is None else None
    if usable is not None:  # the nodes like the one judged: those that take a pod, else its kind's; a node added
        # later has none of the per-node labels the pod selects
        alike = usable if fitting else len(group)
        most = alike if most is None or per_node_labels else max(alike, most - (len(pool.nodes) - alike))
    have = None if most is None else Figure(most, "nodes", pool.location("nodes"))
    capacity = None
    if usable is not None:
        capacity = sum(len(g) * pods_per_node(pod.requests, g[0], pool.unknown) for g in fitting)
        capacity += (most - usable) * per_node if fitting and most is not None else 0
    elif most is not None:
        capacity = most * per_node
    pending = None if capacity is None or not fitting else max(0, (created or replicas[1]) - capacity)
    takers = [(n, pods_per_node(pod.requests, g[0], pool.unknown)) for g in fitting for n in g] if usable is not None else []
    return PoolFit(pool, verdicts, node, usable, per_node, needed, have, others=others, pending=pending, takers=takers)


def replicas_of(resolved: Resolved) -> tuple[tuple[int, int], Figure | None]:
    """``nnodes`` as ``(min, max)`` pods, and where it is set."""
    setter = written_by(resolved.fragments, ("elastic", "nnodes"))
    nnodes = resolved.elastic_settings.get("nnodes", 1)
    at = Figure(nnodes, "elastic.nnodes", setter.origin.location, setter.origin.layer) if setter is not None else None
    return nnodes_range(nnodes), at


def deadline(resolved: Resolved, facts: ClusterFacts | None) -> Figure | None:
    """How long the job may run at most, in seconds: the smaller of ``elastic.run_policy.active_deadline_seconds``
    (the PyTorchJob's ``runPolicy.activeDeadlineSeconds``, after which the training operator stops every pod; a
    single-pod task has no run policy) and the facts' ``flyte.task_timeout`` (after which Flyte aborts the task and
    deletes its job); ``None`` when neither is known."""
    found = []
    policy = resolved.elastic_settings.get("run_policy") or {}
    seconds = policy.get("active_deadline_seconds") if isinstance(policy, dict) else None
    if isinstance(seconds, int) and seconds > 0 and is_multi_node(resolved.elastic_settings):
        setter = written_by(resolved.fragments, ("elastic", "run_policy", "active_deadline_seconds"))
        if setter is not None:
            found.append(Figure(seconds, "elastic.run_policy.active_deadline_seconds", setter.origin.location,
                                setter.origin.layer))
    timeout = facts.get("flyte", "task_timeout") if facts is not None else None
    if facts is not None and isinstance(timeout, int):
        found.append(Figure(timeout, "flyte.task_timeout", facts.location("flyte", "task_timeout")))
    return min(found, key=lambda f: f.value) if found else None


def reserve(pod: JudgedPod, verdict: PoolFit, replicas: tuple[int, int], limit: Figure | None) -> Reserve | None:
    """What the job holds in the pool at worst (see :class:`Reserve`); ``None`` when a node holds none of its pods."""
    if not verdict.per_node or verdict.needed is None:
        return None
    pods = replicas[1]
    if verdict.have is not None:
        pods = min(pods, verdict.have.value * verdict.per_node)
    price = verdict.pool.price
    price_figure = None if price is None else Figure(price, "price_per_node_hour",
                                                     verdict.pool.location("price_per_node_hour"))
    return Reserve(pods, math.ceil(pods / verdict.per_node), pod.gpus * pods, limit, price_figure)


def fit(resolved: Resolved, pools: Sequence[Pool], *, cluster: ClusterTemplate | None = None,
        facts: ClusterFacts | None = None, topology: str | None = None) -> FitReport:
    """``resolved`` against every pool: each pool's verdict, why not, and what the job holds where it fits.

    Args:
        resolved: The merged profile.
        pools: The cluster's pools (:func:`kfdefaults.validate.pools.load_pools`).
        cluster: The cluster's default PodTemplate: the pod judged is then the backend's (flytekit).
        facts: The cluster's facts, for the Flyte task timeout, Kueue and the labels that name a fabric.
        topology: A topology level (a node label) to report the domains of, in place of the one the profile asks
            Kueue for (:func:`.topology.asked`).
    """
    pod = pod_to_judge(resolved, cluster)
    pod.origins = {name: request_origin(resolved, pod, name, cluster) for name in pod.requests}
    replicas, replicas_at = replicas_of(resolved)
    limit, created = deadline(resolved, facts), worker_pods(resolved)
    verdicts = []
    offered = {p.name: p.allocatable for p in pools} if device_autos(resolved) else {}
    for pool in pools:
        judged, at = resolved, pod
        if offered:  # a device count written `auto`: this pool's (merge.auto.resolve_devices)
            judged = resolve_devices(resolved, offered, pool.name)
            at = pod_to_judge(judged, cluster)
            at.origins = {name: request_origin(judged, at, name, cluster) for name in at.requests}
        verdict = judge_pool(at, pool, replicas, created)
        verdict.pod = at if offered else None
        verdict.causes = causes(judged, at, verdict, replicas_at, cluster)
        verdict.fabric = fabric_gap(at, verdict, replicas_at, facts)
        if verdict.fits:
            verdict.reserve = reserve(at, verdict, replicas, limit)
        verdicts.append(verdict)
    kueue = None
    if facts is not None and facts.get("kueue") is not None:
        from .kueue import kueue_clocks  # lazy: the clocks, only where the facts state Kueue

        kueue = kueue_clocks(resolved, facts)[0]
    level = asked(resolved, topology)
    domains = topology_fit(level, verdicts, created) if level is not None else None
    return FitReport(resolved.name, resolved.target.name, pod, replicas, replicas_at, limit, verdicts, created, kueue,
                     domains)
