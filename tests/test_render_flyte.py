"""``render --as flyte``: the real serialization, without importing torch, an image of one's own, a progress line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CODE = """
import sys
{before}
sys.argv = ["kfdefaults", "render", {name!r}, "--as", "flyte", "-o", "json", *{args!r}]
from kfdefaults.cli import run
code = run(sys.argv[1:])
print("TORCH-IMPORTED" if "torch" in sys.modules and hasattr(sys.modules["torch"], "__version__") else "NO-TORCH",
      file=sys.stderr)
sys.exit(code)
"""


def preview(name: str, *args: str, with_torch: bool) -> tuple[dict, str]:
    before = "import torch" if with_torch else ""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    proc = subprocess.run([sys.executable, "-c", CODE.format(before=before, name=name, args=list(args))],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


BOTH_WAYS = """
import json, sys
from kfdefaults.flytekit.preview import torch_stand_in
from kfdefaults.runtime.preview import task_template
from kfdefaults.targets import FLYTEKIT

def torch_modules():
    return sorted(m for m in sys.modules if m.split(".")[0] == "torch")

with torch_stand_in():
    import torch.distributed.run as r
    parsed = r.parse_min_max_nnodes("2:3")
after_stand_in = torch_modules()
team = [sys.argv[1]]
spot = {"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}
shm = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "4Gi"}}
cases = [
    ("gpu-large", {}, None),
    ("cpu-small", {}, None),
    ("gpu-large", {"elastic": {"nnodes": 3, "max_restarts": 2}}, None),
    ("vision", {}, None),
    ("vision", {"elastic": {"nnodes": "2:4", "nproc_per_node": 4},
                "pod_template": {"spec": {"tolerations": [spot]}, "labels": {"stage": "train"}}},
     "registry.example.com/base:1"),
    ("cpu-small", {"pod_template": {"spec": {"volumes": [shm]}}}, "registry.example.com/base:1"),
]
def both():
    return [task_template(FLYTEKIT, name, team=team, overrides=overrides, image=image) for name, overrides, image in cases]
without = both()
after_templates = torch_modules()
import torch  # the real torch.distributed.run from here on
with_real = both()
print(json.dumps({"parsed": parsed, "after_stand_in": after_stand_in, "after_templates": after_templates,
                  "without": without, "with_real": with_real}))
"""

VISION = """\
extends: [gpu-large, nccl-fail-fast]
pod_template:
  spec:
    containers:
      - name: primary
        image: registry.example.com/vision/train:3
    tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
      - key: example.com/a100
        operator: Exists
        effect: NoSchedule
    volumes:
      - name: dshm
        emptyDir:
          medium: Memory
          sizeLimit: 64Gi
