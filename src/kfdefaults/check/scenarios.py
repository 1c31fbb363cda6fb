"""The scenarios of a timeline (:mod:`.timeline`): a node that starts late or never, a peer lost while
training, a collective that hangs; each a list of :class:`Event` on one time axis, from the clocks of
:mod:`.clocks`, as torch 2.13 behaves when run (``docs/clocks-measured.md``)."""

from __future__ import annotations

from ..merge.result import Resolved
from ..targets import CLUSTERED
from .clocks import Clock, env_value
from .events import Event, Scenario
from .start import Span
from . import torch_defaults

JOIN_LATE = 3
"""Seconds past ``join_timeout`` by which ``RendezvousTimeoutError`` comes (the join loop's 1 s poll and the
node's leaving the round: 1.0 to 1.3 s measured, up to 3 s)."""

READ_RETRIES = 4
"""The store client gives up between one and this many times ``read_timeout`` (its tries and back-off, measured)."""

ROUND_LATE = 3
"""Seconds a round that admits a node takes past ``monitor_interval`` + ``read_timeout`` to fail (measured)."""

STATIC_LATE = 1
"""Seconds past ``static_timeout`` by which node 0's store gives up (measured: 6 s for 5, docs/flyte2-clustered.md)."""

HOST = "the store's host (worker 0)"
NODE0 = "node 0 (the store's host)"
OTHERS = "the other nodes"
EVERY = "every node"

MESSAGES = {
    "read_timeout": ("RendezvousConnectionError", "The connection to the C10d store has failed. See inner exception "
                     "for details."),
    "join_timeout": ("RendezvousTimeoutError", "(no message)"),
    "admission": ("DistStoreError", "wait timeout after {ms}ms, keys: /torch.rendezvous.RUN_ID.ROUND/MASTER_ADDR (on "
                  "the late node; .../torchelastic/role_info/N on the others; the late node gets DistNetworkError "
                  "instead when the store's host ends first)"),
    "kueue_wait": ("Evicted (PodsReadyTimeout)", "Kueue evicts the workload and terminates its pods, then requeues it"),
    "active_deadline_seconds": ("DeadlineExceeded", "the training operator fails the job: active longer than "
                                "specified deadline"),
    "task_timeout": ("timeout", "Flyte aborts the task: its timeout passed"),
    "pg_timeout_nccl": ("ChildFailedError", "Watchdog caught collective operation timeout: WorkNCCL(..., "
                        "Timeout(ms)={ms})"),
    "pg_timeout_other": ("ChildFailedError", "RuntimeError: ... Timed out waiting {ms}ms for recv operation to "
                         "complete"),
    "nccl_heartbeat": ("ChildFailedError (SIGABRT)", "ProcessGroupNCCL's watchdog got stuck for {s} seconds"),
    "monitor_interval": ("RendezvousConnectionError", "the store's host is gone: the agent's next look at the store "
                         "fails"),
    "gloo_peer": ("ChildFailedError", "Connection closed by peer"),
    "static_wait": ("DistStoreError", "Timed out after {late} seconds waiting for clients. {joined}/{n} clients "
                    "joined."),
    "static_connect": ("DistNetworkError", "The client socket has timed out after {ms}ms while trying to connect to "
                       "(MASTER_ADDR, 29500)."),
}
"""Clock -> (what torch, Kueue, the operator or Flyte raise, the message the user sees)."""


def _fill(kind: str, c: Clock) -> tuple[str, str]:
    error, message = MESSAGES[kind]
    return error, message.format(ms=(c.value or 0) * 1000, s=c.value)


