"""Kueue's topology-aware scheduling (TAS): the topology domain a profile asks for, the domains of the node list,
and the lints of a request Kueue cannot honour.

A profile asks through the pod template annotations Kueue reads on each pod set (the PyTorchJob's ``Worker``
template, the JobSet's replicated job; apis/kueue/v1beta2/topology_types.go at Kueue v0.19.2):

* ``kueue.x-k8s.io/podset-required-topology: LEVEL``: every pod in one domain of the level (a node label: a block,
  a rack, a zone); Kueue admits the workload only when one domain has room for all its pods;
* ``kueue.x-k8s.io/podset-preferred-topology: LEVEL``: the level if it can, else the levels above, else spread;
* ``kueue.x-k8s.io/podset-unconstrained-topology: "true"``: no constraint, TAS's accounting only;
* ``kueue.x-k8s.io/podset-slice-required-topology: LEVEL`` with ``kueue.x-k8s.io/podset-slice-size: N``: each
  slice of N pods in one domain of the level.

A **domain** is the nodes that carry one value of the level's label. Its size is the nodes of the node list that
take a pod of the job (the scheduler's filters, :func:`kfdefaults.check.fit.judge_pool`), whatever their pool, and
the pods they hold. What Kueue's Topology object lists and a ResourceFlavor selects is not in a node list: the
domains here are those of every node that takes a pod.

The lints (warnings, located at the annotation's line): a level no node of the node list carries (Kueue's
``no requested topology level`` or no domain: pkg/cache/scheduler/tas_flavor_snapshot.go at v0.19.2); a slice
size that does not divide the pod count (the same file counts ``count / sliceSize`` whole slices) or exceeds it
(rejected by pkg/controller/jobframework/tas_validation.go ``ValidateSliceSizeAnnotationUpperBound``); a required
level whose largest domain holds fewer pods than the job creates (``nnodes``' maximum): never admitted. Without
a node list, what Kueue's webhook rejects (:func:`rejected`): two topology annotations (a platform that writes
``podset-preferred-topology`` over the builtin ``kueue-topology`` writes ``podset-required-topology: null``), a
slice level without a size, a size that is not a number, an unconstrained value that is not a boolean.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..backend.elastic_config import job_fields
from ..backend.jobset import clustered_custom
from ..backend.registered import is_multi_node
from ..errors import Finding, Location
from ..merge.origins import written_by
from ..merge.result import Resolved

KUEUE_SOURCE = "Kueue v0.19.2 apis/kueue/v1beta2/topology_types.go"

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
"""The pod template annotations of a TAS request (``PodSet*TopologyAnnotation``, ``PodSetSliceSizeAnnotation`` of
:data:`KUEUE_SOURCE`)."""

LEVEL_ANNOTATIONS = (REQUIRED, PREFERRED, SLICE_REQUIRED)

_WORDS = re.compile(r"[-._]")


def worker_pods(resolved: Resolved) -> int:
    """The pods the task creates, which fit places and a topology domain must hold: a clustered task's JobSet
    ``replicas`` (its Job's ``parallelism``: :func:`kfdefaults.backend.jobset.clustered_custom`), else the
    PyTorchJob's ``Worker`` replicas as the backend writes them (:func:`kfdefaults.backend.elastic_config.job_fields`:
    ``nnodes``' maximum) for a multi-node task, else its one pod."""
    if resolved.target.name == "clustered":
        return int(clustered_custom(resolved.elastic_settings)["replicas"])
    if not is_multi_node(resolved.elastic_settings):
        return 1
    return int(job_fields(resolved.elastic_settings).get(("spec", "pytorchReplicaSpecs", "Worker", "replicas"), 1))


def level_word(level: str) -> str:
    """What a level is called in a sentence: the last word of the label's name (``cloud.google.com/gce-topology-
    block`` -> ``block``, ``topology.kubernetes.io/zone`` -> ``zone``)."""
    words = [w for w in _WORDS.split(level.rpartition("/")[2]) if w]
    return words[-1] if words else level


@dataclass
class Asked:
    """A level the job asks for: ``kind`` ``required``, ``preferred``, ``slice`` (a slice's level) or ``given``
    (``fit --topology``), the annotation, and where it is written (``None`` for ``--topology``)."""

    level: str
    kind: str
    annotation: str | None
    at: Location | None = None
    layer: str | None = None


@dataclass
class Domain:
    """One value of the level's label: the nodes carrying it that take a pod of the job, and the pods they hold."""

    name: str
    nodes: list[str] = field(default_factory=list)
    pods: int = 0


@dataclass
class TopologyFit:
    """The domains of a level against the job (:func:`topology_fit`).

    Attributes:
        asked: The level and where it is asked.
        domains: The domains of the nodes that take a pod, largest (in pods) first, then by name.
        without: Nodes that take a pod but carry no value of the level.
        created: The pods of the job (the PyTorchJob's ``Worker`` replicas, the JobSet's replicas).
        needed: Nodes the job needs in one domain (its pods over the pods a node of the largest domain holds).
        carried: Whether any listed node carries the level.
    """

    asked: Asked
    domains: list[Domain]
    without: list[str]
    created: int
    needed: int | None
    carried: bool

    @property
    def holds(self) -> bool:
        """Whether one domain holds every pod of the job."""
        return any(d.pods >= self.created for d in self.domains)

    @property
    def verdict(self) -> str:
        """``one block holds the job (block-a: 3 nodes)``, or ``needs 4 nodes in one block; the largest has 3``."""
        word = level_word(self.asked.level)
        if not self.carried:
            return f"no listed node carries `{self.asked.level}`"
        if not self.domains:
            return f"no node that takes a pod carries `{self.asked.level}`"
        largest = self.domains[0]
        if self.holds:
            return f"one {word} holds the job ({largest.name}: {len(largest.nodes)} nodes)"
        return f"needs {self.needed} nodes in one {word}; the largest has {len(largest.nodes)}"

    @property
    def summary(self) -> str:
        """``2 blocks: block-a 3, block-b 3``: the nodes that take a pod per domain, the first six."""
        word = level_word(self.asked.level)
        shown = ", ".join(f"{d.name} {len(d.nodes)}" for d in self.domains[:6]) + ", ..." * (len(self.domains) > 6)
        return f"{len(self.domains)} {word}{'s' * (len(self.domains) != 1)}: {shown}"


def asked(resolved: Resolved, given: str | None = None) -> Asked | None:
    """The level ``resolved`` asks for (required, else preferred, else a slice's level), ``given`` (``fit --topology
    LEVEL``) in its place when stated; ``None`` when neither."""
    if given:
        return Asked(given, "given", None)
    annotations = resolved.annotations
    for annotation, kind in ((REQUIRED, "required"), (PREFERRED, "preferred"), (SLICE_REQUIRED, "slice")):
        level = annotations.get(annotation)
        if isinstance(level, str) and level:
            at, layer = _where(resolved, annotation)
            return Asked(level, kind, annotation, at, layer)
    return None


def _where(resolved: Resolved, annotation: str) -> tuple[Location | None, str | None]:
    setter = written_by(resolved.fragments, ("pod_template", "annotations", annotation))
    return (setter.origin.location, setter.origin.layer) if setter is not None else (None, None)


def topology_fit(level: Asked, verdicts: Sequence[Any], created: int) -> TopologyFit | None:
    """The domains of ``level`` among the nodes of ``verdicts`` (:class:`~.fit_report.PoolFit`) that take a pod;
    ``None`` when no pool lists nodes (a pool only described has no labels per node)."""
    listed = [v for v in verdicts if v.pool.listed is not None]
    if not listed:
        return None
    carried = any(level.level in (n.get("metadata") or {}).get("labels", {}) for v in listed for n in v.pool.nodes)
    found: dict[str, Domain] = {}
    without: list[str] = []
    for verdict in listed:
        for node, pods in verdict.takers:
            name = node["metadata"]["name"]
            value = ((node.get("metadata") or {}).get("labels") or {}).get(level.level)
            if value is None:
                without.append(name)
                continue
            domain = found.setdefault(value, Domain(value))
            domain.nodes.append(name)
            domain.pods += pods
    domains = sorted(found.values(), key=lambda d: (-d.pods, d.name))
    needed = None
    if domains and domains[0].nodes:
        each = max(1, domains[0].pods // len(domains[0].nodes))
        needed = math.ceil(created / each)
    return TopologyFit(level, domains, without, created, needed, carried)


def _finding(level: Asked, message: str, details: Sequence[str] = ()) -> Finding:
    path = f"pod_template.annotations.{level.annotation}" if level.annotation else ""
    return Finding(level.at or Location("<profile>"), path, message, "warning", level.layer, details)


_BOOLS = ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False")
"""What Go's ``strconv.ParseBool`` reads, which Kueue applies to ``podset-unconstrained-topology``."""


def rejected(annotations: dict[str, Any]) -> list[tuple[str, str]]:
    """``(annotation, why)`` for each request Kueue's webhook rejects (pkg/controller/jobframework/tas_validation.go
    ``ValidateTASPodSetRequest`` at v0.19.2): more than one of the required, preferred and unconstrained
    annotations; a slice level without a slice size or the other way round; a slice size that is not a whole number
    of at least 1; an unconstrained value that is not a Go boolean."""
    found = []
    given = [k for k in (REQUIRED, PREFERRED, UNCONSTRAINED) if k in annotations]
    if len(given) > 1:
        found.append((given[1], f"more than one topology annotation ({', '.join(given)}): Kueue's webhook rejects the "
                                "job (\"must not contain more than one topology annotation\")"))
    if (SLICE_REQUIRED in annotations) != (SLICE_SIZE in annotations):
        key, other = (SLICE_REQUIRED, SLICE_SIZE) if SLICE_REQUIRED in annotations else (SLICE_SIZE, SLICE_REQUIRED)
        found.append((key, f"{key} without {other}: Kueue's webhook rejects the job"))
    size = annotations.get(SLICE_SIZE)
    if size is not None and not (isinstance(size, str) and size.isdigit() and 1 <= int(size) <= 2**31 - 1):
        found.append((SLICE_SIZE, f"{SLICE_SIZE} is a whole number of pods, at least 1 (a quoted int32): Kueue's "
                                  "webhook rejects the job"))
    if UNCONSTRAINED in annotations and annotations[UNCONSTRAINED] not in _BOOLS:
        found.append((UNCONSTRAINED, f"{UNCONSTRAINED} is \"true\" or \"false\" (Go's strconv.ParseBool): Kueue's "
                                     "webhook rejects the job"))
    return found


def topology_warnings(resolved: Resolved, report: Any = None) -> list[Finding]:
    """The lints of the module's description and what Kueue's webhook rejects (:func:`rejected`), for
    ``resolved`` and its fit ``report`` (:class:`~.fit_report.FitReport`, ``None`` without pools: then only what
    needs no node list)."""

    annotations = resolved.annotations
    found = []
    for key, why in rejected(annotations):
        at, layer = _where(resolved, key)
        found.append(_finding(Asked(str(annotations[key]), "", key, at, layer), why,
                              ["pkg/controller/jobframework/tas_validation.go ValidateTASPodSetRequest, Kueue v0.19.2"]))
    created = report.created if report is not None else worker_pods(resolved)
    size = annotations.get(SLICE_SIZE)
    if SLICE_REQUIRED in annotations and isinstance(size, str) and size.isdigit() and int(size) >= 1:
        at, layer = _where(resolved, SLICE_SIZE)
        slices = Asked(annotations[SLICE_REQUIRED], "slice", SLICE_SIZE, at, layer)
        if int(size) > created:
            found.append(_finding(slices, f"podset-slice-size {size} is more than the job's {created} pods: Kueue's "
                                  "webhook rejects the job", ["pkg/controller/jobframework/tas_validation.go "
                                                              "ValidateSliceSizeAnnotationUpperBound, Kueue v0.19.2"]))
        elif created % int(size):
            found.append(_finding(slices, f"podset-slice-size {size} does not divide the job's {created} pods: Kueue "
                                  f"places {created // int(size)} whole slice{'s' * (created // int(size) != 1)} and no "
                                  f"slice for the other {created % int(size)}",
                                  ["pkg/cache/scheduler/tas_flavor_snapshot.go (count / sliceSize slices), Kueue v0.19.2"]))
    level = asked(resolved)
    fitted = getattr(report, "topology", None) if report is not None else None
    if level is None or fitted is None or fitted.asked.kind == "given":
        return found
    if not fitted.carried:
        found.append(_finding(level, f"no node of the node list carries the topology level `{level.level}` "
                              f"({level.annotation.rpartition('/')[2]}): Kueue finds no {level_word(level.level)} "
                              "to place the job in and does not admit it",
                              ["tas_flavor_snapshot.go: `no requested topology level`, Kueue v0.19.2"]))
    elif level.kind == "required" and fitted.domains and not fitted.holds:
        largest = fitted.domains[0]
        found.append(_finding(level, f"{fitted.verdict} ({fitted.summary}): Kueue never admits the job "
                              f"({REQUIRED.rpartition('/')[2]} {level.level})",
                              [f"the job creates {created} pods; the largest {level_word(level.level)}, "
                               f"{largest.name}, takes {largest.pods} ({len(largest.nodes)} nodes)",
                               f"`kfdefaults fit {resolved.name}` shows each {level_word(level.level)}"]))
    return found
