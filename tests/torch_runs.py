"""Real torch elastic runs on this machine: N agents launched as flytekit's kfpytorch plugin launches them, some late
or never, and what each one did (``flyte_apps/torch_agents.py`` runs them; ``flyte_apps/torch_task.py`` is the task
and its workloads).

    from torch_runs import run_agents
    [host, other] = run_agents({"nnodes": 2, "nproc_per_node": 1, "max_restarts": 0, "monitor_interval": 1,
                                "start_method": "fork", "rdzv_configs": {"join_timeout": 3}}, starts=[0, None])
    assert host.exception == "RendezvousTimeoutError" and not other.started

``SCENARIOS`` is the catalogue of ``docs/clocks-measured.md``: each one's settings are a profile's (the builtin
``cpu-small`` with the scenario's ``elastic`` overrides, merged by ``kfdefaults.resolve``). Each one is a shared run
of the test session under its name (``shared_runs.py``: run once, beside the others, read by ``torch_run(name)``,
``run_scenario``). Run as a script,
``python tests/torch_runs.py --capture tests/torch_logs`` runs every scenario and writes each agent's standard
error (``SCENARIO.agentI.stderr``; its standard output, when there is any, beside it) and the measured times
(``runs.json``) to the folder: the logs of real failures that a log classifier is tested on. It prints the table
of ``docs/clocks-measured.md`` for those times (``tests/test_torch_runs.py`` checks that the page shows it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

HERE = Path(__file__).resolve().parent
AGENTS = HERE / "flyte_apps" / "torch_agents.py"
PRELOADED = ("flytekit", "flytekit.bin.entrypoint", "flytekitplugins.kfpytorch", "torch", "torch.distributed.run",
             "torch.distributed.launcher.api", "torch._dynamo")
"""What the server the agents fork from imports once. ``torch._dynamo`` too: torch's log formatter imports it at an
agent's first error line (``TorchLogsFormatter.format``, ``torch/_logging/_internal.py``), seconds of CPU that a
pod pays once and that would otherwise blur the clocks measured here."""


@dataclass
class AgentRun:
    """What one agent did.

    Attributes:
        index: The agent's place in ``starts``; agent 0 hosts the rendezvous store.
        started: False for an agent that was never started.
        exit_code: The agent process's exit status (``pyflyte-execute`` exits 0 once it has written the error
            document, as in a pod), negative for a signal; None if never started.
        killed: The run's deadline came first and the agent was killed.
        start: Seconds from the run's start to the agent's start.
        elapsed: Seconds from the agent's start to its end.
        stdout: Its standard output (the training processes' prints).
        stderr: Its standard error: torch's warnings and errors, flytekit's JSON log lines, C++ warnings.
        launch: The ``LaunchConfig`` torch received (``flyte_apps/launch_recorder.py``), or None.
        raised: What ``elastic_launch`` raised, or None: ``type``, ``module``, ``message`` and, for a
            ``ChildFailedError``, ``failures`` (global rank -> ``exitcode``, ``message``).
        outputs: flytekit wrote the task's outputs (global rank 0 of a successful run).
        reported: The error flytekit reported (its error document's first ``Message:`` line), or None.
    """

    index: int
    started: bool
    exit_code: int | None = None
    killed: bool = False
    start: float | None = None
    elapsed: float | None = None
    stdout: str = ""
    stderr: str = ""
    launch: dict | None = None
    raised: dict | None = None
    outputs: bool = False
    reported: str | None = None

    @property
    def exception(self) -> str | None:
        """The class name of what ``elastic_launch`` raised, like ``RendezvousTimeoutError``."""
        return self.raised["type"] if self.raised else None

    @property
    def failed(self) -> bool:
        """flytekit reported an error, or the agent was killed or ended with a non-zero status."""
        return self.reported is not None or self.killed or bool(self.exit_code)

    @property
    def end(self) -> float | None:
        """Seconds from the run's start to the agent's end."""
        return None if self.start is None or self.elapsed is None else round(self.start + self.elapsed, 2)


@dataclass(frozen=True)
class Scenario:
    """One run of the catalogue: a profile's elastic settings, when each agent starts, what the workers do.

    Attributes:
        name: The file-name stem of its logs.
        title: What it shows, in a line.
        first: The clock (or event) that fires first, as measured and checked by ``tests/test_torch_runs.py``.
        elastic: The task layer's ``elastic`` over the builtin ``cpu-small`` profile.
        starts: Each agent's start in seconds (None: never); agent 0 hosts the store.
        cues: For an agent whose start only means something once another agent's workers run, ``{agent: (other,
            seconds)}``: it starts no earlier than that many seconds after the other's first worker printed.
        workload: ``flyte_apps/torch_task.py``'s workload.
        deadline: Seconds after which the agents still running are killed.
        env: More environment for every agent.
        shm_size: A ``/dev/shm`` of this size for the run (root only).
    """

    name: str
    title: str
    first: str
    elastic: Mapping[str, Any]
    starts: tuple[float | None, ...]
    workload: Mapping[str, Any] = field(default_factory=lambda: {"name": "allreduce"})
    deadline: float = 40
    env: Mapping[str, str] = field(default_factory=dict)
    shm_size: str | None = None
    cues: Mapping[int, tuple[int, float]] = field(default_factory=dict)

    def settings(self) -> dict:
        """The merged elastic settings, as ``kfdefaults render cpu-small -o json`` prints them under ``elastic``
        with this scenario's task layer (fork workers, a 1 s monitor interval and no restarts unless it says)."""
        import kfdefaults

        base = {"nproc_per_node": 1, "start_method": "fork", "monitor_interval": 1, "max_restarts": 0}
        elastic = {**base, **self.elastic, "rdzv_configs": dict(self.elastic.get("rdzv_configs", {}))}
        return kfdefaults.resolve("cpu-small", overrides={"elastic": elastic}, target="flytekit").elastic_settings

    def run(self, python: Any = None) -> list[AgentRun]:
        return run_agents(self.settings(), self.starts, workload=self.workload, deadline=self.deadline,
                          env=self.env, shm_size=self.shm_size, python=python, cues=self.cues)