def _limits(clock: dict[str, Clock], late: float | None, starting: bool = True, replaced: bool = False) -> list[Event]:
    """Kueue's eviction (while ``starting``, when a pod is still not Ready at its timeout: one ``late`` seconds
    after the others, or never when ``late`` is ``None``; once running and a lost node's pod ``replaced``, when the
    replacement's new node takes ``late`` seconds, longer than ``recoveryTimeout``), the job's deadline and Flyte's
    timeout."""
    events = []
    name = "kueue_recovery" if replaced else "kueue_wait"
    kueue = clock[name]
    if (starting or replaced) and kueue.value is not None and (late is None or late > kueue.value):
        who = "the lost node's replacement pod" if replaced else "a pod"
        events.append(Event((kueue.value, kueue.value), "the job", name, f"{who} is still not Ready after "
                            f"{kueue.value} s", *_fill("kueue_wait", kueue), fails=True))
    for name in ("active_deadline_seconds", "task_timeout"):
        limit = clock[name]
        if limit.value is not None:
            events.append(Event((limit.value, limit.value), "the job", name, f"{name} ({limit.value} s) passes",
                                *_fill(name, limit), fails=True))
    return events


def _read_fail(start: float, clock: Clock, who: str, certain: bool = True) -> Event:
    r = clock.value or 0
    return Event((start + r, start + READ_RETRIES * r), who, "read_timeout",
                 "no store to connect to: the client gives up", *_fill("read_timeout", clock), fails=True, certain=certain)


def _join_fail(start: float, clock: Clock, who: str) -> Event:
    j = clock.value or 0
    return Event((start + j, start + j + JOIN_LATE), who, "join_timeout", "the round is not complete",
                 *_fill("join_timeout", clock), fails=True)


def _scenario(key: str, title: str, events: list[Event], notes: list[str] | None = None,
              limits: list[Event] | None = None, horizon: float | None = None, start_known: bool = True) -> Scenario:
    """Sort ``events``, add the job's ``limits`` (:func:`_limits`: Kueue's eviction whenever it comes, a deadline
    only when it comes before the scenario's own end), cut them where the job ends (the first event that ends
    the whole job, or the last node's failure, whichever comes first), and say the outcome and the worst case.
    A cold start the facts do not fully state (``start_known`` false) cannot show that the job runs: a later start
    may still meet a clock, so that outcome is ``unknown``; one that fails at the stated part fails later too."""
    own_end = [e.at[1] for e in events if e.fails and e.at is not None]
    horizon = horizon if horizon is not None else max(own_end) if own_end else None
    hangs = any(e.at is None and e.clock is None and e.what.startswith("nothing") for e in events)
    for limit in limits or []:
        if limit.clock in ("kueue_wait", "kueue_recovery") or hangs or (horizon is not None and limit.at[0] < horizon):  # type: ignore[index]
            events = events + [limit]
    events = sorted(events, key=lambda e: (float("inf") if e.at is None else e.at[0]))
    ends = [e.at[1] for e in events if e.fails and e.who == "the job" and e.at is not None]
    nodes_fail = [e.at[1] for e in events if e.fails and e.who != "the job" and e.at is not None]
    candidates = ends[:1] + ([max(nodes_fail)] if nodes_fail else [])
    end = min(candidates) if candidates else None
    if end is not None:
        events = [e for e in events if e.at is None or e.at[0] <= end]
    if any(e.at is None and e.clock for e in events):
        return Scenario(key, title, events, "unknown", None, notes or [])
    if end is None:
        return Scenario(key, title, events, "hangs" if hangs else "runs" if start_known else "unknown", None,
                        notes or [])
    return Scenario(key, title, events, "fails", end, notes or [])


