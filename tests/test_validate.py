"""kfdefaults validate and the checks behind it: rendezvous settings, PodSpec fragments, merged-profile warnings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from cli_runner import invoke as run_cli, unfold
from conftest import PLATFORM, TEAM

import kfdefaults
from kfdefaults import ProfileError
from kfdefaults.api import validate_paths
from kfdefaults.layers import builtin_folder

KFDEFAULTS = [sys.executable, "-m", "kfdefaults.cli"]


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([*KFDEFAULTS, *args], capture_output=True, text=True, env=env)
    done.unfolded = unfold(done.stderr)  # each finding on one line again: its indented lines joined to it
    return done


def invoke(*args: str):
    return run_cli(list(args))


def write(folder, name: str, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


# --- clean input -------------------------------------------------------------------------------------------------


def test_builtin_profiles_and_fixtures_are_clean():
    report = validate_paths([builtin_folder()], layer="platform")
    assert report.findings == []
    assert set(report.profiles) >= {"elastic-gpu-default", "gpu-large", "cpu-small"}
    assert validate_paths([PLATFORM], layer="platform").findings == []
    assert validate_paths([TEAM], platform=[PLATFORM]).findings == []


def test_directives_nulls_and_every_value_kind_are_legal_in_fragments(tmp_path):
    # on top of a parent, so that every directive meets what it acts on (a directive left over is an error)
    path = write(tmp_path, "legal.yaml", """\
        extends: elastic-gpu-default
        elastic:
          nnodes: " 2:4 "
          monitor_interval: 0.5
          rdzv_configs: {join_timeout: 900, keep_alive_max_attempt: 3, is_host: false, store_type: tcp, close_timeout: null}
        pod_template:
          labels: {team: "no"}
          spec:
            $setElementOrder/containers: [{name: primary}, {name: sidecar}]
            containers:
              - name: primary
                imagePullPolicy: IfNotPresent
                env:
                  - {name: FLAG, value: "on"}
                  - {name: GONE, $patch: delete}
                args: [--epochs, "3"]
                $deleteFromPrimitiveList/command: [python]
                resources:
                  limits: {nvidia.com/gpu: 8, memory: 1.5e3, cpu: 500m, hugepages-2Mi: 1Gi}
                  requests: {cpu: 0.5, ephemeral-storage: "10G"}
                ports:
                  - {containerPort: 29500, protocol: TCP}
                livenessProbe:
                  httpGet: {port: http, path: /healthz}
                securityContext: null
              - name: sidecar
                image: proxy:1
            volumes:
              - name: dshm
                $retainKeys: [name, emptyDir]
                emptyDir: {medium: HugePages-2Mi, sizeLimit: null}
            tolerations:
              - $patch: replace
              - {key: nvidia.com/gpu, operator: Exists, effect: ""}
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                    - matchExpressions:
                        - {key: gpus, operator: Gt, values: ["4"]}
            nodeSelector:
              $patch: replace
              pool: a100
        """)
    report = validate_paths([path])
    assert report.errors == [], "\n".join(map(str, report.errors))


# --- rendezvous settings ------------------------------------------------------------------------------------------


def test_rdzv_keys_are_the_ones_c10d_reads():
    """Every key listed is read by torch's c10d rendezvous code installed here (or is the launcher's timeout)."""
    import inspect

    from torch.distributed.elastic.rendezvous import (
        c10d_rendezvous_backend,
        dynamic_rendezvous,
    )

    from kfdefaults.validate.rdzv import RDZV_SETTINGS

    source = inspect.getsource(dynamic_rendezvous) + inspect.getsource(c10d_rendezvous_backend)
    for key in RDZV_SETTINGS:
        if key == "timeout":
            continue
        if key.endswith("_timeout") and key != "read_timeout":
            assert f'_get_timeout(params, "{key[: -len("_timeout")]}")' in source, key
        else:
            assert f'"{key}"' in source, key
    assert '"timeout"' not in inspect.getsource(dynamic_rendezvous.create_handler)


@pytest.mark.parametrize("name, text, where", [
    ("big.yaml", "elastic:\n  rdzv_configs:\n    join_timeout: 1000000000000000000\n", ":3:19:"),
    ("big.toml", "[elastic.rdzv_configs]\njoin_timeout = 9223372036854775807\n", ":2:16:"),
    ("read.yaml", "elastic:\n  rdzv_configs: {read_timeout: 100000001}\n", ":2:32:"),
    ("tries.yaml", "elastic:\n  rdzv_configs: {keep_alive_max_attempt: 601}\n", ":2:42:"),
])
def test_rdzv_values_beyond_what_torch_holds_are_errors(tmp_path, name, text, where):
    path = write(tmp_path, name, text)
    [error] = validate_paths([path]).errors
    assert str(error).startswith(path + where) and "must be at most" in error.message


def test_the_rdzv_bounds_hold_in_torch():
    """At the bounds, torch builds the rendezvous timeouts and does the date arithmetic of a heartbeat check;
    past the timedelta and datetime limits the bounds keep away from, the same code overflows."""
    from datetime import datetime, timedelta, timezone

    from torch.distributed.elastic.rendezvous.api import RendezvousParameters
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import _get_timeout

    from kfdefaults.validate.rdzv import RDZV_MAX_ATTEMPTS, RDZV_MAX_SECONDS

    params = RendezvousParameters("c10d", "localhost:0", "run", 1, 1, join_timeout=RDZV_MAX_SECONDS,
                                  last_call_timeout=RDZV_MAX_SECONDS)
    assert _get_timeout(params, "join") == timedelta(seconds=RDZV_MAX_SECONDS)
    now = datetime.now(timezone.utc)
    now - timedelta(seconds=RDZV_MAX_SECONDS) * RDZV_MAX_ATTEMPTS  # keep_alive_interval x keep_alive_max_attempt
    now + _get_timeout(params, "last_call")
    with pytest.raises(OverflowError):
        _get_timeout(RendezvousParameters("c10d", "localhost:0", "run", 1, 1, join_timeout=10**18), "join")
    with pytest.raises(OverflowError):
        now - timedelta(seconds=RDZV_MAX_SECONDS) * RDZV_MAX_ATTEMPTS * 2


def test_timeout_without_join_timeout_is_a_warning(tmp_path):
    path = write(tmp_path, "slow.yaml", "elastic:\n  rdzv_configs:\n    timeout: 1800\n")
    report = validate_paths([path])
    assert report.errors == []
    [warning] = report.warnings
    assert str(warning).startswith(f"{path}:3:5: [team] elastic.rdzv_configs.timeout: warning: c10d does not read `timeout`")
    assert "join_timeout" in warning.message


def test_pod_level_resources_warn_and_point_at_the_container(tmp_path):
    text = "pod_template:\n  spec:\n    resources:\n      limits: {cpu: '2'}\n"
    path = write(tmp_path, "pod.yaml", text)
    report = validate_paths([path])
    [warning] = report.findings
    assert warning.severity == "warning"
    assert str(warning).startswith(f"{path}:3:5: [team] pod_template.spec.resources: warning: pod-level `resources`")
    assert "PodLevelResources" in warning.message and "containers[name=primary].resources" in warning.message
    [error] = validate_paths([path], kubernetes_version="1.31").findings
    assert error.severity == "error" and "containers[name=primary].resources" in error.message


def test_merged_timeout_without_any_join_timeout_names_torchs_600_seconds(tmp_path):
    path = write(tmp_path, "nojoin.yaml", "elastic:\n  rdzv_configs:\n    join_timeout: null\n")
    report = validate_paths([path])
    [warning] = [w for w in report.warnings if "600" in w.message]
    assert "c10d ignores `timeout`" in warning.message
    assert warning.layer == "builtin" or warning.location.file.endswith("nojoin.yaml") or "profile" in str(warning.location)


# --- merged-profile warnings --------------------------------------------------------------------------------------


def test_nproc_per_node_above_the_gpu_limit_warns_at_the_higher_layer(tmp_path):
    team = tmp_path / "team"
    path = write(team, "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  limits: {nvidia.com/gpu: 4}
                  requests: {nvidia.com/gpu: 4}  # a GPU request is its limit: the API server rejects any other
        """)
    report = validate_paths([str(team)])
    [warning] = report.warnings
    assert warning.severity == "warning" and warning.layer == "team"
    assert str(warning).startswith(f"{path}:6:36: [team] elastic.nproc_per_node: warning: nproc_per_node is 8 ([builtin] ")
    assert os.path.join(builtin_folder(), "gpu-large.yaml") + ":5:19" in warning.message
    assert "4 `nvidia.com/gpu`" in warning.message


