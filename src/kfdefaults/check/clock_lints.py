"""Where two clocks disagree on a cluster: a merged profile's timeouts against the cluster's facts
(:mod:`kfdefaults.validate.facts`), each finding at one side's line and naming the other's.

Warnings (the clocks of :mod:`.clocks`, the behaviour of :mod:`.timeline`):

* ``read_timeout`` or ``join_timeout`` shorter than the worst start spread (a cold node's ``node_start`` +
  ``image_pull``): the pod that hosts the store may be the late one (flytekit#3419), and ``join_timeout`` counts
  from each node's own join;
* Kueue's ``waitForPodsReady`` timeout shorter than the worst start: Kueue evicts the workload while an image is
  still being pulled; ``join_timeout`` plus the worst start above it (several nodes): a node that never comes up
  ends in Kueue's eviction and requeue, not in torch's error;
* ``nnodes: "MIN:MAX"`` with ``last_call_timeout`` below the spread: the round closes without the late node, and
  the restart that admits it fails with ``DistStoreError`` after ``read_timeout`` (torch 2.5 and later, measured
  with 2.13), unless ``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1``;
* ``active_deadline_seconds`` or Flyte's ``task_timeout`` below the worst start plus ``join_timeout``: the deadline
  counts the wait for nodes and images too, and ends the job before the rendezvous does;
* a worst-case hang (``hung-collective``) above the facts' ``max_hang``;
* an NCCL setting that the image's torch does not read (:mod:`.torch_defaults`).

Errors (the job cannot start): a deadline no longer than the *typical* start of a cold node.
"""

from __future__ import annotations

from ..errors import Finding, Location
from ..merge.origins import written_by
from ..merge.result import Resolved
from ..paths import format_path
from ..targets import OFF
from . import torch_defaults
from .clocks import FACTS_LAYER, Clock, Source, by_name, clocks, env_path, env_value, nodes, torch_version
from .scenarios import run_scenarios
from .start import Span, starts
from .timeline import collective_backend

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..validate.facts import ClusterFacts

NCCL_NAMES = ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_BLOCKING_WAIT", "TORCH_NCCL_ENABLE_MONITORING",
              "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "TORCH_NCCL_DUMP_ON_TIMEOUT", "TORCH_NCCL_TRACE_BUFFER_SIZE",
              "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC", "TORCH_NCCL_PROPAGATE_ERROR")
"""The ``TORCH_NCCL_*`` variables a profile sets that torch before 2.2 does not read."""

OLD_NAMES = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "NCCL_ASYNC_ERROR_HANDLING",
             "TORCH_NCCL_BLOCKING_WAIT": "NCCL_BLOCKING_WAIT"}
"""What torch before 2.2 reads instead."""


def _at(source: Source) -> str:
    """``[LAYER] FILE:LINE:COLUMN`` of a value, or its default's name."""
    if source.location is None:
        return source.default or "unknown"
    at = f"[{source.layer}] {source.location}" if source.layer else str(source.location)
    return at + (f" ({source.default})" if source.default else "")


def _finding(side: Clock, message: str, severity: str = "warning", other: Source | None = None) -> Finding:
    """At ``side``'s line; for a value nobody set (a default), at the ``other`` side's line."""
    source = side.source if side.source.location is not None or other is None else other
    location = source.location if source.location is not None else Location(f"<default {side.name}>")
    return Finding(location, side.setting, message, severity, source.layer)


def _span_source(span: Span) -> Source:
    """Where the first fact of a start span is written."""
    return Source(span.parts[0][2], FACTS_LAYER) if span.parts else Source()


def _fastest_typical(facts: ClusterFacts) -> Span | None:
    """The quickest cold start the facts state (the cluster's, or the quickest pool's): what an error may rely on."""
    pools = [None, *((facts.get("node_pools") or {}).keys())]
    spans = [s for s in (starts(facts, p) for p in pools) if s.typical is not None]
    return min(spans, key=lambda s: s.typical or 0, default=None)


