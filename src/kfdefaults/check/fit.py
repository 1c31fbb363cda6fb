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
from ..merge.auto import device_autos, resolve_devices
from ..merge.origins import written_by
from ..backend.registered import is_multi_node, registered_pod_spec
from ..k8s.nodes import PER_NODE_LABELS
from ..k8s.scheduling import Verdict, filter_node, node_allocatable, pod_requests, scheduler_amounts
from ..merge.result import Resolved
from ..validate.pools import Pool
from .backend import backend_pod
from .fit_causes import causes, request_origin
from .fit_report import Figure, FitReport, JudgedPod, PoolFit, Reserve

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
    (:data:`kfdefaults.k8s.nodes.PER_NODE_LABELS`) or a node field (``matchFields``): then the nodes of one pool
    differ."""
    if any(k in PER_NODE_LABELS for k in spec.get("nodeSelector") or {}):
        return True
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or []:
        if not isinstance(term, dict):
            continue
        if term.get("matchFields") or any(isinstance(e, dict) and e.get("key") in PER_NODE_LABELS
                                          for e in term.get("matchExpressions") or []):
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


def judge_pool(pod: JudgedPod, pool: Pool, replicas: tuple[int, int]) -> PoolFit:
    """The verdict of one pool: the filters, pods per node, nodes needed and nodes it may have."""
    per_node_labels = pool.listed is not None and selects_per_node(pod.spec)
    judged = [(n, _without_unknown(filter_node(pod.spec, n), pool.unknown))
              for n in (pool.nodes if per_node_labels else [pool.node])]
    fitting = [(n, v) for n, v in judged if all(x.fits for x in v)]
    node, verdicts = (fitting or judged)[0]
    per_node = pods_per_node(pod.requests, node, pool.unknown)
    needed = (math.ceil(replicas[0] / per_node), math.ceil(replicas[1] / per_node)) if per_node else None
    most = pool.bounds[1]
    have = None if most is None else Figure(most, "nodes", pool.location("nodes"))
    if per_node_labels:
        have = Figure(len(fitting), "nodes", pool.location("nodes"))
    return PoolFit(pool, verdicts, node, len(fitting) if per_node_labels else None, per_node, needed, have)


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
        facts: ClusterFacts | None = None) -> FitReport:
    """``resolved`` against every pool: each pool's verdict, why not, and what the job holds where it fits.

    Args:
        resolved: The merged profile.
        pools: The cluster's pools (:func:`kfdefaults.validate.pools.load_pools`).
        cluster: The cluster's default PodTemplate: the pod judged is then the backend's (flytekit).
        facts: The cluster's facts, for the Flyte task timeout.
    """
    pod = pod_to_judge(resolved, cluster)
    pod.origins = {name: request_origin(resolved, pod, name, cluster) for name in pod.requests}
    replicas, replicas_at = replicas_of(resolved)
    limit = deadline(resolved, facts)
    verdicts = []
    offered = {p.name: p.allocatable for p in pools} if device_autos(resolved) else {}
    for pool in pools:
        judged, at = resolved, pod
        if offered:  # a device count written `auto`: this pool's (merge.auto.resolve_devices)
            judged = resolve_devices(resolved, offered, pool.name)
            at = pod_to_judge(judged, cluster)
            at.origins = {name: request_origin(judged, at, name, cluster) for name in at.requests}
        verdict = judge_pool(at, pool, replicas)
        verdict.causes = causes(judged, at, verdict, replicas_at, cluster)
        if verdict.fits:
            verdict.reserve = reserve(at, verdict, replicas, limit)
        verdicts.append(verdict)
    return FitReport(resolved.name, resolved.target.name, pod, replicas, replicas_at, limit, verdicts)