def test_nproc_per_node_below_the_gpu_limit_warns_that_gpus_stay_idle(tmp_path):
    team = tmp_path / "team"
    path = write(team, "gpu-large.yaml", "elastic:\n  nproc_per_node: 2\n")
    [warning] = validate_paths([str(team)]).warnings
    assert str(warning).startswith(f"{path}:2:19: [team] elastic.nproc_per_node: warning: nproc_per_node is 2 ([team] ")
    assert "8 `nvidia.com/gpu`" in warning.message and "so 6 GPUs of each node stay idle" in warning.message
    assert validate_paths([write(tmp_path / "other", "gpu-large.yaml", "elastic:\n  nproc_per_node: 8\n")]).warnings == []


def test_a_gpu_limit_without_nproc_per_node_warns_of_the_plugins_one_process(tmp_path):
    path = write(tmp_path / "team", "solo.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  limits: {nvidia.com/gpu: 2}
        """)
    [warning] = validate_paths([path]).warnings
    assert str(warning).startswith(f"{path}:6:36: [team] elastic.nproc_per_node: warning: nproc_per_node is 1 (the "
                                   "defaults)")
    assert "so 1 GPU of each node stays idle" in warning.message


def test_shm_size_limit_above_the_memory_limit(tmp_path):
    path = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  limits: {memory: 32Gi}
            volumes:
              - name: dshm
                emptyDir: {sizeLimit: 64Gi}
        """)
    [warning] = validate_paths([path]).warnings
    assert str(warning).startswith(f"{path}:9:31: [team] pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit: warning: ")
    assert "sizeLimit 64Gi" in warning.message and "memory limit 32Gi" in warning.message
    assert f"{path}:6:28" in warning.message