def start_scenarios(clock: dict[str, Clock], span: Span, span_key: str, low: int, high: int,
                    version: str | None, shared_store_off: bool) -> list[Scenario]:
    """A node that starts ``span``'s ``span_key`` seconds after the others: the store's host, or another worker."""
    late = getattr(span, span_key)
    r, j, l, m = (clock[n] for n in ("read_timeout", "join_timeout", "last_call_timeout", "monitor_interval"))
    when = span.text(span_key)
    if late is None:
        unknown = Event(None, "a cold node", None, "starts: when is unknown (" + ", ".join(span.missing) + " not stated)")
        return [_scenario("start-cold-worker", "a worker starts cold: when is unknown", [unknown], start_known=False),
                _scenario("start-cold-host", "the store's host starts cold: when is unknown", [unknown],
                          start_known=False)]
    scenarios = []
    # another worker is the cold one: the store is up; the others' join_timeout runs from 0
    events = [Event((0, 0), f"{HOST} and the hot nodes", None, "start and join"),
              Event((late, late), "the cold worker", None, f"starts ({span_key} cold start)")]
    hot = high - 1
    if low < high and hot >= low and late > (l.value or 0):
        events.append(Event((l.value or 0, (l.value or 0) + 1), f"{HOST} and the hot nodes", "last_call_timeout",
                            f"the round closes with {hot} node{'s' * (hot != 1)}: training starts without the cold one"))
        if shared_store_off:
            events.append(Event((late, late + (m.value or 0) + ROUND_LATE), EVERY, "monitor_interval",
                                "the running agents see the cold node waiting and restart their workers to admit it "
                                "(TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1)"))
        else:
            error, message = _fill("admission", r)
            events.append(Event((late + (r.value or 0), late + (m.value or 0) + (r.value or 0) + ROUND_LATE), EVERY,
                                "read_timeout", "the round that admits the cold node waits for keys nobody writes "
                                "(the agent's store shared with the workers)", error, message, fails=True,
                                certain=torch_defaults.at_least(version, torch_defaults.SHARED_STORE_SINCE) is not False))
    elif late > (j.value or 0):
        events.append(_join_fail(0, j, f"{HOST} and the hot nodes"))
        if late > (j.value or 0) + JOIN_LATE:
            events.append(_read_fail(late, r, "the cold worker"))
    scenarios.append(_scenario("start-cold-worker", f"a worker starts cold, {when} after the others ({span_key})",
                               events, limits=_limits(clock, late), start_known=span.complete))
    # the store's host is the cold one: the others' store clients wait read_timeout, before any join
    events = [Event((0, 0), OTHERS, None, "start; connect to the store, which is not up"),
              Event((late, late), HOST, None, f"starts ({span_key} cold start)")]
    rv = r.value or 0
    if late > rv:
        events.append(_read_fail(0, r, OTHERS, certain=late >= READ_RETRIES * rv))
        events.append(_join_fail(late, j, HOST))
    limits = _limits(clock, late)
    notes = [] if late <= rv else [f"the others give up between {rv} and {READ_RETRIES * rv} s; a host up by then "
                                   "may still be in time"] if late < READ_RETRIES * rv else []
    scenarios.append(_scenario("start-cold-host", f"the store's host starts cold, {when} after the others "
                                                  f"({span_key})", events, notes, limits, start_known=span.complete))
    return scenarios


def never_scenarios(clock: dict[str, Clock], low: int, high: int) -> list[Scenario]:
    """A node that never starts (a pool out of nodes, a scale-up that fails): a worker, or the store's host."""
    r, j, l = clock["read_timeout"], clock["join_timeout"], clock["last_call_timeout"]
    events = [Event((0, 0), f"{HOST} and the others", None, "start and join")]
    if low < high and high - 1 >= low:
        events.append(Event((l.value or 0, (l.value or 0) + 1), EVERY, "last_call_timeout",
                            f"the round closes with {high - 1} node{'s' * (high != 2)}: training runs without the "
                            "missing one"))
    else:
        events.append(_join_fail(0, j, f"{HOST} and the others"))
    worker = _scenario("never-worker", "a worker never starts", events, limits=_limits(clock, None))
    events = [Event((0, 0), OTHERS, None, "start; connect to the store, which never comes up"),
              _read_fail(0, r, OTHERS)]
    return [worker, _scenario("never-host", "the store's host never starts", events, limits=_limits(clock, None))]


