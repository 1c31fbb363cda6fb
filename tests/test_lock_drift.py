"""``kfdefaults lock --check`` in a project's shell, one test per kind of drift since the profiles were locked:
each fails, naming at the lock file's line what changed, never a success and never only another finding."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from replay_probe import CLUSTER_TEMPLATE, copy_of_kfdefaults

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")

PLATFORM_GPU_LARGE = "elastic: {max_restarts: 5}\npod_template:\n  labels: {pool: a100}\n"


def kfdefaults(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """``kfdefaults ARGS`` in the project's folder, in a shell whose environment names no kfdefaults folder."""
    shell = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    shell.update(KFDEFAULTS_CACHE_DIR=str(project.parent / "cache"), **env)
    return subprocess.run([KFDEFAULTS, *args], cwd=project, env=shell, capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose team folder overrides gpu-large, with a platform folder the shell names."""
    project = tmp_path / "vision"
    (project / "profiles").mkdir(parents=True)
    (project / "platform").mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "vision"\n\n[tool.kfdefaults]\nteam = ["profiles"]\n')
    (project / "profiles" / "gpu-large.yaml").write_text("pod_template:\n  labels: {team: vision}\n")
    (project / "platform" / "gpu-large.yaml").write_text(PLATFORM_GPU_LARGE)
    return project


WITH_PLATFORM = {"KFDEFAULTS_PLATFORM_PATH": "platform"}


def locked(project: Path, *args: str, **env: str) -> None:
    """Lock gpu-large with the platform folder named, and check that the lock holds as written."""
    done = kfdefaults(project, "lock", "gpu-large", *args, **WITH_PLATFORM, **env)
    assert done.returncode == 0, done.stderr
    check = kfdefaults(project, "lock", "--check", *args, **WITH_PLATFORM, **env)
    assert check.returncode == 0, check.stderr


def failed_check(project: Path, *args: str, **env: str) -> str:
    """The findings of a ``lock --check`` that must fail: exit 1, nothing on standard output."""
    check = kfdefaults(project, "lock", "--check", *args, **env)
    assert (check.returncode, check.stdout) == (1, ""), check.stderr
    assert check.stderr.endswith("kfdefaults lock: kfdefaults.lock differs from the profiles now\n"), check.stderr
    return check.stderr


def at_the_lock(project: Path, said: str, finding: str) -> None:
    """``finding`` is said at a line of the lock file, as ``FILE:LINE:COLUMN: ...``."""
    lock = re.escape(str(project / "kfdefaults.lock"))
    assert re.search(rf"^{lock}:\d+:\d+: .*{re.escape(finding)}", said, re.MULTILINE), said


@pytest.mark.slow
def test_a_locked_cluster_template_gone(project: Path) -> None:
    """The platform folder's cluster template was locked; the folder no longer holds it."""
    (project / "platform" / "_cluster-template.yaml").write_text(CLUSTER_TEMPLATE)
    locked(project)
    assert 'file = "platform/_cluster-template.yaml"' in (project / "kfdefaults.lock").read_text()
    (project / "platform" / "_cluster-template.yaml").unlink()
    said = failed_check(project, **WITH_PLATFORM)
    at_the_lock(project, said, "cluster_template: the cluster's PodTemplate platform/_cluster-template.yaml was "
                               "locked, and none is found now")


@pytest.mark.slow
def test_the_same_files_merged_to_another_result(project: Path) -> None:
    """Every file the lock names holds its bytes, and the merge differs: here another kfdefaults (a copy first on
    the path whose flytekit default ``monitor_interval`` is 7, not 5), as an upgrade that changes a plugin default
    would be."""
    locked(project)
    site = project.parent / "site"
    targets = copy_of_kfdefaults(site) / "targets.py"
    targets.write_text(targets.read_text().replace('"monitor_interval": 5,', '"monitor_interval": 7,'))
    said = failed_check(project, **WITH_PLATFORM, PYTHONPATH=str(site))
    at_the_lock(project, said, "profiles.gpu-large.flytekit: profile 'gpu-large' merges to sha256:")
    assert "from the same files" in said
    # then the value that changed, at the profile's line of the lock (no profile file sets a plugin default)
    assert said.splitlines()[1:] == [f"{project / 'kfdefaults.lock'}:9:1: [default] profiles.gpu-large: "
                                     "elastic.monitor_interval: 5 -> 7 (locked -> now, flytekitplugins.kfpytorch.Elastic "
                                     "default (monitor_interval)); `kfdefaults lock --upgrade` records the change",
                                     "kfdefaults lock: kfdefaults.lock differs from the profiles now"], said


@pytest.mark.slow
def test_a_plain_file_added_to_a_layer(project: Path) -> None:
    """A file that changes no value (a description) added to the team layer for the profile gpu-large extends:
    the merged result is the same, so nothing drifted; the check says in one line which file it now reads."""
    locked(project)
    (project / "profiles" / "elastic-gpu-default.yaml").write_text("description: the team's base\n")
    check = kfdefaults(project, "lock", "--check", **WITH_PLATFORM)
    assert check.returncode == 0, check.stderr
    assert check.stderr.splitlines()[0] == ("kfdefaults.lock:1:1: note: files changed, the merged results "  # relative
                                            "did not (profiles/elastic-gpu-default.yaml); `kfdefaults lock --upgrade` "
                                            "records the files")


@pytest.mark.slow
def test_a_platform_that_falls_back_to_the_builtin_profile(project: Path) -> None:
    """The shell that checks does not name the platform folder: gpu-large would be the team's file on the builtin
    profile; the check names the platform file it lost."""
    locked(project)
    said = failed_check(project)
    at_the_lock(project, said, "[platform] profiles.gpu-large.files[2]: platform file missing: "
                               "platform/gpu-large.yaml, which profile 'gpu-large' was locked with, is not found now")


@pytest.mark.slow
def test_a_declared_platform_package_left_out(project: Path) -> None:
    """The project declares its platform package; ``--no-entry-points`` leaves installed packages out, so the
    declared platform is not there and not checked: the lock still names the package's file it lost."""
    site = project.parent / "site"
    info = site / "acme_platform-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-platform\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[kfdefaults.platform]\nacme = acme_platform\n")
    (site / "acme_platform").mkdir()
    (site / "acme_platform" / "__init__.py").write_text("")
    (site / "acme_platform" / "gpu-large.yaml").write_text(PLATFORM_GPU_LARGE)
    with (project / "pyproject.toml").open("a") as f:
        f.write('platform = ["acme-platform"]\n')
    done = kfdefaults(project, "lock", "gpu-large", PYTHONPATH=str(site))
    assert done.returncode == 0, done.stderr
    said = kfdefaults(project, "--no-entry-points", "lock", "--check", PYTHONPATH=str(site))
    assert said.returncode == 1, said.stderr
    at_the_lock(project, said.stderr, "[platform] profiles.gpu-large.files[2]: platform layer missing: acme-platform "
                                      "1.0, gpu-large.yaml, which profile 'gpu-large' was locked with, is not found "
                                      "now: install acme-platform in this environment")


@pytest.mark.slow
def test_a_locked_profile_only_the_lost_platform_defines(project: Path) -> None:
    (project / "platform" / "a100-only.yaml").write_text(PLATFORM_GPU_LARGE)
    locked(project, "a100-only")
    said = failed_check(project)
    at_the_lock(project, said, "profiles.a100-only: profile 'a100-only' was locked with platform "
                               "platform/a100-only.yaml, and no layer defines it now: name the folders that hold them")