def test_a_volume_given_a_second_source_by_a_higher_layer(tmp_path):
    path = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            volumes:
              - name: dshm
                hostPath: {path: /dev/shm}
        """)
    [warning] = validate_paths([path]).warnings
    assert str(warning).startswith(f"{path}:5:19: [team] pod_template.spec.volumes[name=dshm].hostPath: warning: "
                                   "volume `dshm` has 2 sources: `emptyDir` ([builtin] ")
    assert "Kubernetes rejects the pod" in warning.message and "`emptyDir: null` (or `delete: [pod_template.spec.volumes[name=dshm].emptyDir]`)" in warning.message
    fixed = write(tmp_path / "fixed", "gpu-large.yaml", """\
        pod_template:
          spec:
            volumes:
              - name: dshm
                emptyDir: null
                hostPath: {path: /dev/shm}
        """)
    assert validate_paths([fixed]).findings == []


def test_two_shm_mounts_in_one_container(tmp_path):
    path = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                volumeMounts:
                  - {name: shm, mountPath: /dev/shm/}
            volumes:
              - {name: shm, emptyDir: {medium: Memory}}
        """)
    [warning] = validate_paths([path]).warnings
    assert str(warning).startswith(
        f"{path}:6:13: [team] pod_template.spec.containers[name=primary].volumeMounts[mountPath=/dev/shm/]: warning: "
        "container `primary` mounts /dev/shm 2 times")
    assert os.path.join(builtin_folder(), "elastic-gpu-default.yaml") in warning.message


