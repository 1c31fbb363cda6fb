"""One rule for finding the project, for every command, shown by ``where``: the working directory's
``pyproject.toml`` (or the closest above it), or the one ``--project DIR`` names; never one found from a
``--platform`` or ``--team`` folder. ``lock`` takes the layer options of the other commands, and its messages lead
with the cause. Each run as a user runs it: the CLI in a subprocess, from the folder named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env["KFDEFAULTS_CACHE_DIR"] = os.environ["KFDEFAULTS_CACHE_DIR"]
    return subprocess.run([KFDEFAULTS, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture
def elsewhere(tmp_path: Path) -> tuple[Path, Path]:
    """The platform team's repository (a project with its own lock of gpu-large), and a user's folder beside it,
    with no pyproject.toml, whose team folder overrides gpu-large."""
    platform_repo, user = tmp_path / "pe", tmp_path / "user"
    (platform_repo / "platform").mkdir(parents=True)
    (platform_repo / "platform" / "gpu-large.yaml").write_text("elastic: {max_restarts: 5}\n")
    (platform_repo / "profiles").mkdir()
    (platform_repo / "profiles" / "pe-only.yaml").write_text("extends: gpu-large\n")
    (platform_repo / "pyproject.toml").write_text(
        '[project]\nname = "pe"\n[tool.kfdefaults]\nplatform = ["platform"]\nteam = ["profiles"]\n')
    assert cli(platform_repo, "lock", "gpu-large").returncode == 0
    (user / "team").mkdir(parents=True)
    (user / "team" / "gpu-large.yaml").write_text("elastic: {nnodes: 2}\n")
    return platform_repo, user


LAYERS = ("--platform", "../pe/platform", "--team", "team")


@pytest.mark.slow
@pytest.mark.parametrize("command", [["render", "gpu-large"], ["validate"], ["list"], ["where", "gpu-large"],
                                     ["diff", "gpu-large", "cpu-small"]])
def test_a_platform_folder_in_another_repository_brings_no_project(elsewhere, command):
    """The platform team's pyproject.toml and lock file are theirs: a user who names their folder gets neither."""
    _, user = elsewhere
    proc = cli(user, *command, *LAYERS)
    assert proc.returncode == (1 if command[0] == "diff" else 0), proc.stderr
    assert "kfdefaults.lock" not in proc.stderr and "pe/pyproject.toml" not in proc.stdout + proc.stderr
    assert "pe-only" not in proc.stdout + proc.stderr  # the team folder its [tool.kfdefaults] names


@pytest.mark.slow
def test_where_says_which_project_every_command_reads(elsewhere):
    platform_repo, user = elsewhere
    none = cli(user, "where", "gpu-large", *LAYERS)
    assert none.stdout.splitlines()[0] == (
        f"project: none (no pyproject.toml in {user} or above it; --project DIR names one)")
    named = cli(user, "where", "--project", "../pe", *LAYERS)
    assert named.stdout.splitlines()[0] == (
        f"project: {platform_repo}/pyproject.toml (found from --project, {platform_repo}); its [tool.kfdefaults] "
        "and kfdefaults.lock count")
    inside = cli(platform_repo / "platform", "where")
    assert inside.stdout.splitlines()[0].startswith(f"project: {platform_repo}/pyproject.toml (found from the "
                                                    f"working directory, {platform_repo / 'platform'})")


@pytest.mark.slow
def test_a_project_named_is_read_whole_its_lock_included(elsewhere):
    """--project makes the other repository's project count, as where says: its lock holds gpu-large."""
    _, user = elsewhere
    proc = cli(user, "render", "gpu-large", "--team", "team", "--project", "../pe")
    assert proc.returncode == 1
    assert "pe/kfdefaults.lock:" in proc.stderr and "team file added: gpu-large.yaml" in proc.stderr, proc.stderr
    wrong = cli(user, "render", "gpu-large", "--project", "team")
    assert wrong.returncode == 2 and "--project team: no pyproject.toml in it or in a folder above it" in wrong.stderr


