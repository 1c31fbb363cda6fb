"""Shared fixtures: fixture folders, an environment free of the developer's own layers, kubectl."""

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