def test_containers_that_never_name_the_primary_container(tmp_path):
    path = write(tmp_path / "team", "trainer.yaml", """\
        pod_template:
          primary_container_name: trainer
          spec:
            containers:
              - name: trainers
                image: repo/train:1
        """)
    [error] = validate_paths([path]).errors  # a near miss of the primary container's name: which one is wrong?
    assert str(error).startswith(f"{path}:5:15: [team] pod_template.spec.containers[name=trainers]: adds a new "
                                 "container `trainers`; did you mean `trainer` (the primary container")
    assert "or, if `trainers` is the container that runs the task, set primary_container_name: trainers" in error.message


def test_containers_that_never_name_the_primary_container_by_a_distinct_name(tmp_path):
    path = write(tmp_path / "team", "trainer.yaml", """\
        pod_template:
          primary_container_name: trainer
          spec:
            containers:
              - name: main
                image: repo/train:1
        """)
    [warning] = validate_paths([path]).warnings
    assert str(warning).startswith(f"{path}:2:27: [team] pod_template.primary_container_name: warning: "
                                   "no container is named `trainer`")


@pytest.mark.slow
def test_warnings_exit_0_unless_strict(tmp_path):
    path = write(tmp_path, "slow.yaml", "elastic:\n  rdzv_configs:\n    timeout: 1800\n")
    proc = run("validate", path)
    assert proc.returncode == 0
    assert f"{path}:3:5: [team] elastic.rdzv_configs.timeout: warning: " in proc.unfolded
    assert "1 file, 1 profile: 0 errors, 1 warning" in proc.unfolded
    assert run("validate", "--strict", path).returncode == 1


# --- the command ----------------------------------------------------------------------------------------------------


def test_one_bad_file_does_not_stop_the_others(tmp_path):
    folder = tmp_path / "profiles"
    bad = write(folder, "a-bad.yaml", "elastic:\n  nnodes: 0\n")
    worse = write(folder, "b-worse.yaml", "elastic: {nnodes: 2\n")
    good = write(folder, "c-good.yaml", "extends: gpu-large\npod_template:\n  spec:\n    containers:\n      - name: primary\n        imagePullPolicy: always\n")
    proc = run("validate", str(folder))
    assert proc.returncode == 1
    lines = proc.unfolded.splitlines()
    assert lines[0].startswith(f"{bad}:2:11: [team] elastic.nnodes: ")
    assert lines[1].startswith(f"{worse}:2:1: invalid YAML")
    assert lines[2].startswith(f"{good}:6:26: [team] pod_template.spec.containers[name=primary].imagePullPolicy: ")
    assert "3 files, 3 profiles: 3 errors" in lines[-1]


def test_json_format(tmp_path):
    path = write(tmp_path, "p.yaml", "elastic:\n  rdzv_configs: {heartbeat: 30}\n")
    result = invoke("validate", "--format", "json", path)
    assert invoke("validate", "-o", "json", path).stdout == result.stdout  # one output flag for every command
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["errors"] == 1 and report["files"] == [path] and report["profiles"] == ["p"]
    [finding] = report["findings"]
    assert finding == {
        "file": path, "line": 2, "column": 18, "layer": "team", "path": "elastic.rdzv_configs.heartbeat",
        "severity": "error", "message": "unknown rendezvous setting `heartbeat`; did you mean `heartbeat_timeout`?",
        "text": f"{path}:2:18: [team] elastic.rdzv_configs.heartbeat: unknown rendezvous setting `heartbeat`; "
                "did you mean `heartbeat_timeout`?",
    }


