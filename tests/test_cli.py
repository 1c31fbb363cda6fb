"""The command line: render, list, exit codes and error messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from cli_runner import invoke as run_cli, unfold
from conftest import PLATFORM, TEAM

KFDEFAULTS = [sys.executable, "-m", "kfdefaults.cli"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*KFDEFAULTS, *args], capture_output=True, text=True)


def invoke(*args: str):
    return run_cli(list(args))


def test_render_elastic_gpu_default_as_json():
    result = invoke("render", "elastic-gpu-default", "-o", "json")
    assert result.exit_code == 0, result.output
    profile = json.loads(result.stdout)
    spec = profile["pod_template"]["spec"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in spec["volumes"]
    primary = next(c for c in spec["containers"] if c["name"] == profile["pod_template"]["primary_container_name"])
    assert {"name": "dshm", "mountPath": "/dev/shm"} in primary["volumeMounts"]
    assert profile["elastic"]["rdzv_configs"]["join_timeout"] == 900


def test_render_yaml_and_json_carry_the_same_data():
    as_yaml = yaml.safe_load(invoke("render", "gpu-large", "--platform", PLATFORM, "--team", TEAM).stdout)
    as_json = json.loads(invoke("render", "gpu-large", "--platform", PLATFORM, "--team", TEAM, "-o", "json").stdout)
    assert as_yaml == as_json


def test_render_output_is_stable_and_ordered():
    first = invoke("render", "gpu-large", "--platform", PLATFORM, "--team", TEAM).stdout
    assert first == invoke("render", "gpu-large", "--platform", PLATFORM, "--team", TEAM).stdout
    assert list(yaml.safe_load(first)) == ["name", "description", "elastic", "pod_template"]
    # list items start with their merge key
    assert "      - name: primary\n" in first
    assert "          - mountPath: /dev/shm\n            name: dshm\n" in first


def test_render_as_podtemplate_manifest():
    result = invoke("render", "gpu-large", "--as", "podtemplate", "--team", TEAM)
    manifest = yaml.safe_load(result.stdout)
    # the sidecar would not survive as a pod_template_name template: standard error says so, at its line
    assert "pod_template.spec.containers[name=log-shipper]: warning: dropped when this PodTemplate is named by " \
           "pod_template_name" in result.unfolded
    assert f"{TEAM}/gpu-large.yaml:20:" in result.stderr
    assert list(manifest) == ["apiVersion", "kind", "metadata", "template"]
    assert manifest["kind"] == "PodTemplate" and manifest["metadata"] == {"name": "gpu-large"}
    assert manifest["template"]["metadata"]["labels"] == {"team": "vision"}
    assert manifest["template"]["spec"]["containers"][0]["name"] == "primary"


def test_set_is_the_task_layer():
    result = invoke(
        "render", "gpu-large", "-o", "json",
        "--set", "elastic.nnodes=2",
        "--set", "elastic.rdzv_configs.join_timeout=1800",
        "--set", "pod_template.spec.containers[name=primary].image=repo/img:1",
        "--set", 'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"=4',
        "--set", 'pod_template.spec.containers[name=primary].resources.requests."nvidia.com/gpu"=4',  # equal, or rejected
    )
    assert result.exit_code == 0, result.output
    profile = json.loads(result.stdout)  # warnings (4 GPUs, 8 workers) go to standard error
    assert profile["elastic"]["nnodes"] == 2
    assert profile["elastic"]["rdzv_configs"]["join_timeout"] == 1800
    primary = profile["pod_template"]["spec"]["containers"][0]
    assert primary["image"] == "repo/img:1"
    assert primary["resources"]["limits"]["nvidia.com/gpu"] == 4


def test_list_plain_when_piped():
    result = invoke("list", "--platform", PLATFORM, "--team", TEAM)
    lines = {line.split()[0]: line.split()[1] for line in result.output.splitlines()}
    assert lines["gpu-large"] == "builtin,platform,team"
    assert lines["gpu-small"] == "platform"
    assert lines["cpu-small"] == "builtin"


def test_list_json():
    rows = json.loads(invoke("list", "-o", "json", "--team", TEAM).output)
    by_name = {r["name"]: r for r in rows}
    assert by_name["gpu-large"]["layers"] == ["builtin", "team"]
    assert by_name["vision-finetune"]["description"] == "Fine-tuning on a single multi-GPU node"


@pytest.mark.slow
def test_list_names_an_unusable_profile_without_guessing_its_description(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "dup.yaml").write_text("description: first\n", encoding="utf-8")
    (two / "dup.yaml").write_text("description: second\n", encoding="utf-8")
    (one / "fine.yaml").write_text("description: fine\n", encoding="utf-8")
    proc = run("list", "--team", str(one), "--team", str(two))
    assert proc.returncode == 1
    lines = {line.split()[0]: line for line in proc.stdout.splitlines()}
    assert lines["dup"].endswith("(cannot be used: see the errors below)")
    assert lines["fine"].endswith("fine")
    assert "profile 'dup' is defined twice in the team layer" in proc.stderr
    (one / "cyc-b.yaml").write_text("extends: cyc-a\n", encoding="utf-8")
    (one / "cyc-a.yaml").write_text("extends: cyc-b\n", encoding="utf-8")
    proc = run("list", "--team", str(one))
    files = [line.split(":")[0] for line in proc.stderr.splitlines()]
    assert files == sorted(files) and len(files) == 2, proc.stderr  # by file and position, each problem once
    proc = run("list", "-o", "json", "--team", str(one), "--team", str(two))
    by_name = {r["name"]: r for r in json.loads(proc.stdout)}
    assert by_name["dup"]["description"] == "" and "defined twice" in by_name["dup"]["errors"][0]
    assert "errors" not in by_name["fine"]


@pytest.mark.slow
def test_bad_file_exits_1_with_location_and_no_traceback(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    (team / "gpu-large.yaml").write_text("elastic:\n  nproc_per_node: eight\n", encoding="utf-8")
    proc = run("render", "gpu-large", "--team", str(team))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"{team / 'gpu-large.yaml'}:2:19: [team] elastic.nproc_per_node: ")
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_unknown_key_suggests_the_field(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    (team / "gpu-large.yaml").write_text("elastic:\n  nproc_per_nod: 8\n", encoding="utf-8")
    proc = run("render", "gpu-large", "--team", str(team))
    assert proc.returncode == 1
    assert "2:3: [team] elastic.nproc_per_nod: unknown field `nproc_per_nod`; did you mean `nproc_per_node`?" in proc.stderr


def test_usage_mistake_exits_2():
    proc = run("render")
    assert proc.returncode == 2
    assert "the following arguments are required: NAME" in proc.stderr


def test_unknown_profile_exits_1():
    proc = run("render", "no-such-profile")
    assert proc.returncode == 1
    assert "no profile named 'no-such-profile'" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("argument", ["elastic.nnodes", "a..b=1", "x[name=y]=1", "pod_template.spec.containers[bad].image=x",
                                      "elastic.nnodes=", "elastic.nnodes= ", "pod_template.spec.containers[name=].image=x",
                                      "pod_template.spec.containers[name=primary].env[name=Q]].value=1"])
def test_bad_set_exits_1(argument):
    proc = run("render", "gpu-large", "--set", argument)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"--set {argument}: ")


@pytest.mark.slow
def test_an_empty_set_value_is_an_error_not_a_deletion():
    proc = run("render", "cpu-small", "--set", "elastic.nnodes=")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "write KEY=null to delete the key" in proc.stderr
    deleted = json.loads(run("render", "gpu-large", "--set", "elastic.nnodes=null", "-o", "json").stdout)
    assert deleted["elastic"]["nnodes"] == 1  # the profile's "1:4" deleted: the plugin's default


def test_render_does_not_import_flytekit_or_the_kubernetes_client():
    code = (
        "import sys, runpy; sys.argv = ['kfdefaults', 'render', 'gpu-large']\n"
        "try:\n    runpy.run_module('kfdefaults.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('flytekit', 'kubernetes', 'torch'))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ})
    assert "HEAVY []" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_a_folder_without_profile_files_is_a_warning_that_names_its_sub_folders(tmp_path):
    (tmp_path / "repo" / "profiles").mkdir(parents=True)
    (tmp_path / "repo" / "profiles" / "gpu-large.yaml").write_text("description: from the sub-folder\n")
    for command in (["render", "gpu-large"], ["list"]):
        proc = run(*command, "--platform", str(tmp_path / "repo"))
        assert proc.returncode == 0
        assert (f"{tmp_path / 'repo'}: [platform] warning: no profile files (*.yaml, *.yml, *.toml) in this platform "
                "folder (from --platform); sub-folders are not searched, and profiles/ holds profile files") in unfold(proc.stderr)
        assert "from the sub-folder" not in proc.stdout


def test_the_list_table_prints_descriptions_as_written(tmp_path):
    (tmp_path / "m.yaml").write_text('description: "[/]oops [bold]x"\n')
    result = run_cli(["list", "--team", str(tmp_path), "-o", "table"])
    assert result.exit_code == 0
    assert "[/]oops [bold]x" in result.output


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    """`kfdefaults render gpu-large | true`: the output has nowhere to go; exit 1, no traceback."""
    reader, writer = os.pipe()
    os.close(reader)  # gone before the command starts, however late it writes: its write fails
    try:
        proc = subprocess.run(KFDEFAULTS + ["render", "gpu-large"], stdout=writer, stderr=subprocess.PIPE, timeout=300)
    finally:
        os.close(writer)
    assert proc.stderr.decode().splitlines()[1:] == []  # the target line alone
    assert proc.returncode == 1


@pytest.mark.parametrize("closed, said", [(1, b"kfdefaults: standard output is closed\n"), (2, b"")])
def test_a_closed_stream_is_not_an_internal_error(closed: int, said: bytes) -> None:
    other = {1: "stderr", 2: "stdout"}[closed]
    proc = subprocess.run(KFDEFAULTS + ["render", "gpu-large"], pass_fds=(), capture_output=False,
                          **{other: subprocess.PIPE}, preexec_fn=lambda: os.close(closed), timeout=60)
    if closed == 1:
        assert (proc.returncode, proc.stderr) == (1, said)
    else:
        assert proc.returncode == 0 and b"name: gpu-large" in proc.stdout
