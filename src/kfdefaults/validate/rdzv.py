"""``elastic.rdzv_configs``: the rendezvous settings torch reads, and their checks, key by key.

The kfpytorch plugin always runs torch elastic with the c10d rendezvous (``rdzv_backend="c10d"``), so only
what c10d's handler and store read is a setting (torch.distributed.elastic.rendezvous).
"""

from __future__ import annotations

from typing import Any

from ..errors import Finding
from ..paths import format_path
from ..read import Document
from .suggest import closest, describe

PathT = tuple

RDZV_SETTINGS: dict[str, tuple[str, str]] = {
    "join_timeout": ("seconds", "c10d: each node's own deadline for one rendezvous round, counted from when that "
                     "node starts joining (again at every restart); the nodes that waited fail with an empty "
                     "RendezvousTimeoutError; torch's default 600 s (dynamic_rendezvous.RendezvousTimeout)"),
    "last_call_timeout": ("seconds", "c10d: with nnodes MIN:MAX, the extra wait once MIN nodes have joined (none "
                          "once MAX have); the round then completes; default 30 s"),
    "close_timeout": ("seconds", "c10d: time to close the rendezvous at shutdown; on expiry only a warning is "
                      "logged; default 30 s"),
    "heartbeat_timeout": ("seconds", "c10d: time for one keep-alive heartbeat; on expiry only a warning is logged; "
                          "default 5 s"),
    "keep_alive_interval": ("seconds", "c10d: seconds between keep-alive heartbeats after a round; default 5"),
    "keep_alive_max_attempt": ("count", "c10d: another node counts as dead when its last heartbeat is older than "
                               "keep_alive_interval x this (15 s by default), for the next round only; it stops no "
                               "running worker; default 3"),
    "read_timeout": ("seconds", "c10d TCPStore: how long a node that does not host the store waits to connect to "
                     "its host (PET_RDZV_ENDPOINT; TCPStore retries with a back-off, so the "
                     "RendezvousConnectionError comes after one to about four times this), then every blocking store "
                     "call of the rendezvous and the agent (DistStoreError on expiry); default 60 s "
                     "(c10d_rendezvous_backend.create_backend); not the process-group timeout"),
    "is_host": ("bool", "c10d TCPStore: whether this node hosts the store; guessed from the hostname or IP address "
                "if unset"),
    "store_type": ("store", "c10d: the store, tcp (default) or file; file takes the endpoint for a file path on "
                   "each pod's own disk, so it cannot work with nnodes > 1"),
    "timeout": ("seconds", "not read by c10d, which the kfpytorch plugin uses: only the legacy etcd and the static "
                "rendezvous read it (default 600 s there); LaunchConfig inserts 900 when it is absent. Not the "
                "init_process_group timeout either"),
}
"""Every ``rdzv_configs`` key that the rendezvous of a kfpytorch task reads, with its kind and what reads it.

The plugin always uses the c10d backend (``rdzv_backend="c10d"``): ``DynamicRendezvousHandler`` reads the
``*_timeout`` keys through ``RendezvousParameters.get_as_int`` and the keep-alive settings;
``C10dRendezvousBackend`` reads ``read_timeout``, ``is_host`` and ``store_type``. ``timeout`` is kept because
``LaunchConfig`` writes it and other rendezvous backends read it; c10d never does. Kinds: ``seconds`` (an
int > 0), ``count`` (an int >= 1), ``bool``, ``store`` (``tcp`` or ``file``)."""

RDZV_INT_SECONDS = tuple(k for k, (kind, _) in RDZV_SETTINGS.items() if kind == "seconds")
"""Rendezvous settings in whole seconds."""

RDZV_KEYS = tuple(RDZV_SETTINGS)
"""Every ``rdzv_configs`` key that torch's rendezvous backends read (torch.distributed.elastic.rendezvous)."""

RDZV_MAX_SECONDS = 100_000_000
"""Largest rendezvous setting in seconds (about 3 years): far below where torch's handling of them breaks.

c10d makes each ``*_timeout`` a ``timedelta`` (at most 86,399,999,999,999 s, else ``OverflowError``,
dynamic_rendezvous._get_timeout); ``TCPStore`` holds ``read_timeout`` as int64 milliseconds and fails to
connect at once from 9,223,372,036,854 s; the handler adds ``last_call_timeout`` to ``datetime.now()`` and
subtracts ``keep_alive_interval`` x ``keep_alive_max_attempt`` from it (``_BackendRendezvousStateHolder``),
and ``datetime`` raises ``OverflowError`` past the year 9999 or before the year 1, about 6.3e10 s back from
today. With :data:`RDZV_MAX_ATTEMPTS`, that product stays below 6e10 s.
"""