def test_extends_parents_must_be_among_the_paths_or_builtin(tmp_path):
    platform = tmp_path / "platform"
    write(platform, "base.yaml", "elastic: {max_restarts: 1}\n")
    team = tmp_path / "team"
    child = write(team, "child.yaml", "extends: [gpu-large, base]\n")
    report = validate_paths([str(team)])
    [error] = report.errors
    assert str(error).startswith(f"{child}:1:22: [team] extends: unknown parent profile 'base'")
    # given as a context folder, or among the paths, the parent is found
    assert validate_paths([str(team)], platform=[str(platform)]).errors == []
    assert validate_paths([str(team), str(platform)]).errors == []


def test_two_files_defining_one_profile(tmp_path):
    a = write(tmp_path / "a", "gpu-large.yaml", "elastic: {nnodes: 2}\n")
    b = write(tmp_path / "b", "gpu-large.yml", "elastic: {nnodes: 3}\n")
    [error] = validate_paths([a, b]).errors
    assert "defined twice in the team layer" in error.message and a in error.message and b in error.message


def test_without_paths_every_visible_layer_is_checked(tmp_path):
    team = tmp_path / "team"
    bad = write(team, "gpu-large.yaml", "pod_template:\n  spec:\n    containers:\n      - name: primary\n        resource: {}\n")
    env = {**os.environ, "KFDEFAULTS_TEAM_PATH": str(team)}
    proc = run("validate", env=env)
    assert proc.returncode == 1
    assert f"{bad}:5:9: [team] pod_template.spec.containers[name=primary].resource: unknown field `resource`; " \
           "did you mean `resources`?" in proc.unfolded


def test_missing_paths_and_other_files_are_errors(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    proc = run("validate", str(tmp_path / "nope"), str(tmp_path / "notes.txt"))
    assert proc.returncode == 1
    assert f"{tmp_path / 'nope'}: no such file or folder" in proc.unfolded
    assert f"{tmp_path / 'notes.txt'}:1:1: not a profile file" in proc.unfolded


def test_usage_mistakes_exit_2(tmp_path):
    assert run("validate", "--kubernetes-version", "0.1", str(tmp_path)).returncode == 2
    assert run("validate", "--layer", "task", str(tmp_path)).returncode == 2


def test_kubernetes_version_decides_which_fields_exist(tmp_path):
    # PodSpec.resources (pod-level resources) appeared in Kubernetes 1.32
    path = write(tmp_path, "pod-resources.yaml", "pod_template:\n  spec:\n    resources: {limits: {cpu: 2}}\n")
    assert validate_paths([path], kubernetes_version="1.32").errors == []
    [error] = validate_paths([path], kubernetes_version="1.31").errors
    assert "unknown field `resources`" in error.message


def test_pre_commit_hook_runs_validate():
    import yaml

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, ".pre-commit-hooks.yaml"), encoding="utf-8") as f:
        [hook] = yaml.safe_load(f)
    assert hook["id"] == "kfdefaults-validate"
    assert hook["entry"] == "kfdefaults validate"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False


# --- the same checks on the render path and in Python ----------------------------------------------------------------


@pytest.mark.slow
def test_render_reports_fragment_errors_and_prints_warnings(tmp_path):
    team = tmp_path / "team"
    path = write(team, "gpu-large.yaml", "pod_template:\n  spec:\n    containers:\n      - name: primary\n"
                                          "        resources: {limits: {memory: 16GB}}\n")
    proc = run("render", "gpu-large", "--team", str(team))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.unfolded.startswith(f"{path}:5:38: [team] pod_template.spec.containers[name=primary].resources.limits.memory: "
                                  "`16GB` is not a Kubernetes quantity; did you mean `16G`")
    write(team, "gpu-large.yaml", "elastic:\n  rdzv_configs: {timeout: 1200}\n")
    proc = run("render", "gpu-large", "--team", str(team))
    assert proc.returncode == 0 and proc.stdout.startswith("name: gpu-large")
    assert f"{path}:2:18: [team] elastic.rdzv_configs.timeout: warning: " in proc.unfolded


