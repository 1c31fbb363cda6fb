"""Kueue's topology-aware scheduling (TAS) asked for by a profile, against the nodes the cluster lists.

A profile asks for a topology domain with the annotations Kueue reads on a pod set's template
(``kueue.x-k8s.io/podset-required-topology``, ``podset-preferred-topology``, ``podset-slice-required-topology``
with ``podset-slice-size``; ``apis/kueue/v1beta1/topology_types.go``, v0.19.2), each naming a node label, the level:
``cloud.google.com/gce-topology-block``, a rack label, ``kubernetes.io/hostname``. With the cluster's node list,
:func:`topology_warnings` warns where Kueue can never admit the job:

* a required level that no listed node carries: no domain, the workload waits forever;
* a slice size that does not divide the workers (``nnodes``' maximum, the PyTorchJob's ``Worker`` replicas);
* a required level whose largest domain has fewer nodes than the workers (one worker per node, as a GPU job
  runs): "needs 4 nodes in one block; the largest has 3".

Domains are counted over the pools the job fits (all pools when it fits none), one label value one domain.
"""

from __future__ import annotations

from typing import Any

from ..errors import Finding, Location
from ..merge.origins import pod_leaf, written_by
from ..merge.result import Resolved
from .clocks import nodes

PREFIX = "kueue.x-k8s.io/"
REQUIRED, PREFERRED = PREFIX + "podset-required-topology", PREFIX + "podset-preferred-topology"
SLICE_REQUIRED, SLICE_SIZE = PREFIX + "podset-slice-required-topology", PREFIX + "podset-slice-size"


def _at(resolved: Resolved, key: str) -> tuple[Location, str, str | None]:
    """Where the profile writes annotation ``key``: its location, path and layer."""
    path = pod_leaf(["metadata", "annotations", key])
    setter = written_by(resolved.fragments, path)
    if setter is None:
        return Location(f"<profile {resolved.name}>"), "", None
    return setter.origin.location, f"pod_template.annotations.{key}", setter.origin.layer


def domain_sizes(pools: list[Any], level: str, fitting: list[str] | None = None) -> dict[str, int]:
    """Nodes per domain of ``level`` (a label value), over the pools named in ``fitting`` (all when none fits)."""
    chosen = [p for p in pools if fitting and p.name in fitting] or list(pools)
    sizes: dict[str, int] = {}
    for pool in chosen:
        for value, members in pool.domains(level).items():
            sizes[value] = sizes.get(value, 0) + len(members)
    return sizes


def topology_warnings(resolved: Resolved, pools: list[Any], fitting: list[str] | None = None) -> list[Finding]:
    """The warnings of the module's description, each at the annotation's line."""
    annotations = resolved.annotations
    workers = nodes(resolved)[1]
    found = []
    for key in (REQUIRED, SLICE_REQUIRED):
        level = annotations.get(key)
        if not isinstance(level, str) or not pools:
            continue
        location, path, layer = _at(resolved, key)
        sizes = domain_sizes(pools, level, fitting)
        if not sizes:
            found.append(Finding(location, path, f"`{key}: {level}`: no node of the node list carries the label "
                                 f"{level}: Kueue finds no domain and never admits the job", "warning", layer))
            continue
        largest = max(sizes.values())
        need = workers
        if key == SLICE_REQUIRED:
            size = annotations.get(SLICE_SIZE)
            need = int(size) if isinstance(size, str) and size.isdigit() else workers
            if isinstance(size, str) and size.isdigit() and int(size) and workers % int(size):
                at, spath, slayer = _at(resolved, SLICE_SIZE)
                found.append(Finding(at, spath, f"`{SLICE_SIZE}: {size}` does not divide the {workers} workers "
                                     f"(nnodes): Kueue places the pod set in slices of {size}, which they do not fill evenly", "warning",
                                     slayer))
        if largest < need:
            found.append(Finding(location, path, f"`{key}: {level}`: needs {need} nodes in one {_word(level)}; the "
                                 f"largest has {largest} ({_domains(sizes, _word(level))}): Kueue never admits the "
                                 "job", "warning", layer))
    return found


def topology_report(resolved: Resolved, pools: list[Any], level: str | None = None,
                    fitting: list[str] | None = None) -> dict[str, Any] | None:
    """For ``fit``: how many nodes each domain of ``level`` (else the profile's required level) has, whether one
    holds the job's workers, and that as a sentence; ``None`` without a level."""
    asked = resolved.annotations.get(REQUIRED) or resolved.annotations.get(SLICE_REQUIRED)
    level = level or (asked if isinstance(asked, str) else None)
    if level is None:
        return None
    workers = nodes(resolved)[1]
    sizes = domain_sizes(pools, level, fitting)
    largest = max(sizes.values(), default=0)
    word = _word(level)
    text = (f"{level}: no listed node carries it" if not sizes else
            f"{level}: needs {workers} nodes in one {word}; the largest has {largest} ({_domains(sizes, word)}): "
            + ("one holds the job" if largest >= workers else "none holds the job"))
    return {"level": level, "needs": workers, "domains": sizes, "largest": largest, "fits": largest >= workers,
            "text": text}


def _word(level: str) -> str:
    """The level's name as a word: ``block`` of ``cloud.google.com/gce-topology-block``, ``rack`` of
    ``example.com/rack``."""
    return level.rsplit("/", 1)[-1].rsplit("-", 1)[-1]


def _domains(sizes: dict[str, int], word: str) -> str:
    """``2 blocks: block-0 3, block-1 3`` (the first six)."""
    shown = ", ".join(f"{v} {n}" for v, n in sorted(sizes.items())[:6]) + (", ..." if len(sizes) > 6 else "")
    return f"{len(sizes)} {word}{'s' * (len(sizes) != 1)}: {shown}"
