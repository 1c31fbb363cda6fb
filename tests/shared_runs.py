"""Runs that tests read, made once per test session, all at once, in the background: the real torch runs.

A real torch run mostly sleeps (a rendezvous, a store, a timeout of seconds), and a scenario's run may be read by
more than one test. So each run is a named function, declared once; the session starts every run its selected tests
read as soon as they are collected, all of them side by side in one scheduler process (``python
tests/shared_runs.py``, forking the agents from one ``PreloadedPython``), whichever pytest-xdist worker collects
first; the other workers find it started. Each result is written to the session's base temporary folder, and a test
that reads it waits for it there. The tests that read runs are ordered last, so by then the runs are done.

Declare a run (in ``tests/torch_runs.py``, a helper module or a test module): a module-level function, run in the
scheduler's process, whose result pickles. ``torch_python()`` is the scheduler's server to fork agents from:

    from shared_runs import shared_run, torch_python

    @shared_run("an-agent-past-its-deadline")
    def _past_deadline():
        return run_agents(ELASTIC, [0], deadline=4, python=torch_python())

Read it from a test, which names the runs it reads in its ``torch_runs`` marker (the scheduler starts what is
named there; reading a run not named there is an error, not a run made in the test):

    @pytest.mark.torch_runs("an-agent-past-its-deadline")
    def test_the_deadline(torch_run):
        [agent] = torch_run("an-agent-past-its-deadline")

A run that raised raises again, with its traceback, in each test that reads it. ``torch_runs.SCENARIOS`` are
declared under their own names. Tests with the marker are marked ``slow`` too (``pytest -m "not slow"`` starts
no run). A test that needs a run of its own (a fresh process per call, a tmp_path it makes) calls
``torch_runs.run_agents`` itself as before; it then waits in its own worker.
"""

from __future__ import annotations

import fcntl
import importlib
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable

HERE = Path(__file__).resolve().parent

RUNS: dict[str, tuple[str, str, tuple, float]] = {}
"""Every declared run: name -> (module, function, arguments, seconds), as the scheduler imports and calls it."""

AT_ONCE = int(os.environ.get("KFD_SHARED_RUNS_AT_ONCE", "6"))
"""How many runs the scheduler runs side by side, the longest first: each takes about a second of CPU once its clock
has started, and a run whose agents wait for a core measures a clock late; 6 keep the catalogue's wall to that of
its longest runs on two cores."""

NICE = 5
"""The niceness the test processes take while the runs are made (the scheduler's processes keep their own): a torch
agent that wakes for its clock gets a core before the tests' CPU-bound work does."""

WAIT = 900
"""Seconds a test waits for a run before it fails (the longest run takes about 30 s alone)."""


def shared_run(name: str, *args: Any, seconds: float = 30) -> Callable[[Callable], Callable]:
    """Declare ``function(*args)`` as the run ``name`` (arguments that pickle; the function module-level), which
    takes about ``seconds`` alone (the longest start first)."""
    def declare(function: Callable) -> Callable:
        where = (function.__module__, function.__qualname__, args, seconds)
        if RUNS.setdefault(name, where) != where:
            raise ValueError(f"the run {name!r} is declared twice: {RUNS[name][:2]} and {where[:2]}")
        return function
    return declare


_python = None
_python_lock = threading.Lock()


def torch_python():
    """The scheduler's ``PreloadedPython`` importing ``torch_runs.PRELOADED`` (made at the first call)."""
    global _python
    with _python_lock:
        if _python is None:
            from preloaded_python import PreloadedPython
            from torch_runs import PRELOADED

            _python = PreloadedPython(*PRELOADED)
        return _python


# --- in the test session --------------------------------------------------------------------------------------------


def folder_of(config) -> Path:
    """The folder of this session's runs: under the base temporary folder that the xdist workers share."""
    base = config._tmp_path_factory.getbasetemp()
    return (base.parent if hasattr(config, "workerinput") else base) / "shared-runs"


