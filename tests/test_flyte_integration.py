"""What flytekit and the kfpytorch plugin would change in a task's pod, and how kfdefaults keeps it as rendered.

Every assertion is on a TaskTemplate serialized by the real flytekit, or on a real run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import textwrap
import warnings
from collections import OrderedDict

import pytest
from flytekit import PodTemplate, Resources, task
from flytekit.configuration import ImageConfig, SerializationSettings
from flytekit.tools.translator import get_serializable
from kubernetes.client import (
    V1Container,
    V1EmptyDirVolumeSource,
    V1PodSpec,
    V1ResourceRequirements,
    V1Volume,
    V1VolumeMount,
)

import kfdefaults
from kfdefaults import Elastic
from kfdefaults.errors import KfdefaultsWarning
from kfdefaults.settings import RUNTIME_ENV
from receipt_pods import receipt_lines, receipts

HERE = os.path.dirname(os.path.abspath(__file__))
APPS = os.path.join(HERE, "flyte_apps")
SETTINGS = SerializationSettings(image_config=ImageConfig.auto_default_image())


def template(t):
    return get_serializable(OrderedDict(), SETTINGS, t).template


def containers(tt) -> dict[str, dict]:
    return {c["name"]: c for c in tt.k8s_pod.pod_spec["containers"]}


def primary_of(tt) -> dict:
    return containers(tt)[tt.config["primary_container_name"]]


def shm_mounts(tt) -> list[tuple[str, str]]:
    return [(c["name"], m["name"]) for c in tt.k8s_pod.pod_spec["containers"]
            for m in c.get("volumeMounts") or [] if m["mountPath"] == "/dev/shm"]


def define(fn, **task_kwargs):
    """Define a task from a module-level function, recording warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = task(**task_kwargs)(fn)
    return t, caught


def body() -> None: ...


# --- shared memory ------------------------------------------------------------------------------------


def test_task_shared_memory_wins_over_the_profile_with_a_message():
    t, caught = define(body, task_config=Elastic(profile="gpu-large"), shared_memory="16Gi")
    tt = template(t)
    assert shm_mounts(tt) == []  # the backend adds Flyte's own volume: one mount in the pod
    assert tt.extended_resources.shared_memory.mount_path == "/dev/shm"
    assert tt.extended_resources.shared_memory.size_limit == "16Gi"
    assert "volumes" not in tt.k8s_pod.pod_spec
    [warning] = [w for w in caught if issubclass(w.category, KfdefaultsWarning)]
    assert "@task(shared_memory=...) wins over the /dev/shm volume 'dshm' of profile 'gpu-large'" in str(warning.message)
    assert not [w for w in caught if "increase_shared_mem" in str(w.message)]


def test_task_shared_memory_also_wins_over_a_mount_written_with_a_trailing_slash(tmp_path):
    (tmp_path / "slash.yaml").write_text(
        "pod_template:\n  spec:\n    containers:\n      - name: primary\n"
        "        volumeMounts: [{name: s2, mountPath: /dev/shm/}]\n"
        "    volumes: [{name: s2, emptyDir: {medium: Memory}}]\n")
    t, caught = define(body, task_config=Elastic(profile="slash", team=[str(tmp_path)]), shared_memory=True)
    tt = template(t)
    assert [m for c in tt.k8s_pod.pod_spec["containers"] for m in c.get("volumeMounts") or []] == []
    assert "volumes" not in tt.k8s_pod.pod_spec
    assert [w for w in caught if issubclass(w.category, KfdefaultsWarning)]


def test_user_volume_named_shm_already_mounted_gives_one_mount_and_no_error():
    user = PodTemplate(pod_spec=V1PodSpec(
        containers=[V1Container(name="primary", volume_mounts=[V1VolumeMount(name="shm", mount_path="/dev/shm")])],
        volumes=[V1Volume(name="shm", empty_dir=V1EmptyDirVolumeSource(medium="Memory", size_limit="8Gi"))],
    ))
    t, caught = define(body, task_config=Elastic(profile="cpu-small"), pod_template=user)
    tt = template(t)
    # volumeMounts merge by mountPath: the task's mount replaces the profile's, one mount, on the task's volume
    assert shm_mounts(tt) == [("primary", "shm")]
    assert {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}} in tt.k8s_pod.pod_spec["volumes"]
    assert not [w for w in caught if "increase_shared_mem" in str(w.message)]