def clock_errors(resolved: Resolved, facts: ClusterFacts | None) -> list[Finding]:
    """Errors: a deadline (``active_deadline_seconds``, or the facts' ``task_timeout``) no longer than the typical
    cold start of the quickest pool: the job is ended before its nodes are up, every time one is cold."""
    if facts is None:
        return []
    span = _fastest_typical(facts)
    if span is None or span.typical is None:
        return []
    found = []
    clock = by_name(clocks(resolved, facts))
    for name in ("active_deadline_seconds", "task_timeout"):
        limit = clock[name]
        if limit.value is not None and limit.value <= span.typical:
            found.append(_finding(limit, f"{name} is {limit.value} s ({_at(limit.source)}), no longer than a cold "
                                  f"node's typical start, {span.described('typical')}: the job is ended before its "
                                  "nodes are up whenever one is cold; give it the start and the training", "error"))
    return found


def clock_warnings(resolved: Resolved, facts: ClusterFacts | None, pool: str | None = None) -> list[Finding]:
    """The warnings of the module's description, for a task on ``resolved`` in ``pool`` (its ``node_start`` and
    ``image_pull``, else the cluster's)."""
    if facts is None:
        return []
    clock = by_name(clocks(resolved, facts))
    span = starts(facts, pool)
    low, high = nodes(resolved)
    found = _nccl_ignored(resolved, facts)
    worst = span.worst
    if worst is not None:
        found += _start_warnings(resolved, clock, span, low, high)
    bound = facts.get("max_hang")
    if isinstance(bound, int) and high > 1:
        hung = next(s for s in run_scenarios(resolved, clock, collective_backend(resolved), low, high)
                    if s.key == "hung-collective")
        if hung.outcome == "hangs" or (hung.worst is not None and hung.worst > bound):
            restarts = Clock("max_restarts", None, True, _restarts_source(resolved), "elastic.max_restarts",
                             "torch elastic agent")
            count = resolved.elastic_settings.get("max_restarts") or 0
            worst_text = "never ends" if hung.outcome == "hangs" else f"ends after {hung.worst:g} s at worst"
            found.append(_finding(restarts, f"a hung collective {worst_text} ({'; '.join(hung.notes)}), above the "
                                  f"cluster's max_hang of {bound} s ({facts.location('max_hang')}); its clocks: "
                                  + "; ".join(f"{c.name} {c.text} ({_at(c.source)})" for c in (
                                      clock["pg_timeout_nccl" if collective_backend(resolved) == "nccl" else
                                            "pg_timeout_other"], clock["nccl_heartbeat"]))
                                  + f"; max_restarts {count} ({_at(restarts.source)}); lower max_restarts or the collective timeout (nccl_collective_timeout_sec)"))
    return found


def _nnodes_source(resolved: Resolved) -> Source:
    setter = written_by(resolved.fragments, ("elastic", "nnodes"))
    return Source() if setter is None else Source(setter.origin.location, setter.origin.layer)


def _restarts_source(resolved: Resolved) -> Source:
    setter = written_by(resolved.fragments, ("elastic", "max_restarts"))
    if setter is None:
        return Source(default=f"{resolved.target.elastic_class} default (max_restarts)")
    return Source(setter.origin.location, setter.origin.layer)