def test_set_values_are_checked_like_files():
    proc = run("render", "gpu-large", "--set", "pod_template.spec.containers[name=primary].imagePullPolicy=always")
    assert proc.returncode == 1
    assert proc.unfolded.startswith("--set pod_template.spec.containers[name=primary].imagePullPolicy=always: [task] ")
    assert "did you mean `Always`?" in proc.unfolded


def test_set_values_get_the_warnings_a_file_gets(tmp_path):
    path = write(tmp_path, "slow.yaml", "elastic:\n  rdzv_configs:\n    timeout: 1800\n")
    [file_warning] = validate_paths([path]).warnings
    result = invoke("render", "gpu-large", "--set", "elastic.rdzv_configs.timeout=1800")
    assert result.exit_code == 0
    assert (f"--set elastic.rdzv_configs.timeout=1800: [task] elastic.rdzv_configs.timeout: warning: "
            f"{file_warning.message}") in result.unfolded.splitlines()


def test_resolve_raises_profile_error_for_bad_overrides():
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("gpu-large", overrides={"elastic": {"rdzv_configs": {"heartbeat": 5, "join_timeout": "15m"}}})
    messages = [f.message for f in excinfo.value.findings]
    assert any("did you mean `heartbeat_timeout`?" in m for m in messages)
    assert any("`join_timeout` must be a whole number of seconds" in m for m in messages)


def _nested(depth: int) -> dict:
    top: dict = {}
    node = top
    for _ in range(depth):
        node["x"] = {}
        node = node["x"]
    return top


def test_overrides_from_python_nest_no_deeper_than_files():
    with pytest.raises(ProfileError, match="nest deeper than 64 levels"):
        kfdefaults.resolve("gpu-large", overrides={"pod_template": {"annotations": _nested(1000)}})
    itself: dict = {}
    itself["a"] = itself
    with pytest.raises(ProfileError, match="contains itself"):
        kfdefaults.resolve("gpu-large", overrides={"pod_template": {"labels": itself}})


def test_dotted_override_keys_are_explained():
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("gpu-large", overrides={"elastic.nnodes": 2})
    assert "overrides are nested mappings, write {'elastic': {'nnodes': ...}}" in str(excinfo.value)


def test_nnodes_string_one_is_the_int_one(tmp_path):
    write(tmp_path / "team", "single.yaml", "elastic:\n  nnodes: \"1\"\n")
    resolved = kfdefaults.resolve("single", team=[str(tmp_path / "team")])
    assert resolved.elastic_settings["nnodes"] == 1 and type(resolved.elastic_settings["nnodes"]) is int