def _jobset_restarts(first_fail: Event, per_attempt: float, restarts: int, again: bool) -> list[Event]:
    """After a clustered task's failing pod: its Job fails (``backoffLimit: 0``), the JobSet recreates every pod
    ``restarts`` times (``cluster_max_restarts``); when each attempt fails ``again``, the last ends the task."""
    if not restarts:
        return []
    end = first_fail.at[1] if first_fail.at is not None else 0
    events = [Event((end, end), "the job", None, f"the failed pod fails its Job (backoffLimit: 0): the JobSet "
                    f"recreates every pod, a new rendezvous (restart 1 of cluster_max_restarts {restarts})")]
    if again:
        total = per_attempt * (restarts + 1)
        events.append(Event((total, total), "the job", first_fail.clock, f"after {restarts} JobSet restart"
                            f"{'s' * (restarts != 1)}, each failing the same way: cluster_max_restarts spent",
                            first_fail.error, first_fail.message, fails=True))
    return events


def static_scenarios(clock: dict[str, Clock], span: Span, span_key: str, high: int, restarts: int) -> list[Scenario]:
    """A clustered task's nodes at torchrun's static rendezvous (``static_tcp_rendezvous.py``): node 0's TCPStore
    waits ``static_timeout`` from its start for every node; each other node retries connecting one to
    :data:`READ_RETRIES` times that from its own. A node ``span_key`` late, or never; JobSet restarts after each."""
    tv = clock["static_timeout"].value or 0
    wait_error, wait_message = MESSAGES["static_wait"][0], MESSAGES["static_wait"][1].format(
        late=tv + STATIC_LATE, joined=high - 1, n=high)
    connect_error, connect_message = MESSAGES["static_connect"][0], MESSAGES["static_connect"][1].format(ms=tv * 1000)
    queued = ["Flyte's max_queued_time, where the task's code sets one, ends an attempt whose workers are not all Ready"]

    def waited(start: float) -> Event:
        return Event((start + tv, start + tv + STATIC_LATE), NODE0, "static_timeout", "not every node connected: "
                     "node 0's store gives up", wait_error, wait_message, fails=restarts == 0)

    def connecting(start: float, certain: bool = True) -> Event:
        return Event((start + tv, start + READ_RETRIES * tv), OTHERS, "static_timeout", "no store to connect to: the "
                     "client gives up", connect_error, connect_message, fails=restarts == 0, certain=certain)

    late = getattr(span, span_key)
    scenarios = []
    if late is None:
        unknown = Event(None, "a cold node", None, "starts: when is unknown (" + ", ".join(span.missing) + " not stated)")
        scenarios += [_scenario("start-cold-worker", "a worker starts cold: when is unknown", [unknown],
                                start_known=False),
                      _scenario("start-cold-host", "node 0 starts cold: when is unknown", [unknown], start_known=False)]
    else:
        when = span.text(span_key)
        events = [Event((0, 0), f"{NODE0} and the hot nodes", None, "start; node 0's store waits for every node"),
                  Event((late, late), "the cold worker", None, f"starts ({span_key} cold start)")]
        if late > tv:
            events.append(waited(0))
            events += _jobset_restarts(events[-1], tv + STATIC_LATE, restarts, False)
        scenarios.append(_scenario("start-cold-worker", f"a worker starts cold, {when} after the others ({span_key})",
                                   events, list(queued), _limits(clock, late), start_known=span.complete))
        events = [Event((0, 0), OTHERS, None, "start; connect to node 0's store, which is not up"),
                  Event((late, late), NODE0, None, f"starts ({span_key} cold start)")]
        if late > tv:
            events.append(connecting(0, certain=late >= READ_RETRIES * tv))
            events += _jobset_restarts(events[-1], READ_RETRIES * tv, restarts, False)
        scenarios.append(_scenario("start-cold-host", f"node 0 starts cold, {when} after the others ({span_key})",
                                   events, list(queued), _limits(clock, late), start_known=span.complete))
    events = [Event((0, 0), f"{NODE0} and the others", None, "start; node 0's store waits for every node"), waited(0)]
    events += _jobset_restarts(events[-1], tv + STATIC_LATE, restarts, True)
    again = ["each attempt's pods start again (not counted here)"] * bool(restarts)
    scenarios.append(_scenario("never-worker", "a worker never starts", events, again, _limits(clock, None)))
    events = [Event((0, 0), OTHERS, None, "start; connect to node 0's store, which never comes up"), connecting(0)]
    events += _jobset_restarts(events[-1], READ_RETRIES * tv, restarts, True)
    scenarios.append(_scenario("never-host", "node 0 never starts", events, again, _limits(clock, None)))
    return scenarios


