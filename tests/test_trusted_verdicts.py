"""``verify`` and ``lock --check`` on one platform project, run as its engineers run them (the installed command in
the project's folder): quiet when all is well, and, when something changed, naming the key, the old and new value
and the line that sets it now.

The project: a platform ``h100`` extending the builtin ``gpu-large`` with an elastic range, a team layer over it,
a ``pyproject.toml`` naming both folders, and code that calls ``Elastic(profile="h100")``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")

H100 = """\
extends: gpu-large
elastic:
  nnodes: "1:8"
  rdzv_configs:
    join_timeout: 1200
"""


def kfdefaults(project: Path, *args: str) -> subprocess.CompletedProcess:
    """``kfdefaults ARGS`` in the project's folder, in a shell that names no kfdefaults folder."""
    shell = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    shell.update(KFDEFAULTS_CACHE_DIR=str(project.parent / "cache"), KFDEFAULTS_NO_ENTRY_POINTS="1")
    return subprocess.run([KFDEFAULTS, *args], cwd=project, env=shell, capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "vision"
    for folder in ("platform", "team", "wf"):
        (project / folder).mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "vision"\nversion = "0.1"\n\n[tool.kfdefaults]\n'
                                            'platform = ["platform"]\nteam = ["team"]\n')
    (project / "platform" / "h100.yaml").write_text(H100)
    (project / "team" / "h100.yaml").write_text("elastic:\n  max_restarts: 2\n")
    (project / "wf" / "train.py").write_text('from kfdefaults import Elastic\n\nconfig = Elastic(profile="h100")\n')
    return project


def registered_job(project: Path) -> Path:
    """What ``Elastic(profile="h100", nnodes=2)`` registers: the PyTorchJob Flyte's backend builds of it."""
    done = kfdefaults(project, "render", "h100", "--as", "pytorchjob", "--target", "flytekit",
                      "--set", "elastic.nnodes=2")
    assert done.returncode == 0, done.stderr
    job = project / "job.yaml"
    job.write_text(done.stdout)
    return job


@pytest.mark.slow
def test_verify_of_an_unchanged_job_with_task_arguments(project: Path) -> None:
    job = registered_job(project)
    same = kfdefaults(project, "verify", str(job))
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no differences" in same.stdout.splitlines()[0]
    assert same.stdout.splitlines()[1] == "  with the task layer its KFDEFAULTS_ELASTIC records: elastic.nnodes=2"
    # a lower layer's change is drift, at the line that sets it now
    platform = project / "platform" / "h100.yaml"
    platform.write_text(H100.replace("1200", "1500"))
    moved = kfdefaults(project, "verify", str(job))
    assert moved.returncode == 1
    assert (f"  Worker: elastic.rdzv_configs.join_timeout (KFDEFAULTS_ELASTIC): 1200 -> 1500  platform "
            f"{platform}:5") in moved.stdout.splitlines(), moved.stdout
    assert "nnodes" not in moved.stdout.replace("elastic.nnodes=2", ""), moved.stdout
    # --set still gives the task layer
    platform.write_text(H100)
    overridden = kfdefaults(project, "verify", str(job), "--set", "elastic.nnodes=3")
    assert overridden.returncode == 1
    assert "  elastic.nnodes (spec.elasticPolicy.maxReplicas): 2 -> 3  task --set elastic.nnodes=3" in (
        overridden.stdout.splitlines()), overridden.stdout


