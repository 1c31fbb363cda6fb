"""One rule for a list without a merge key that a layer replaces whole: a warning naming the list, the items
dropped and both lines, from ``render``, ``validate`` and ``lock`` for a file's list and at the task's definition
for ``@task(pod_template=...)``; silenced by a ``$patch: replace`` item, which leaves kubectl's merge as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_runner import unfold

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")
BUILTIN_GPU = '{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}'
DROPPING = "tolerations: [{key: pool, operator: Equal, value: a100, effect: NoSchedule}]"
MEANT = "tolerations:\n      - $patch: replace\n      - {key: pool, operator: Equal, value: a100, effect: NoSchedule}"


def project(tmp_path: Path, tolerations: str) -> Path:
    """A project whose platform folder's ``a100`` extends the builtin gpu-large with ``tolerations``."""
    (tmp_path / "platform").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "train"\n[tool.kfdefaults]\nplatform = ["platform"]\n')
    (tmp_path / "platform" / "a100.yaml").write_text(
        f"extends: gpu-large\npod_template:\n  spec:\n    {tolerations}\n", encoding="utf-8")
    return tmp_path


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([KFDEFAULTS, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
                          | {"KFDEFAULTS_CACHE_DIR": os.environ["KFDEFAULTS_CACHE_DIR"]})


def builtin_line() -> str:
    """Where the builtin gpu-large writes its toleration: ``FILE:LINE`` of the list's first item."""
    from kfdefaults.layers import BuiltinSource

    [folder] = BuiltinSource().folders()
    path = os.path.join(folder.path, "gpu-large.yaml")
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return f"{path}:{next(i for i, line in enumerate(lines, 1) if 'nvidia.com/gpu' in line and 'key' in line)}"


@pytest.mark.slow
@pytest.mark.parametrize("command", [["render", "a100"], ["validate", "platform"], ["lock", "a100"],
                                     ["lock", "--check"]])
def test_a_file_that_drops_a_lower_lists_items_is_warned_of_by_render_validate_and_lock(tmp_path, command):
    root = project(tmp_path, DROPPING)
    if command == ["lock", "--check"]:
        assert cli(root, "lock", "a100").returncode == 0
    proc = cli(root, *command)
    assert proc.returncode == 0, proc.stderr
    [said] = [line for line in unfold(proc.stderr).splitlines() if "tolerations" in line]
    assert said == (
        "platform/a100.yaml:4:5: [platform] pod_template.spec.tolerations: warning: replaces the `tolerations` "
        f"of builtin {builtin_line()} whole (a list without a merge key is not merged item by item): its 1 item is "
        f"dropped ({BUILTIN_GPU}); repeat it here to keep it, or make `$patch: replace` an item of the list to say "
        "that dropping it is meant"), proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", [["render", "a100"], ["validate", "--strict", "platform"], ["lock", "a100"]])
def test_patch_replace_in_the_list_says_it_is_meant(tmp_path, command):
    root = project(tmp_path, MEANT)
    proc = cli(root, *command)
    assert proc.returncode == 0 and "tolerations" not in proc.stderr, proc.stderr


@pytest.mark.slow
def test_a_meant_list_stays_silent_beside_another_that_drops_items(tmp_path):
    """Each list on its own: the team's `args` drops the platform's and is said; the platform's marked
    `tolerations` is not."""
    root = project(tmp_path, MEANT + "\n    containers: [{name: primary, args: [--epochs, '10']}]")
    (root / "team").mkdir()
    (root / "team" / "a100.yaml").write_text("pod_template:\n  spec:\n    containers: [{name: primary, args: [--dry-run]}]\n")
    proc = cli(root, "render", "a100", "--team", "team")
    said = [line for line in unfold(proc.stderr).splitlines() if "warning:" in line]
    assert len(said) == 1 and said[0].startswith(
        "team/a100.yaml:3:34: [team] pod_template.spec.containers[name=primary].args: warning: replaces the "
        "`args` of platform platform/a100.yaml:"), proc.stderr
    assert 'its 2 items are dropped ("--epochs", "10")' in said[0]


@pytest.mark.slow
def test_a_list_that_repeats_every_lower_item_drops_nothing_and_is_not_warned_of(tmp_path):
    root = project(tmp_path, "tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}, "
                             "{key: pool, operator: Exists}]")
    proc = cli(root, "validate", "--strict", "platform")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_the_marked_list_merges_as_kubectl_merges_the_rest_of_it(tmp_path, kubectl):
    """The `$patch: replace` item only silences the warning: the pod is kubectl's merge of the other items over
    the builtin profile (kubectl itself would keep the item as data: a toleration `{"$patch": "replace"}`)."""
    root = project(tmp_path, MEANT)
    marked = cli(root, "render", "a100", "--as", "podtemplate", "-o", "json")
    base = cli(root, "render", "gpu-large", "--as", "podtemplate", "-o", "json")
    assert marked.returncode == 0 and base.returncode == 0, marked.stderr + base.stderr
    (tmp_path / "base.json").write_text(base.stdout)
    patch = {"template": {"spec": {"tolerations": [
        {"key": "pool", "operator": "Equal", "value": "a100", "effect": "NoSchedule"}]}}}
    merged = subprocess.run([kubectl, "patch", "--local", "-f", str(tmp_path / "base.json"), "--type", "strategic",
                             "-p", json.dumps(patch), "-o", "json"], capture_output=True, text=True, check=True)
    assert json.loads(marked.stdout)["template"] == json.loads(merged.stdout)["template"]
    explained = cli(root, "render", "a100", "--explain", "-o", "json")
    [replaced] = [leaf for leaf in json.loads(explained.stdout)["leaves"] if leaf["status"] == "replaced"]
    assert replaced["dropped"] == [json.loads(BUILTIN_GPU)]
    assert replaced["removed_by"]["line"] == 5  # the `$patch: replace` line: what replaced the list
    [new] = [leaf for leaf in json.loads(explained.stdout)["leaves"]
             if leaf["path"] == "pod_template.spec.tolerations[0].value"]
    assert new["set_by"]["line"] == 6  # the item after the mark, counted without it


@pytest.mark.slow
def test_the_task_layers_replacement_is_said_by_the_same_rule(tmp_path):
    """``@task(pod_template=...)`` replacing the profile's tolerations: the warning at the task's definition is the
    one render gives a file, located at the task layer's label."""
    (tmp_path / "wf.py").write_text(textwrap.dedent("""\
        from flytekit import PodTemplate, task
        from kubernetes.client import V1Container, V1PodSpec, V1Toleration
        from kfdefaults import Elastic

        SPOT = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="primary")],
                                              tolerations=[V1Toleration(key="spot", operator="Exists")]))

        @task(task_config=Elastic(profile="gpu-large"), pod_template=SPOT)
        def train() -> None: ...
        """), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", "import wf"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    # written the one way a finding is: FILE (here the task layer's label): [layer] path: severity: message
    assert (f"wf.py:8: KfdefaultsWarning: @task(pod_template=...): [task] pod_template.spec.tolerations: warning: "
            f"replaces the `tolerations` of builtin "
            f"{builtin_line()} whole (a list without a merge key is not merged item by item): its 1 item is dropped "
            f"({BUILTIN_GPU}); repeat it here to keep it\n") in proc.stderr, proc.stderr