def _hang_attempt(clock: dict[str, Clock], backend: str, resolved: Resolved) -> tuple[float | None, list[str], str, str]:
    """Seconds one attempt of a hung collective lasts before the worker process ends, what to know, the clock that
    ends it, and ``ends``, ``hangs`` (nothing in torch ends it) or ``unknown``."""
    pg = clock["pg_timeout_nccl" if backend == "nccl" else "pg_timeout_other"]
    m = clock["monitor_interval"].value or 0
    if pg.value is None:
        return None, [f"the process group's default timeout is unknown ({pg.note or pg.source})"], pg.name, "unknown"
    if backend != "nccl":
        return pg.value + m, [], pg.name, "ends"
    handling, _ = env_value(resolved, "TORCH_NCCL_ASYNC_ERROR_HANDLING")
    if handling in ("0", "2"):
        return None, [f"TORCH_NCCL_ASYNC_ERROR_HANDLING={handling}: a timed-out collective does not end the "
                      "process"], pg.name, "hangs"
    hb = clock["nccl_heartbeat"]
    if hb.value is None:
        note = "the heartbeat monitor is off: an abort that hangs is not ended" if hb.known else \
            f"NCCL's heartbeat timeout is unknown ({hb.note})"
        return pg.value + m, [note], pg.name, "ends"
    return pg.value + hb.value + m, [], pg.name, "ends"


def _lost_peer(resolved: Resolved, clock: dict[str, Clock], backend: str, low: int, high: int, restarts: int,
               late: float | None) -> Scenario:
    """A node lost while training, with ``restarts`` left; its replacement pod waits ``late`` seconds for a new node,
    against Kueue's ``recoveryTimeout``."""
    clustered = resolved.target is CLUSTERED
    m, j, l = clock["monitor_interval"], clock.get("join_timeout"), clock.get("last_call_timeout")
    pg = clock["pg_timeout_nccl" if backend == "nccl" else "pg_timeout_other"]
    mv = m.value or 0
    # a lost peer (not the store's host)
    events = [Event((0, 0), "one node", None, "is lost (its pod deleted, its node gone)")]
    if clustered:  # the JobSet ends every pod: no peer waits for the lost one
        events.append(Event((0, 0), "the job", None, "the lost pod fails its Job (backoffLimit: 0)" +
                            ("" if restarts else ": the JobSet fails, no cluster_max_restarts"), fails=not restarts))
        detected: float | None = 0.0
    elif backend == "gloo":
        error, message = _fill("gloo_peer", pg)
        events.append(Event((0, mv), "the others", "monitor_interval", "gloo reports the closed connection at once",
                            error, message, fails=restarts == 0))
        detected = float(mv)
    elif pg.value is None:
        events.append(Event(None, "the others", pg.name, "their collective waits for the lost peer"))
        detected = None
    else:
        error, message = _fill(pg.name, pg)
        events.append(Event((pg.value, pg.value + mv), "the others", pg.name,
                            "their collective waits for the lost peer until the process group's timeout", error,
                            message, fails=restarts == 0))
        detected = pg.value + mv
    if restarts and detected is not None:
        if clustered:
            events += _jobset_restarts(events[-1], detected, restarts, False)
        elif low < high and high - 1 >= low:
            events.append(Event((detected + (l.value or 0), detected + (l.value or 0) + 1), "the others",
                                "last_call_timeout", f"a restart's round closes with {high - 1} nodes: training goes on"))
        else:
            events.append(_join_fail(detected, j, "the others"))
    notes = [f"a node that goes unreachable keeps its pod until Kubernetes evicts it (tolerationSeconds 300 of "
             f"node.kubernetes.io/unreachable, by default) or the others' collective times out ({pg.text})" if clustered
             else f"when the lost node hosted the store, the others fail at once (within monitor_interval, "
             f"{m.value} s) with {MESSAGES['monitor_interval'][0]}"]
    limits = _limits(clock, late, starting=False, replaced=bool(restarts) and late is not None)
    return _scenario("lost-peer", "a node is lost while training", events, notes, limits)


