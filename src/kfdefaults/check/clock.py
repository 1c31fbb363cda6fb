"""One clock of a distributed task: what keeps it, its value in seconds, and where that value is set.

The types :func:`kfdefaults.check.clocks.clocks` and Kueue's clocks (:mod:`.kueue`) are made of, apart from the
code that works the values out, so that both build on them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import Location

FACTS_LAYER = "facts"
"""The layer name of a value the cluster's facts state."""


@dataclass(frozen=True)
class Source:
    """Where a clock's value comes from: a line (a profile layer's, or the facts'), or a named default.

    Attributes:
        location: ``FILE:LINE:COLUMN`` (or a task-layer label such as ``--set KEY=VALUE``); ``None`` for a default.
        layer: The profile layer that set it, :data:`FACTS_LAYER`, or ``None`` for a default.
        default: The default's name and version (``torch 2.13 default (c10d_rendezvous_backend.py)``); ``None`` for
            a set value.
    """

    location: Location | None = None
    layer: str | None = None
    default: str | None = None

    def __str__(self) -> str:
        if self.location is not None:
            at = f"{self.layer} {self.location}" if self.layer else str(self.location)
            return at + (f" ({self.default})" if self.default else "")
        return self.default or "unknown"

    def to_dict(self) -> dict[str, Any]:
        loc = self.location
        return {"layer": self.layer, "default": self.default,
                "file": loc.file if loc is not None else None, "line": loc.line if loc is not None and loc.line else None,
                "column": (loc.column or 1) if loc is not None and loc.line else None}


@dataclass(frozen=True)
class Clock:
    """One clock of the task, as the profile and the cluster set it.

    Attributes:
        name: Its name (``read_timeout``, ``join_timeout``, ``kueue_wait``...; :data:`CLOCKS`).
        value: Seconds; ``None`` when the clock is off or unknown (:attr:`known`).
        known: Whether the value is known (an unstated fact, an unknown torch version: ``False``).
        source: Where the value is set (:class:`Source`).
        setting: The setting that changes it (``elastic.rdzv_configs.read_timeout``, Kueue's
            ``waitForPodsReady.timeout``, a container variable).
        kept_by: The program that keeps it.
        note: What else to know (each release's value when the torch version is unknown, why it does nothing).
    """

    name: str
    value: int | None
    known: bool
    source: Source
    setting: str
    kept_by: str
    note: str = ""

    @property
    def text(self) -> str:
        """``60 s``, ``off`` or ``unknown``."""
        if self.value is not None:
            return f"{self.value} s"
        return "off" if self.known else "unknown"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "seconds": self.value, "known": self.known, "setting": self.setting,
                "kept_by": self.kept_by, "source": self.source.to_dict(), "note": self.note or None}


CLOCKS = {
    "static_timeout": ("static rendezvous (node 0's TCPStore)", "every node connected to node 0's store: node 0 "
                       "waits for the others, each other node retries connecting, from its own start"),
    "read_timeout": ("c10d rendezvous (TCPStore client)", "connecting to the rendezvous store, then each call to it"),
    "join_timeout": ("c10d rendezvous", "one rendezvous round, from each node's own join"),
    "last_call_timeout": ("c10d rendezvous", "the wait for more nodes once MIN are in (nnodes MIN:MAX)"),
    "monitor_interval": ("torch elastic agent", "how late the agent sees a dead worker or a waiting node"),
    "pg_timeout_nccl": ("init_process_group", "init_process_group(backend='nccl') without timeout=, and its collectives"),
    "pg_timeout_other": ("init_process_group", "init_process_group with gloo or no backend, without timeout="),
    "nccl_heartbeat": ("ProcessGroupNCCL heartbeat monitor", "a stuck NCCL watchdog, before the process is ended"),
    "active_deadline_seconds": ("training operator", "the whole PyTorchJob from its start"),
    "task_timeout": ("Flyte", "one attempt of the task, end to end"),
    "max_queued_time": ("Flyte (clustered tasks)", "each attempt, until every worker of the JobSet is Ready"),
    "kueue_wait": ("Kueue (waitForPodsReady)", "every pod of the job Ready, from the workload's admission"),
    "kueue_recovery": ("Kueue (waitForPodsReady)", "a pod replaced once the job ran (a lost node, a preemption, an "
                       "elastic restart waiting for a new node) Ready again"),
    "kueue_backoff": ("Kueue (requeuingStrategy)", "the wait before an evicted workload is queued again"),
}
"""Clock name -> (what keeps it, what it bounds), in the order a job meets them."""