# --- the task layer wins, and says what a file would -------------------------------------------------


def test_a_task_environment_variable_wins_over_the_profiles_of_the_same_name(tmp_path):
    """flytekit serializes @task(environment=...) before the pod template's variables, and Kubernetes keeps the
    last of a name: the profile's would win. The serialized container holds the task's value only."""
    (tmp_path / "envp.yaml").write_text(
        "extends: cpu-small\npod_template:\n  spec:\n    containers:\n      - name: primary\n"
        "        env: [{name: MODE, value: profile}, {name: KEPT, value: profile}]\n")
    t, _ = define(body, task_config=Elastic(profile="envp", team=[str(tmp_path)]), environment={"MODE": "task"})
    env = primary_of(template(t))["env"]
    assert [e for e in env if e["name"] == "MODE"] == [{"name": "MODE", "value": "task"}]
    assert {"name": "KEPT", "value": "profile"} in env
    assert [e["name"] for e in env].count(RUNTIME_ENV) == 1
    last = {e["name"]: e.get("value") for e in env}  # what the kubelet gives the process: the last of each name
    assert last["MODE"] == "task"


def test_elastic_arguments_get_the_warnings_a_file_gets(tmp_path):
    from kfdefaults.api import validate_paths

    (tmp_path / "slow.yaml").write_text("elastic:\n  rdzv_configs:\n    timeout: 1800\n")
    [file_warning] = validate_paths([str(tmp_path / "slow.yaml")]).warnings
    with pytest.warns(KfdefaultsWarning) as caught:
        Elastic(profile="gpu-large", rdzv_configs={"timeout": 1800})
    [warning] = [w for w in caught if "c10d does not read `timeout`" in str(w.message)]
    assert str(warning.message).startswith("Elastic(rdzv_configs={'timeout': 1800}): [task] "
                                           "elastic.rdzv_configs.timeout: warning: ")
    assert file_warning.message in str(warning.message)
    assert warning.filename == __file__  # at the caller's line


def test_a_multi_node_task_run_locally_warns_before_it_waits(monkeypatch):
    from flytekitplugins.kfpytorch.task import PytorchElasticFunctionTask

    monkeypatch.setattr(PytorchElasticFunctionTask, "execute", lambda self, **kwargs: "launched")
    monkeypatch.delenv("PET_NNODES", raising=False)
    t, _ = define(body, task_config=Elastic(profile="cpu-small", nnodes=2))
    with pytest.warns(KfdefaultsWarning, match=r"asks for at least 2 nodes \(nnodes: 2\), but this run is not part of "
                                               r"a PyTorchJob .* waits join_timeout \(300 s\) for nodes that never "
                                               r"come .* Elastic\(profile='cpu-small', nnodes=1\)") as said:
        assert t.execute() == "launched"
    # at the task's own line, though pyflyte run calls it from click
    assert (said[0].filename, said[0].lineno) == (body.__code__.co_filename, body.__code__.co_firstlineno)
    for config, env in ((Elastic(profile="cpu-small"), {}), (Elastic(profile="cpu-small", nnodes="1:2"), {}),
                        (Elastic(profile="cpu-small", nnodes=2), {"PET_NNODES": "2"})):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        quiet, _ = define(body, task_config=config)
        with warnings.catch_warnings():
            warnings.simplefilter("error", KfdefaultsWarning)
            assert quiet.execute() == "launched"


# --- the primary container ----------------------------------------------------------------------------