def run_scenarios(resolved: Resolved, clock: dict[str, Clock], backend: str, low: int, high: int,
                  late: float | None = None) -> list[Scenario]:
    """A peer lost while training (:func:`_lost_peer`; ``late``: the worst cold start of its replacement's node), and
    a collective that hangs, with ``max_restarts`` restarts (a clustered task's JobSet restarts,
    ``cluster_max_restarts``, each recreating every pod: :func:`_jobset_restarts`)."""
    budget = "cluster_max_restarts" if resolved.target is CLUSTERED else "max_restarts"
    restarts = resolved.elastic_settings.get(budget) or 0
    m, pg = clock["monitor_interval"], clock["pg_timeout_nccl" if backend == "nccl" else "pg_timeout_other"]
    lost = _lost_peer(resolved, clock, backend, low, high, restarts, late)
    # a hung collective: every attempt hangs again
    attempt, notes, name, state = _hang_attempt(clock, backend, resolved)
    events = [Event((0, 0), "one rank", None, "stops calling collectives (a desync, a hung GPU)")]
    if attempt is None:
        events.append(Event(None, EVERY, name if state == "unknown" else None, "nothing in torch ends the hang"
                            if state == "hangs" else "the collective waits: for how long is unknown"))
    else:
        error, message = _fill(name, pg)
        total = attempt * (restarts + 1)
        events.append(Event((pg.value or 0, attempt), EVERY, name, "the collective times out; the agent sees the "
                            f"worker end within {m.value} s", error, message, fails=restarts == 0))
        if restarts:
            events.append(Event((total, total), EVERY, name, f"after {restarts} restart{'s' * (restarts != 1)}, each "
                                f"hanging again: {budget} spent", error, message, fails=True))
        notes.append(f"per attempt: {' + '.join(_terms(clock, backend, name))} = {attempt:g} s; "
                     f"x ({budget} {restarts} + 1)")
    hung = _scenario("hung-collective", "a collective hangs", events, notes, _limits(clock, None, starting=False))
    return [lost, hung]


def _terms(clock: dict[str, Clock], backend: str, name: str) -> list[str]:
    terms = [f"{name} {clock[name].value}"]
    if backend == "nccl" and clock["nccl_heartbeat"].value is not None:
        terms.append(f"nccl_heartbeat {clock['nccl_heartbeat'].value}")
    return terms + [f"monitor_interval {clock['monitor_interval'].value}"]


def single_start(clock: dict[str, Clock], span: Span) -> Scenario:
    """One pod on a cold node: only Kueue and the deadlines can end it before it runs."""
    late = span.worst
    if late is None:
        return _scenario("start-cold-pod", "the pod starts cold: when is unknown",
                         [Event(None, "the pod", None, "starts: when is unknown (" + ", ".join(span.missing) +
                                " not stated)")], start_known=False)
    events = [Event((late, late), "the pod", None, "starts (worst cold start)")]
    return _scenario("start-cold-pod", f"the pod starts cold, {span.text('worst')} after it is admitted (worst)",
                     events, limits=_limits(clock, late), horizon=late, start_known=span.complete)
