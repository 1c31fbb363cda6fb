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
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    proc = subprocess.run([sys.executable, "-c", CODE.format(before=before, name=name, args=list(args))],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc.stderr


BOTH_WAYS = """
import json, sys
from kfdefaults.flytekit.preview import flyte_task_template, torch_stand_in

def torch_modules():
    return sorted(m for m in sys.modules if m.split(".")[0] == "torch")

with torch_stand_in():
    import torch.distributed.run as r
    parsed = r.parse_min_max_nnodes("2:3")
after_stand_in = torch_modules()
cases = [("gpu-large", {}), ("cpu-small", {}), ("gpu-large", {"elastic": {"nnodes": 3, "max_restarts": 2}})]
without = [flyte_task_template(name, overrides=overrides) for name, overrides in cases]
after_templates = torch_modules()
import torch  # the real torch.distributed.run from here on
with_real = [flyte_task_template(name, overrides=overrides) for name, overrides in cases]
print(json.dumps({"parsed": parsed, "after_stand_in": after_stand_in, "after_templates": after_templates,
                  "without": without, "with_real": with_real}))
"""


@pytest.fixture(scope="module")
def both_ways() -> dict:
    """One process for the checks of the stand-in and of the templates defined with and without torch (each
    such process imports flytekit, then torch): the stand-in used and taken away, three tasks defined with it,
    then torch imported and the same three defined with the real ``torch.distributed.run``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    proc = subprocess.run([sys.executable, "-c", BOTH_WAYS], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_template_is_the_same_with_and_without_torch(both_ways):
    """The plugin imports torch at task definition only for parse_min_max_nnodes; the stand-in is torch's. A
    PyTorchJob (nnodes "1:4", then 3) and a python-task (nnodes 1), each defined both ways in one process."""
    without, with_real = both_ways["without"], both_ways["with_real"]
    assert both_ways["after_templates"] == []  # torch was never imported for the three defined without it
    assert [t["type"] for t in without] == ["pytorch", "python-task", "pytorch"]
    assert without == with_real


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


def test_the_stand_in_is_taken_away_after_the_task_is_defined(both_ways):
    assert both_ways["parsed"] == [2, 3]  # torch.distributed.run.parse_min_max_nnodes("2:3"), inside
    assert both_ways["after_stand_in"] == []


def test_render_as_flyte_takes_the_image_and_says_nothing_more_when_piped():
    template, said = preview("gpu-large", "--image", "registry.example.com/vision/train:3", with_torch=False)
    assert "loading" not in said  # the progress line is for a terminal only
    [primary] = [c for c in template["k8sPod"]["podSpec"]["containers"] if c["name"] == "primary"]
    assert primary["image"] == "registry.example.com/vision/train:3"


def test_image_without_as_flyte_is_a_usage_mistake():
    from cli_runner import invoke

    result = invoke(["render", "gpu-large", "--image", "x:1"])
    assert result.exit_code == 2 and "--image is the image of the task that --as flyte serializes" in result.stderr


def test_a_progress_line_on_a_terminal():
    from test_explain_terminal import on_terminal

    screen = on_terminal(100, "render", "cpu-small", "--as", "flyte", stderr_too=True)
    assert "loading flytekit to serialize the task" in screen


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
