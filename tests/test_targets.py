"""One profile format, two SDKs: the target's defaults, what each SDK honours, and how the command line says which.

Nothing here imports an SDK: what the targets' data says about the installed plugins is checked in
tests/test_flyte2.py, which serializes real tasks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml
from cli_runner import invoke as run_cli

import kfdefaults
from kfdefaults import targets
from kfdefaults.targets import FLYTE2, FLYTEKIT, default_target


def invoke(*args: str, env: dict | None = None):
    return run_cli(list(args), env=env)


def write(folder, name: str, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


# --- the layer below every profile --------------------------------------------------------------------


def test_render_for_flyte2_fills_in_flyte2s_defaults_and_explain_names_them():
    result = invoke("render", "gpu-large", "--target", "flyte2", "-o", "json")
    assert result.exit_code == 0, result.output
    elastic = json.loads(result.stdout)["elastic"]
    # what gpu-large sets is the same under both SDKs; what it leaves unset is each plugin's default
    assert elastic == {
        "nnodes": "1:4", "nproc_per_node": 8, "rdzv_backend": "c10d", "monitor_interval": 3, "max_restarts": 3,
        "rdzv_configs": {"join_timeout": 900, "read_timeout": 900, "timeout": 900},
        "run_policy": {"backoff_limit": 3, "clean_pod_policy": "running"},
        "nccl_heartbeat_timeout_sec": 300, "nccl_async_error_handling": False, "nccl_enable_monitoring": True,
    }
    flytekit = json.loads(invoke("render", "gpu-large", "--target", "flytekit", "-o", "json").stdout)["elastic"]
    assert (flytekit["monitor_interval"], flytekit["start_method"]) == (5, "spawn")
    assert "rdzv_backend" not in flytekit and not any(k.startswith("nccl_") for k in flytekit)

    leaves = json.loads(invoke("render", "gpu-large", "--target", "flyte2", "--explain", "-o", "json").stdout)["leaves"]
    by_path = {leaf["path"]: leaf["set_by"] for leaf in leaves}
    assert by_path["elastic.monitor_interval"]["label"] == "flyteplugins.pytorch.Elastic default (monitor_interval)"
    assert by_path["elastic.max_restarts"]["layer"] == "builtin"  # gpu-large sets it
    leaves = json.loads(invoke("render", "elastic-gpu-default", "--target", "flyte2", "--explain", "-o", "json").stdout)
    by_path = {leaf["path"]: leaf["set_by"] for leaf in leaves["leaves"]}
    assert by_path["elastic.max_restarts"]["label"] == "flyteplugins.pytorch.Elastic default (max_restarts)"
    assert by_path["elastic.nnodes"]["source"] == "kfdefaults default"  # Flyte 2's Elastic requires it
    assert "requires it" in by_path["elastic.nnodes"]["label"]
    assert by_path["pod_template.primary_container_name"]["layer"] == "builtin"
    leaves = json.loads(invoke("render", "elastic-gpu-default", "--target", "flytekit", "--explain", "-o", "json").stdout)
    by_path = {leaf["path"]: leaf["set_by"] for leaf in leaves["leaves"]}
    assert by_path["elastic.max_restarts"]["label"] == "flytekitplugins.kfpytorch.Elastic default (max_restarts)"


def test_a_layer_deleting_a_key_gets_the_targets_default_back():
    for target, value in (("flytekit", 5), ("flyte2", 3)):
        result = invoke("render", "cpu-small", "--target", target, "--set", "elastic.monitor_interval=null", "-o", "json")
        assert json.loads(result.stdout)["elastic"]["monitor_interval"] == value


def test_the_merge_cache_keeps_the_targets_apart():
    """The same files merged for two targets: two merges (the defaults below them differ), each cached."""
    for _ in range(2):
        kit = kfdefaults.resolve("cpu-small", target="flytekit").elastic_settings
        two = kfdefaults.resolve("cpu-small", target="flyte2").elastic_settings
        assert (kit["max_restarts"], two["max_restarts"]) == (0, 3)
        assert "nccl_enable_monitoring" in two and "nccl_enable_monitoring" not in kit


# --- which target, and saying so ---------------------------------------------------------------------


@pytest.mark.parametrize("kit, two, expected, why", [
    (True, False, FLYTEKIT, "the installed SDK"),
    (False, True, FLYTE2, "the installed SDK"),
    (True, True, FLYTEKIT, "flytekit and flyte are both installed"),
    (False, False, FLYTEKIT, "no Flyte SDK is installed"),
])
def test_the_default_target_is_the_installed_sdk(monkeypatch, kit, two, expected, why):
    monkeypatch.setattr(targets, "installed", lambda t, inputs=None: {"flytekit": kit, "flyte2": two}[t.name])
    assert default_target({}) == (expected, why)
    assert default_target({"KFDEFAULTS_TARGET": "flyte2"}) == (FLYTE2, "KFDEFAULTS_TARGET")


def test_render_says_nothing_of_a_target_asked_for_and_keeps_the_output_clean():
    result = invoke("render", "cpu-small", "--target", "flyte2")
    assert result.stderr == ""
    assert yaml.safe_load(result.stdout)["elastic"]["max_restarts"] == 3
    result = invoke("render", "cpu-small", env={"KFDEFAULTS_TARGET": "flyte2"})
    assert result.stderr == ""
    result = invoke("render", "cpu-small", env={"KFDEFAULTS_TARGET": "flyte3"})
    assert result.exit_code == 1 and "no target named 'flyte3': one of flytekit, flyte2" in result.stderr
    result = invoke("render", "cpu-small", "--target", "flyte3")
    assert result.exit_code == 2 and "invalid choice: 'flyte3'" in result.stderr


# --- what a target cannot honour is an error, where it was written --------------------------------------


TEAM_PROFILES = {
    "forked.yaml": """\
        extends: cpu-small
        elastic:
          start_method: fork
        """,
    "nccl.yaml": """\
        extends: gpu-large
        elastic:
          rdzv_backend: c10d
          nccl_heartbeat_timeout_sec: 600
          nccl_collective_timeout_sec: 120
        """,
    "etcd.yaml": """\
        extends: gpu-large
        elastic:
          rdzv_backend: etcd-v2
        """,
}


@pytest.fixture
def team(tmp_path):
    for name, text in TEAM_PROFILES.items():
        write(tmp_path / "team", name, text)
    return str(tmp_path / "team")


def test_fork_on_flyte2_is_an_error_at_its_line_naming_the_target(team):
    result = invoke("render", "forked", "--team", team, "--target", "flyte2")
    assert result.exit_code == 1 and result.stdout == ""  # nothing half-written
    assert result.stderr == (
        f"{team}/forked.yaml:3:17: [team] elastic.start_method: `start_method: fork` cannot run on Flyte 2: "
        "flyteplugins.pytorch.Elastic has no `start_method` and always uses start_method spawn (target flyte2); "
        "write `start_method: spawn`, or delete it for these tasks (`start_method: null` in a higher layer)\n")
    assert invoke("render", "forked", "--team", team, "--target", "flytekit").exit_code == 0
    # spawn is what Flyte 2 does anyway: accepted, and shown as written
    result = invoke("render", "forked", "--team", team, "--target", "flyte2", "--set", "elastic.start_method=spawn",
                    "-o", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["elastic"]["start_method"] == "spawn"
    # a higher layer deleting it: Flyte 2's own way
    result = invoke("render", "forked", "--team", team, "--target", "flyte2", "--set", "elastic.start_method=null",
                    "-o", "json")
    assert result.exit_code == 0 and "start_method" not in json.loads(result.stdout)["elastic"]


def test_flyte2_settings_on_flytekit_are_errors_each_at_its_line(team):
    result = invoke("render", "nccl", "--team", team, "--target", "flytekit")
    assert result.exit_code == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    # nccl_collective_timeout_sec is not: kfdefaults applies it in flytekit's workers (tests/test_collective_timeout.py)
    assert [line.split(": ")[0] for line in lines] == [f"{team}/nccl.yaml:4:31"]
    assert "`nccl_heartbeat_timeout_sec` is a Flyte 2 setting: flytekitplugins.kfpytorch.Elastic has no such field, " \
           "so flytekit would not apply it (target flytekit)" in lines[0]
    assert "set TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC in the primary container's env" in lines[0]
    result = invoke("render", "nccl", "--team", team, "--target", "flytekit", "--set",
                    "elastic.nccl_heartbeat_timeout_sec=null", "-o", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["elastic"]["nccl_collective_timeout_sec"] == 120
    # rdzv_backend c10d is what flytekit does: no error for it
    result = invoke("render", "nccl", "--team", team, "--target", "flyte2", "-o", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["elastic"]["nccl_collective_timeout_sec"] == 120

    result = invoke("render", "etcd", "--team", team, "--target", "flytekit")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{team}/etcd.yaml:3:17: [team] elastic.rdzv_backend: `rdzv_backend: etcd-v2` "
                                    "cannot run on flytekit")
    assert invoke("render", "etcd", "--team", team, "--target", "flyte2").exit_code == 0


def test_python_callers_get_a_profile_error_with_the_same_location(team):
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        kfdefaults.resolve("forked", team=[team], target="flyte2")
    [finding] = excinfo.value.findings
    assert (finding.location.file, finding.location.line, finding.location.column) == (f"{team}/forked.yaml", 3, 17)
    assert finding.path == "elastic.start_method" and "(target flyte2)" in finding.message
    # the task layer is named by what set it
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        kfdefaults.resolve("cpu-small", target="flytekit", overrides={"elastic": {"nccl_enable_monitoring": False}})
    assert str(excinfo.value).startswith("overrides: [task] elastic.nccl_enable_monitoring: ")


def test_validate_checks_for_the_target_it_is_given(team):
    result = invoke("validate", team, "--target", "flyte2")
    assert result.exit_code == 1
    assert "forked.yaml:3:17: [team] elastic.start_method:" in result.stderr and "nccl.yaml" not in result.stderr
    result = invoke("validate", team, "--target", "flytekit")
    assert result.exit_code == 1
    assert "forked.yaml" not in result.stderr and "nccl.yaml:4:31" in result.stderr and "etcd.yaml:3:17" in result.stderr
    assert ": 2 errors, 0 warnings" in result.stderr  # nccl_collective_timeout_sec is applied on flytekit


@pytest.mark.parametrize("value, message", [
    ("0", "greater than or equal to 1"),
    ('"300"', "write it without quotes"),
    ("-5", "greater than or equal to 1"),
])
def test_nccl_seconds_are_whole_positive_seconds(tmp_path, value, message):
    path = write(tmp_path / "team", "bad.yaml", f"elastic:\n  nccl_heartbeat_timeout_sec: {value}\n")
    result = invoke("validate", path, "--target", "flyte2")
    assert result.exit_code == 1
    assert f"{path}:2:31: [team] elastic.nccl_heartbeat_timeout_sec: " in result.stderr and message in result.stderr


def test_an_unknown_rendezvous_backend_is_an_error(tmp_path):
    path = write(tmp_path / "team", "bad.yaml", "elastic:\n  rdzv_backend: static\n")
    result = invoke("validate", path, "--target", "flyte2")  # static is a clustered task's backend
    assert result.exit_code == 1 and f"{path}:2:17: [team] elastic.rdzv_backend: " in result.stderr
    assert "flyteplugins.pytorch.Elastic takes c10d, etcd or etcd-v2 (target flyte2)" in result.stderr
    path = write(tmp_path / "team", "bad.yaml", "elastic:\n  rdzv_backend: zookeeper\n")
    result = invoke("validate", path, "--target", "flyte2")
    assert result.exit_code == 1 and "'c10d', 'etcd', 'etcd-v2' or 'static'" in result.stderr


# --- on Flyte 2, what render shows is what the pod gets ------------------------------------------------


def test_a_container_env_var_that_overrides_an_nccl_setting_is_a_warning(tmp_path):
    team = tmp_path / "team"
    write(team, "heartbeat.yaml", """\
        extends: gpu-large
        elastic:
          nccl_heartbeat_timeout_sec: 600
          nccl_enable_monitoring: false
        pod_template:
          spec:
            containers:
              - name: primary
                env: [{name: TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, value: "900"}]
        """)
    result = invoke("render", "heartbeat", "--team", str(team), "--target", "flyte2")
    assert result.exit_code == 0
    warnings = result.unfolded.splitlines()
    assert warnings == [
        f"{team}/heartbeat.yaml:4:27: [team] elastic.nccl_enable_monitoring: warning: `nccl_enable_monitoring: "
        "false` turns nothing off: Flyte 2's plugin then leaves TORCH_NCCL_ENABLE_MONITORING unset, and torch's "
        "default applies (monitoring on); to turn it off, set TORCH_NCCL_ENABLE_MONITORING=0 in the primary "
        "container's env",
        f"{team}/heartbeat.yaml:9:63: [team] elastic.nccl_heartbeat_timeout_sec: warning: the primary container's "
        "env TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=900 wins over `nccl_heartbeat_timeout_sec: 600`: Flyte 2's plugin "
        "sets TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC only when it is unset; write the one value in one place",
    ]
    result = invoke("validate", str(team), "--target", "flyte2", "--strict")
    assert result.exit_code == 1 and ": 0 errors, 2 warnings" in result.stderr
    # the same value in both places, or the variable turning monitoring off: nothing to say
    result = invoke("render", "heartbeat", "--team", str(team), "--target", "flyte2",
                    "--set", "elastic.nccl_heartbeat_timeout_sec=900",
                    "--set", 'pod_template.spec.containers[name=primary].env[name=TORCH_NCCL_ENABLE_MONITORING].value="0"')
    assert not result.stderr.startswith("kfdefaults: target")
    # only the caution every profile that turns the NCCL watchdog off gets (kfdefaults.validate.torch_env)
    assert [line.split(": warning: ")[1].split(":")[0] for line in result.messages.splitlines()] == [
        "`TORCH_NCCL_ENABLE_MONITORING=0`"]


# --- the core without any SDK ------------------------------------------------------------------------


NO_SDK = """\
import importlib.abc, sys

