"""``render`` says which SDK it resolved for only where the choice is ambiguous (nothing chose it, and both SDKs are
installed, or neither) and matters (a setting both plugins take would merge to another value, or ``--as flyte``
prints one SDK's TaskTemplate). Run as a user runs it: the command line in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")
BOTH = "kfdefaults: target flytekit (flytekit and flyte are both installed; --target flyte2 for Flyte 2)"


def render(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    base["KFDEFAULTS_CACHE_DIR"] = os.environ["KFDEFAULTS_CACHE_DIR"]
    proc = subprocess.run([KFDEFAULTS, "render", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**base, **env})
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def team(tmp_path: Path) -> Path:
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "pinned.yaml").write_text("extends: cpu-small\nelastic: {monitor_interval: 5, max_restarts: 0}\n")
    return tmp_path


def test_both_sdks_installed_and_a_default_that_differs_is_said_with_what_differs(team):
    assert render(team, "cpu-small").stderr == f"{BOTH}; for flyte2: monitor_interval 3 (not 5), max_restarts 3 (not 0)\n"
    assert render(team, "gpu-large", "--explain", "-o", "json").stderr == f"{BOTH}; for flyte2: monitor_interval 3 (not 5)\n"
    assert render(team, "gpu-large", "--as", "flyte", "-o", "json").stderr.startswith(f"{BOTH}\n")


@pytest.mark.parametrize("args, env", [
    (("pinned", "--team", "team"), {}),  # every setting both plugins take is written: either target gives the same
    (("cpu-small", "--as", "podtemplate"), {}),  # the target does not change the pod template
    (("cpu-small", "--target", "flytekit"), {}),  # chosen
    (("cpu-small",), {"KFDEFAULTS_TARGET": "flytekit"}),
])
def test_nothing_is_said_where_the_target_is_chosen_or_changes_nothing(team, args, env):
    assert render(team, *args, **env).stderr == ""


def test_one_sdk_installed_settles_the_target(team):
    """With Flyte 2 not importable, flytekit is the installed SDK: not a choice to mention."""
    hide = ("import importlib.abc, sys\n"
            "class Hide(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('flyte', 'flyteplugins'):\n"
            "            raise ModuleNotFoundError(name, name=name)\n"
            "sys.meta_path.insert(0, Hide())\n"
            "sys.argv = ['kfdefaults', 'render', 'cpu-small']\n"
            "from kfdefaults.cli import main\nmain()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    proc = subprocess.run([sys.executable, "-c", hide], cwd=team, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