def _start_warnings(resolved: Resolved, clock: dict[str, Clock], span: Span, low: int, high: int) -> list[Finding]:
    worst = span.worst or 0
    spread = span.described("worst")
    found = []
    kueue = clock["kueue_wait"]
    if kueue.value is not None and kueue.value < worst:
        found.append(_finding(kueue, f"Kueue's waitForPodsReady timeout is {kueue.value} s ({_at(kueue.source)}), "
                              f"shorter than the worst start of a cold node, {spread}: Kueue evicts the workload and "
                              "terminates its pods while a node is still coming up or an image is still being "
                              "pulled"))
    if high <= 1:
        return found
    static = clock.get("static_timeout")
    if static is not None:  # a clustered task's static rendezvous: no setting reaches its timeout
        if (static.value or 0) < worst:
            found.append(_finding(static, f"the static rendezvous waits {static.value} s ({_at(static.source)}), "
                                  f"shorter than the worst start spread, {spread}: node 0 fails with DistStoreError "
                                  "before a cold node connects, and the JobSet recreates every pod (or the task fails "
                                  "without cluster_max_restarts); no setting of a clustered task changes this "
                                  "timeout: give the nodes a shorter start (a warm pool, a pre-pulled image)", other=_span_source(span)))
        return found
    r, j, l = clock["read_timeout"], clock["join_timeout"], clock["last_call_timeout"]
    if kueue.value is not None and worst <= kueue.value < worst + (j.value or 0):
        found.append(_finding(j, f"join_timeout {j.value} s ({_at(j.source)}) plus the worst start of a cold node, "
                              f"{spread}, is {worst + (j.value or 0)} s, above Kueue's PodsReady timeout "
                              f"{kueue.value} s ({_at(kueue.source)}): a node that never comes up gets the job "
                              "evicted and requeued by Kueue (PodsReadyTimeout) before torch gives up with "
                              "RendezvousTimeoutError; lower join_timeout below the timeout minus the start, or ask "
                              "for a longer waitForPodsReady.timeout", other=kueue.source))
    if (r.value or 0) < worst:
        found.append(_finding(r, f"read_timeout is {r.value} s ({_at(r.source)}), shorter than the worst start "
                              f"spread, {spread}: when the pod that hosts the rendezvous store starts last, the "
                              "others give up connecting after one to four read_timeouts with "
                              "RendezvousConnectionError (flytekit#3419); set it above the spread", other=_span_source(span)))
    if (j.value or 0) < worst and (low == high or high - 1 < low):
        found.append(_finding(j, f"join_timeout is {j.value} s ({_at(j.source)}), shorter than the worst start "
                              f"spread, {spread}: it counts from each node's own join, so the nodes that started "
                              "first fail with RendezvousTimeoutError before the cold one joins; set it above the "
                              "spread", other=_span_source(span)))
    shared_off = env_value(resolved, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE")[0] == "1"
    if low < high and (l.value or 0) < worst and not shared_off:
        found.append(_finding(l, f"nnodes {low}:{high} with last_call_timeout {l.value} s ({_at(l.source)}), below "
                              f"the worst start spread, {spread}: the round closes without a cold node, and the "
                              "restart that admits it later fails on every node with DistStoreError after "
                              "read_timeout (torch 2.5 and later); raise last_call_timeout above the spread, or set "
                              "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 in the primary container's env to admit it",
                              other=_nnodes_source(resolved)))
    for name in ("active_deadline_seconds", "task_timeout"):
        limit = clock[name]
        need = worst + (j.value or 0)
        below_join = name == "active_deadline_seconds" and limit.value is not None and limit.value < (j.value or 0)
        if limit.value is not None and limit.value < need and not below_join:  # below join_timeout: merged.py's
            found.append(_finding(limit, f"{name} is {limit.value} s ({_at(limit.source)}), below the worst start "
                                  f"{spread} plus join_timeout {j.value} s ({_at(j.source)}) = {need} s: it counts the "
                                  "wait for nodes and images too, and ends the job before a late rendezvous does"))
    return found


def _nccl_ignored(resolved: Resolved, facts: ClusterFacts) -> list[Finding]:
    """NCCL settings the image's torch does not read (before 2.2: the ``TORCH_NCCL_*`` names, the heartbeat monitor,
    a default ``init_process_group`` reads when called)."""
    version, version_at = torch_version(resolved, facts)
    if torch_defaults.at_least(version, torch_defaults.TORCH_NCCL_NAMES_SINCE) is not False:
        return []
    found = []
    for name in NCCL_NAMES:
        value, at = env_value(resolved, name)
        if value is None or at is None:
            continue
        instead = f"; it reads {OLD_NAMES[name]}" if name in OLD_NAMES else ""
        found.append(Finding(at.location or Location("<profile>"), format_path(env_path(resolved, name)),
                             f"{name}={value}: torch {version} of this profile's image ({_at(version_at)}) does not "
                             f"read it (the TORCH_NCCL_* names came in torch 2.2){instead}", "warning", at.layer))
    for key in ("nccl_collective_timeout_sec", "nccl_heartbeat_timeout_sec", "nccl_enable_monitoring"):
        value = resolved.elastic_settings.get(key)
        if value in (None, False, OFF):
            continue
        setter = written_by(resolved.fragments, ("elastic", key))
        if setter is None:
            continue
        found.append(Finding(setter.origin.location, f"elastic.{key}",
                             f"`{key}: {value}`: torch {version} of this profile's image ({_at(version_at)}) "
                             "ignores it (its NCCL default, heartbeat monitor and TORCH_NCCL_* variables came in torch "
                             "2.2)", "warning", setter.origin.layer))
    return found