def _rdzv(**configs: int) -> dict:
    return {"rdzv_configs": configs}


SCENARIOS = {s.name: s for s in [
    # the rendezvous clocks
    Scenario("join-timeout-missing-node", "nnodes 2; the second node never starts",
             "join_timeout", {"nnodes": 2, **_rdzv(join_timeout=3, read_timeout=10)}, (0, None), deadline=30),
    Scenario("read-timeout-late-store-host", "the pod hosting the store starts 12 s late",
             "read_timeout (agent 1), then join_timeout (agent 0)",
             {"nnodes": 2, **_rdzv(join_timeout=3, read_timeout=2)}, (12, 0), deadline=30),
    Scenario("read-timeout-store-host-in-time", "the store's host starts 2 s late, within read_timeout",
             "none", {"nnodes": 2, **_rdzv(join_timeout=10, read_timeout=8)}, (2, 0), deadline=30),
    Scenario("join-timeout-late-node", "a node starts after the other's join_timeout",
             "join_timeout (agent 0), then read_timeout (agent 1)",
             {"nnodes": 2, **_rdzv(join_timeout=3, read_timeout=2)}, (0, 8), deadline=30),
    # a clock the run shows not waited (last_call_timeout at max nodes, join_timeout once min nodes are in) is longer
    # than a loaded machine can delay an agent: a round that does not wait it ends as soon, whatever its length
    Scenario("elastic-max-nodes-in", "nnodes 1:2; both start", "none: the round completes at max nodes",
             {"nnodes": "1:2", **_rdzv(join_timeout=40, last_call_timeout=30)}, (0, 0), deadline=60),
    Scenario("last-call-alone", "nnodes 1:2; the second node never starts", "last_call_timeout",
             {"nnodes": "1:2", **_rdzv(join_timeout=40, last_call_timeout=2)}, (0, None), deadline=60),
    Scenario("last-call-late-node-admitted", "nnodes 1:2; a node starts once the first one runs alone",
             "last_call_timeout, then read_timeout in the round that admits the node",
             {"nnodes": "1:2", **_rdzv(join_timeout=20, last_call_timeout=3, read_timeout=4)},
             (0, 8), {"name": "allreduce", "hold": 14}, deadline=45, cues={1: (0, 2)}),
    Scenario("last-call-late-node-admitted-max-restarts-1", "the same with max_restarts 1",
             "last_call_timeout, then read_timeout in the round that admits the node",
             {"nnodes": "1:2", "max_restarts": 1, **_rdzv(join_timeout=20, last_call_timeout=3, read_timeout=4)},
             (0, 8), {"name": "allreduce", "hold": 14}, deadline=45, cues={1: (0, 2)}),
    Scenario("last-call-late-node-admitted-unshared-store", "the same with TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1",
             "last_call_timeout, then a restart that admits the node",
             {"nnodes": "1:2", **_rdzv(join_timeout=20, last_call_timeout=3, read_timeout=4)},
             (0, 8), {"name": "allreduce", "hold": 14}, deadline=45, env={"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"},
             cues={1: (0, 2)}),
    Scenario("closed-rendezvous-restarted-pod", "a worker raises (max_restarts 0); its pod restarts after its agent "
             "ended", "the worker's exception, then the closed rendezvous", {"nnodes": 2, **_rdzv(join_timeout=10)},
             (0, 0, 15), {"name": "raise", "agent": 1, "hold": 30}, deadline=21),
    Scenario("spare-node-then-closed", "a third node for nnodes 2 waits while the round is full; a worker raises",
             "the worker's exception, then the close (the spare has no clock)",
             {"nnodes": 2, **_rdzv(join_timeout=10)}, (0, 0, 6),
             {"name": "raise", "agent": 1, "after": 8, "hold": 30}, deadline=21, cues={2: (1, 1)}),
    # workers that fail
    Scenario("worker-sigkill", "a worker killed by SIGKILL mid-run (max_restarts 0)",
             "the killed worker, seen within monitor_interval", {"nnodes": 2, **_rdzv(join_timeout=10)}, (0, 0),
             {"name": "sigkill", "agent": 1, "after": 1}, deadline=30),
    Scenario("worker-sigkill-max-restarts-1", "the same with max_restarts 1 (and a 5 s shutdown timeout)",
             "the killed worker, then a restart of both groups", {"nnodes": 2, "max_restarts": 1,
                                                                 **_rdzv(join_timeout=10)}, (0, 0),
             {"name": "sigkill", "agent": 1, "after": 1, "first_attempt_only": True}, deadline=30,
             env={"TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "5"}),
    Scenario("worker-sigkill-max-restarts-1-unshared-store", "the same with TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1",
             "the killed worker, then a restart of both groups",
             {"nnodes": 2, "max_restarts": 1, **_rdzv(join_timeout=10)}, (0, 0),
             {"name": "sigkill", "agent": 1, "after": 1, "first_attempt_only": True}, deadline=40,
             env={"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}),
    Scenario("gloo-collective-timeout", "one rank never calls all_reduce; the process group's timeout is 3 s",
             "the process group's timeout (gloo)", {"nnodes": 2, **_rdzv(join_timeout=10)}, (0, 0),
             {"name": "collective_timeout", "agent": 1, "hold": 10, "pg_timeout": 3}, deadline=30),
    Scenario("dataloader-shm-enospc", "DataLoader workers pass 4 MiB batches through a 1 MiB /dev/shm",
             "none: /dev/shm is full (ENOSPC)", {"nnodes": 1}, (0,), {"name": "dataloader", "via": "tensors"},
             deadline=30, shm_size="1m"),
    Scenario("dataloader-shm-sigbus", "DataLoader workers write into a sparse /dev/shm mapping past its 1 MiB",
             "none: /dev/shm is full (SIGBUS)", {"nnodes": 1}, (0,), {"name": "dataloader", "via": "mmap"},
             deadline=30, shm_size="1m"),
]}
"""The catalogue, by name (``docs/clocks-measured.md`` has what each one measured)."""


def run_scenario(name: str) -> list[AgentRun]:
    """The scenario ``name`` run once for the test session (``shared_runs``: the tests read it with
    ``torch_run(name)``)."""
    from shared_runs import torch_python

    return SCENARIOS[name].run(torch_python())


def _declare_scenarios() -> None:
    """Each scenario as a shared run, with the wall time its last capture measured (``runs.json``)."""
    from shared_runs import shared_run

    captured = HERE / "torch_logs" / "runs.json"
    walls = json.loads(captured.read_text(encoding="utf-8"))["scenarios"] if captured.exists() else {}
    for name in SCENARIOS:
        shared_run(name, name, seconds=walls.get(name, {}).get("wall", 30))(run_scenario)


_declare_scenarios()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def run_agents(elastic: Mapping[str, Any], starts: Sequence[float | None], *, workload: Mapping[str, Any] | None = None,
               deadline: float = 40, shm_size: str | None = None, env: Mapping[str, str] | None = None,
               python: Any = None, x: int = 1, cues: Mapping[int, tuple[int, float]] | None = None) -> list[AgentRun]:
    """Run one agent per entry of ``starts`` against one rendezvous, and wait for all of them or ``deadline``.

    Args:
        elastic: The merged elastic settings (``kfdefaults render NAME -o json``'s ``elastic``).
        starts: Each agent's start, in seconds after the run's start (None: never started); agent 0 hosts the c10d
            store (``flyte_apps/torch_agents.py`` says how).
        workload: What the training processes do (``flyte_apps/torch_task.py``); default a gloo all-reduce.
        deadline: Seconds after the run's start when every agent still running is killed.
        shm_size: A ``/dev/shm`` of this size (a tmpfs size, like ``1m``) for the run, in a mount namespace of its own.
        env: More environment variables for every agent, as a profile's ``env`` gives the primary container.
        python: A ``preloaded_python.PreloadedPython`` importing ``PRELOADED`` to fork from; None: one of its own.
        x: The task's input.
        cues: ``{agent: (other, seconds)}``: that agent starts no earlier than ``seconds`` after the first
            ``KFD_WORKER`` line of ``other``'s workers (``Scenario.cues``).

    Returns:
        One ``AgentRun`` per entry of ``starts``.

    Raises:
        RuntimeError: the run could not be made (the coordinator failed, or ``shm_size`` could not be set up: the
            reason, such as not being root).
    """
    own = python is None
    if own:
        from preloaded_python import PreloadedPython

        python = PreloadedPython(*PRELOADED)
    work = Path(tempfile.mkdtemp(prefix="kfd-torch-run-"))
    try:
        spec = {"workdir": str(work), "port": free_port(), "run_id": f"kfdrun{os.getpid()}x{time.time_ns() % 10**9}",
                "elastic": dict(elastic), "workload": dict(workload or {"name": "allreduce"}),
                "agents": [{"start": s, "cue": (cues or {}).get(i)} for i, s in enumerate(starts)], "deadline": deadline, "shm_size": shm_size, "x": x,
                "env": dict(env or {})}
        (work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("KFDEFAULTS_", "PET_", "FLYTE_", "TORCH"))}
        proc = python.run([AGENTS, work / "spec.json"], cwd=work, env=clean, timeout=deadline + 150)
        if proc.returncode != 0 or not (work / "result.json").exists():
            raise RuntimeError(f"torch_agents.py failed ({proc.returncode}): {proc.stderr[-3000:]}")
        return _read(work, json.loads((work / "result.json").read_text(encoding="utf-8")), len(starts))
    finally:
        _kill_leftovers(work)
        shutil.rmtree(work, ignore_errors=True)
        if own:
            python.close()


def _kill_leftovers(work: Path) -> None:
    """SIGKILL what is left of the process groups of the agents this run started (the coordinator itself was
    killed before its deadline, say)."""
    pgids = work / "pgids"
    if pgids.exists():
        for line in pgids.read_text().split():
            try:
                os.killpg(int(line), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _reported(error_pb: Path) -> str | None:
    """The first line under ``Message:`` of flytekit's error document (``_dispatch_execute``), the error Flyte shows."""
    if not error_pb.exists():
        return None
    from flyteidl.core import errors_pb2

    document = errors_pb2.ErrorDocument()
    document.ParseFromString(error_pb.read_bytes())
    message = document.error.message
    tail = message.rsplit("\nMessage:\n", 1)[-1].strip().splitlines()
    return tail[0].strip() if tail else message


def _read(work: Path, result: dict, n: int) -> list[AgentRun]:
    if result.get("skipped"):
        raise RuntimeError(result["skipped"])
    runs = []
    for index in range(n):
        a = result["agents"][index]
        if a is None:
            runs.append(AgentRun(index, started=False))
            continue
        base = work / f"agent{index}"
        start_file, launch, raised = (Path(f"{base}.{ext}") for ext in ("start", "launch.jsonl", "raised.json"))
        start = float(start_file.read_text()) if start_file.exists() else None
        runs.append(AgentRun(
            index, started=True, exit_code=a.get("status"), killed=a["killed"],
            start=None if start is None else round(start - result["t0"], 2),
            elapsed=None if start is None or "ended" not in a else round(a["ended"] - start, 2),
            stdout=Path(f"{base}.stdout").read_text(errors="replace"),
            stderr=Path(f"{base}.stderr").read_text(errors="replace"),
            launch=json.loads(launch.read_text().splitlines()[0]) if launch.exists() else None,
            raised=json.loads(raised.read_text()) if raised.exists() else None,
            outputs=(base / "out" / "outputs.pb").exists(), reported=_reported(base / "out" / "error.pb")))
    return runs


def _settings_cell(run: Mapping[str, Any]) -> str:
    settings = run["settings"]
    words = [f"nnodes {settings['nnodes']}"]
    if settings.get("max_restarts"):
        words.append(f"max_restarts {settings['max_restarts']}")
    words += [f"{k} {v}" for k, v in settings["rdzv_configs"].items() if k != "timeout"]
    words += [f"{k}={v}" for k, v in run["env"].items()]
    if run["shm_size"]:
        words.append(f"/dev/shm {run['shm_size']}")
    return ", ".join(words)


def _agent_cell(index: int, agent: Mapping[str, Any], start: float | None) -> str:
    if not agent["started"]:
        return f"{index}: never started"
    at = f"{index} (starts at {start:g} s)" if start else str(index)
    if agent["killed"]:
        return f"{at}: still running, killed at the deadline"
    outcome = agent["exception"] or ("error" if agent["reported"] else "ok")
    return f"{at}: {outcome}, {agent['elapsed']:.1f} s"


def table(summary: Mapping[str, Any]) -> str:
    """The Markdown table of ``docs/clocks-measured.md``: per scenario its settings, the agents' starts, the first
    clock, and per agent what ``elastic_launch`` raised (or ``ok``) after how many seconds of its own."""
    rows = ["| scenario | settings (seconds) | first clock | agent: outcome, elapsed |", "|---|---|---|---|"]
    for name, run in summary["scenarios"].items():
        agents = "<br>".join(_agent_cell(i, a, s) for i, (a, s) in enumerate(zip(run["agents"], run["starts"])))
        rows.append(f"| [`{name}`](#{name}) | {_settings_cell(run)} | {run['first']} | {agents} |")
    return "\n".join(rows) + "\n"


def capture(folder: Path, names: Sequence[str] = ()) -> dict:
    """Run the scenarios (all of them, or ``names``) and write their logs and ``runs.json`` to ``folder``."""
    import platform

    import torch
    from flytekit import __version__ as flytekit_version
    from preloaded_python import PreloadedPython

    folder.mkdir(parents=True, exist_ok=True)
    python = PreloadedPython(*PRELOADED)
    summary: dict[str, Any] = {"torch": torch.__version__, "flytekit": flytekit_version,
                               "python": platform.python_version(), "cpus": os.cpu_count(), "scenarios": {}}
    try:
        for name in names or SCENARIOS:
            scenario = SCENARIOS[name]
            begun = time.monotonic()
            runs = scenario.run(python)
            summary["scenarios"][name] = {
                "title": scenario.title, "first": scenario.first, "settings": scenario.settings(), "starts": list(scenario.starts),
                "workload": dict(scenario.workload), "env": dict(scenario.env), "shm_size": scenario.shm_size,
                "wall": round(time.monotonic() - begun, 1),
                "agents": [{"started": r.started, "start": r.start, "elapsed": r.elapsed, "end": r.end,
                            "killed": r.killed, "exit_code": r.exit_code, "exception": r.exception,
                            "reported": r.reported, "outputs": r.outputs} for r in runs]}
            for r in runs:
                for stream in ("stderr", "stdout"):
                    path = folder / f"{name}.agent{r.index}.{stream}"
                    path.unlink(missing_ok=True)
                    if r.started and (stream == "stderr" or getattr(r, stream)):
                        path.write_text(getattr(r, stream), encoding="utf-8")
            print(f"{name}: {summary['scenarios'][name]['wall']} s", file=sys.stderr)
    finally:
        python.close()
    (folder / "runs.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(table(summary))
    return summary


if __name__ == "__main__":
    import argparse

    sys.path.insert(0, str(HERE))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--capture", metavar="FOLDER", type=Path, required=True,
                        help="write each scenario's logs and runs.json there")
    parser.add_argument("names", nargs="*", metavar="SCENARIO", help=f"default: all of {', '.join(SCENARIOS)}")
    args = parser.parse_args()
    for unknown in set(args.names) - set(SCENARIOS):
        parser.error(f"no scenario {unknown!r}")
    capture(args.capture, args.names)
