"""``render`` and ``verify`` say which SDK they resolved for only where the choice is assumed (nothing stated it:
not ``--target``, ``KFDEFAULTS_TARGET`` nor the project's ``[tool.kfdefaults] target``; and both SDKs are installed,
or neither) and matters (a setting both plugins take would merge to another value, ``--as flyte`` prints one SDK's
TaskTemplate, verify's comparison would differ): one line of at most 100 characters. Run as a user runs it: the
command line in a subprocess, in a project folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")
ASSUMED = "kfdefaults: target flytekit assumed; "


def kfdefaults(cwd: Path, *args: str, status: int = 0, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    base["KFDEFAULTS_CACHE_DIR"] = os.environ["KFDEFAULTS_CACHE_DIR"]
    proc = subprocess.run([KFDEFAULTS, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**base, **env})
    assert proc.returncode == status, proc.stderr
    return proc


def render(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return kfdefaults(cwd, "render", *args, **env)


@pytest.fixture
def team(tmp_path: Path) -> Path:
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "pinned.yaml").write_text("extends: cpu-small\nelastic: {monitor_interval: 5, max_restarts: 0}\n")
    return tmp_path


@pytest.mark.slow
def test_both_sdks_installed_and_a_default_that_differs_is_said_with_what_differs(team):
    said = render(team, "cpu-small").stderr
    assert said == f"{ASSUMED}flyte2: monitor_interval 3, max_restarts 3 (see --target)\n" and len(said) <= 101
    assert render(team, "gpu-large", "--explain", "-o", "json").stderr == \
        f"{ASSUMED}flyte2: monitor_interval 3 (see --target)\n"
    assert render(team, "gpu-large", "--as", "flyte", "-o", "json").stderr == \
        f"{ASSUMED}its TaskTemplate is flytekit's (see --target)\n"


def test_a_project_that_states_its_target_hears_nothing(team):
    """``[tool.kfdefaults] target`` in pyproject.toml settles the target for every command run in the project."""
    (team / "pyproject.toml").write_text('[project]\nname = "vision"\n\n[tool.kfdefaults]\ntarget = "flyte2"\n')
    result = render(team, "cpu-small")
    assert result.stderr == "" and "max_restarts: 3" in result.stdout  # Flyte 2's plugin default: the project's target
    assert render(team, "gpu-large", "--explain", "-o", "json").stderr == ""
    assert render(team, "cpu-small", "--target", "flytekit").stdout.count("max_restarts: 0") == 1  # the flag wins
    assert "max_restarts: 0" in render(team, "cpu-small", KFDEFAULTS_TARGET="flytekit").stdout  # so does the variable
    (team / "pyproject.toml").write_text('[tool.kfdefaults]\ntarget = "flytekit"\n')
    assert render(team, "cpu-small").stderr == ""
    (team / "pyproject.toml").write_text('[tool.kfdefaults]\ntarget = "flyte 2"\n')
    result = kfdefaults(team, "render", "cpu-small", status=1)
    assert result.stderr == f"{team}/pyproject.toml:2:10: tool.kfdefaults.target: must be one of flytekit, flyte2, clustered\n"


@pytest.mark.slow
def test_verify_says_the_target_only_where_it_is_assumed_and_changes_the_answer(team):
    """A PyTorchJob whose pod does not record its target (no KFDEFAULTS_ELASTIC) is compared for the assumed
    target; Flyte 2's plugin defaults (max_restarts 3) would compare otherwise, and one line says so. Stated in the
    project, or recorded by the pod, the target needs no line."""
    import yaml

    rendered = render(team, "gpu-large", "--as", "pytorchjob", "--target", "flytekit").stdout
    job = yaml.safe_load(rendered)
    (team / "recorded.yaml").write_text(rendered)
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        for container in replica["template"]["spec"]["containers"]:
            container["env"] = [e for e in container.get("env", []) if e["name"] != "KFDEFAULTS_ELASTIC"]
    (team / "job.yaml").write_text(yaml.safe_dump(job))
    result = kfdefaults(team, "verify", "job.yaml", "--profile", "gpu-large")
    assert result.stderr.startswith(ASSUMED) and "flyte2: " in result.stderr and len(result.stderr) <= 101, result.stderr
    assert result.stderr.count("\n") == 1
    assert kfdefaults(team, "verify", "recorded.yaml").stderr == ""  # the pod records flytekit
    (team / "pyproject.toml").write_text('[tool.kfdefaults]\ntarget = "flytekit"\n')
    assert kfdefaults(team, "verify", "job.yaml", "--profile", "gpu-large").stderr == ""


@pytest.mark.slow
@pytest.mark.parametrize("args, env", [
    (("pinned", "--team", "team"), {}),  # every setting both plugins take is written: either target gives the same
    (("cpu-small", "--as", "podtemplate"), {}),  # the target does not change the pod template
    (("cpu-small", "--target", "flytekit"), {}),  # chosen
    (("cpu-small",), {"KFDEFAULTS_TARGET": "flytekit"}),
])
def test_nothing_is_said_where_the_target_is_chosen_or_changes_nothing(team, args, env):
    (team / "pyproject.toml").write_text("[project]\nname = 'vision'\n")  # a project that states no target
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