def start(folder: Path, names: Iterable[str]) -> subprocess.Popen | None:
    """Start the scheduler for ``names`` unless a process of this session did already; the scheduler, if this
    process started it."""
    names = sorted(set(names))
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        raise ValueError(f"no run declared as {', '.join(unknown)} (shared_runs.shared_run)")
    if not names:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "runs.json").exists():
            return None
        (folder / "runs.json").write_text(json.dumps({n: RUNS[n] for n in names}), encoding="utf-8")
        # the environment a test has (conftest's _isolated_layers): none of the developer's own layers
        env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
        env["KFDEFAULTS_CACHE_DIR"] = str(folder / "kfdefaults-cache")
        (folder / "cwd").mkdir(exist_ok=True)
        with open(folder / "scheduler.log", "w") as log:
            proc = subprocess.Popen([sys.executable, __file__, str(folder)], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=folder / "cwd", env=env, start_new_session=True)
        (folder / "pid").write_text(str(proc.pid))
        return proc


def stop(proc: subprocess.Popen | None) -> None:
    """End the scheduler and what it started (at the end of the session that started it)."""
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)


def result(folder: Path, name: str) -> Any:
    """The run ``name``'s result, once the scheduler wrote it; what it raised is raised again here."""
    path = folder / f"{name}.pickle"
    deadline = time.monotonic() + WAIT
    while not path.exists():
        log = folder / "scheduler.log"
        pid = int((folder / "pid").read_text()) if (folder / "pid").exists() else None
        if name not in json.loads((folder / "runs.json").read_text(encoding="utf-8")):
            raise LookupError(f"the run {name!r} was not started: name it in the test's torch_runs marker")
        alive = pid is not None and Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)
        if not alive and not path.exists():
            raise RuntimeError(f"the scheduler of the shared runs ended without {name!r}: "
                               f"{log.read_text(errors='replace')[-3000:] if log.exists() else ''}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the run {name!r} did not end within {WAIT} s")
        time.sleep(0.1)
    with open(path, "rb") as f:
        outcome = pickle.load(f)
    if "raised" in outcome:
        raise RuntimeError(f"the run {name!r} raised:\n{outcome['raised']}") from outcome.get("exception")
    return outcome["result"]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


# --- the scheduler --------------------------------------------------------------------------------------------------


def _run(folder: Path, name: str, module: str, function: str, args: tuple) -> None:
    begun = time.monotonic()
    try:
        target: Any = importlib.import_module(module)
        for part in function.split("."):
            target = getattr(target, part)
        outcome: dict = {"result": target(*args)}
    except BaseException as e:  # told to the tests that read it
        outcome = {"raised": traceback.format_exc(), "exception": _picklable(e)}
    partial = folder / f".{name}.pickle"
    with open(partial, "wb") as f:
        pickle.dump(outcome, f)
    partial.rename(folder / f"{name}.pickle")
    print(f"{name}: {time.monotonic() - begun:.1f} s{' (raised)' if 'raised' in outcome else ''}", flush=True)


def _picklable(e: BaseException) -> BaseException | None:
    try:
        return pickle.loads(pickle.dumps(e))
    except Exception:
        return None


def main(folder: Path) -> None:
    """Run the runs of ``folder/runs.json``, ``AT_ONCE`` at a time; each result to ``folder/NAME.pickle``."""
    sys.path.insert(0, str(HERE))
    sys.modules.setdefault("shared_runs", sys.modules[__name__])  # one registry, one torch_python()
    runs = json.loads((folder / "runs.json").read_text(encoding="utf-8"))
    try:
        with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
            for name, (module, function, args, _) in sorted(runs.items(), key=lambda run: -run[1][3]):
                pool.submit(_run, folder, name, module, function, tuple(args))
    finally:
        if _python is not None:
            _python.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
