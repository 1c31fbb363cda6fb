"""Locked paths: a platform profile holds values against team files, ``--set`` and task arguments, through the
command line and through ``Elastic(profile=...)``, on real profile files."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from cli_runner import invoke

import kfdefaults

PLATFORM_GPU_LARGE = """\
    description: the platform's GPU nodes
    locked:
      - pod_template.spec.tolerations
      - pod_template.spec.nodeSelector
      - elastic.rdzv_configs.join_timeout
      - 'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"'
      - pod_template.labels.cost-center
    elastic:
      rdzv_configs:
        join_timeout: 1200
    pod_template:
      labels:
        cost-center: ml-platform
      spec:
        tolerations:
          - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
          - {key: pool, operator: Equal, value: a100, effect: NoSchedule}
    """


def write(folder: Path, name: str, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


@pytest.fixture
def platform(tmp_path: Path) -> Path:
    write(tmp_path / "platform", "gpu-large.yaml", PLATFORM_GPU_LARGE)
    return tmp_path / "platform"


def render(*args: str):
    result = invoke(["render", *args])
    assert "Traceback" not in result.output
    return result


# --- the command line --------------------------------------------------------------------------------------------


def test_a_team_file_that_changes_a_locked_value_fails_at_its_line_and_names_the_lock(platform, tmp_path):
    team = write(tmp_path / "team", "gpu-large.yaml", """\
        elastic:
          rdzv_configs:
            join_timeout: 3600
        """)
    result = render("gpu-large", "--platform", str(platform), "--team", str(tmp_path / "team"))
    assert result.exit_code == 1 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"{team}:3:19: [team] elastic.rdzv_configs.join_timeout: locked by [platform] "
                           f"{platform / 'gpu-large.yaml'}:5:5: ")
    assert "(1200)" in line and "this changes 1200 to 3600" in line


def test_writing_the_locked_value_again_is_allowed(platform, tmp_path):
    write(tmp_path / "team", "gpu-large.yaml", """\
        elastic:
          rdzv_configs:
            join_timeout: 1200
        pod_template:
          labels: {cost-center: ml-platform, team: vision}
          spec:
            tolerations:
              - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
              - {key: pool, operator: Equal, value: a100, effect: NoSchedule}
        """)
    result = render("gpu-large", "--platform", str(platform), "--team", str(tmp_path / "team"), "-o", "json")
    assert result.exit_code == 0, result.stderr
    merged = json.loads(result.stdout)
    assert merged["pod_template"]["labels"] == {"cost-center": "ml-platform", "team": "vision"}  # a map key locked, not the map


def test_a_locked_list_takes_no_new_item(platform, tmp_path):
    team = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            tolerations:
              - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
              - {key: pool, operator: Equal, value: a100, effect: NoSchedule}
              - {key: spot, operator: Exists}
        """)
    result = render("gpu-large", "--platform", str(platform), "--team", str(tmp_path / "team"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{team}:3:5: [team] pod_template.spec.tolerations: locked by [platform] "
                                    f"{platform / 'gpu-large.yaml'}:3:5:")
    assert "a locked list or mapping takes no new, changed or removed item" in result.stderr


def test_a_deletion_of_a_locked_path_fails_at_the_delete_entry(platform, tmp_path):
    team = write(tmp_path / "team", "gpu-large.toml", """\
        delete = ["pod_template.spec.tolerations"]
        """)
    result = render("gpu-large", "--platform", str(platform), "--team", str(tmp_path / "team"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{team}:1:11: [team] pod_template.spec.tolerations: locked by [platform] ")
    assert "this deletes [{" in result.stderr


def test_a_path_locked_where_nothing_is_set_cannot_be_set(platform, tmp_path):
    team = write(tmp_path / "team", "gpu-large.yaml", "pod_template:\n  spec:\n    nodeSelector: {pool: spot}\n")
    result = render("gpu-large", "--platform", str(platform), "--team", str(tmp_path / "team"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{team}:3:5: [team] pod_template.spec.nodeSelector: locked by [platform] ")
    assert "it is locked unset, so a layer merged after the lock may not set it" in result.stderr
    assert 'this adds {"pool": "spot"}' in result.stderr


def test_a_locked_label_key_cannot_change(platform, tmp_path):
    team = write(tmp_path / "team", "gpu-large.yaml", "pod_template:\n  labels: {cost-center: vision}\n")
    result = render("gpu-large", "--platform", str(platform), "--team", str(tmp_path / "team"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{team}:2:25: [team] pod_template.labels.cost-center: locked by [platform] "
                                    f"{platform / 'gpu-large.yaml'}:7:5:")


def test_set_on_a_locked_path_fails_naming_the_set_and_the_lock(platform):
    result = render("gpu-large", "--platform", str(platform),
                    "--set", 'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"=4')
    assert result.exit_code == 1
    assert result.stderr.startswith(
        '--set pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"=4: [task] '
        'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu": locked by [platform] '
        f"{platform / 'gpu-large.yaml'}:6:5:")
    assert "this changes 8 to 4" in result.stderr
    ok = render("gpu-large", "--platform", str(platform), "--set", "elastic.rdzv_configs.join_timeout=1200")
    assert ok.exit_code == 0, ok.stderr


def test_a_profile_that_extends_a_locked_one_keeps_its_locks(platform, tmp_path):
    team = write(tmp_path / "team", "my-gpu.yaml", """\
        extends: gpu-large
        elastic:
          rdzv_configs:
            join_timeout: 60
        """)
    result = render("my-gpu", "--platform", str(platform), "--team", str(tmp_path / "team"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{team}:4:19: [team] elastic.rdzv_configs.join_timeout: locked by [platform] "
                                    f"{platform / 'gpu-large.yaml'}:5:5 in profile `gpu-large`, which `my-gpu` extends: ")


def test_a_lock_on_the_primary_container_follows_it_when_a_layer_renames_it(platform, tmp_path):
    team = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          primary_container_name: main
          spec:
            containers:
              - name: main
                resources:
                  limits: {nvidia.com/gpu: 2}
        """)
    result = render("gpu-large", "--platform", str(platform), "--team", str(tmp_path / "team"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{team}:7:36: [team] "
                                    'pod_template.spec.containers[name=main].resources.limits."nvidia.com/gpu": locked by')


def test_adding_a_lock_is_enforced_when_the_rest_of_the_files_is_unchanged(tmp_path):
    """The merge of unchanged files is cached: a new lock must still be checked, not served from the cache."""
    platform = tmp_path / "platform"
    write(platform, "gpu-large.yaml", "elastic:\n  max_restarts: 1\n")
    write(tmp_path / "team", "gpu-large.yaml", "elastic:\n  max_restarts: 5\n")
    args = ("gpu-large", "--platform", str(platform), "--team", str(tmp_path / "team"))
    assert render(*args).exit_code == 0
    write(platform, "gpu-large.yaml", "locked: [elastic.max_restarts]\nelastic:\n  max_restarts: 1\n")
    result = render(*args)
    assert result.exit_code == 1 and "locked by [platform]" in result.stderr


def test_explain_marks_locked_values(platform):
    text = render("gpu-large", "--platform", str(platform), "--explain")
    assert text.exit_code == 0, text.stderr
    lock = f"locked by platform {platform / 'gpu-large.yaml'}"
    rows = {line.split()[0]: line for line in text.stdout.splitlines()}
    assert rows["elastic.rdzv_configs.join_timeout"].endswith(f"{lock}:5")
    assert rows["pod_template.spec.tolerations[1].value"].endswith(f"{lock}:3")
    assert rows['pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"'].endswith(f"{lock}:6")
    assert "locked" not in rows["elastic.nnodes"]
    data = json.loads(render("gpu-large", "--platform", str(platform), "--explain", "-o", "json").stdout)
    leaves = {leaf["path"]: leaf for leaf in data["leaves"]}
    assert leaves["elastic.rdzv_configs.join_timeout"]["locked_by"] == {
        "layer": "platform", "source": str(platform / "gpu-large.yaml"), "file": str(platform / "gpu-large.yaml"),
        "line": 5, "column": 5}
    assert "locked_by" not in leaves["elastic.max_restarts"]


@pytest.mark.parametrize("entry, message", [
    ("pod_template.spec.tolerations[0]", "lock the list"),
    ("pod_template.spec.nodeSelectr", "did you mean `nodeSelector`?"),
    ("elastic.rdzv_configs.join_timeot", "did you mean `join_timeout`?"),
    ("pod_template.spec.containers[image=x]", "items are merged by `name`"),
    ("description", "starts with elastic or pod_template"),
    ("elastic.nnodes.min", "a single value"),
])
def test_a_lock_that_names_nothing_is_an_error_at_its_entry(tmp_path, entry, message):
    path = write(tmp_path / "platform", "gpu-large.yaml", f"locked:\n  - elastic.max_restarts\n  - '{entry}'\n")
    result = invoke(["validate", "--layer", "platform", path])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.startswith(f"{path}:3:5: [platform] locked[1]: cannot lock `{entry}`: ")
    assert message in result.stderr.splitlines()[0]


def test_the_task_layer_cannot_lock():
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        kfdefaults.resolve("gpu-large", overrides={"locked": ["elastic.nnodes"]})
    assert "a lock holds against the task layer, which can lock nothing" in str(excinfo.value)


# --- Elastic(profile=...) --------------------------------------------------------------------------------------------


def test_elastic_overrides_that_change_a_locked_value_raise_with_both_places(platform):
    from kfdefaults import Elastic

    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        Elastic(profile="gpu-large", platform=[str(platform)], rdzv_configs={"join_timeout": 60})
    [finding] = excinfo.value.findings
    assert str(finding.location) == "Elastic(rdzv_configs={'join_timeout': 60})"
    assert finding.path == "elastic.rdzv_configs.join_timeout"
    assert f"locked by [platform] {platform / 'gpu-large.yaml'}:5:5" in finding.message
    config = Elastic(profile="gpu-large", platform=[str(platform)], rdzv_configs={"join_timeout": 1200})
    assert config.rdzv_configs["join_timeout"] == 1200


def test_a_task_pod_template_that_changes_a_locked_list_raises(platform):
    from flytekit import PodTemplate, task
    from kubernetes.client import V1PodSpec, V1Toleration

    from kfdefaults import Elastic

    template = PodTemplate(pod_spec=V1PodSpec(containers=[], tolerations=[V1Toleration(key="spot", operator="Exists")]))
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        task(task_config=Elastic(profile="gpu-large", platform=[str(platform)]), pod_template=template)(_body)
    [finding] = excinfo.value.findings
    assert str(finding.location) == "@task(pod_template=...)" and finding.path == "pod_template.spec.tolerations"
    assert "locked by [platform]" in finding.message


def _body() -> None: ...