@pytest.mark.slow
def test_lock_takes_the_layer_options_of_the_other_commands(tmp_path):
    project = tmp_path / "vision"
    (project / "profiles").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "vision"\n[tool.kfdefaults]\nteam = ["profiles"]\n')
    (project / "profiles" / "train.yaml").write_text("extends: gpu-large\nelastic: {nnodes: 2}\n")
    (tmp_path / "platform").mkdir()
    (tmp_path / "platform" / "gpu-large.yaml").write_text("elastic: {max_restarts: 5}\n")
    written = cli(project, "lock", "train", "--platform", "../platform")
    assert written.returncode == 0, written.stderr
    assert 'file = "gpu-large.yaml"' in (project / "kfdefaults.lock").read_text()  # the platform's file, locked
    assert cli(project, "lock", "--check", "--platform", "../platform").returncode == 0
    without = cli(project, "lock", "--check")
    assert without.returncode == 1 and "platform file missing: gpu-large.yaml" in without.stderr
    beside = cli(tmp_path, "lock", "--check", "--platform", "platform", "--project", "vision")
    assert beside.returncode == 0, beside.stderr


@pytest.mark.slow
def test_lock_messages_lead_with_the_cause(tmp_path):
    """A platform file that extended a builtin profile goes missing: the builtin file is still installed, and is
    said after the missing platform file, as what it brought about, not as a package to install."""
    (tmp_path / "platform").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "vision"\n[tool.kfdefaults]\nplatform = ["platform"]\n')
    (tmp_path / "platform" / "gpu-large.yaml").write_text("extends: nccl-fail-fast\nelastic: {max_restarts: 5}\n")
    assert cli(tmp_path, "lock", "gpu-large").returncode == 0
    (tmp_path / "platform" / "gpu-large.yaml").unlink()
    for command in (["lock", "--check"], ["render", "gpu-large"]):
        proc = cli(tmp_path, *command)
        assert proc.returncode == 1
        errors = [line for line in proc.stderr.splitlines() if "kfdefaults.lock:" in line]
        # the causes first, then each value of the result that changed because of them
        assert len(errors) > 2 and all("(locked -> now)" in line for line in errors[2:]), proc.stderr
        assert "[platform] profiles.gpu-large.files[" in errors[0]
        assert "platform file missing: platform/gpu-large.yaml" in errors[0], proc.stderr
        assert "[builtin]" in errors[1] and "builtin file no longer merged: kfdefaults " in errors[1]
        assert "nccl-fail-fast.yaml is installed, but profile 'gpu-large' no longer extends it" in errors[1]
        assert "install kfdefaults" not in proc.stderr


@pytest.mark.parametrize("size", [1 << 20, 3 << 20], ids=["1 MiB", "3 MiB, over the cap"])
def test_a_pyproject_built_to_slow_the_search_for_tool_kfdefaults_is_passed_over_at_once(tmp_path, size):
    """`tool = {` a hundred thousand times and no `}`: the search for an inline `tool` table that names kfdefaults
    looked from each one to the end of the file, a quadratic search that held every command of the project for many
    minutes (300 KB: 28 s). It is one pass now; the file does not set tool.kfdefaults, and is passed over."""
    (tmp_path / "pyproject.toml").write_text("tool={" * (size // 6))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env["KFDEFAULTS_CACHE_DIR"] = os.environ["KFDEFAULTS_CACHE_DIR"]
    proc = subprocess.run([KFDEFAULTS, "list"], cwd=tmp_path, capture_output=True, text=True, timeout=30, env=env)
    assert proc.returncode == 0 and "gpu-large" in proc.stdout, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("text", [
    'tool = {kfdefaults = {team = ["profiles"]}}\n',
    'tool = {other = 1, kfdefaults.team = ["profiles"]}\n',
    "tool={" * 50_000 + '\n[x]\ntool = {kfdefaults = {team = ["profiles"]}}\n',
], ids=["inline", "inline dotted", "after many"])
def test_an_inline_tool_table_that_names_kfdefaults_is_still_read(tmp_path, text):
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "mine.yaml").write_text("extends: gpu-large\n")
    (tmp_path / "pyproject.toml").write_text(text)
    proc = cli(tmp_path, "where", "mine")
    if text.startswith("tool={"):  # not TOML: it names kfdefaults, so it is read, and its error says where
        assert proc.returncode == 1 and "pyproject.toml:1:" in proc.stderr, proc.stderr
    else:
        assert proc.returncode == 0 and "profiles/mine.yaml" in proc.stdout, proc.stdout + proc.stderr