"""


@pytest.fixture(scope="module")
def both_ways(tmp_path_factory) -> dict:
    """One process for the checks of the stand-in and of the templates defined with and without torch (each
    such process imports flytekit, then torch): the stand-in used and taken away, six tasks defined with it,
    then torch imported and the same six defined with the real ``torch.distributed.run``."""
    team = tmp_path_factory.mktemp("team")
    (team / "vision.yaml").write_text(VISION)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    proc = subprocess.run([sys.executable, "-c", BOTH_WAYS, str(team)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_the_template_is_the_same_with_and_without_torch(both_ways):
    """The plugin imports torch at task definition only for parse_min_max_nnodes; the stand-in is torch's. Each
    case defined both ways in one process, serialized by flytekit's get_serializable: PyTorchJobs (nnodes "1:4",
    3, "2:4") and python-tasks (nnodes 1), with keyword arguments, a team profile with its own image, tolerations
    and /dev/shm size, a task-layer pod template (a toleration, a label, a /dev/shm size) and a default image."""
    without, with_real = both_ways["without"], both_ways["with_real"]
    assert both_ways["after_templates"] == []  # torch was never imported for the six defined without it
    assert [t["type"] for t in without] == ["pytorch", "python-task", "pytorch", "pytorch", "pytorch", "python-task"]
    pods = [t["k8sPod"]["podSpec"] for t in without]
    assert pods[3]["containers"][0]["image"] == "registry.example.com/vision/train:3"
    assert {"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"} in pods[4]["tolerations"]
    assert pods[5]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "4Gi"}}]
    assert without == with_real


# The command line as the console script runs it (a render is replayed when its inputs are unchanged), but for
# the window before a run in which a changed input keeps it from being stored: 0 here, the files were just written.
KEPT = """
import sys
from kfdefaults import inputs
inputs.RACE_SECONDS = 0.0
from kfdefaults.cli import _main
code = _main(["render", *sys.argv[1:]])
print("SDK-IMPORTED" if "flytekit" in sys.modules else "NO-SDK", file=sys.stderr)
sys.exit(code)
"""


def kept_run(cwd, *args: str, **environment: str) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    env.update(KFDEFAULTS_TARGET="flytekit", **environment)
    proc = subprocess.run([sys.executable, "-c", KEPT, *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


@pytest.mark.slow
def test_a_kept_template_is_what_serializing_prints(tmp_path):
    """The second run prints what the first one serialized, warnings included, without importing flytekit; with
    the cache off, serializing again prints the same."""
    (tmp_path / "profiles").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "vision"\n\n[tool.kfdefaults]\nteam = ["profiles"]\n')
    (tmp_path / "profiles" / "vision.yaml").write_text(VISION)
    args = ("vision", "--as", "flyte", "--image", "registry.example.com/base:1", "--set", "elastic.nnodes=2")
    first, said_first = kept_run(tmp_path, *args, KFDEFAULTS_CACHE_DIR=str(tmp_path / "cache"))
    second, said_second = kept_run(tmp_path, *args, KFDEFAULTS_CACHE_DIR=str(tmp_path / "cache"))
    fresh, said_fresh = kept_run(tmp_path, *args, KFDEFAULTS_NO_CACHE="1")
    assert "SDK-IMPORTED" in said_first and "NO-SDK" in said_second and "SDK-IMPORTED" in said_fresh
    assert "registry.example.com/vision/train:3" in first and "wins over the registration's default image" in said_first
    assert first == second == fresh
    assert said_first.replace("SDK-IMPORTED", "") == said_second.replace("NO-SDK", "") == said_fresh.replace("SDK-IMPORTED", "")


@pytest.mark.slow
def test_what_the_template_depends_on_is_serialized_again(tmp_path):
    """A profile file edited (same size, its old modification time set back), another --image, the default image
    flytekit reads from FLYTE_INTERNAL_IMAGE: each a new serialization, printing the change."""
    cache_dir = str(tmp_path / "cache")
    (tmp_path / "team").mkdir()
    profile = tmp_path / "team" / "vision.yaml"
    profile.write_text(VISION)
    args = ("vision", "--team", str(tmp_path / "team"), "--as", "flyte", "-o", "json")
    first, _ = kept_run(tmp_path, *args, KFDEFAULTS_CACHE_DIR=cache_dir)
    before = os.stat(profile)
    profile.write_text(VISION.replace("train:3", "train:4"))
    os.utime(profile, ns=(before.st_atime_ns, before.st_mtime_ns))
    edited, said = kept_run(tmp_path, *args, KFDEFAULTS_CACHE_DIR=cache_dir)
    assert "SDK-IMPORTED" in said and "train:3" in first and "train:4" in edited and "train:3" not in edited
    cpu = ("cpu-small", "--as", "flyte", "-o", "json")
    kept_run(tmp_path, *cpu, KFDEFAULTS_CACHE_DIR=cache_dir)
    again, said = kept_run(tmp_path, *cpu, "--image", "registry.example.com/other:2", KFDEFAULTS_CACHE_DIR=cache_dir)
    assert "SDK-IMPORTED" in said and "registry.example.com/other:2" in again
    internal, said = kept_run(tmp_path, *cpu, KFDEFAULTS_CACHE_DIR=cache_dir,
                              FLYTE_INTERNAL_IMAGE="registry.example.com/internal:5")
    assert "SDK-IMPORTED" in said and json.loads(internal)["k8sPod"]["podSpec"]["containers"][0]["image"] == \
        "registry.example.com/internal:5"


@pytest.mark.parametrize("text", ["1", "4", "2:4", "1:1", "0:3", " 2: 4", "2:4:6", "a", "", "2:", "-1:2", "１:２"])
def test_the_stand_in_reads_nnodes_as_torch_does(text):
    from torch.distributed.run import parse_min_max_nnodes as torchs

    from kfdefaults.flytekit.preview import parse_min_max_nnodes as ours

    def outcome(fn):
        try:
            return fn(text)
        except Exception as e:  # the same kind of error, with the same words
            return type(e).__name__, str(e)

    assert outcome(ours) == outcome(torchs)


@pytest.mark.slow
def test_the_stand_in_is_taken_away_after_the_task_is_defined(both_ways):
    assert both_ways["parsed"] == [2, 3]  # torch.distributed.run.parse_min_max_nnodes("2:3"), inside
    assert both_ways["after_stand_in"] == []


@pytest.mark.slow
def test_render_as_flyte_takes_the_image_and_says_nothing_more_when_piped():
    template, said = preview("gpu-large", "--image", "registry.example.com/vision/train:3", with_torch=False)
    assert "loading" not in said  # the progress line is for a terminal only
    [primary] = [c for c in template["k8sPod"]["podSpec"]["containers"] if c["name"] == "primary"]
    assert primary["image"] == "registry.example.com/vision/train:3"


def test_image_without_as_flyte_is_a_usage_mistake():
    from cli_runner import invoke

    result = invoke(["render", "gpu-large", "--image", "x:1"])
    assert result.exit_code == 2 and "--image is the image of the task that --as flyte serializes" in result.stderr


@pytest.mark.slow
def test_a_progress_line_on_a_terminal():
    from test_explain_terminal import on_terminal

    screen = on_terminal(100, "render", "cpu-small", "--as", "flyte", stderr_too=True)
    assert "loading flytekit to serialize the task" in screen


@pytest.mark.slow
def test_the_preview_reads_the_project_of_the_working_folder_with_its_lock(tmp_path):
    """The console script lives in a virtualenv that may sit in another project (kfdefaults' own clone, a
    workspace root): the task the preview defines reads the project of the working folder, as registering
    from there does, lock file included."""
    (tmp_path / "profiles").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "vision"\n\n[tool.kfdefaults]\nteam = ["profiles"]\n')
    (tmp_path / "profiles" / "gpu-large.yaml").write_text("pod_template:\n  labels:\n    team: vision\n")
    script = os.path.join(os.path.dirname(sys.executable), "kfdefaults")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    env["KFDEFAULTS_TARGET"] = "flytekit"
    subprocess.run([script, "lock", "gpu-large"], cwd=tmp_path, env=env, check=True, capture_output=True)
    proc = subprocess.run([script, "render", "gpu-large", "--as", "flyte", "-o", "json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    metadata = json.loads(proc.stdout)["k8sPod"]["metadata"]
    from kfdefaults.lock import read_lock

    lock = read_lock(str(tmp_path / "kfdefaults.lock"))
    assert metadata["labels"] == {"team": "vision"}
    assert metadata["annotations"]["kfdefaults.io/lock"] == lock.digest
    assert metadata["annotations"]["kfdefaults.io/digest"] == lock.profiles["gpu-large"]["flytekit"]


@pytest.mark.parametrize("target, key, wrong", [("flytekit", "rdzv_backend", "etcd"), ("flyte2", "start_method", "fork")])
def test_deleting_a_setting_the_sdk_fixes_previews_the_task_the_error_says_to(tmp_path, target, key, wrong):
    """A setting the SDK fixes (flytekit's c10d rendezvous, Flyte 2's spawn) with another value is an error that
    says to delete it in a higher layer; `--set elastic.KEY=null` does, for the task `--as flyte` serializes too."""
    from cli_runner import invoke

    (tmp_path / "odd.yaml").write_text(f"extends: cpu-small\nelastic:\n  {key}: {wrong}\n", encoding="utf-8")
    base = ["render", "odd", "--team", str(tmp_path), "--target", target]
    refused = invoke(base)
    assert refused.exit_code == 1 and f"(`{key}: null` in a higher layer)" in refused.stderr
    for shape in ("profile", "flyte"):
        result = invoke([*base, "--set", f"elastic.{key}=null", "--as", shape, "-o", "json"])
        assert result.exit_code == 0, result.output
        if shape == "flyte":
            env = {e["name"]: e["value"] for e in json.loads(result.stdout)["k8sPod"]["podSpec"]["containers"][0]["env"]}
            assert key not in json.loads(env["KFDEFAULTS_ELASTIC"])["elastic"]


@pytest.mark.parametrize("name", ["a--b", "a-", "x--"])
@pytest.mark.parametrize("target, shape", [("flyte2", "flyte"), ("clustered", "jobset")])
def test_a_profile_name_flyte_refuses_as_an_environment_s_previews_its_task(tmp_path, name, target, shape):
    """A profile name is `[a-z0-9][a-z0-9-]*`; Flyte 2 names an environment `[a-z0-9]+([_-][a-z0-9]+)*`
    (flyte/_environment.py `is_snake_or_kebab_with_numbers`). Before, `render a-- --as flyte` for Flyte 2 and
    `--as jobset` ended in `internal error: ValueError: Environment name ...`; the preview's environment is named
    after the profile, its dashes run together."""
    from cli_runner import invoke

    (tmp_path / f"{name}.yaml").write_text("extends: gpu-large\nelastic: {nnodes: 2, max_restarts: null, "
                                           "rdzv_configs: null, run_policy: null}\n", encoding="utf-8")
    result = invoke(["render", name, "--team", str(tmp_path), "--target", target, "--as", shape, "-o", "json"])
    assert result.exit_code == 0, result.output
    pod = json.loads(result.stdout)
    assert f'"kfdefaults.io/profile": "{name}"' in json.dumps(pod)