RDZV_MAX_ATTEMPTS = 600
"""Largest ``keep_alive_max_attempt``: times :data:`RDZV_MAX_SECONDS`, within what ``datetime`` can subtract
from today (see there)."""

RDZV_STORE_TYPES = ("tcp", "file")
"""``store_type`` values c10d accepts (``c10d_rendezvous_backend.create_backend``)."""


def check_rdzv_configs(document: Document, rdzv: dict[str, Any], layer: str | None,
                       path: PathT = ("elastic", "rdzv_configs")) -> list[Finding]:
    """Check ``elastic.rdzv_configs`` key by key against what torch's c10d rendezvous reads.

    Rules (torch.distributed.elastic.rendezvous, as the kfpytorch plugin runs it with ``rdzv_backend="c10d"``):
    a key must be one of :data:`RDZV_SETTINGS`; timeouts and ``keep_alive_interval`` are
    whole seconds > 0 (``RendezvousTimeout`` rejects zero and negative timeouts, ``get_as_int`` truncates
    fractions) and at most :data:`RDZV_MAX_SECONDS`; ``keep_alive_max_attempt`` an int from 1 to
    :data:`RDZV_MAX_ATTEMPTS` (beyond those, torch's date arithmetic overflows when the rendezvous starts);
    ``is_host`` true or false; ``store_type`` tcp or file.
    ``timeout`` without ``join_timeout`` is a warning: c10d never reads ``timeout``.

    Args:
        document: The parsed file.
        rdzv: The ``rdzv_configs`` mapping as written (``null`` values delete and are not checked).
        layer: The file's layer.
        path: Where the mapping sits in the document.

    Returns:
        One finding per bad key or value.
    """
    findings: list[Finding] = []
    def add(key: str, message: str, *, at_key: bool = False, severity: str = "error") -> None:
        findings.append(Finding(document.location(path + (key,), key=at_key), format_path(path + (key,)), message,
                                severity, layer))

    for key, value in rdzv.items():
        if not isinstance(key, str):
            continue  # the section model reports keys that are not strings
        if key not in RDZV_SETTINGS:
            hint = closest(key, RDZV_SETTINGS)
            known = ", ".join(RDZV_SETTINGS)
            add(key, f"unknown rendezvous setting `{key}`" + (f"; did you mean `{hint}`?" if hint else f"; c10d reads {known}"),
                at_key=True)
            continue
        if value is None:
            continue
        problem = _value_problem(key, value)
        if problem is not None:
            add(key, problem)
    if rdzv.get("timeout") is not None and rdzv.get("join_timeout") is None:
        add("timeout", "c10d does not read `timeout` (only the legacy etcd and the static rendezvous do): set "
            "`join_timeout` to change how long nodes wait to join, or the join timeout stays what the layers below set",
            at_key=True, severity="warning")
    return findings


def _value_problem(key: str, value: Any) -> str | None:
    """What is wrong with ``value`` for the rendezvous setting ``key`` (one of :data:`RDZV_SETTINGS`), if anything."""
    kind, _ = RDZV_SETTINGS[key]
    if kind in ("seconds", "count"):
        lowest, highest = 1, RDZV_MAX_SECONDS if kind == "seconds" else RDZV_MAX_ATTEMPTS
        unit = "a whole number of seconds" if kind == "seconds" else "a whole number"
        if isinstance(value, bool) or not isinstance(value, int):
            hint = "; write it without quotes" if isinstance(value, str) and value.strip().isdigit() else ""
            return f"`{key}` must be {unit} >= {lowest}, got {describe(value)}{hint}"
        if value < lowest:
            return (f"`{key}` must be {unit} >= {lowest}, got {value}"
                    + (" (torch rejects timeouts that are not positive)" if kind == "seconds" else ""))
        if value > highest:
            return (f"`{key}` must be at most {highest:,}" + (" seconds (about 3 years)" if kind == "seconds" else "")
                    + f", got {value:,}: torch's date arithmetic overflows on larger values when the rendezvous starts")
    elif kind == "bool" and not isinstance(value, bool):
        return f"`{key}` must be true or false, got {describe(value)}"
    elif kind == "store" and value not in RDZV_STORE_TYPES:
        hint = closest(str(value), RDZV_STORE_TYPES)
        return f"`{key}` must be tcp or file, got {describe(value)}" + (f"; did you mean `{hint}`?" if hint else "")
    return None
