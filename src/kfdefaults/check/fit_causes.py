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
from typing import Any

from ..backend.cluster import LAYER as CLUSTER_LAYER
from ..backend.cluster import ClusterTemplate
from ..backend.registered import PYTORCH_CONTAINER
from ..errors import Finding, Location
from ..k8s.quantity import quantity_value
from ..k8s.scheduling import BLOCKING_EFFECTS, node_allocatable, required_node_affinity_matches, taint_string
from ..k8s.tolerations import Tolerations, tolerates
from ..merge.origins import Setter, pod_leaf, written_by
from ..merge.result import Resolved
from ..paths import format_path
from .shm import quantity_text

from .fit_report import Figure, FitReport, JudgedPod, Origin, PoolFit

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


def amount_text(resource: str, amount: Fraction | None) -> str:
    """An amount as a Kubernetes quantity: cpu in cores (``500m``, ``90``), bytes with the largest binary suffix that
    divides them (``16Gi``), a count as a number."""
    if amount is None:
        return "none"
    if resource == "cpu":
        milli = amount * 1000
        return str(int(amount)) if amount.denominator == 1 else f"{int(milli)}m"
    if amount.denominator == 1 and (resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")):
        return quantity_text(amount)
    return str(int(amount)) if amount.denominator == 1 else str(float(amount))


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
    """A fact of the node judged: the pool's, or, when the pod selects per-node labels, that node's own."""
    pool = verdict.pool
    if pool.listed is not None and verdict.node is not pool.node and fact[:1] == ("labels",):
        return pool.listed.location(verdict.node, "metadata", *fact)
    return pool.location(*fact)


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
                  f"the pool's nodes allow {amount_text('pods', pods)} pods each")
        return Cause("NodeResourcesFit", reason, detail, None, verdict.pool.location("allocatable", "pods"), source)
    resource = reason.removeprefix("Insufficient ")
    offered = node_allocatable(verdict.node).get(resource)
    detail = (f"the pod requests {amount_text(resource, pod.requests.get(resource))} {resource}, a node offers "
              f"{amount_text(resource, offered)}")
    return Cause("NodeResourcesFit", reason, detail, request_origin(resolved, pod, resource, cluster),
                 verdict.pool.location("allocatable", resource), source)


def causes(resolved: Resolved, pod: JudgedPod, verdict: PoolFit, replicas_at: Figure | None,
           cluster: ClusterTemplate | None) -> list[Cause]:
    """Every reason ``verdict``'s pool is not a fit, in the scheduler's order, then too few nodes."""
    found: list[Cause] = []
    for v in verdict.verdicts:
        for reason in v.reasons:
            if v.plugin == "NodeUnschedulable":
                found.append(Cause(v.plugin, reason, "the pool's nodes are cordoned (spec.unschedulable)",
                                   _where(resolved, cluster, _TOLERATIONS), verdict.pool.location("unschedulable"),
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


def misfit_warning(report: FitReport, resolved: Resolved) -> Finding | None:
    """The warning of a profile that fits none of the pools: located at the profile line that stops the closest
    pool (the one with the fewest failing plugins, then the fewest reasons, then the first), naming that pool's
    facts; ``None`` when it fits one, or no pool is known."""
    if not report.pools or report.fits:
        return None
    closest = min(report.pools, key=lambda p: (len({c.plugin for c in p.causes}), len(p.causes)))
    first = next((c for c in closest.causes if c.profile is not None), None)
    stops = "; ".join(f"{c.reason}: {c.detail}"
                      + (f" (set at [{c.profile.layer}] {c.profile.location}" if c.profile else " (")
                      + f"; the pool's at {c.pool})" for c in closest.causes)
    count = len(report.pools)
    message = (f"fits none of the {count} node pool{'s' * (count != 1)}: the closest, `{closest.pool.name}` "
               f"({closest.pool.location()}), is stopped by {stops}. `kfdefaults fit {resolved.name}`, given the "
               "same folders and facts, shows every pool; the task would stay Pending")
    origin = first.profile if first is not None else None
    if origin is None:
        return Finding(Location(f"<profile {resolved.name}>"), "", message, "warning")
    return Finding(origin.location, origin.path, message, "warning", origin.layer)
