"""Shared fixtures: fixture folders, an environment free of the developer's own layers, kubectl; the session's shared
runs (``shared_runs.py``: real torch runs made once, all at once, in the background) and the ``slow`` marker: a test
of seconds or more (an SDK's process, a torch run, kubectl or the command line many times, a wheel, the docs site)
says ``@pytest.mark.slow``, and ``pytest -m "not slow"`` leaves it out."""

from __future__ import annotations

import os
import shutil
import sys

import pytest
from hypothesis import settings


HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
PLATFORM = os.path.join(FIXTURES, "platform")
TEAM = os.path.join(FIXTURES, "team")

sys.path.insert(0, HERE)  # the oracle and strategy helpers live next to the tests

import shared_runs  # noqa: E402  (next to the tests)

# Many tests start Python processes that import flytekit and torch. Where the environment turns bytecode
# caching off (PYTHONDONTWRITEBYTECODE), each of them would compile those packages from source again; let
# the first one write the caches, as Python does by default.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Hypothesis profiles (budgets.py gives each property test its example count under them): `ci`, the default,
# draws the same examples on every run; `explore` draws ten times as many from a random seed.
settings.register_profile("ci", database=None, derandomize=True, deadline=None)
settings.register_profile("explore", database=None, derandomize=False, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _isolated_layers(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No platform or team folders from the developer's environment or from a pyproject.toml above the cwd;
    a cache folder of the test session's own."""
    monkeypatch.delenv("KFDEFAULTS_PLATFORM_PATH", raising=False)
    monkeypatch.delenv("KFDEFAULTS_TEAM_PATH", raising=False)
    monkeypatch.delenv("KFDEFAULTS_NO_CACHE", raising=False)
    monkeypatch.setenv("KFDEFAULTS_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kfdefaults-cache"))
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="session")
def kubectl() -> str:
    """The kubectl binary; the suite proves kubectl equivalence, so a missing kubectl is a failure."""
    path = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not path:
        pytest.fail("kubectl is required on PATH (it runs offline): the tests compare against it")
    return path


@pytest.fixture(scope="session")
def flytekit_python():
    """Python processes with flytekit, its PyTorch plugin and torch imported already (``preloaded_python.py``):
    each run is a process of its own that imports kfdefaults and the task's module afresh, seconds faster."""
    from preloaded_python import PreloadedPython

    server = PreloadedPython("flytekit", "flytekit.tools.translator", "flytekit.bin.entrypoint",
                             "flytekitplugins.kfpytorch", "google.protobuf.json_format", "torch",
                             "torch.distributed.run", "torch.distributed.launcher.api")
    yield server
    server.close()



SLOW_FIXTURES = {"flytekit_python", "torch_run"}
"""A test that uses one of these is slow (a process with flytekit and torch, a real torch run): marked so here."""


def shared_runs_of(item: pytest.Item) -> list[str]:
    """The shared runs a test reads: the names in its ``torch_runs`` markers."""
    return [name for marker in item.iter_markers("torch_runs") for name in marker.args]


def pytest_itemcollected(item: pytest.Item) -> None:
    if shared_runs_of(item) or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
        item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that read shared runs last (in every xdist worker alike): the runs are done by then. The slow tests
    keep their place: started first, their processes would take the cores from the runs' agents, whose clocks
    would then be measured late."""
    items[:] = sorted(items, key=lambda item: bool(shared_runs_of(item)))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the shared runs that the selected tests read (the first worker to get here starts them all)."""
    if session.config.option.collectonly:
        return
    names = {name for item in session.items for name in shared_runs_of(item)}
    session.config.stash[_SCHEDULER] = shared_runs.start(shared_runs.folder_of(session.config), names)
    if names:  # the runs' clocks first: their agents want a core for a moment, at the moment the clock says
        os.nice(shared_runs.NICE)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The scheduler this process started ends with its runs (another worker may still read them), or at once
    when the session was interrupted."""
    scheduler = session.config.stash.get(_SCHEDULER, None)
    if scheduler is not None and exitstatus != pytest.ExitCode.INTERRUPTED:
        try:
            scheduler.wait(timeout=shared_runs.WAIT)
        except Exception:
            pass
    shared_runs.stop(scheduler)


_SCHEDULER = pytest.StashKey()


@pytest.fixture
def torch_run(request: pytest.FixtureRequest):
    """``torch_run(NAME)``: the result of the shared run ``NAME``, which the test names in its ``torch_runs``
    marker (``shared_runs.py`` says how to declare one)."""
    declared = set(shared_runs_of(request.node))
    folder = shared_runs.folder_of(request.config)

    def read(name: str):
        if name not in declared:
            pytest.fail(f"the test reads the run {name!r}: name it in @pytest.mark.torch_runs(...)", pytrace=False)
        return shared_runs.result(folder, name)

    return read