def test_custom_primary_container_name_without_containers_gets_the_profile_primary():
    user = PodTemplate(primary_container_name="trainer")
    t, _ = define(body, task_config=Elastic(profile="gpu-large"), pod_template=user)
    tt = template(t)
    assert tt.config["primary_container_name"] == "trainer"
    assert list(containers(tt)) == ["trainer"]  # no stray "primary"
    primary = primary_of(tt)
    assert primary["volumeMounts"] == [{"mountPath": "/dev/shm", "name": "dshm"}]
    assert primary["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert primary["args"][0] == "pyflyte-execute"


def test_single_container_already_named_pytorch_is_the_primary():
    user = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="pytorch", env=[{"name": "A", "value": "1"}])]))
    t, _ = define(body, task_config=Elastic(profile="gpu-large"), pod_template=user)
    tt = template(t)
    assert list(containers(tt)) == ["primary"]  # the backend names the primary "pytorch" in the PyTorchJob
    primary = primary_of(tt)
    assert {"name": "A", "value": "1"} in primary["env"]
    assert primary["volumeMounts"] == [{"mountPath": "/dev/shm", "name": "dshm"}]


def test_the_task_container_named_primary_is_the_profile_primary_whatever_the_profile_calls_it(tmp_path):
    (tmp_path / "mainp.yaml").write_text("extends: gpu-large\npod_template: {primary_container_name: main}\n")
    user = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(
        name="primary", resources=V1ResourceRequirements(limits={"cpu": "3"}))]))
    t, _ = define(body, task_config=Elastic(profile="mainp", team=[str(tmp_path)]), pod_template=user)
    tt = template(t)
    assert list(containers(tt)) == ["main"]  # one container: the task's "primary" is the profile's "main"
    primary = primary_of(tt)
    assert primary["resources"]["limits"] == {"cpu": "3", "nvidia.com/gpu": "8"}
    assert primary["volumeMounts"] == [{"mountPath": "/dev/shm", "name": "dshm"}]
    assert user.pod_spec.containers[0].name == "primary"  # the object passed in is not changed


def test_sidecars_and_init_containers_are_kept():
    user = PodTemplate(pod_spec=V1PodSpec(
        containers=[V1Container(name="sidecar", image="proxy:1")],
        init_containers=[V1Container(name="warmup", image="warm:1")],
    ))
    t, _ = define(body, task_config=Elastic(profile="gpu-large"), pod_template=user)
    tt = template(t)
    # strategic merge patch puts a patch's new items before the items it did not name, as kubectl does, but the
    # task registers the primary container first: Flyte's PyTorch plugin names the worker in the first container
    assert [c["name"] for c in kfdefaults.resolve("gpu-large", overrides={"pod_template": {"spec": {
        "containers": [{"name": "sidecar", "image": "proxy:1"}]}}}).pod_spec["containers"]] == ["sidecar", "primary"]
    assert list(containers(tt)) == ["primary", "sidecar"]
    assert containers(tt)["sidecar"]["image"] == "proxy:1"
    assert [c["name"] for c in tt.k8s_pod.pod_spec["initContainers"]] == ["warmup"]
    assert shm_mounts(tt) == [("primary", "dshm")]


# --- resources ----------------------------------------------------------------------------------------


def test_profile_gpus_survive_task_requests():
    t, _ = define(body, task_config=Elastic(profile="gpu-large"), requests=Resources(cpu="4"))
    resources = primary_of(template(t))["resources"]
    assert resources["requests"] == {"nvidia.com/gpu": "8", "cpu": "4"}
    assert resources["limits"] == {"nvidia.com/gpu": "8"}


def test_task_resources_win_per_key():
    t, _ = define(body, task_config=Elastic(profile="cpu-small"), requests=Resources(cpu="1"), limits=Resources(mem="4Gi"))
    resources = primary_of(template(t))["resources"]
    assert resources["requests"] == {"cpu": "1", "memory": "2Gi"}
    assert resources["limits"] == {"memory": "4Gi"}