class NoSdk(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("flytekit", "flytekitplugins", "flyte", "flyteplugins", "torch"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoSdk())
"""


def no_sdk(code: str, tmp_path) -> subprocess.CompletedProcess:
    """Run ``code`` in a Python where neither SDK (nor torch) can be imported, as after a bare install."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    return subprocess.run([sys.executable, "-c", NO_SDK + code], capture_output=True, text=True, cwd=tmp_path,
                          env=env)


COMMANDS = """
import contextlib, io, json
from kfdefaults.cli import run
results = []
for args in ARGS:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(args)
    results.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(results))
"""


def test_render_validate_and_diff_need_no_sdk(tmp_path):
    commands = [["render", "gpu-large"], ["render", "gpu-large", "--target", "flyte2", "--explain"],
                ["validate", "--strict"], ["diff", "gpu-large", "cpu-small"], ["list"],
                ["render", "gpu-large", "--as", "flyte", "--target", "flyte2"]]
    proc = no_sdk(f"ARGS = {commands!r}\n" + COMMANDS, tmp_path)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    code, out, err = results[0]
    assert code == 0 and err == "kfdefaults: target flytekit assumed; flyte2: monitor_interval 3 (see --target)\n"
    assert yaml.safe_load(out)["elastic"]["nproc_per_node"] == 8
    code, out, err = results[1]
    assert code == 0 and "flyteplugins.pytorch.Elastic default (monitor_interval)" in out
    assert [r[0] for r in results[2:5]] == [0, 1, 0]  # diff exits 1: the profiles differ
    # only a command that builds a task needs the SDK, and it says so
    code, out, err = results[5]
    assert code == 1 and out == "" and "render --as flyte defines a task, which needs flyte" in err
    assert "Traceback" not in "".join(r[2] for r in results)


def test_an_adapter_without_its_sdk_says_which_extra_to_install(tmp_path):
    code = """
for statement in ("from kfdefaults import Elastic", "import kfdefaults.flyte2"):
    try:
        exec(statement)
    except ImportError as e:
        print(type(e).__name__, e)
"""
    lines = no_sdk(code, tmp_path).stdout.splitlines()
    assert lines[0].startswith("ImportError kfdefaults.Elastic (kfdefaults.flytekit) needs flytekit and "
                               "flytekitplugins-kfpytorch") and "pip install 'kfdefaults[flytekit]'" in lines[0]
    assert lines[1].startswith("ImportError kfdefaults.flyte2 needs Flyte 2's SDK, and flyte and flyteplugins.pytorch "
                               "cannot be imported: pip install 'kfdefaults[flyte2]'")
