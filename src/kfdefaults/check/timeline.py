"""The timeline of a distributed task on a cluster: which clock fires first, when, with which error, and the worst
case to a clean failure, in the six ways a multi-node start or run goes wrong.

Worked out from the clocks (:func:`.clocks.clocks`) and how late a node starts (:func:`.start.starts`), as torch
2.13 behaves when run for real (``docs/clocks-measured.md``), not as the clocks' names suggest:

* A node that does not host the rendezvous store, started before the store's host, gives up connecting between
  one and about four times ``read_timeout`` after its start (``RendezvousConnectionError``); ``join_timeout`` has
  not started for it.
* ``join_timeout`` counts from each node's own join; ``RendezvousTimeoutError`` (no message) comes 0 to 3 s after it.
* With ``nnodes: "MIN:MAX"`` the round closes ``last_call_timeout`` after MIN nodes are in; a node arriving later
  is admitted by a restart whose round fails on every node after ``read_timeout`` with ``DistStoreError`` (torch
  2.5 and later, the agent's store shared; ``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1`` admits it), not
  ``RendezvousClosedError``.
* A pod whose store host has gone fails at the agent's next ``monitor_interval``.

A clustered task (Flyte 2's JobSet) meets at torchrun's static rendezvous by default: node 0's TCPStore waits
``static_timeout`` (torch's 600 s; no setting reaches it) for every node, each other node retries connecting as
long; there is no ``join_timeout``. A failed pod fails its Job (``backoffLimit: 0``), and the JobSet recreates
every pod while ``cluster_max_restarts`` remain.

Times are seconds from the first pods' start (Kueue's admission of the workload; a hot node starts its pod at
once). The store's host is the pod ``PET_RDZV_ENDPOINT`` names: worker 0 of the PyTorchJob.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backend.registered import registered_pod_spec
from ..k8s.scheduling import pod_requests
from ..merge.result import Resolved
from .clocks import Clock, by_name, clocks, env_value, nodes, torch_version
from .kueue import kueue_summary
from .scenarios import (
    Event,
    Scenario,
    never_scenarios,
    run_scenarios,
    single_start,
    start_scenarios,
    static_scenarios,
)
from .start import ColdStart, Span, starts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..validate.facts import ClusterFacts

__all__ = ["Event", "Scenario", "Timeline", "collective_backend", "timeline"]


@dataclass
class Timeline:
    """A profile's clocks on a cluster, and its scenarios.

    Attributes:
        profile: The profile's name.
        target: The SDK.
        nnodes: ``(min, max)``.
        pool: The node pool whose start times are used, or ``None`` (the cluster's), and why.
        torch: The torch version of the image, or ``None``.
        clocks: :func:`.clocks.clocks`.
        start: How late a cold node starts (:class:`.start.Span`).
        backend: ``nccl`` (the pod requests GPUs) or ``gloo``: which process-group default the hang scenarios use.
        scenarios: The scenarios (none for a single node).
        kueue: Kueue on the cluster and this job (:func:`.kueue.kueue_summary`), or ``None``.
    """

    profile: str
    target: str
    nnodes: tuple[int, int]
    pool: tuple[str | None, str]
    torch: str | None
    clocks: list[Clock]
    start: Span
    backend: str
    scenarios: list[Scenario]
    kueue: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "target": self.target, "nnodes": {"min": self.nnodes[0], "max": self.nnodes[1]},
                "pool": {"name": self.pool[0], "why": self.pool[1]}, "torch": self.torch, "backend": self.backend,
                "start": self.start.to_dict(), "clocks": [c.to_dict() for c in self.clocks],
                "kueue": self.kueue, "scenarios": [s.to_dict() for s in self.scenarios]}


def collective_backend(resolved: Resolved) -> str:
    """``nccl`` when the worker pod requests GPUs (any ``*/gpu`` resource), else ``gloo``."""
    requests = pod_requests(registered_pod_spec(resolved))
    return "nccl" if any(r.rsplit("/", 1)[-1] == "gpu" and v for r, v in requests.items() if "/" in r) else "gloo"


def timeline(resolved: Resolved, facts: ClusterFacts | None, start: ColdStart | None = None) -> Timeline:
    """The timeline of a task on ``resolved`` on the cluster ``facts`` describe.

    Args:
        resolved: The merged profile.
        facts: The cluster's facts, or ``None`` (every fact unknown).
        start: How late a cold node starts, on which pool's figures (:meth:`kfdefaults.pipeline.Pipeline.cold_start`);
            ``None``: the cluster's.

    Returns:
        The clocks, the cold start, and (several nodes only) the scenarios, worst cold start first.
    """
    found = clocks(resolved, facts)
    clock = by_name(found)
    low, high = nodes(resolved)
    version, _ = torch_version(resolved, facts)
    span, pool = start if start is not None else (starts(facts), (None, "no pool named"))
    backend = collective_backend(resolved)
    scenarios: list[Scenario] = []
    if high == 1:  # one pod: no rendezvous to wait for; Kueue and the deadlines against its start, its own workers
        scenarios = [single_start(clock, span)]
        if (resolved.elastic_settings.get("nproc_per_node") or 1) != 1:
            scenarios += run_scenarios(resolved, clock, backend, low, high, span.worst)[1:]
    elif "static_timeout" in clock:  # a clustered task's static rendezvous: node 0's store, JobSet restarts
        restarts = resolved.elastic_settings.get("cluster_max_restarts") or 0
        scenarios = static_scenarios(clock, span, "worst", high, restarts)
        scenarios += run_scenarios(resolved, clock, backend, low, high, span.worst)
    else:
        shared_off = env_value(resolved, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE")[0] == "1"
        scenarios = start_scenarios(clock, span, "worst", low, high, version, shared_off)
        scenarios += never_scenarios(clock, low, high)
        scenarios += run_scenarios(resolved, clock, backend, low, high, span.worst)
    return Timeline(resolved.name, resolved.target.name, (low, high), pool, version, found, span, backend, scenarios,
                    kueue_summary(resolved, facts))