def test_task_gpu_replaces_the_profile_nvidia_gpu_on_both_sides():
    # a GPU request must equal its limit: the profile's request of 8 would contradict the task's limit of 2
    t, _ = define(body, task_config=Elastic(profile="gpu-large"), limits=Resources(gpu="2"))
    resources = primary_of(template(t))["resources"]
    assert resources == {"limits": {"gpu": "2"}}
    t, _ = define(body, task_config=Elastic(profile="gpu-large"), requests=Resources(gpu="2"))
    assert primary_of(template(t))["resources"] == {"requests": {"gpu": "2"}}


def test_a_task_limit_below_the_profile_request_drops_the_request():
    t, _ = define(body, task_config=Elastic(profile="cpu-small"), limits=Resources(mem="1Gi"))
    resources = primary_of(template(t))["resources"]
    assert resources["limits"] == {"memory": "1Gi"}
    assert "memory" not in resources.get("requests", {})  # Kubernetes sets the request to the limit
    t, _ = define(body, task_config=Elastic(profile="cpu-small"), limits=Resources(mem="8Gi"))
    assert primary_of(template(t))["resources"]["requests"]["memory"] == "2Gi"  # below the limit: kept


# --- objects passed in are never changed -----------------------------------------------------------


def test_one_pod_template_shared_by_an_elastic_and_a_plain_task():
    shared = PodTemplate(
        pod_spec=V1PodSpec(containers=[V1Container(name="primary", env=[{"name": "SHARED", "value": "1"}])]),
        labels={"shared": "yes"},
    )
    before = shared.pod_spec.to_dict()
    elastic_task, _ = define(body, task_config=Elastic(profile="gpu-large"), pod_template=shared)
    plain_task, _ = define(body, pod_template=shared)
    elastic_tt, plain_tt = template(elastic_task), template(plain_task)
    assert shared.pod_spec.to_dict() == before
    assert shm_mounts(elastic_tt) == [("primary", "dshm")]
    assert shm_mounts(plain_tt) == []
    assert "volumes" not in plain_tt.k8s_pod.pod_spec
    assert plain_tt.k8s_pod.metadata.labels == {"shared": "yes"}
    # a second elastic task on the same object works too (the plugin alone raises here)
    again, _ = define(body, task_config=Elastic(profile="gpu-large"), pod_template=shared)
    assert shm_mounts(template(again)) == [("primary", "dshm")]


# --- run time equals registration -----------------------------------------------------------------


APP = '''\
import os

from flytekit import task

from kfdefaults import Elastic

TEAM = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")]


@task(task_config=Elastic(profile="fork-pair", team=TEAM, max_restarts=2))
def reduce(x: int) -> int:
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    value = torch.tensor([x + dist.get_rank()])
    dist.all_reduce(value)
    dist.destroy_process_group()
    return int(value.item())


@task(task_config=Elastic(profile="registration-only", team=TEAM))
def other(x: int) -> int:
    return x
'''

TEAM_PROFILES = {
    "fork-pair.yaml": """\
        description: two forked CPU workers, custom rendezvous
        elastic:
          nnodes: 1
          nproc_per_node: 2
          start_method: fork
          monitor_interval: 1
          rdzv_configs: {join_timeout: 123, timeout: 124, read_timeout: 125}
        pod_template:
          spec:
            containers:
              - name: primary
                env: [{name: FROM_PROFILE, value: "yes"}]
        """,
    "registration-only.yaml": "elastic: {nnodes: 1, nproc_per_node: 1}\n",
}


