"""What a platform engineer previews is what registers and what runs: each way that could silently break,
played the way it happens.

Registration is flytekit's own serialization in a fresh process that imports the task's module by name, as
``pyflyte register`` does (``flyte_apps/register_app.py``); the run is a fresh process that loads the task with
flytekit's resolver and runs it as ``pyflyte-execute`` does in a pod, with the container's environment and no
``KFDEFAULTS_*`` variable of the shell, recording the LaunchConfig torch receives (``flyte_apps/pod_runner.py``).
Both processes fork from one that imported flytekit and torch already (the ``flytekit_python`` fixture): each
imports kfdefaults and the task's module afresh, in its own working folder and environment.
Nothing is compared with settings written by hand: the registered task says what was registered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kfdefaults
from kfdefaults.k8s.provenance import (
    DIGEST_ANNOTATION,
    LOCK_ANNOTATION,
    PROFILE_ANNOTATION,
)
from kfdefaults.lock import read_lock
from kfdefaults.settings import RUNTIME_ENV
from preloaded_python import PreloadedPython

APPS = Path(__file__).resolve().parent / "flyte_apps"
KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")


def shell_env(**extra: str) -> dict[str, str]:
    """The test's environment without any layer setting of the developer's, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    return {**env, **extra}


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def register(python: PreloadedPython, project: Path, module: str, task: str, *, cwd: Path,
             env: dict[str, str] | None = None) -> dict:
    """The TaskTemplate flytekit registers for ``module.task``, from a shell in ``cwd``."""
    proc = python.run([APPS / "register_app.py", project, module, task], cwd=cwd, env=env or shell_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def register_fails(python: PreloadedPython, project: Path, module: str, task: str, *, cwd: Path,
                   env: dict[str, str] | None = None) -> str:
    proc = python.run([APPS / "register_app.py", project, module, task], cwd=cwd, env=env or shell_env())
    assert proc.returncode == 1, proc.stdout[-2000:]
    return proc.stderr


def container_env(template: dict) -> dict[str, str]:
    """The registered primary container's environment."""
    name = template["config"]["primary_container_name"]
    [primary] = [c for c in template["k8sPod"]["podSpec"]["containers"] if c["name"] == name]
    return {e["name"]: e["value"] for e in primary.get("env", [])}


def run_in_pod(python: PreloadedPython, image: Path, module: str, task: str, template: dict,
               tmp: Path) -> tuple[subprocess.CompletedProcess, list]:
    """Run the task from ``image`` (the code as the image holds it) with the registered container's environment;
    the LaunchConfig torch receives, recorded (the process ends there)."""
    record, work = tmp / "launch.jsonl", tmp / "work"
    record.unlink(missing_ok=True)
    work.mkdir(exist_ok=True)
    env = shell_env(**container_env(template), FLYTE_INTERNAL_EXECUTION_ID="kfd-test")
    proc = python.run([APPS / "pod_runner.py", record, work, module, task, "1", "--record-only"], cwd=image, env=env)
    launched = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return proc, launched


PAIR = """\
    elastic:
      nnodes: 1
      nproc_per_node: 2
      start_method: fork
      max_restarts: 2
      rdzv_configs: {join_timeout: 300, read_timeout: 77}
    """

APP_WITH_TEAM_FROM_FILE = """\
    import os

    from flytekit import task

    from kfdefaults import Elastic

    TEAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")


    @task(task_config=Elastic(profile="pair", team=TEAM))
    def train(x: int) -> int:
        return x
    """


def test_the_pod_runs_on_what_was_registered_when_the_code_sits_elsewhere(tmp_path, flytekit_python):
    """``Elastic(team=...)`` built from ``__file__`` names another folder once the code is in the image: the
    pod still runs on the settings registered, with the folder missing and with other contents in it."""
    laptop = write(tmp_path / "laptop", {"kfd_app.py": APP_WITH_TEAM_FROM_FILE, "team/pair.yaml": PAIR})
    template = register(flytekit_python, laptop, "kfd_app", "train", cwd=laptop)
    registered = json.loads(container_env(template)[RUNTIME_ENV])["elastic"]
    assert (registered["nproc_per_node"], registered["max_restarts"]) == (2, 2)

    image = write(tmp_path / "image" / "root", {"kfd_app.py": APP_WITH_TEAM_FROM_FILE})  # no team folder
    proc, launched = run_in_pod(flytekit_python, image, "kfd_app", "train", template, tmp_path)
    assert proc.returncode == 0 and len(launched) == 1, proc.stderr[-3000:]
    expected = {"min_nodes": 1, "max_nodes": 1, "nproc_per_node": 2, "start_method": "fork",
                "monitor_interval": registered["monitor_interval"], "max_restarts": 2, "rdzv_backend": "c10d",
                "rdzv_configs": registered["rdzv_configs"]}
    assert launched == [expected] and expected["rdzv_configs"]["read_timeout"] == 77

    write(image, {"team/pair.yaml": "elastic: {nproc_per_node: 1, max_restarts: 0, rdzv_configs: {read_timeout: 60}}\n"})
    proc, launched = run_in_pod(flytekit_python, image, "kfd_app", "train", template, tmp_path)
    assert proc.returncode == 0 and launched == [expected], proc.stderr[-3000:]


def test_a_pod_whose_code_makes_another_call_fails_naming_the_task(tmp_path, flytekit_python):
    """Registered with ``nproc_per_node`` from the profile, run with code that changed the call: an error that
    names the task, never a run on profile files read again."""
    laptop = write(tmp_path / "laptop", {"kfd_app.py": APP_WITH_TEAM_FROM_FILE, "team/pair.yaml": PAIR})
    template = register(flytekit_python, laptop, "kfd_app", "train", cwd=laptop)
    changed = APP_WITH_TEAM_FROM_FILE.replace('Elastic(profile="pair", team=TEAM)',
                                              'Elastic(profile="pair", team=TEAM, nproc_per_node=3)')
    image = write(tmp_path / "image", {"kfd_app.py": changed, "team/pair.yaml": PAIR})
    proc, launched = run_in_pod(flytekit_python, image, "kfd_app", "train", template, tmp_path)
    assert launched == [] and proc.returncode != 0
    assert ("task kfd_app.train: no settings were registered for Elastic(profile='pair', nproc_per_node=3): the "
            "settings registered with this pod are those of another call") in proc.stderr


PROJECT = {
    "pyproject.toml": """\
        [project]
        name = "vision"
        version = "0.1"

        [tool.kfdefaults]
        team = ["profiles"]
        """,
    "profiles/gpu-large.yaml": """\
        pod_template:
          labels:
            team: vision
          spec:
            containers:
              - name: primary
                env: [{name: TEAM_SETTING, value: "1"}]
        """,
    "wf/__init__.py": "",
    "wf/train.py": """\
        from flytekit import task

        from kfdefaults import Elastic


        @task(task_config=Elastic(profile="gpu-large"))
        def train(x: int) -> int:
            return x
        """,
}


def test_registering_from_another_folder_finds_the_project_of_the_module(tmp_path, flytekit_python):
    project = write(tmp_path / "vision", PROJECT)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    template = register(flytekit_python, project, "wf.train", "train", cwd=elsewhere)
    assert template["k8sPod"]["metadata"]["labels"] == {"team": "vision"}
    assert container_env(template)["TEAM_SETTING"] == "1"


PLATFORM_GPU_LARGE = """\
    elastic:
      max_restarts: 5
    pod_template:
      labels:
        platform.example.com/pool: a100
    """


def test_a_lock_file_stops_a_registration_that_would_lose_the_platform(tmp_path, flytekit_python):
    """The team overrides gpu-large; the shell that registers lacks KFDEFAULTS_PLATFORM_PATH: with a lock file,
    registration, render and validate fail naming the missing platform file, instead of layering the team's
    file on the builtin profile."""
    project = write(tmp_path / "vision", PROJECT)
    platform = write(tmp_path / "platform", {"gpu-large.yaml": PLATFORM_GPU_LARGE})
    with_platform = shell_env(KFDEFAULTS_PLATFORM_PATH=str(platform))
    lock = subprocess.run([KFDEFAULTS, "lock"], cwd=project, env=with_platform,
                          capture_output=True, text=True, timeout=300)
    assert lock.returncode == 0, lock.stderr
    assert lock.stderr.strip() == "kfdefaults lock: wrote kfdefaults.lock: 1 profile (gpu-large)"

    template = register(flytekit_python, project, "wf.train", "train", cwd=project, env=with_platform)
    annotations = template["k8sPod"]["metadata"]["annotations"]
    locked = read_lock(str(project / "kfdefaults.lock"))
    assert annotations == {PROFILE_ANNOTATION: "gpu-large", DIGEST_ANNOTATION: locked.profiles["gpu-large"]["flytekit"],
                           LOCK_ANNOTATION: locked.digest}

    error = register_fails(flytekit_python, project, "wf.train", "train", cwd=project)
    assert "platform file missing: gpu-large.yaml, which profile 'gpu-large' was locked with" in error
    for command in (["render", "gpu-large"], ["validate", "profiles"], ["lock", "--check"]):
        proc = subprocess.run([KFDEFAULTS, *command], cwd=project, env=shell_env(),
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1 and proc.stdout == "", command
        assert (f"{project / 'kfdefaults.lock'}:" in proc.stderr
                and "[platform] profiles.gpu-large.files[2]: platform file missing: gpu-large.yaml" in proc.stderr), command


def test_a_declared_platform_must_be_found(tmp_path, flytekit_python):
    pyproject = PROJECT["pyproject.toml"].rstrip(" ") + '        platform = ["acme-platform-profiles"]\n'
    project = write(tmp_path / "vision", {**PROJECT, "pyproject.toml": pyproject})
    error = register_fails(flytekit_python, project, "wf.train", "train", cwd=project)
    assert f"{project / 'pyproject.toml'}:7:13: [platform] tool.kfdefaults.platform[0]: the platform package " \
           "acme-platform-profiles is not installed here" in error
    # a declared folder is read without any variable set
    write(tmp_path / "platform", {"gpu-large.yaml": PLATFORM_GPU_LARGE})
    write(project, {"pyproject.toml": PROJECT["pyproject.toml"].rstrip(" ") + '        platform = ["../platform"]\n'})
    template = register(flytekit_python, project, "wf.train", "train", cwd=tmp_path)
    assert template["k8sPod"]["metadata"]["labels"] == {"team": "vision", "platform.example.com/pool": "a100"}


def test_without_a_lock_a_team_override_no_platform_defines_is_warned_of(tmp_path, flytekit_python):
    write(tmp_path / "platform", {"cpu-small.yaml": "elastic: {max_restarts: 1}\n"})
    pyproject = PROJECT["pyproject.toml"].rstrip(" ") + '        platform = ["../platform"]\n'
    project = write(tmp_path / "vision", {**PROJECT, "pyproject.toml": pyproject})
    proc = flytekit_python.run([APPS / "register_app.py", project, "wf.train", "train"], cwd=project, env=shell_env(),
                               warnings="always")
    assert proc.returncode == 0, proc.stderr
    assert ("profile 'gpu-large' of the team layer is layered on the builtin 'gpu-large': no platform layer defines "
            "it, though the project declares the platform ../platform") in proc.stderr
    assert "wf/train.py:6" in proc.stderr  # the warning points at the Elastic(...) line


def test_the_pod_template_says_which_profile_made_it(tmp_path, flytekit_python):
    """Every registered pod template carries the profile's name and digest; the digest is what the profile
    resolves to without the task layer, the same on every machine."""
    template = register(flytekit_python, write(tmp_path / "vision", PROJECT), "wf.train", "train", cwd=tmp_path)
    annotations = template["k8sPod"]["metadata"]["annotations"]
    with pytest.MonkeyPatch.context() as m:
        m.chdir(tmp_path / "vision")
        assert annotations == {PROFILE_ANNOTATION: "gpu-large", DIGEST_ANNOTATION: kfdefaults.resolve("gpu-large").digest()}
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "vision", moved)
    assert register(flytekit_python, moved, "wf.train", "train", cwd=tmp_path)["k8sPod"]["metadata"]["annotations"] == annotations