def test_render_and_validate_import_neither_jsonschema_nor_heavy_packages(tmp_path):
    code = (
        "import sys, runpy\n"
        "for argv in (['kfdefaults', 'render', 'gpu-large'], ['kfdefaults', 'validate', sys.argv[1]]):\n"
        "    sys.argv = argv\n"
        "    try:\n        runpy.run_module('kfdefaults.cli', run_name='__main__')\n    except SystemExit:\n        pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('jsonschema', 'flytekit', 'kubernetes', 'torch'))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, TEAM], capture_output=True, text=True)
    assert "HEAVY []" in proc.stderr, proc.stderr


def _odd_entries(folder) -> None:
    """A folder with one good profile and, under profile-file names, what is not a readable profile file."""
    folder.mkdir()
    (folder / "ok.yaml").write_text("description: ok\n")
    os.symlink("loop-b.yaml", folder / "loop-a.yaml")
    os.symlink("loop-a.yaml", folder / "loop-b.yaml")
    os.symlink(str(folder / "missing"), folder / "dangling.yaml")
    (folder / "sub.yaml").mkdir()
    os.mkfifo(folder / "pipe.yaml")


@pytest.mark.slow
def test_entries_that_are_not_readable_files_are_errors_not_skipped(tmp_path):
    team = tmp_path / "team"
    _odd_entries(team)
    proc = run("validate", str(team), env={"KFDEFAULTS_NO_CACHE": "1"})
    assert proc.returncode == 1
    assert f"{team}/loop-a.yaml:1:1: a symbolic link that loops" in proc.unfolded
    assert f"{team}/dangling.yaml:1:1: a symbolic link to a missing file" in proc.unfolded
    assert f"{team}/sub.yaml:1:1: not a profile file (a folder)" in proc.unfolded
    assert f"{team}/pipe.yaml:1:1: not a profile file (a pipe)" in proc.unfolded  # and no hang on the pipe
    assert "5 errors" in proc.unfolded
    proc = run("render", "loop-a", "--team", str(team))
    assert proc.returncode == 1 and "a symbolic link that loops" in proc.unfolded and proc.stdout == ""
    assert run("render", "ok", "--team", str(team)).returncode == 0  # a broken neighbour does not stop the others


def test_paths_given_to_validate_say_what_they_are(tmp_path):
    _odd_entries(tmp_path / "odd")
    proc = run("validate", "", os.devnull, str(tmp_path / "odd" / "pipe.yaml"), str(tmp_path / "nope.yaml"))
    assert proc.returncode == 1
    assert "'': an empty path names no file or folder" in proc.unfolded
    assert f"{os.devnull}: not a profile file (a device)" in proc.unfolded
    assert "pipe.yaml:1:1: not a profile file (a pipe)" in proc.unfolded
    assert "nope.yaml: no such file or folder" in proc.unfolded


def test_an_unreadable_folder_is_an_error_wherever_it_is_named(tmp_path, monkeypatch):
    team = tmp_path / "team"
    team.mkdir()
    (team / "a.yaml").write_text("description: a\n")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if str(path) == str(team) else real_access(path, mode))
    monkeypatch.setenv("KFDEFAULTS_TEAM_PATH", str(team))
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("gpu-large")
    assert "team folder (from KFDEFAULTS_TEAM_PATH): cannot read this folder: permission denied" in str(excinfo.value)
    report = validate_paths([str(team)])
    assert [f.message for f in report.findings] == ["cannot read this folder: permission denied"]


@pytest.mark.slow
def test_two_path_folders_defining_one_name_are_told_they_are_one_layer():
    proc = run("validate", PLATFORM, TEAM)
    assert proc.returncode == 1
    assert "is defined twice in the team layer" in proc.unfolded
    assert "the PATHs are checked together, as the team layer" in proc.unfolded
    assert run("validate", "--platform", PLATFORM, TEAM).returncode == 0


def test_the_path_of_a_warning_is_the_one_of_the_line_it_points_at(tmp_path):
    """A team's memory limit under the platform's /dev/shm: the warning stands at the team's line, with its path
    (when one file sets both, it stands at the sizeLimit: test_shm_size_limit_above_the_memory_limit)."""
    lower = write(tmp_path / "platform", "gpu-large.yaml",
                  "pod_template:\n  spec:\n    volumes:\n      - {name: dshm, emptyDir: {medium: Memory, sizeLimit: 64Gi}}\n")
    team = write(tmp_path / "team2", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  limits: {memory: 32Gi}
        """)
    [warning] = validate_paths([team], platform=[os.path.dirname(lower)]).warnings
    assert str(warning).startswith(
        f"{team}:6:28: [team] pod_template.spec.containers[name=primary].resources.limits.memory: warning: ")


def test_a_container_without_an_image_beside_the_primary_one(tmp_path):
    path = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primry
                env: [{name: A, value: "1"}]
        """)
    [error] = validate_paths([path]).errors  # a misspelt primary container: the env would go to a sidecar
    assert str(error).startswith(f"{path}:4:15: [team] pod_template.spec.containers[name=primry]: adds a new "
                                 "container `primry`; did you mean `primary` (the primary container")
    assert "(its env)" in error.message