def test_pod_runs_on_the_settings_registered_without_profile_files(tmp_path, flytekit_python):
    app_dir = tmp_path / "image"
    (app_dir / "team").mkdir(parents=True)
    (app_dir / "kfd_pod_app.py").write_text(APP, encoding="utf-8")
    for name, text in TEAM_PROFILES.items():
        (app_dir / "team" / name).write_text(textwrap.dedent(text), encoding="utf-8")

    sys.path.insert(0, str(app_dir))
    try:
        import kfd_pod_app

        registered = kfd_pod_app.reduce.task_config.elastic_settings()
        tt = template(kfd_pod_app.reduce)
    finally:
        sys.path.remove(str(app_dir))
        sys.modules.pop("kfd_pod_app", None)
    assert registered["rdzv_configs"] == {"join_timeout": 123, "timeout": 124, "read_timeout": 125}
    primary = primary_of(tt)
    env = {e["name"]: e["value"] for e in primary["env"]}
    assert json.loads(env[RUNTIME_ENV])["elastic"] == registered

    # the image holds the code but not the profiles
    shutil.rmtree(app_dir / "team")
    record = tmp_path / "launch.jsonl"
    workdir = tmp_path / "work"
    workdir.mkdir()
    pod_env = {**os.environ, **env, "FLYTE_INTERNAL_EXECUTION_ID": "kfd-test"}
    proc = flytekit_python.run([os.path.join(APPS, "pod_runner.py"), record, workdir, "kfd_pod_app", "reduce", "10"],
                               cwd=app_dir, env=pod_env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "RESULT 21" in proc.stdout
    # the receipt, before the workers started: the pod has what was registered
    [receipt] = receipts(proc.stderr)
    assert receipt["differences"] == [] and receipt["registered"]["elastic"] == registered
    assert receipt_lines(proc.stderr)[0].startswith("kfdefaults receipt: task kfd_pod_app.reduce on profile fork-pair "
                                                    "(flytekit, sha256:")
    assert receipt_lines(proc.stderr)[0].endswith("): no differences from what was registered")
    [launched] = [json.loads(line) for line in record.read_text().splitlines()]
    assert launched == {
        "min_nodes": 1, "max_nodes": 1,
        "nproc_per_node": registered["nproc_per_node"],
        "start_method": registered["start_method"],
        "monitor_interval": registered["monitor_interval"],
        "max_restarts": registered["max_restarts"],
        "rdzv_backend": "c10d",
        "rdzv_configs": registered["rdzv_configs"],
    }
    assert registered["max_restarts"] == 2 and registered["start_method"] == "fork"


@contextlib.contextmanager
def in_a_flyte_task_container(monkeypatch):
    """What pyflyte-execute sets up in a pod while it imports the task's module: the execution name from the
    backend, and flytekit's task-execution context."""
    from flytekit.core.context_manager import ExecutionState, FlyteContextManager

    monkeypatch.setenv("FLYTE_INTERNAL_EXECUTION_ID", "kfd-test")
    ctx = FlyteContextManager.current_context()
    state = ctx.new_execution_state().with_params(mode=ExecutionState.Mode.TASK_EXECUTION)
    with FlyteContextManager.with_context(ctx.with_execution_state(state)):
        yield
    monkeypatch.delenv("FLYTE_INTERNAL_EXECUTION_ID")


def test_a_task_with_no_settings_registered_in_the_pod_fails_only_when_it_runs(monkeypatch):
    """In a pod, a call that finds no settings registered for it reads no profile file: another task of the
    module may be the one running, so the error waits for this task to run, and names it."""
    with in_a_flyte_task_container(monkeypatch):
        config = Elastic(profile="no-such-profile-in-this-image")
        assert config.deferred_error is not None and config.resolved is None
        t, _ = define(body, task_config=config)
        with pytest.raises(kfdefaults.ProfileError, match=rf"^task {t.name}: no settings were registered for "
                                                          r"Elastic\(profile='no-such-profile-in-this-image'\)"):
            t.execute()
    with pytest.raises(kfdefaults.ProfileError):  # outside a pod, the profile is read and is missing
        Elastic(profile="no-such-profile-in-this-image")


def leftover_runtime_value(profile: str) -> str:
    """A ``KFDEFAULTS_ELASTIC`` as a registered task's pod carries it, for ``Elastic(profile=profile)``."""
    from kfdefaults.runtime import runtime_key

    settings = {"nnodes": 1, "nproc_per_node": 1, "start_method": "spawn", "monitor_interval": 5, "max_restarts": 0,
                "rdzv_configs": {}}
    return json.dumps({"key": runtime_key("flytekit", profile, {}), "profile": profile, "elastic": settings})


@pytest.mark.parametrize("pod_name", [None, "FLYTE_INTERNAL_EXECUTION_ID", "_F_NM"])
def test_a_leftover_runtime_variable_changes_neither_render_nor_registration(monkeypatch, pod_name):
    """Outside a task running in a Flyte container (even with the backend's execution name copied into the
    shell), KFDEFAULTS_ELASTIC is ignored: the preview keeps its pod template."""
    from cli_runner import invoke as run_cli

    env = {RUNTIME_ENV: leftover_runtime_value("gpu-large"), **({pod_name: "copied"} if pod_name else {})}
    result = run_cli(["render", "gpu-large", "--as", "flyte", "-o", "json"], env=env)
    assert result.exit_code == 0, result.output
    tt = json.loads(result.stdout)
    assert tt["type"] == "pytorch"
    assert tt["k8sPod"]["podSpec"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    config = Elastic(profile="gpu-large")
    assert config.resolved is not None and config.nproc_per_node == 8


def test_leftover_carried_profiles_change_no_registration(monkeypatch, tmp_path):
    """A ``KFDEFAULTS_PROFILES`` copied from a parent's pod into a shell is ignored: the call reads its files."""
    from kfdefaults import carry_profiles
    from kfdefaults.settings import CARRIED_ENV

    (tmp_path / "gpu-large.yaml").write_text("elastic: {nproc_per_node: 2}\n", encoding="utf-8")
    carried = carry_profiles(Elastic(profile="gpu-large", team=[str(tmp_path)]))
    monkeypatch.setenv(CARRIED_ENV, carried[CARRIED_ENV])
    monkeypatch.setenv("FLYTE_INTERNAL_EXECUTION_ID", "copied")
    config = Elastic(profile="gpu-large")
    assert config.resolved is not None and config.nproc_per_node == 8




def test_carry_profiles_of_nothing_is_refused_where_the_parent_is_defined():
    """``carry_profiles()`` without a call would carry nothing: the children would fail only in the parent's pod."""
    from kfdefaults import carry_profiles

    with pytest.raises(TypeError, match=r"carry_profiles\(\) needs the tasks"):
        carry_profiles()
    with pytest.raises(TypeError, match="not 'gpu-large'"):
        carry_profiles("gpu-large")
def test_in_a_parents_pod_a_carried_call_merges_what_was_carried_and_carries_it_on(monkeypatch, tmp_path):
    """In a parent's pod, the call is merged from the carried fragments (its folder and the project's lock file
    are gone), with the annotations registered (the lock's digest included), and the parent's module, imported
    there again, carries the same value on (a @dynamic in a @dynamic)."""
    import importlib
    import shutil
    import sys

    from cli_runner import invoke as run_cli

    from kfdefaults import carry_profiles
    from kfdefaults.k8s.provenance import LOCK_ANNOTATION
    from kfdefaults.settings import CARRIED_ENV

    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "pair.yaml").write_text("extends: cpu-small\nelastic: {nproc_per_node: 3}\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n\n[tool.kfdefaults]\nteam = ["team"]\n',
                                             encoding="utf-8")
    (tmp_path / "kfd_parent.py").write_text(
        "from kfdefaults import Elastic, carry_profiles\n\n"
        "CONFIG = Elastic(profile='pair', max_restarts=1)\nCARRIED = carry_profiles(CONFIG)\n"
        "OTHER = Elastic(profile='pair')\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert run_cli(["lock", "pair"]).exit_code == 0
    monkeypatch.syspath_prepend(str(tmp_path))

    def parent_module():
        sys.modules.pop("kfd_parent", None)
        return importlib.import_module("kfd_parent")

    registered = parent_module()
    assert LOCK_ANNOTATION in registered.CONFIG.provenance()
    shutil.rmtree(tmp_path / "team")
    (tmp_path / "kfdefaults.lock").unlink()
    monkeypatch.setenv(CARRIED_ENV, registered.CARRIED[CARRIED_ENV])
    with in_a_flyte_task_container(monkeypatch):
        in_pod = parent_module()
    config = in_pod.CONFIG
    assert config.resolved is not None and config.deferred_error is None
    assert config.resolved.pod_template_spec == registered.CONFIG.resolved.pod_template_spec
    assert config.elastic_settings() == registered.CONFIG.elastic_settings()
    assert config.provenance() == registered.CONFIG.provenance()
    assert in_pod.CARRIED == registered.CARRIED == carry_profiles(config)
    other = in_pod.OTHER  # another call: nothing carried for it
    assert other.resolved is None and "no settings were carried here for Elastic(profile='pair')" in str(
        other.deferred_error)
    sys.modules.pop("kfd_parent", None)


def test_in_a_flyte_task_container_the_registered_settings_are_used(monkeypatch):
    monkeypatch.setenv(RUNTIME_ENV, leftover_runtime_value("gpu-large"))
    with in_a_flyte_task_container(monkeypatch):
        config = Elastic(profile="gpu-large")
    assert config.resolved is None and config.nproc_per_node == 1


# --- a real local run ----------------------------------------------------------------------------


def test_local_run_of_cpu_small_reduces_over_two_workers(tmp_path, flytekit_python):
    record = tmp_path / "launch.jsonl"
    proc = flytekit_python.run([os.path.join(APPS, "run_allreduce.py"), record, "10"], cwd=APPS, env=dict(os.environ),
                               timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # ranks 0 and 1 add 10 + 0 and 10 + 1; rank 0 returns sum * 100 + world size
    assert "RESULT 2102" in proc.stdout
    [launched] = [json.loads(line) for line in record.read_text().splitlines()]
    rendered = kfdefaults.resolve("cpu-small").elastic_settings
    assert launched["nproc_per_node"] == rendered["nproc_per_node"] == 2
    assert launched["start_method"] == rendered["start_method"]
    assert launched["rdzv_configs"] == rendered["rdzv_configs"] == {"join_timeout": 300, "timeout": 300}


# --- render --as flyte ----------------------------------------------------------------------------


def test_render_as_flyte_is_a_serialized_task_template():
    from cli_runner import invoke as run_cli

    result = run_cli(["render", "gpu-large", "--as", "flyte", "-o", "json", "--set", "elastic.nnodes=2:3"])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("kfdefaults: target flytekit assumed; ")  # the target is said on standard error
    tt = json.loads(result.stdout)
    assert tt["type"] == "pytorch"
    assert tt["custom"]["elasticConfig"]["minReplicas"] == 2 and tt["custom"]["elasticConfig"]["maxReplicas"] == 3
    pod = tt["k8sPod"]["podSpec"]
    assert pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    [primary] = pod["containers"]
    assert primary["args"][0] == "pyflyte-execute"
    env = {e["name"]: e["value"] for e in primary["env"]}
    assert json.loads(env[RUNTIME_ENV])["elastic"]["nnodes"] == "2:3"


def test_each_elastic_has_its_own_resolved_profile():
    first = Elastic(profile="gpu-large")
    first.resolved.elastic_settings["nproc_per_node"] = 99
    first.resolved.pod_template_spec["spec"]["containers"][0]["image"] = "changed"
    second = Elastic(profile="gpu-large")
    assert second.nproc_per_node == 8
    assert "image" not in second.resolved.pod_template_spec["spec"]["containers"][0]


def test_repeated_elastic_keeps_the_order_of_its_own_arguments():
    first = Elastic(profile="cpu-small", rdzv_configs={"last_call_timeout": 5, "close_timeout": 7})
    second = Elastic(profile="cpu-small", rdzv_configs={"close_timeout": 7, "last_call_timeout": 5})
    assert list(first.rdzv_configs)[-2:] == ["last_call_timeout", "close_timeout"]
    assert list(second.rdzv_configs)[-2:] == ["close_timeout", "last_call_timeout"]
