"""Why a pool is not a fit, each reason traced to the profile line that asks and the pool fact that refuses, and
the warning of a profile that fits no pool.

A reason is the scheduler's own (``Insufficient nvidia.com/gpu``, ``node(s) had untolerated taint {KEY: VALUE}``,
``node(s) didn't match Pod's node affinity/selector``, ``node(s) were unschedulable``, ``Too many pods``) or
kfdefaults' (the pool has fewer nodes than ``nnodes`` needs). Each :class:`Cause` says, beside it, what the pod
asks and the pool offers, where the profile asks it (the highest layer that wrote the value: the GPU limit, the
``nodeSelector`` key, the ``tolerations`` list; the cluster's PodTemplate where the backend's pod took it from
there) and where the pool's fact is written (the node list's, or the facts file's line).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

from ..backend.cluster import LAYER as CLUSTER_LAYER
from ..backend.cluster import ClusterTemplate
from ..backend.registered import PYTORCH_CONTAINER
from ..errors import Finding, Location
from ..k8s.quantity import quantity_text, quantity_value, unit_of
from ..k8s.resources import is_fabric_device
from ..k8s.scheduling import BLOCKING_EFFECTS, node_allocatable, required_node_affinity_matches, taint_string
from ..k8s.tolerations import Tolerations, tolerates
from ..merge.origins import Setter, pod_leaf, written_by
from ..merge.result import Resolved
from ..paths import format_path

from .fit_report import FabricGap, Figure, FitReport, JudgedPod, Origin, PoolFit

NODES_PLUGIN = "nodes"
"""kfdefaults' own check beside the scheduler's filters: the pool may have fewer nodes than the job needs."""

_TOLERATIONS = ["spec", "tolerations"]
_REQUIRED = ["spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"]




@dataclass(frozen=True)
class Cause:
    """One reason a pool is not a fit.

    Attributes:
        plugin: The scheduler plugin (``NodeResourcesFit``...), or :data:`NODES_PLUGIN`.
        reason: Its reason, as the scheduler words it.
        detail: What the pod asks and the pool offers.
        profile: Where the profile asks it; ``None`` when nothing in it does (a cordoned pool, an untolerated
            taint with no tolerations at all).
        pool: Where the pool's fact is written.
        source: The Go file and function the rule follows (kfdefaults' own for :data:`NODES_PLUGIN`).
    """

    plugin: str
    reason: str
    detail: str
    profile: Origin | None
    pool: Location
    source: str


def _setter(resolved: Resolved, steps: list) -> Setter | None:
    """The highest layer (but the cluster's) that writes the pod value at ``steps`` (PodTemplateSpec shape)."""
    return written_by(resolved.fragments, pod_leaf(steps), skip=(CLUSTER_LAYER,))


def _origin(setter: Setter | None, steps: list) -> Origin | None:
    return None if setter is None else Origin(setter.origin.layer, setter.origin.location, format_path(pod_leaf(steps)))


def _template_origin(cluster: ClusterTemplate | None, steps: list) -> Origin | None:
    """Where the cluster's template writes the pod-level value at ``steps`` (``["spec", "nodeSelector", KEY]``)."""
    if cluster is None:
        return None
    node: Any = {"spec": cluster.raw_spec}
    for step in steps:
        node = node.get(step) if isinstance(node, dict) else None
    return None if node is None else Origin(CLUSTER_LAYER, cluster.location(*steps[1:]), format_path(pod_leaf(steps)))


def _where(resolved: Resolved, cluster: ClusterTemplate | None, steps: list) -> Origin | None:
    return _origin(_setter(resolved, steps), steps) or _template_origin(cluster, steps)


def request_origin(resolved: Resolved, pod: JudgedPod, resource: str, cluster: ClusterTemplate | None) -> Origin | None:
    """Where the largest request of ``resource`` among the pod's containers is written (its request, else its
    limit, which the API server makes the request); pod-level ``resources`` and ``overhead`` else."""
    best = None
    for field in ("containers", "initContainers"):
        for container in pod.spec.get(field) or []:
            for kind in ("requests", "limits"):
                written = ((container.get("resources") or {}).get(kind) or {}).get(resource)
                if written is not None:
                    value = quantity_value(written)
                    if value is not None and (best is None or value > best[0]):
                        best = (value, field, container.get("name"), kind)
                    break
    if best is None:
        for steps in (["spec", "resources", "requests", resource], ["spec", "overhead", resource]):
            found = _where(resolved, cluster, steps)
            if found is not None:
                return found
        return None
    _, field, name, kind = best
    if name == PYTORCH_CONTAINER and pod.source == "backend" and resolved.primary_container_name != name:
        name = resolved.primary_container_name  # the backend renamed the primary container
    steps = ["spec", field, ("name", name), "resources", kind, resource]
    found = _origin(_setter(resolved, steps), steps)
    if found is None and cluster is not None:
        for index, container in cluster.layers_for(field, name, resolved.primary_container_name):
            if resource in ((container.get("resources") or {}).get(kind) or {}):
                return Origin(CLUSTER_LAYER, cluster.location(field, index, "resources", kind, resource),
                              format_path(pod_leaf(steps)))
    return found


def _pool_location(verdict: PoolFit, *fact: Any) -> Location:
    """A fact of the node judged (the first of its kind, or the one node when the pod selects per-node labels)."""
    return verdict.pool.location(*fact, node=verdict.node)


def _taint_cause(resolved: Resolved, pod: JudgedPod, verdict: PoolFit, cluster: ClusterTemplate | None,
                 reason: str, source: str) -> Cause:
    tolerations = Tolerations([t for t in pod.spec.get("tolerations") or [] if isinstance(t, dict)])
    taints = (verdict.node.get("spec") or {}).get("taints") or []
    index = next((i for i, t in enumerate(taints) if t.get("effect") in BLOCKING_EFFECTS
                  and not tolerations.tolerate(t)), 0)
    taint = taints[index] if taints else {}
    setter = _setter(resolved, _TOLERATIONS)
    detail = f"no toleration of the pod tolerates the pool's taint `{taint_string(taint)}`"
    replaced = [f for f in resolved.fragments[:setter.index] if f.layer != CLUSTER_LAYER
                and any(isinstance(x, dict) and tolerates(x, taint)
                        for x in (f.pod_template.get("spec") or {}).get("tolerations") or [])] if setter else []
    if replaced and setter is not None:
        lower = replaced[-1]
        detail += (f"; the {lower.layer} layer's tolerations ({lower.location(('pod_template', 'spec', 'tolerations'))}) "
                   f"tolerated it, but the {setter.origin.layer} layer's list replaces them whole (tolerations have "
                   "no merge key)")
    origin = _origin(setter, _TOLERATIONS) or _template_origin(cluster, _TOLERATIONS)
    return Cause("TaintToleration", reason, detail, origin, _pool_location(verdict, "taints", index), source)


def terms_text(required: Any) -> str:
    """A required node affinity as text: its terms ORed, each term's requirements ANDed (``gpu In [h100]``)."""
    terms = []
    for term in (required or {}).get("nodeSelectorTerms") or []:
        parts = [f"{e.get('key')} {e.get('operator')}" + (f" [{', '.join(map(str, e['values']))}]" if e.get("values") else "")
                 for kind in ("matchExpressions", "matchFields") for e in (term or {}).get(kind) or []
                 if isinstance(e, dict)]
        terms.append(" and ".join(parts) or "(an empty term)")
    return " or ".join(f"`{t}`" for t in terms) or "no term"


def _affinity_causes(resolved: Resolved, pod: JudgedPod, verdict: PoolFit, cluster: ClusterTemplate | None,
                     reason: str, source: str) -> list[Cause]:
    """The ``nodeSelector`` keys the pool's nodes do not have, else the required node affinity that matches none of
    their labels, naming the ``nodeSelector`` that does match and where it is set: the two may come from two layers,
    each fitting some pool, and together none."""
    labels = (verdict.node.get("metadata") or {}).get("labels") or {}
    selector = pod.spec.get("nodeSelector") or {}
    required = ((pod.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    affinity_matches = required is not None and required_node_affinity_matches(
        {"affinity": pod.spec.get("affinity")}, verdict.node)
    found = []
    for key, value in selector.items():
        if labels.get(key) != value:
            has = f"`{key}: {labels[key]}`" if key in labels else f"no label `{key}`"
            detail = f"nodeSelector `{key}: {value}`: the pool's nodes have {has}"
            if affinity_matches:
                where = _where(resolved, cluster, _REQUIRED)
                detail += (f", though its required node affinity ({terms_text(required)}) matches them"
                           + (f" (at [{where.layer}] {where.location})" if where else ""))
            found.append(Cause("NodeAffinity", reason, detail, _where(resolved, cluster, ["spec", "nodeSelector", key]),
                               _pool_location(verdict, "labels", key) if key in labels else _pool_location(verdict),
                               source))
    if not found:
        detail = f"the required node affinity ({terms_text(required)}) matches none of the pool's labels"
        matched = [(k, _where(resolved, cluster, ["spec", "nodeSelector", k])) for k in selector]
        if matched:
            detail += ", though its nodeSelector does (" + ", ".join(
                f"`{k}: {selector[k]}`" + (f" at [{o.layer}] {o.location}" if o else "") for k, o in matched) + ")"
        found.append(Cause("NodeAffinity", reason, detail, _where(resolved, cluster, _REQUIRED),
                           _pool_location(verdict, "labels"), source))
    return found


def _resource_cause(resolved: Resolved, pod: JudgedPod, verdict: PoolFit, cluster: ClusterTemplate | None,
                    reason: str, source: str) -> Cause:
    if reason == "Too many pods":
        pods = node_allocatable(verdict.node).get("pods")
        detail = ("the pool's nodes allow no pods: their status.allocatable has no `pods`" if pods is None else
                  "the pool's nodes allow no pods: their status.allocatable.pods is 0" if pods == 0 else
                  f"the pool's nodes allow {quantity_text(pods, 'pods')} pods each")
        return Cause("NodeResourcesFit", reason, detail, None, _pool_location(verdict, "allocatable", "pods"), source)
    resource = reason.removeprefix("Insufficient ")
    offered = node_allocatable(verdict.node).get(resource)
    asked = quantity_text(pod.requests.get(resource), resource)
    shown = quantity_text(offered, resource, unit_of(asked))  # one unit for both: 1000Gi beside 174.6Gi
    if offered is not None and shown == asked:
        shown = quantity_text(offered, resource, unit_of(asked), digits=3)
    detail = f"the pod requests {asked} {resource}, a node offers {shown}"
    return Cause("NodeResourcesFit", reason, detail, request_origin(resolved, pod, resource, cluster),
                 _pool_location(verdict, "allocatable", resource), source)


def causes(resolved: Resolved, pod: JudgedPod, verdict: PoolFit, replicas_at: Figure | None,
           cluster: ClusterTemplate | None) -> list[Cause]:
    """Every reason ``verdict``'s pool is not a fit, in the scheduler's order, then too few nodes."""
    found: list[Cause] = []
    for v in verdict.verdicts:
        for reason in v.reasons:
            if v.plugin == "NodeUnschedulable":
                found.append(Cause(v.plugin, reason, "the node is cordoned (spec.unschedulable)",
                                   _where(resolved, cluster, _TOLERATIONS), _pool_location(verdict, "unschedulable"),
                                   v.source))
            elif v.plugin == "TaintToleration":
                found.append(_taint_cause(resolved, pod, verdict, cluster, reason, v.source))
            elif v.plugin == "NodeAffinity":
                found += _affinity_causes(resolved, pod, verdict, cluster, reason, v.source)
            else:
                found.append(_resource_cause(resolved, pod, verdict, cluster, reason, v.source))
    if verdict.schedulable and verdict.enough_nodes is False and verdict.needed and verdict.have is not None:
        asked = replicas_at.value if replicas_at is not None else 1
        found.append(Cause(
            NODES_PLUGIN, f"{verdict.needed[0]} nodes needed, {verdict.have.value} at most",
            f"nnodes {asked} needs {verdict.needed[0]} nodes of {verdict.per_node} pod(s) each to start; the pool "
            f"has at most {verdict.have.value}",
            None if replicas_at is None else Origin(replicas_at.layer, replicas_at.at, "elastic.nnodes"),
            verdict.have.at, "kfdefaults.check.fit judge_pool"))
    return found


class OtherKind(NamedTuple):
    """Nodes of a pool that take no pod of the job where others do, and why.

    Attributes:
        nodes: Their names, in the order of the list.
        reasons: The scheduler's reasons on the first of them.
        at: Where the first reason's fact is written on the first node (its ``spec.unschedulable``, taints,
            labels or allocatable amount).
    """

    nodes: list[str]
    reasons: tuple[str, ...]
    at: Location


_FACT = {"NodeUnschedulable": ("unschedulable",), "TaintToleration": ("taints",), "NodeAffinity": ("labels",)}


def other_kinds(verdict: PoolFit) -> list[OtherKind]:
    """The pool's other kinds of nodes that take no pod (:attr:`PoolFit.others`), with the scheduler's reasons and
    where the first is written."""
    found = []
    for nodes, verdicts in verdict.others:
        failed = next(v for v in verdicts if not v.fits)
        fact = _FACT.get(failed.plugin) or ("allocatable", failed.reasons[0].removeprefix("Insufficient ").replace(
            "Too many pods", "pods"))
        found.append(OtherKind([n["metadata"]["name"] for n in nodes], tuple(r for v in verdicts for r in v.reasons),
                               verdict.pool.location(*fact, node=nodes[0])))
    return found


def fit_warnings(report: FitReport, resolved: Resolved) -> list[Finding]:
    """The warnings of a profile's fit, each a function of the report: it fits no pool (:func:`misfit_warning`),
    pods of its job stay Pending wherever it fits (:func:`pending_warning`), and one per pool whose fabric the job
    does not ask for (:func:`fabric_warning`)."""
    found = [misfit_warning(report, resolved), pending_warning(report), *map(fabric_warning, report.pools)]
    return [f for f in found if f is not None]


FABRIC_FRAGMENTS = {"vpc.amazonaws.com/efa": "fabric-efa", "rdma/ib": "fabric-ib"}
"""The builtin fragment that requests a fabric device, by the device (profiles/fabric-*.yaml)."""


def fabric_advice(resource: str) -> str:
    """What to extend for a pool's fabric device: its builtin fragment, else ``fabric-ib`` with the device in place
    of ``rdma/ib`` (an RDMA shared device plugin's resource is the platform's name, an SR-IOV one is
    ``nvidia.com/...rdma...``)."""
    if resource in FABRIC_FRAGMENTS:
        return f"extend {FABRIC_FRAGMENTS[resource]}"
    return f"extend fabric-ib with `{resource}` in place of its rdma/ib"


def fabric_gap(pod: JudgedPod, verdict: PoolFit, replicas_at: Figure | None, facts: Any = None) -> FabricGap | None:
    """The fabric of ``verdict``'s pool the job does not ask for, or ``None``.

    A gap is a job whose pod requests GPUs (any ``*/gpu``) and runs on more than one node of the pool at its
    largest (``nnodes``' maximum over the pods a node holds, as far as the pool has the nodes), on a pool that takes
    its pod and whose nodes offer a fabric, when the pod requests no fabric device
    (:func:`kfdefaults.k8s.resources.is_fabric_device`: ``vpc.amazonaws.com/efa``, ``rdma/*``,
    ``nvidia.com/*rdma*``) of any container. A node offers a fabric when its allocatable holds a fabric device, or
    it carries a label the cluster's facts name in ``fabric_labels`` (``LABEL: FRAGMENT``, for a fabric no device
    plugin announces: RoCE through the host's network); for such a label, a pod on the host network
    (``hostNetwork: true``, what ``fabric-roce`` sets) asks for it. NCCL without the device finds no RDMA
    transport and uses TCP sockets (its ``NET/Socket``), and the job runs slower without failing.
    """
    if not pod.gpus or not verdict.schedulable or verdict.needed is None:
        return None
    nodes = verdict.needed[1] if verdict.have is None else min(verdict.needed[1], verdict.have.value)
    if nodes <= 1 or any(is_fabric_device(r) and amount > 0 for r, amount in pod.requests.items()):
        return None
    if replicas_at is not None:
        profile: Origin | None = Origin(replicas_at.layer, replicas_at.at, "elastic.nnodes")
    else:
        profile = next((pod.origins.get(r) for r in pod.requests if "/" in r and r.rsplit("/", 1)[1] == "gpu"), None)
    offer = fabric_offer(verdict.pool, verdict.node, facts)
    if offer is None or (offer.named_by is not None and pod.spec.get("hostNetwork") is True):
        return None
    return offer._replace(profile=profile)


def fabric_offer(pool: Any, node: dict[str, Any], facts: Any = None) -> FabricGap | None:
    """The fabric ``node`` of ``pool`` offers (see :func:`fabric_gap`), whatever a job asks, as a
    :class:`FabricGap` without the profile's line; ``None`` when it offers none."""
    offered = node_allocatable(node)
    order = list(FABRIC_FRAGMENTS)  # a device of a builtin fragment first: what the advice names
    devices = sorted((r for r, amount in offered.items() if is_fabric_device(r) and amount > 0),
                     key=lambda r: (order.index(r) if r in order else len(order), r))
    if devices:
        return FabricGap(tuple(f"{quantity_text(offered[r], r)} {r}" for r in devices), fabric_advice(devices[0]),
                         None, pool.location("allocatable", devices[0], node=node), resource=devices[0])
    named = (facts.get("fabric_labels") or {}) if facts is not None else {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    label = next((k for k in named if k in labels), None)
    if label is None:
        return None
    return FabricGap((f"the fabric of label `{label}`",), f"extend {named[label]}", None,
                     pool.location("labels", label, node=node), facts.location("fabric_labels", label))


def fabric_warning(verdict: PoolFit) -> Finding | None:
    """The warning of a pool whose fabric the job does not ask for (:attr:`PoolFit.fabric`), at the profile's
    ``nnodes`` (else its GPU request), naming the pool's fact at its line; ``None`` when there is none."""
    gap = verdict.fabric
    if gap is None:
        return None
    details = [f"the pool's at {gap.pool}" + (f", named a fabric by the cluster's facts at {gap.named_by}"
                                             if gap.named_by is not None else ""),
               "NCCL_DEBUG=INFO shows the transport NCCL chose: `NET/Socket` and `Using network Socket` for TCP"]
    if gap.profile is None:
        return Finding(Location(f"<pool {verdict.pool.name}>"), "", gap.message(verdict.pool.name), "warning",
                       details=details)
    return Finding(gap.profile.location, gap.profile.path, gap.message(verdict.pool.name), "warning",
                   gap.profile.layer, details)


def misfit_warning(report: FitReport, resolved: Resolved) -> Finding | None:
    """The warning of a profile that fits none of the pools: located at the profile line that stops the closest
    pool (the one with the fewest failing plugins, then the fewest reasons, then the first), naming that pool's
    facts; ``None`` when it fits one, or no pool is known."""
    if not report.pools or report.fits:
        return None
    closest = min(report.pools, key=lambda p: (len({c.plugin for c in p.causes}), len(p.causes)))
    first = next((c for c in closest.causes if c.profile is not None), None)
    count = len(report.pools)
    causes = [f"{c.reason}: {c.detail} (" + (f"set at [{c.profile.layer}] {c.profile.location}; " if c.profile
                                             else "") + f"the pool's at {c.pool})" for c in closest.causes]
    details = (f"the closest, `{closest.pool.name}` ({closest.pool.location()}), is stopped by: "
               + "".join(causes[:1]), *causes[1:],
               f"`kfdefaults fit {resolved.name}`, given the same folders and facts, shows every pool")
    message = f"fits none of the {count} node pool{'s' * (count != 1)}: the task would stay Pending"
    origin = first.profile if first is not None else None
    if origin is None:
        return Finding(Location(f"<profile {resolved.name}>"), "", message, "warning", details=details)
    return Finding(origin.location, origin.path, message, "warning", origin.layer, details)


def pending_warning(report: FitReport) -> Finding | None:
    """The warning of a job whose pods stay Pending in every pool it fits (``nnodes 1:8`` on 2 nodes: 6 of its 8
    ``Worker`` pods), at the ``nnodes`` line, with what those pods hold (:func:`pending_lines`); ``None`` when a pool
    it fits runs them all, or none is known to."""
    fitting = [v for v in report.pools if v.fits]
    if not fitting or any(v.pending is None or v.pending == 0 for v in fitting) or report.replicas_at is None:
        return None
    best = min(fitting, key=lambda v: v.pending or 0)
    at = report.replicas_at
    return Finding(at.at, "elastic.nnodes", f"{best.pending} of the {report.created} pods of nnodes {at.value} stay "
                   f"Pending in every pool it fits (in `{best.pool.name}`, the fewest)", "warning", at.layer,
                   tuple(pending_lines(report, best)))


def pending_lines(report: FitReport, verdict: PoolFit) -> list[str]:
    """What the pods of the job that find no node in ``verdict``'s pool (:attr:`PoolFit.pending`) hold, as
    sentences: under Kueue (the facts state it), quota for every pod from the workload's admission (Kueue admits a
    workload's pod sets whole), which ``waitForPodsReady`` does not give back once a ``Worker`` runs (Kueue counts a
    PyTorchJob ready when the training operator marks it Running: pkg/controller/jobs/kubeflow/kubeflowjob
    ``PodsReady``); else the namespace's ResourceQuota, which counts the requests of every pod not yet finished."""
    pending = verdict.pending or 0
    if not pending:
        return []
    running = report.created - pending
    totals = ", ".join(f"{quantity_text(amount * pending, name)} {name}" for name, amount in
                       sorted(report.pod.requests.items()) if amount) or "nothing"
    lines = [f"{running} run on the {verdict.usable if verdict.usable is not None else verdict.have.value if verdict.have else '?'}"
             f" nodes that take one ({verdict.per_node} per node), and the job trains with {running} of nnodes "
             f"{report.replicas[0]}:{report.replicas[1]}"]
    kueue = report.kueue
    if kueue is not None:
        ready = f"waitForPodsReady ({kueue.text}, {kueue.source})" if kueue.value is not None else "waitForPodsReady"
        lines.append(f"under Kueue the workload is admitted for all {report.created} pods: its ClusterQueue's quota "
                     f"holds {totals} for the {pending} that never start, for the whole run; {ready} does not evict "
                     "it once a Worker runs (Kueue's PodsReady of a PyTorchJob is its Running condition)")
    else:
        lines.append(f"they hold no node, but the namespace's ResourceQuota counts their requests ({totals}) for "
                     "the whole run")
    return lines