def test_a_sidecar_without_an_image_beside_the_primary_one_stays_a_warning(tmp_path):
    path = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: log-shipper
                env: [{name: A, value: "1"}]
        """)
    report = validate_paths([path])
    assert not report.errors
    [warning] = report.warnings
    assert str(warning).startswith(f"{path}:4:15: [team] pod_template.spec.containers[name=log-shipper]: warning: "
                                   "container `log-shipper` has no image: Kubernetes rejects the pod")


def test_validate_of_a_folder_whose_profiles_are_one_level_down_says_where_they_are(tmp_path):
    write(tmp_path / "repo" / "profiles", "gpu-large.yaml", "description: x\n")
    proc = run("validate", str(tmp_path / "repo"))
    assert proc.returncode == 1
    assert f"{tmp_path / 'repo'}: no profile files (*.yaml, *.yml, *.toml) in this folder; sub-folders are not " \
           "searched, and profiles/ holds profile files" in proc.unfolded


# --- the cluster's files given as PATHs --------------------------------------------------------------------------


@pytest.mark.slow
def test_a_path_naming_the_clusters_facts_is_checked_as_the_facts_not_as_a_profile(tmp_path):
    """A hook given the changed files passes `_cluster-facts.yaml` as a PATH: it is the cluster's facts, checked as
    --facts checks them (and used), never a profile of unknown fields `nodes`, `flyte` and `node_pools`."""
    facts = write(tmp_path / "platform", "_cluster-facts.yaml", """\
        description: the training cluster
        flyte:
          task_timout: 86400
        node_pools:
          small:
            allocatable: {cpu: "4", memory: 16Gi}
        """)
    done = run("validate", facts)
    assert done.returncode == 1 and "Traceback" not in done.unfolded
    assert done.unfolded.splitlines()[0] == (f"{facts}:3:3: flyte.task_timout: unknown field `task_timout`; did you mean "
                                           "`task_timeout`?")
    assert "[team]" not in done.unfolded
    write(tmp_path / "platform", "_cluster-facts.yaml", """\
        description: the training cluster
        node_pools:
          small:
            allocatable: {cpu: "4", memory: 16Gi}
        """)
    team = write(tmp_path / "team", "cpu-small.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources: {requests: {cpu: "8"}}
        """)
    done = run("validate", facts, team)  # the facts given count: cpu-small asks more than the pool has
    assert done.returncode == 0
    assert f"{team}:5:37: [team] " in done.unfolded and "fits none of the 1 node pool" in done.unfolded
    assert done.unfolded.endswith("kfdefaults validate: 2 files, 1 profile: 0 errors, 1 warning\n")
    done = run("validate", facts, "--facts", "none")
    assert done.returncode == 1
    assert f"{facts}:1:1: the cluster's facts (not a profile), given beside --facts none: give one of the two" in done.unfolded


@pytest.mark.slow
def test_a_platform_folder_that_states_only_its_cluster_is_checked_not_refused_as_empty(tmp_path):
    """A platform repository whose folder holds the cluster's facts and no profile yet: with ``--layer platform``
    the facts are checked (and a mistake in them fails), as the layer's own folders are; as a team folder it is
    refused as empty, saying that only a platform folder states a cluster."""
    facts = write(tmp_path / "platform", "_cluster-facts.yaml", "node_start: {typical: 60, worst: 300}\n")
    folder = os.path.dirname(facts)
    done = run("validate", "--layer", "platform", folder)
    assert done.returncode == 0, done.unfolded
    assert "no profile files" not in done.unfolded
    done = run("validate", folder)  # the team layer, by default
    assert done.returncode == 1
    assert (f"{folder}: no profile files (*.yaml, *.yml, *.toml) in this folder; _cluster-facts.yaml states a "
            "cluster, which only a platform folder does: --layer platform") in done.unfolded
    write(tmp_path / "platform", "_cluster-facts.yaml", "node_start: {typical: 60, worst: 300}\nflyte: {task_timout: 1}\n")
    done = run("validate", "--layer", "platform", folder)
    assert done.returncode == 1
    assert f"{facts}:2:9: flyte.task_timout: unknown field `task_timout`" in done.unfolded