@pytest.mark.slow
def test_a_claim_of_the_task_layer_without_its_call_is_not_trusted(project: Path) -> None:
    """An edited ``KFDEFAULTS_ELASTIC`` that says the task set ``join_timeout`` (to hide a value the profile does not
    give) holds no key of such a call: the claim is void, said so, and the job is compared with the profile alone."""
    job = registered_job(project)
    manifest = yaml.safe_load(job.read_text())
    for env in manifest["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"]:
        if env["name"] == "KFDEFAULTS_ELASTIC":
            value = json.loads(env["value"])
            value["elastic"]["rdzv_configs"]["join_timeout"] = 86400
            value["pod"]["elastic"]["elastic.rdzv_configs.join_timeout"] = "task Elastic(rdzv_configs=...)"
            env["value"] = json.dumps(value)
    job.write_text(yaml.safe_dump(manifest))
    found = kfdefaults(project, "verify", str(job))
    assert found.returncode == 1
    assert "but its key is not that of an Elastic(...) call of those values" in found.stdout, found.stdout
    assert "elastic.rdzv_configs.join_timeout (KFDEFAULTS_ELASTIC): 86400 -> 1200" in found.stdout, found.stdout


def lock_check(project: Path) -> subprocess.CompletedProcess:
    return kfdefaults(project, "lock", "--check")


@pytest.mark.slow
def test_lock_check_passes_a_comment_and_names_a_changed_value(project: Path) -> None:
    assert kfdefaults(project, "lock").returncode == 0
    platform = project / "platform" / "h100.yaml"
    platform.write_text(H100 + "# reviewed by the platform team\n")
    check = lock_check(project)
    assert check.returncode == 0, check.stderr
    assert check.stderr.splitlines() == [
        "kfdefaults.lock:1:1: note: files changed, the merged results did not (platform/h100.yaml); `kfdefaults lock "
        "--upgrade` records the files",
        "kfdefaults lock: kfdefaults.lock is up to date: 1 profile (h100)"]
    render = kfdefaults(project, "render", "h100", "--target", "flytekit")
    assert (render.returncode, render.stderr) == (0, ""), render.stderr
    # a value that changes: each SDK's result changes alike, said once, at the line that sets it now
    platform.write_text(H100.replace("1200", "1500") + "# reviewed by the platform team\n")
    check = lock_check(project)
    assert check.returncode == 1
    assert check.stderr.splitlines() == [
        f"{platform}:5:19: [platform] profiles.h100: elastic.rdzv_configs.join_timeout: 1200 -> 1500 (locked -> now); "
        "`kfdefaults lock --upgrade` records the change",
        "kfdefaults lock: kfdefaults.lock differs from the profiles now"]
    render = kfdefaults(project, "render", "h100", "--target", "flyte2")
    assert render.returncode == 1 and "join_timeout: 1200 -> 1500" in render.stderr, render.stderr


@pytest.mark.slow
def test_upgrade_records_a_comment(project: Path) -> None:
    assert kfdefaults(project, "lock").returncode == 0
    (project / "team" / "h100.yaml").write_text("elastic:\n  max_restarts: 2  # as agreed\n")
    before = (project / "kfdefaults.lock").read_text()
    upgrade = kfdefaults(project, "lock", "--upgrade")
    assert upgrade.returncode == 0, upgrade.stderr
    assert "warning: recorded: files changed, the merged results did not (team/h100.yaml)" in upgrade.stderr
    assert (project / "kfdefaults.lock").read_text() != before
    check = lock_check(project)
    assert (check.returncode, check.stderr) == (0, "kfdefaults lock: kfdefaults.lock is up to date: 1 profile (h100)\n")


@pytest.mark.slow
@pytest.mark.parametrize("text", ["not json", "[" * 4000, "1" * 5000])
def test_a_lock_whose_results_are_not_what_lock_writes(project: Path, text: str) -> None:
    assert kfdefaults(project, "lock").returncode == 0
    lock = project / "kfdefaults.lock"
    lines = lock.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith('"elastic.max_restarts" = '))
    lines[at] = f'"elastic.max_restarts" = "{text}"'
    lock.write_text("\n".join(lines) + "\n")
    check = lock_check(project)
    assert check.returncode == 1
    assert check.stderr.startswith(f"{lock}:{at + 1}:"), check.stderr
    assert "each the JSON text of its value" in check.stderr and "Traceback" not in check.stderr
    assert len(check.stderr) < 1000
