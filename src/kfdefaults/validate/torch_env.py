"""Environment variables through which a profile sets torch's timeouts and fail-fast behaviour, and their checks.

The process-group timeout (every collective's timeout) has no environment variable: it is the ``timeout=``
argument of ``torch.distributed.init_process_group`` in the training code (10 minutes for ``backend="nccl"``,
30 for every other backend or none). What torch does read from the environment of the primary container, whose
variables reach every worker process unchanged, is listed in :data:`TORCH_ENV_SETTINGS`; the values a profile
writes for them are checked here, each at its ``env`` entry. The NCCL defaults marked "upstream" are taken
from PyTorch's C++ sources (``ProcessGroupNCCL``), which a CPU build of torch does not contain: confirm them on
the CUDA image with ``TORCH_CPP_LOG_LEVEL=INFO``, which makes NCCL log its settings when a process group starts.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from ..errors import Finding, shown
from ..read import Document
from ..targets import INT32_MAX
from .reserved import named


class TorchEnvSetting(NamedTuple):
    """One variable torch reads.

    Attributes:
        kind: ``flag`` (``0`` or ``1``), ``choice`` (one of :attr:`choices`), ``int`` (a whole number >= :attr:`lowest`)
            or ``number`` (a decimal number >= :attr:`lowest`).
        unit: ``s``, ``ms``, ``entries`` or ``""``.
        default: The default as text, with where it comes from.
        what: What it does.
        read_by: What reads it (file of torch 2.13, or "upstream" where only the C++ source says).
        choices: For ``choice``, the accepted values.
        lowest: For ``int`` and ``number``, the smallest accepted value.
        warn: Value -> why a profile should not set it so (a warning).
    """

    kind: str
    unit: str
    default: str
    what: str
    read_by: str
    choices: tuple[str, ...] = ()
    lowest: float = 0
    warn: dict[str, str] = {}


_LOG = "confirm on the CUDA image with TORCH_CPP_LOG_LEVEL=INFO"

TORCH_ENV_SETTINGS: dict[str, TorchEnvSetting] = {
    "TORCH_NCCL_ASYNC_ERROR_HANDLING": TorchEnvSetting(
        "choice", "", "1 in every torch elastic worker (the agent sets it when the container does not); 3 outside "
        f"torch elastic (upstream; {_LOG})",
        "what NCCL's watchdog does when a collective times out or fails: 0 nothing, 1 abort the communicators and "
        "end the process, 2 abort only, 3 end the process without aborting",
        "ProcessGroupNCCL; local_elastic_agent.py (the default 1)", choices=("0", "1", "2", "3"),
        warn={"0": "a timed-out collective is only logged, and the job hangs until something outside torch ends it",
              "2": "the communicators are aborted but the process lives on: the error shows only when the training "
                   "code next waits on the GPU; 1 or 3 end the process"}),
    "TORCH_NCCL_BLOCKING_WAIT": TorchEnvSetting(
        "flag", "", "0", "1: a collective's wait() blocks the calling thread up to the process-group timeout and "
        "raises there, with no watchdog thread", "ProcessGroupNCCL",
        warn={"1": "no watchdog thread, so no heartbeat monitor, no abort and no flight-recorder dump; meant for "
                   "debugging, not for a default"}),
    "TORCH_NCCL_ENABLE_MONITORING": TorchEnvSetting(
        "flag", "", f"1 (upstream; {_LOG})", "the heartbeat monitor, which ends the process when NCCL's watchdog "
        "thread itself is stuck for TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "ProcessGroupNCCL (upstream)",
        warn={"0": "a stuck NCCL watchdog thread then hangs the process until something outside torch ends it"}),
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": TorchEnvSetting(
        "int", "s", f"480 (upstream; 600 in older releases; {_LOG})", "how long NCCL's watchdog thread may make no "
        "progress before the heartbeat monitor ends the process", "ProcessGroupNCCL (upstream)", lowest=1),
    "TORCH_NCCL_DUMP_ON_TIMEOUT": TorchEnvSetting(
        "flag", "", f"1 (upstream; 0 in older releases; {_LOG})", "dump the flight recorder (the last collectives "
        "of each rank) when a collective times out", "ProcessGroupNCCL (upstream)"),
    "TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC": TorchEnvSetting(
        "int", "ms", f"15000 (upstream; {_LOG})", "how long a failing process waits for the flight-recorder dump "
        "before it exits", "ProcessGroupNCCL (upstream)"),
    "TORCH_NCCL_TRACE_BUFFER_SIZE": TorchEnvSetting(
        "int", "entries", f"2000 (upstream; 0 in older releases; {_LOG})", "entries of the flight recorder; 0 turns "
        "it, and the dump, off (TORCH_FR_BUFFER_SIZE is the newer name)", "distributed_c10d.py, FlightRecorder"),
    "TORCH_FR_BUFFER_SIZE": TorchEnvSetting(
        "int", "entries", "as TORCH_NCCL_TRACE_BUFFER_SIZE", "the newer name of TORCH_NCCL_TRACE_BUFFER_SIZE",
        "distributed_c10d.py, FlightRecorder"),
    "TORCH_DIST_INIT_BARRIER": TorchEnvSetting(
        "flag", "", "0", "1: init_process_group ends with a store barrier bounded by the process-group timeout",
        "distributed_c10d.py (read with int(): true or yes raise ValueError in the training code)"),
    "TORCH_ELASTIC_SHUTDOWN_TIMEOUT": TorchEnvSetting(
        "int", "s", "30", "how long the elastic agent waits after SIGTERM before it SIGKILLs its workers (a failure, "
        "a restart, the end, a SIGTERM to the pod)", "launcher/api.py (read with int(): 30.5 stops the launch)"),
    "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT": TorchEnvSetting(
        "number", "s", "0 (off)", "a worker in uninterruptible sleep (D state: a wedged GPU or NIC) that long fails "
        "the worker group and forbids restarts", "local_elastic_agent.py (an unreadable value turns it off silently)"),
    "TORCH_NCCL_PROPAGATE_ERROR": TorchEnvSetting(
        "flag", "", f"0 (upstream, recent releases only; {_LOG})", "pass an NCCL error or timeout seen by one rank "
        "to every rank through the store, so that the others fail at once", "ProcessGroupNCCL (upstream)"),
}
"""Every environment variable a profile can set to change a torch timeout or how a hang ends (torch 2.13)."""

NOT_TORCH_SETTINGS = ("NCCL_TIMEOUT", "TORCH_NCCL_TIMEOUT", "TORCH_DIST_TIMEOUT", "TORCH_DISTRIBUTED_TIMEOUT",
                      "TORCH_PG_TIMEOUT")
"""Names people try for the process-group timeout; torch 2.13 reads none of them."""

_INT = re.compile(r"[0-9]+")
_MAX_DIGITS = 20
"""Longest value of an ``int`` or ``number`` variable read (``2147483647.000000000``), before any conversion."""
_NUMBER = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+")


def value_problem(name: str, value: str) -> tuple[str, str] | None:
    """``(severity, message)`` for a value of a variable torch reads, or ``None`` when it is fine."""
    setting = TORCH_ENV_SETTINGS.get(name)
    if setting is None:
        return None
    text = value.strip()
    if setting.kind == "flag" and text not in ("0", "1"):
        return "error", f"`{name}` takes 0 or 1, got {shown(repr(value))}"
    if setting.kind == "choice" and text not in setting.choices:
        return "error", f"`{name}` takes one of {', '.join(setting.choices)}, got {shown(repr(value))}"
    if setting.kind in ("int", "number"):
        pattern = _INT if setting.kind == "int" else _NUMBER
        unit = {"s": " seconds", "ms": " milliseconds", "entries": " entries"}.get(setting.unit, "")
        whole = "a whole number" if setting.kind == "int" else "a number"
        if not pattern.fullmatch(text) or float(text) < setting.lowest:
            return "error", f"`{name}` takes {whole} of{unit} >= {setting.lowest:g}, got {shown(repr(value))}"
        if len(text) > _MAX_DIGITS or float(text) > INT32_MAX:  # the length first: int() of 4,300 digits raises
            return "error", (f"`{name}` takes {whole} of{unit} up to {INT32_MAX:,}, got {shown(text)}: the bound of the "
                             "variables torch's C++ reads as an int (std::stoi throws past it)")
        if name == "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC" and int(text) < 60:
            return "warning", (f"`{name}` of {text} seconds ends a process whose NCCL watchdog is only briefly "
                               "blocked; keep it at a minute or more")
    reason = setting.warn.get(text)
    return ("warning", f"`{name}={text}`: {reason}") if reason else None


def check_torch_env(document: Document, spec: dict[str, Any], layer: str | None,
                    path: tuple = ("pod_template", "spec")) -> list[Finding]:
    """Check the values a PodSpec fragment gives the variables of :data:`TORCH_ENV_SETTINGS`, and warn about
    names torch does not read (:data:`NOT_TORCH_SETTINGS`).

    Returns:
        Errors for values torch rejects or misreads, warnings for values that make hangs last; each at the value.
    """
    findings: list[Finding] = []
    for field in ("containers", "initContainers"):
        items = spec.get(field)
        for i, container in enumerate(items if isinstance(items, list) else []):
            env = container.get("env") if isinstance(container, dict) else None
            for j, entry in enumerate(env if isinstance(env, list) else []):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    continue
                name, at = entry["name"], path + (field, i, "env", j)
                items = [(container, "name"), (entry, "name")]
                if name in NOT_TORCH_SETTINGS:
                    findings.append(Finding(document.location(at + ("name",)), named(at + ("name",), items),
                                            f"torch reads no `{name}`: the process-group (collective) timeout is the "
                                            "timeout= argument of init_process_group in the training code",
                                            "warning", layer))
                    continue
                value = entry.get("value")
                problem = value_problem(name, value) if isinstance(value, str) else None
                if problem is not None:
                    severity, message = problem
                    findings.append(Finding(document.location(at + ("value",)), named(at + ("value",), items),
                                            message, severity, layer))
    return findings
