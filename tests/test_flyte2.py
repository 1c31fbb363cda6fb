"""Flyte 2 tasks defined with kfdefaults.flyte2.Elastic, serialized offline by Flyte 2's own translator
(``translate_task_to_wire``, what ``flyte deploy`` sends), and compared with flytekit's for the same profiles.

Every assertion is on a TaskSpec the real SDK serialized; nothing is compared with a hand-written spec.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import warnings
from collections import OrderedDict
from typing import Any

import flyte
import pytest
from conftest import PLATFORM, TEAM
from flyte._internal.runtime.task_serde import translate_task_to_wire
from flyte.models import SerializationContext
from flyteplugins.pytorch import Elastic as PluginElastic
from flyteplugins.pytorch.task import RunPolicy, TorchFunctionTask
from google.protobuf.json_format import MessageToDict
from kubernetes.client import V1Container, V1EnvVar, V1PodSpec, V1Toleration

import kfdefaults
from kfdefaults.errors import KfdefaultsError, KfdefaultsWarning
from kfdefaults.flyte2 import Elastic, ProfilePodTemplate, ProfileTorchFunctionTask
from kfdefaults.settings import RUNTIME_ENV
from kfdefaults.targets import FLYTE2, FLYTEKIT
from receipt_pods import receipt_lines, receipts

HERE = pathlib.Path(__file__).resolve().parent
IMAGE = "registry.example.com/train:1"

with warnings.catch_warnings(record=True) as DEFINITION_WARNINGS:
    warnings.simplefilter("always")

    gpu_large_env = flyte.TaskEnvironment(name="gpu-large", image=IMAGE, plugin_config=Elastic(profile="gpu-large"))

    @gpu_large_env.task
    def gpu_large(x: int) -> int:
        return x

    cpu_small_env = flyte.TaskEnvironment(name="cpu-small", image=IMAGE, plugin_config=Elastic(profile="cpu-small"))

    @cpu_small_env.task
    def cpu_small() -> None: ...

    range_env = flyte.TaskEnvironment(name="range", image=IMAGE, plugin_config=Elastic(
        profile="cpu-small", nnodes="2:4", nproc_per_node=3, max_restarts=0, nccl_collective_timeout_sec=120,
        run_policy=RunPolicy(clean_pod_policy="all", ttl_seconds_after_finished=60)))

    @range_env.task
    def cpu_range() -> None: ...

    USER_TEMPLATE = flyte.PodTemplate(
        pod_spec=V1PodSpec(
            containers=[V1Container(name="primary", env=[V1EnvVar(name="TASK_ONLY", value="1")])],
            tolerations=[V1Toleration(key="task", operator="Exists")],
        ),
        labels={"task": "yes"},
    )
    layered_env = flyte.TaskEnvironment(
        name="layered", image=IMAGE, pod_template=USER_TEMPLATE,
        plugin_config=Elastic(profile="gpu-large", platform=[PLATFORM], team=[TEAM], nnodes=1),
    )

    @layered_env.task
    def layered() -> None: ...


def spec(task) -> dict:
    """The TaskTemplate Flyte 2 serializes for ``task``, as protobuf JSON, without the SDK's own version."""
    context = SerializationContext(version="v1", project="p", domain="development", org="o", root_dir=HERE)
    template = MessageToDict(translate_task_to_wire(task, context).task_template)
    template["metadata"].pop("runtime", None)
    return template


def pod(template: dict) -> dict:
    return template["k8sPod"]["podSpec"]


def primary_of(template: dict) -> dict:
    name = template["config"]["primary_container_name"]
    [container] = [c for c in pod(template)["containers"] if c["name"] == name]
    return container


def env_of(container: dict) -> dict:
    return {e["name"]: e["value"] for e in container.get("env", [])}


def shm_mounts(template: dict) -> list:
    return [m for c in pod(template)["containers"] for m in c.get("volumeMounts", []) if m["mountPath"] == "/dev/shm"]


def define(env: flyte.TaskEnvironment, fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        task = env.task(fn)
    return task, [w for w in caught if issubclass(w.category, KfdefaultsWarning)]


def body() -> None: ...


# --- the targets' data is the installed plugins' -------------------------------------------------------


def test_the_flyte2_target_is_the_installed_plugin():
    fields = {f.name: f for f in dataclasses.fields(PluginElastic)}
    assert set(FLYTE2.settings) == set(fields)
    for key, value in FLYTE2.defaults.items():
        f = fields[key]
        if key in FLYTE2.kfdefaults_defaults:  # required by the plugin: kfdefaults' one node, one process
            assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        assert default == value, key
    # the fields without a value below every profile: None in the plugin
    assert {k for k, f in fields.items() if f.default is None} - set(FLYTE2.defaults) == {
        "run_policy", "nccl_collective_timeout_sec"}


def test_the_flytekit_target_is_the_installed_plugin():
    from flytekitplugins.kfpytorch import Elastic as KitElastic

    fields = {f.name: f for f in dataclasses.fields(KitElastic)}
    assert set(FLYTEKIT.settings) == set(fields) - {"increase_shared_mem"}  # the profile owns /dev/shm
    for key, value in FLYTEKIT.defaults.items():
        f = fields[key]
        assert (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default) == value, key


def test_elastic_is_the_plugins_elastic_and_its_task_is_a_torch_function_task():
    config = Elastic(profile="gpu-large", max_restarts=1, rdzv_configs={"join_timeout": 60})
    assert isinstance(config, PluginElastic)
    assert (config.nnodes, config.nproc_per_node, config.max_restarts, config.rdzv_backend) == ("1:4", 8, 1, "c10d")
    assert config.rdzv_configs == {"join_timeout": 60, "timeout": 900, "read_timeout": 900}
    assert config.run_policy == RunPolicy(clean_pod_policy="Running", backoff_limit=3)
    assert (config.monitor_interval, config.nccl_heartbeat_timeout_sec, config.nccl_collective_timeout_sec) == (3, 300, None)
    assert repr(config).startswith("Elastic(profile='gpu-large', nnodes='1:4', nproc_per_node=8, ")
    assert isinstance(gpu_large, ProfileTorchFunctionTask) and isinstance(gpu_large, TorchFunctionTask)
    # what is worth saying: USER_TEMPLATE's tolerations replace the profile's (a list without a merge key), and
    # layered's environment names an image, which wins over the team profile's
    said = [str(w.message) for w in DEFINITION_WARNINGS]
    assert len(said) == 2 and said[0].startswith(f"pod_template=flyte.PodTemplate(...): [task] pod_template.spec."
                                                 f"tolerations: warning: replaces the `tolerations` of platform "
                                                 f"{PLATFORM}/gpu-large.yaml:")
    assert "whole (a list without a merge key is not merged item by item): its 2 items are dropped" in said[0]
    assert said[1] == (f"TaskEnvironment(image=...) wins over profile gpu-large's image "
                       f"registry.example.com/vision/train:2.1 ({TEAM}/gpu-large.yaml:14)")
    assert {w.filename for w in DEFINITION_WARNINGS} == {__file__}


def test_resolve_for_flyte2_gives_flyte2s_objects():
    resolved = kfdefaults.resolve("gpu-large", target="flyte2", overrides={"elastic": {"nnodes": 2}})
    elastic = resolved.elastic
    assert type(elastic) is PluginElastic and (elastic.nnodes, elastic.max_restarts) == (2, 3)
    assert elastic.run_policy == RunPolicy(clean_pod_policy="Running", backoff_limit=3)
    template = resolved.pod_template
    assert isinstance(template, flyte.PodTemplate) and template.primary_container_name == "primary"
    assert template.pod_spec.volumes[0].empty_dir.medium == "Memory"


def test_a_pickled_task_keeps_what_it_registers():
    """Flyte 2 pickles tasks for interactive runs (a .pkl code bundle, loaded in the pod instead of the module)."""
    import pickle

    import cloudpickle

    again = pickle.loads(cloudpickle.dumps(layered))
    assert again.plugin_config.elastic_settings() == layered.plugin_config.elastic_settings()
    assert again.pod_template.pod_spec == layered.pod_template.pod_spec  # merged at definition, kept as it is
    assert again.plugin_config.resolved is None  # the pipeline and files stay in the process that registered


# --- the task spec --------------------------------------------------------------------------------------


def test_gpu_large_serializes_to_a_pytorch_job():
    template = spec(gpu_large)
    assert (template["type"], template["taskTypeVersion"]) == ("pytorch", 1)
    assert template["custom"] == {
        "elasticConfig": {"rdzvBackend": "c10d", "minReplicas": 1.0, "maxReplicas": 4.0, "nprocPerNode": 8.0,
                          "maxRestarts": 3.0},
        "runPolicy": {"cleanPodPolicy": "CLEANPOD_POLICY_RUNNING", "backoffLimit": 3.0},
        "workerReplicas": {"replicas": 4.0},
    }
    rendered = kfdefaults.resolve("gpu-large", target="flyte2").pod_spec
    serialized = pod(template)
    assert serialized["volumes"] == rendered["volumes"]
    assert serialized["tolerations"] == rendered["tolerations"]
    primary = primary_of(template)
    assert primary["volumeMounts"] == rendered["containers"][0]["volumeMounts"]
    assert primary["resources"] == {k: {r: str(q) for r, q in v.items()}
                                    for k, v in rendered["containers"][0]["resources"].items()}
    assert primary["args"][0] == "a0" and primary["args"][-4:] == ["mod", "test_flyte2", "instance", "gpu_large"]
    assert primary["image"] == IMAGE
    assert json.loads(env_of(primary)[RUNTIME_ENV])["elastic"] == kfdefaults.resolve("gpu-large", target="flyte2").elastic_settings
    assert "extendedResources" not in template  # the profile's /dev/shm is the one mount


def test_nnodes_1_is_a_plain_pod():
    template = spec(cpu_small)
    assert template["type"] == "python-task"
    assert primary_of(template)["resources"] == {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}
    assert len(shm_mounts(template)) == 1


def test_nnodes_range_run_policy_and_restarts_as_the_plugin_serializes_them():
    template = spec(cpu_range)
    assert template["type"] == "pytorch"
    # maxRestarts 0 and the enum's zero value are proto3 defaults, absent from the message
    assert template["custom"] == {
        "elasticConfig": {"rdzvBackend": "c10d", "minReplicas": 2.0, "maxReplicas": 4.0, "nprocPerNode": 3.0},
        "runPolicy": {"cleanPodPolicy": "CLEANPOD_POLICY_ALL", "ttlSecondsAfterFinished": 60.0},
        "workerReplicas": {"replicas": 4.0},
    }
    registered = json.loads(env_of(primary_of(template))[RUNTIME_ENV])["elastic"]
    assert registered["nccl_collective_timeout_sec"] == 120 and registered["max_restarts"] == 0


def test_the_environments_pod_template_is_the_task_layer_and_is_not_changed():
    template = spec(layered)
    assert template["type"] == "python-task"
    spec_ = pod(template)
    # the task's tolerations replace the profile's (no merge key), as with @task(pod_template=...) on flytekit
    assert spec_["tolerations"] == [{"key": "task", "operator": "Exists"}]
    env = env_of(primary_of(template))
    assert env["TASK_ONLY"] == "1" and env["NCCL_DEBUG"] == "INFO"
    assert template["k8sPod"]["metadata"]["labels"] == {"platform.example.com/pool": "a100", "team": "vision",
                                                         "task": "yes"}
    assert [c["name"] for c in spec_["containers"]] == ["primary", "log-shipper"]
    assert len(shm_mounts(template)) == 1
    assert USER_TEMPLATE.pod_spec.volumes is None and USER_TEMPLATE.pod_spec.containers[0].volume_mounts is None
    assert isinstance(layered.pod_template, ProfilePodTemplate) and layered.pod_template.task_layer is USER_TEMPLATE


# --- images ----------------------------------------------------------------------------------------------------


def test_the_environments_image_wins_over_the_profiles():
    """TaskEnvironment(image=...) is the task layer (Flyte 2 alone would keep the pod template's image)."""
    assert primary_of(spec(layered))["image"] == IMAGE
    assert primary_of(spec(layered.override(pod_template=USER_TEMPLATE)))["image"] == IMAGE  # built again: the same
    assert env_of(primary_of(spec(layered)))["NCCL_DEBUG"] == "INFO"  # the rest of the team's container stays


def test_the_profiles_image_wins_over_the_auto_image_and_the_deployments_with_a_message():
    from flyte._internal.image_cache import ImageCache

    env = flyte.TaskEnvironment(name="auto-image", plugin_config=Elastic(profile="gpu-large", team=[TEAM]))
    task, said = define(env, body)
    assert said == []
    context = SerializationContext(version="v1", project="p", domain="development", org="o", root_dir=HERE,
                                   image_cache=ImageCache(image_lookup={"auto-image": "ghcr.io/example/deployed:3"}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        template = MessageToDict(translate_task_to_wire(task, context).task_template)
    assert primary_of(template)["image"] == "registry.example.com/vision/train:2.1"
    assert [str(w.message) for w in caught if issubclass(w.category, KfdefaultsWarning)] == [
        f"image: profile gpu-large's registry.example.com/vision/train:2.1 ({TEAM}/gpu-large.yaml:14) wins over the "
        "deployment's default image ghcr.io/example/deployed:3 (flyte deploy --image, else Flyte 2's \"auto\" image); "
        "TaskEnvironment(image=...) would win over it"]
    assert [w.filename for w in caught if issubclass(w.category, KfdefaultsWarning)] == [__file__]


def test_an_environment_pod_template_image_is_the_task_layer_and_stays():
    own = flyte.PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="primary", image="own/template:1")]))
    env = flyte.TaskEnvironment(name="own-image", image=IMAGE, pod_template=own,
                                plugin_config=Elastic(profile="gpu-large", team=[TEAM]))
    task, said = define(env, body)
    assert said == [] and primary_of(spec(task))["image"] == "own/template:1"


def test_override_pod_template_where_the_task_runs_on_registered_settings_is_refused(monkeypatch):
    from kfdefaults.runtime import runtime_key

    settings = {"nnodes": 1, "nproc_per_node": 1, "rdzv_backend": "c10d", "monitor_interval": 3, "max_restarts": 3,
                "rdzv_configs": {}}
    monkeypatch.setenv(RUNTIME_ENV, json.dumps({"key": runtime_key("flyte2", "gpu-large", {}),
                                                "elastic": settings}))
    monkeypatch.setenv("_U_RUN_BASE", "/tmp/run")  # what Flyte 2's backend sets in every task pod
    config = Elastic(profile="gpu-large")
    assert config.resolved is None
    task = flyte.TaskEnvironment(name="in-pod", image=IMAGE, plugin_config=config).task(body)
    with pytest.raises(KfdefaultsError, match=r"task.override\(pod_template=...\) on a task on profile 'gpu-large': "
                                              "kfdefaults merges the template over the profile, and this process runs"):
        task.override(pod_template=USER_TEMPLATE)
    assert task.override(retries=2).retries.count == 2  # what does not need the profile still works


# --- shared memory, resources, environment variables ---------------------------------------------------


def test_resources_shm_wins_over_the_profiles_mount_with_one_mount_and_a_warning():
    env = flyte.TaskEnvironment(name="shm", image=IMAGE, plugin_config=Elastic(profile="gpu-large"),
                                resources=flyte.Resources(shm="16Gi"))
    task, caught = define(env, body)
    template = spec(task)
    assert shm_mounts(template) == []  # the backend adds its flyte-shm volume: one mount in the pod
    assert "volumes" not in pod(template)
    assert template["extendedResources"]["sharedMemory"] == {"mountPath": "/dev/shm", "mountName": "flyte-shm",
                                                             "sizeLimit": "16Gi"}
    [warning] = caught
    assert str(warning.message) == ("flyte.Resources(shm=...) wins over the /dev/shm volume 'dshm' of profile "
                                    "'gpu-large': the task gets Flyte's shared-memory volume instead")
    assert warning.filename == __file__  # the user's line, not kfdefaults' or flyte's
    # without shm the profile's mount stays, and nothing is said
    env = flyte.TaskEnvironment(name="no-shm", image=IMAGE, plugin_config=Elastic(profile="gpu-large"),
                                resources=flyte.Resources(cpu="4"))
    task, caught = define(env, body)
    assert len(shm_mounts(spec(task))) == 1 and not caught


def test_a_profile_volume_named_like_flytes_shm_volume_is_refused_at_definition(tmp_path):
    (tmp_path / "clash.yaml").write_text("pod_template:\n  spec:\n    volumes: [{name: flyte-shm, emptyDir: {}}]\n")
    env = flyte.TaskEnvironment(name="clash", image=IMAGE, plugin_config=Elastic(profile="clash", team=[str(tmp_path)]),
                                resources=flyte.Resources(shm="auto"))
    with pytest.raises(KfdefaultsError, match="already has one: Flyte's backend would reject the task"):
        env.task(body)


def test_task_resources_merge_per_key_and_never_contradict_the_profile():
    env = flyte.TaskEnvironment(name="res", image=IMAGE, plugin_config=Elastic(profile="gpu-large"),
                                resources=flyte.Resources(cpu=("4", "8"), gpu=2))
    resources = primary_of(spec(env.task(body)))["resources"]
    # the task's gpu replaces the profile's nvidia.com/gpu on both sides: a GPU request must equal its limit
    assert resources == {"requests": {"cpu": "4", "gpu": "2"}, "limits": {"cpu": "8"}}
    env = flyte.TaskEnvironment(name="res2", image=IMAGE, plugin_config=Elastic(profile="cpu-small"),
                                resources=flyte.Resources(memory=("1Gi", "1Gi")))
    assert primary_of(spec(env.task(body)))["resources"] == {"requests": {"cpu": "2", "memory": "1Gi"},
                                                             "limits": {"memory": "1Gi"}}
    env = flyte.TaskEnvironment(name="res3", image=IMAGE, plugin_config=Elastic(profile="cpu-small"),
                                resources=flyte.Resources(cpu="1"))
    assert primary_of(spec(env.task(body)))["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"},
                                                             "limits": {"memory": "2Gi"}}


def test_nproc_per_node_auto_follows_the_tasks_gpus_into_the_serialized_task(tmp_path):
    (tmp_path / "gpu-auto.yaml").write_text("extends: gpu-large\nelastic:\n  nproc_per_node: auto\n")
    config = Elastic(profile="gpu-auto", team=[str(tmp_path)])
    assert config.nproc_per_node == 8  # the profile's own GPU limit
    env = flyte.TaskEnvironment(name="auto", image=IMAGE, plugin_config=config, resources=flyte.Resources(gpu=4))
    template = spec(env.task(body))
    assert template["custom"]["elasticConfig"]["nprocPerNode"] == 4  # the task's gpu, which is nvidia.com/gpu in the pod
    registered = json.loads(env_of(primary_of(template))[RUNTIME_ENV])["elastic"]
    assert registered["nproc_per_node"] == 4  # and the pod runs with what was registered
    assert config.nproc_per_node == 8  # the config passed in is not changed


def test_the_environments_env_vars_win_over_the_profiles_container_env():
    env = flyte.TaskEnvironment(name="envs", image=IMAGE, env_vars={"NCCL_DEBUG": "TRACE"},
                                plugin_config=Elastic(profile="gpu-large", platform=[PLATFORM], team=[TEAM]))
    primary = primary_of(spec(env.task(body)))
    names = [e["name"] for e in primary["env"]]
    assert names.count("NCCL_DEBUG") == 1 and env_of(primary)["NCCL_DEBUG"] == "TRACE"
    assert env_of(primary)["WANDB_PROJECT"] == "detection"


def test_override_merges_the_new_task_layer_over_the_profile_again():
    env = flyte.TaskEnvironment(name="over", image=IMAGE, plugin_config=Elastic(profile="gpu-large"),
                                pod_template=USER_TEMPLATE)
    task = env.task(body)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bigger = task.override(resources=flyte.Resources(cpu="16", shm="32Gi"))
    assert [str(w.message)[:40] for w in caught] == ["pod_template=flyte.PodTemplate(...): [ta",
                                                     "flyte.Resources(shm=...) wins over the /"]
    assert {w.filename for w in caught} == {__file__}
    template = spec(bigger)
    assert shm_mounts(template) == [] and primary_of(template)["resources"]["requests"]["cpu"] == "16"
    assert env_of(primary_of(template))["TASK_ONLY"] == "1"  # the environment's template is still the task layer
    other = flyte.PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="primary", image="other:2")]))
    template = spec(task.override(pod_template=other))
    assert primary_of(template)["image"] == "other:2" and "TASK_ONLY" not in env_of(primary_of(template))
    assert len(shm_mounts(template)) == 1
    # a new Elastic rebuilds the task on the new profile
    template = spec(task.override(plugin_config=Elastic(profile="cpu-small")))
    assert template["type"] == "python-task" and primary_of(template)["resources"]["requests"]["cpu"] == "2"


# --- what Flyte 2 cannot take -----------------------------------------------------------------------------


def test_what_flyte2s_elastic_does_not_have_is_refused():
    with pytest.raises(kfdefaults.ProfileError, match=r"^Elastic\(start_method='fork'\): \[task\] elastic.start_method: "
                                                      "`start_method: fork` cannot run on Flyte 2"):
        Elastic(profile="gpu-large", start_method="fork")
    assert Elastic(profile="gpu-large", start_method="spawn").elastic_settings()["start_method"] == "spawn"
    with pytest.raises(TypeError, match="flyte.Resources\\(shm=...\\)"):
        Elastic(profile="gpu-large", increase_shared_mem=True)
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        Elastic(profile="gpu-large", nproc_per_node=0)
    assert str(excinfo.value).startswith("Elastic(nproc_per_node=0): [task] elastic.nproc_per_node: ")
    env = flyte.TaskEnvironment(name="named", image=IMAGE, plugin_config=Elastic(profile="gpu-large"),
                                pod_template="cluster-template")
    with pytest.raises(TypeError, match="cannot read a cluster PodTemplate named by a string"):
        env.task(body)


def test_a_call_neither_registered_nor_carried_in_a_pod_fails_when_its_task_runs_or_is_submitted(monkeypatch):
    """In a pod, a call is never resolved from the image's profile files (here: none of that name): its task fails
    if it runs, or if a parent submits it without having carried its profile (tests/test_compiled_in_a_pod.py)."""
    monkeypatch.setenv("_U_RUN_BASE", "/tmp/run")  # what Flyte 2's backend sets in every task pod
    config = Elastic(profile="no-such-profile-in-this-image")
    assert config.deferred_error is not None and config.resolved is None
    env = flyte.TaskEnvironment(name="missing", image=IMAGE, plugin_config=config)
    task = env.task(body)
    with pytest.raises(kfdefaults.ProfileError, match=r"^task missing.body: no settings were carried here for "
                                                      r"Elastic\(profile='no-such-profile-in-this-image'\): this is a "
                                                      "Flyte 2 parent's pod that submits it"):
        spec(task)  # what a parent task does to submit it: never a task built from the plugin's defaults
    monkeypatch.delenv("_U_RUN_BASE")
    with pytest.raises(kfdefaults.ProfileError):
        Elastic(profile="no-such-profile-in-this-image")


def test_render_as_flyte_for_flyte2_is_a_serialized_task_template():
    from cli_runner import invoke

    result = invoke(["render", "gpu-large", "--as", "flyte", "--target", "flyte2", "-o", "json",
                     "--set", "elastic.nnodes=2:3"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # the target asked for: nothing to say
    template = json.loads(result.stdout)
    assert template["type"] == "pytorch"
    assert (template["custom"]["elasticConfig"]["minReplicas"], template["custom"]["elasticConfig"]["maxReplicas"]) == (2, 3)
    assert primary_of(template)["args"][0] == "a0"
    assert json.loads(env_of(primary_of(template))[RUNTIME_ENV])["elastic"]["nnodes"] == "2:3"


# --- the same profiles under both SDKs ---------------------------------------------------------------------


DIFFERENCES = {
    # each plugin's Elastic defaults lie below every profile; a profile that sets the key runs the same
    "monitor_interval": "a plugin default: flytekit's kfpytorch 5 s, Flyte 2's 3 s",
    "max_restarts": "a plugin default: flytekit's kfpytorch 0, Flyte 2's 3",
    # flytekit has no field for these; the value is what it runs with, or Flyte 2's plugin sets an env var from it
    "start_method": "flytekit only: Flyte 2 always spawns (torch's LaunchConfig default), the same as spawn",
    "rdzv_backend": "Flyte 2 only: flytekit always uses c10d, Flyte 2's default",
    "nccl_heartbeat_timeout_sec": "Flyte 2 only: its plugin sets TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC (default 300)",
    "nccl_async_error_handling": "Flyte 2 only: true sets TORCH_NCCL_ASYNC_ERROR_HANDLING=1; false, the default, nothing",
    "nccl_enable_monitoring": "Flyte 2 only: true, the default, sets TORCH_NCCL_ENABLE_MONITORING=1",
}
"""Every run-time setting that differs for one profile between the two SDKs, and why."""

SPEC_DIFFERENCES = {
    "args": "each SDK's entrypoint: flytekit's pyflyte-execute, Flyte 2's a0 (and their own arguments)",
    "command": "Flyte 2 writes an empty command; flytekit none",
    "image": "each SDK's default image, when the task gives none",
    f"env[{RUNTIME_ENV}]": "the settings registered for the task: each target's own (the differences above)",
    "custom.elasticConfig.maxRestarts": "proto3 leaves out zero: flytekit's default 0 is absent, Flyte 2's 3 is sent",
    "k8sPod.metadata": "Flyte 2 sends an empty metadata message where flytekit sends none",
    "k8sPod.metadata.annotations[kfdefaults.io/digest]": "the digest of the profile for each target, whose plugin "
                                                         "defaults (the differences above) it covers",
    "custom (python-task)": "with nnodes 1 Flyte 2's plugin still sends its PyTorchJob config, which the backend "
                            "ignores for a plain pod; flytekit sends none",
}
"""Every difference between the serialized task specs, and why."""


def flytekit_template(profile: str, **kwargs):
    from flytekit import task
    from flytekit.configuration import ImageConfig, SerializationSettings
    from flytekit.tools.translator import get_serializable

    from kfdefaults import Elastic as KitElastic

    defined = task(task_config=KitElastic(profile=profile, **kwargs))(body)
    settings = SerializationSettings(image_config=ImageConfig.auto_default_image())
    return MessageToDict(get_serializable(OrderedDict(), settings, defined).template.to_flyte_idl())


def without_sdk_differences(template: dict) -> dict:
    template = json.loads(json.dumps(template))
    for container in pod(template)["containers"]:
        for key in ("args", "command", "image"):
            container.pop(key, None)
        container["env"] = [e for e in container.get("env", []) if e["name"] != RUNTIME_ENV]
        if not container["env"]:
            del container["env"]
    if template["type"] == "python-task":
        template.pop("custom", None)
    else:
        template["custom"]["elasticConfig"].pop("maxRestarts", None)
    annotations = template["k8sPod"].get("metadata", {}).get("annotations", {})
    assert annotations.pop("kfdefaults.io/digest").startswith("sha256:")
    template["k8sPod"].pop("metadata", None) if not template["k8sPod"].get("metadata") else None
    return {k: template.get(k) for k in ("type", "custom", "k8sPod", "config")}


@pytest.mark.parametrize("profile, folders", [
    ("gpu-large", {}),
    ("gpu-large", {"platform": [PLATFORM], "team": [TEAM]}),
    ("cpu-small", {}),
])
def test_both_sdks_give_the_same_task_but_for_the_stated_differences(profile, folders):
    """Acceptance: the builtin and a layered platform + team profile, serialized by each SDK, give the same pod
    spec, task type, elastic config and run policy, and the same run-time settings, except what
    :data:`DIFFERENCES` and :data:`SPEC_DIFFERENCES` state."""
    env = flyte.TaskEnvironment(name=f"same-{profile}", plugin_config=Elastic(profile=profile, **folders))
    two = spec(env.task(body))
    kit = flytekit_template(profile, **folders)
    assert without_sdk_differences(two) == without_sdk_differences(kit)

    # what differs at run time is exactly the stated list
    settings = {name: json.loads(env_of(primary_of(t))[RUNTIME_ENV])["elastic"] for name, t in
                (("flytekit", kit), ("flyte2", two))}
    differing = {k for k in settings["flytekit"].keys() | settings["flyte2"].keys()
                 if settings["flytekit"].get(k) != settings["flyte2"].get(k)}
    assert differing <= set(DIFFERENCES), differing - set(DIFFERENCES)
    assert {"rdzv_backend", "nccl_heartbeat_timeout_sec"} <= differing
    # the stated spec differences are real ones, and the rest of the template is the same
    assert primary_of(kit)["args"][0] == "pyflyte-execute" and primary_of(two)["args"][0] == "a0"
    assert two["custom"]["elasticConfig"]["maxRestarts"] == settings["flyte2"]["max_restarts"]
    assert ("custom" in kit) == (kit["type"] == "pytorch") and "custom" in two
    assert set(SPEC_DIFFERENCES) >= {"args", "custom.elasticConfig.maxRestarts"}


def test_a_profile_that_sets_every_shared_setting_runs_the_same_under_both_sdks(tmp_path):
    (tmp_path / "both.yaml").write_text(
        "extends: gpu-large\nelastic:\n  monitor_interval: 7\n  max_restarts: 2\n  start_method: spawn\n")
    kit = kfdefaults.resolve("both", team=[str(tmp_path)], target="flytekit").elastic_settings
    two = kfdefaults.resolve("both", team=[str(tmp_path)], target="flyte2").elastic_settings
    shared = set(FLYTEKIT.settings) & set(FLYTE2.settings)
    assert {k: kit[k] for k in shared if k in kit} == {k: two[k] for k in shared if k in two}
    # what is left differs only in the settings one SDK has and the other fixes or lacks
    assert {k for k in kit.keys() ^ two.keys()} <= {"rdzv_backend"} | {k for k in DIFFERENCES if k.startswith("nccl_")}


# --- run time equals registration, in a real two-process run ------------------------------------------------


APP = '''\
import json
import os
import pathlib

import flyte

from kfdefaults.flyte2 import Elastic

TEAM = [str(pathlib.Path(__file__).resolve().parent / "team")]

env = flyte.TaskEnvironment(name="kfd2-pod", image="registry.example.com/train:1",
                            plugin_config=Elastic(profile="pair", team=TEAM, max_restarts=1,
                                                  nccl_collective_timeout_sec=120))


@env.task
def allreduce(x: int) -> str:
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    value = torch.tensor([float(x + dist.get_rank())])
    dist.all_reduce(value)
    seen = {
        "sum": value.item(),
        "world_size": dist.get_world_size(),
        "nccl_default_timeout_s": dist.distributed_c10d.default_pg_nccl_timeout.total_seconds(),
        "env": {k: os.environ.get(k) for k in ("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "FLYTE_NCCL_COLLECTIVE_TIMEOUT_SEC",
                                               "TORCH_NCCL_ENABLE_MONITORING", "TORCHELASTIC_MAX_RESTARTS",
                                               "LOCAL_WORLD_SIZE", "FROM_PROFILE")},
    }
    dist.destroy_process_group()
    return json.dumps(seen)


other_env = flyte.TaskEnvironment(name="kfd2-other", plugin_config=Elastic(profile="registration-only", team=TEAM))


@other_env.task
def other(x: int) -> int:
    return x
'''

APP_PROFILES = {
    "pair.yaml": """\
        description: two CPU workers, custom rendezvous and NCCL settings
        elastic:
          nnodes: 1
          nproc_per_node: 2
          monitor_interval: 1
          rdzv_configs: {join_timeout: 123, timeout: 124, read_timeout: 125}
          nccl_heartbeat_timeout_sec: 77
        pod_template:
          spec:
            containers:
              - name: primary
                env: [{name: FROM_PROFILE, value: "yes"}]
        """,
    "registration-only.yaml": "elastic: {nnodes: 1, nproc_per_node: 1}\n",
}


@dataclasses.dataclass
class Flyte2Pod:
    """A Flyte 2 task's run in a pod (:func:`run_in_a_flyte2_pod`)."""

    proc: Any
    registered: dict
    rendered: Any
    seen: dict | None
    launched: list


def run_in_a_flyte2_pod(tmp_path: pathlib.Path, profiles: dict[str, str] = APP_PROFILES,
                        kubelet: dict | None = None, app: str = APP) -> Flyte2Pod:
    """Serialize the task ``allreduce`` of ``app`` (:data:`APP`) on a team profile, delete the profile folder (the
    image holds the code, not the profiles), then run the serialized container args through Flyte 2's ``a0`` in a
    fresh process, as the pod does: two torch elastic workers on CPU. With ``kubelet`` (``flyte_apps/as_kubelet.py``'s
    ``POD_JSON``), in the ``/dev/shm`` and cgroups it gives. The task's outputs (and report) are in
    ``tmp_path / "work" / "outputs"``."""
    import asyncio
    import subprocess
    import sys
    import textwrap

    from flyte._internal.runtime.convert import (
        convert_from_native_to_inputs,
        convert_outputs_to_native,
    )
    from flyte._internal.runtime.io import load_outputs, upload_inputs

    app_dir = tmp_path / "image"
    (app_dir / "team").mkdir(parents=True)
    (app_dir / "kfd2_pod_app.py").write_text(app, encoding="utf-8")
    for name, text in profiles.items():
        (app_dir / "team" / name).write_text(textwrap.dedent(text), encoding="utf-8")
    sys.path.insert(0, str(app_dir))
    try:
        import kfd2_pod_app

        task = kfd2_pod_app.allreduce
        registered = task.plugin_config.elastic_settings()
        context = SerializationContext(version="v1", project="p", domain="development", org="o", root_dir=app_dir)
        template = MessageToDict(translate_task_to_wire(task, context).task_template)
        inputs = asyncio.run(convert_from_native_to_inputs(task.native_interface, x=10))
    finally:
        sys.path.remove(str(app_dir))
        sys.modules.pop("kfd2_pod_app", None)
    rendered = kfdefaults.resolve("pair", team=[str(app_dir / "team")], target="flyte2",
                                  overrides={"elastic": {"max_restarts": 1, "nccl_collective_timeout_sec": 120}})
    primary = primary_of(template)
    assert json.loads(env_of(primary)[RUNTIME_ENV])["elastic"] == registered

    import shutil

    shutil.rmtree(app_dir / "team")  # the image holds the code but not the profiles
    work = tmp_path / "work"
    (work / "outputs").mkdir(parents=True)
    asyncio.run(upload_inputs(inputs, str(work / "inputs.pb")))
    templates = {"{{.input}}": str(work / "inputs.pb"), "{{.outputPrefix}}": str(work / "outputs"),
                 "{{.rawOutputDataPrefix}}": str(work / "raw"), "{{.checkpointOutputPrefix}}": str(work / "ckpt"),
                 "{{.prevCheckpointPrefix}}": "", "{{.runName}}": "kfdrun", "{{.actionName}}": "a0",
                 "{{.runStartTime}}": "2026-01-01T00:00:00Z"}
    args = [templates.get(a, a) for a in primary["args"]]
    assert args[0] == "a0"
    record = tmp_path / "launch.jsonl"
    pod_env = {**{k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}, **env_of(primary),
               # what Flyte 2's backend puts in every task pod (flyte/_bin/runtime.py reads them)
               "_U_RUN_BASE": str(work / "run-base"), "_U_ORG_NAME": "o",
               "FLYTE_INTERNAL_EXECUTION_PROJECT": "p", "FLYTE_INTERNAL_EXECUTION_DOMAIN": "development"}
    runner = [str(HERE / "flyte_apps" / "a0_runner.py"), str(record), *args[1:]]
    if kubelet is not None:
        runner = [str(HERE / "flyte_apps" / "as_kubelet.py"), json.dumps(kubelet), *runner]
    proc = subprocess.run([sys.executable, *runner], cwd=app_dir, env=pod_env, capture_output=True, text=True,
                          timeout=600)
    outputs = work / "outputs" / "outputs.pb"
    seen = json.loads(asyncio.run(convert_outputs_to_native(task.native_interface, asyncio.run(
        load_outputs(str(outputs)))))) if outputs.exists() else None
    launched = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return Flyte2Pod(proc, registered, rendered, seen, launched)


@pytest.mark.slow
def test_a_pod_runs_two_workers_on_the_settings_registered_without_profile_files(tmp_path):
    """Serialize a task on a team profile, delete the profile folder (the image holds the code, not the profiles),
    then run the serialized container args through Flyte 2's ``a0`` in a fresh process, as the pod does: two
    torch elastic workers on CPU. What torch receives is what was registered, which is what ``render`` shows."""
    pod = run_in_a_flyte2_pod(tmp_path)
    proc, registered, seen = pod.proc, pod.registered, pod.seen
    assert registered == pod.rendered.elastic_settings
    assert proc.returncode == 0 and seen is not None, (proc.returncode, proc.stderr[-4000:])

    # two workers, one gloo all-reduce: ranks 0 and 1 add 10 + 0 and 10 + 1
    assert (seen["sum"], seen["world_size"]) == (21.0, 2)
    [launched] = pod.launched
    assert launched == {
        "min_nodes": 1, "max_nodes": 1, "nproc_per_node": registered["nproc_per_node"],
        "start_method": "spawn",  # Flyte 2's only start method
        "monitor_interval": registered["monitor_interval"], "max_restarts": registered["max_restarts"],
        "rdzv_backend": registered["rdzv_backend"], "rdzv_configs": registered["rdzv_configs"],
    }
    assert (launched["monitor_interval"], launched["max_restarts"]) == (1, 1)
    assert launched["rdzv_configs"] == {"join_timeout": 123, "timeout": 124, "read_timeout": 125}
    # the NCCL settings reach the workers as the plugin's environment variables; the profile's env var too
    assert seen["env"] == {
        "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "77", "FLYTE_NCCL_COLLECTIVE_TIMEOUT_SEC": "120",
        "TORCH_NCCL_ENABLE_MONITORING": "1", "TORCHELASTIC_MAX_RESTARTS": "1", "LOCAL_WORLD_SIZE": "2",
        "FROM_PROFILE": "yes",
    }
    assert seen["nccl_default_timeout_s"] == 120.0  # the plugin's worker entrypoint applies the collective timeout
    # the receipt, before the workers started: the pod has what was registered
    [receipt] = receipts(proc.stderr)
    assert receipt["differences"] == [] and receipt["registered"]["elastic"] == registered
    assert receipt["target"] == "flyte2" and receipt["launch"]["rdzv_configs"] == launched["rdzv_configs"]
    assert receipt_lines(proc.stderr)[0].endswith("): no differences from what was registered")


@pytest.mark.slow
def test_a_tasks_explicit_none_stays_none_over_the_profile_and_the_plugins_default_in_the_pod(tmp_path):
    """`Elastic(..., nccl_heartbeat_timeout_sec=None)` is the plugin's None (torch's own default): over a profile's
    77 and the plugin's 300 it registers `off`, and the pod, run through `a0` as Flyte 2 runs it, exports no
    TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC (before, None deleted the profile's value and the plugin's 300 came back)."""
    app = APP.replace("nccl_collective_timeout_sec=120))", "nccl_collective_timeout_sec=120, nccl_heartbeat_timeout_sec=None))")
    assert app != APP
    pod = run_in_a_flyte2_pod(tmp_path, app=app)
    assert pod.registered["nccl_heartbeat_timeout_sec"] == "off"
    assert pod.proc.returncode == 0 and pod.seen is not None, (pod.proc.returncode, pod.proc.stderr[-4000:])
    assert pod.seen["env"]["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"] is None
    assert pod.seen["env"]["FLYTE_NCCL_COLLECTIVE_TIMEOUT_SEC"] == "120"  # the other settings as registered
    [receipt] = receipts(pod.proc.stderr)
    assert receipt["differences"] == []


def test_a_profiles_off_is_the_plugins_none_in_the_registered_task(tmp_path):
    """`nccl_heartbeat_timeout_sec: off` in a team profile: render shows `off`, the task Flyte 2 serializes
    registers it, and the plugin's own `pre` (what the pod runs before torch) sets no variable."""
    import asyncio

    from cli_runner import invoke

    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "quiet.yaml").write_text("extends: cpu-small\nelastic:\n  nccl_heartbeat_timeout_sec: off\n",
                                                  encoding="utf-8")
    team = str(tmp_path / "team")
    shown = invoke(["render", "quiet", "--team", team, "--target", "flyte2", "-o", "json"])
    assert shown.exit_code == 0 and json.loads(shown.stdout)["elastic"]["nccl_heartbeat_timeout_sec"] == "off"
    config = Elastic(profile="quiet", team=[team])
    assert config.nccl_heartbeat_timeout_sec is None
    env = flyte.TaskEnvironment(name="quiet", plugin_config=config)
    task = env.task(_body)
    context = SerializationContext(version="v1", project="p", domain="development", org="o", root_dir=HERE)
    template = MessageToDict(translate_task_to_wire(task, context).task_template)
    assert json.loads(env_of(primary_of(template))[RUNTIME_ENV])["elastic"]["nccl_heartbeat_timeout_sec"] == "off"
    saved = os.environ.pop("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", None)
    try:
        asyncio.run(task.pre())
        assert "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC" not in os.environ
    finally:
        for name in ("PYTHONUNBUFFERED", "TORCH_NCCL_ENABLE_MONITORING"):
            os.environ.pop(name, None)
        if saved is not None:
            os.environ["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"] = saved
    refused = invoke(["render", "quiet", "--team", team, "--target", "flytekit"])
    assert refused.exit_code == 1 and "is a Flyte 2 setting" in refused.stderr


def _body() -> None: ...


FORKED_APP = '''\
import os

import flyte

from kfdefaults.flyte2 import Elastic

TEAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")
env = flyte.TaskEnvironment(name="forked", plugin_config=Elastic(profile="forked", team=TEAM, start_method=None))


@env.task
def train(x: int) -> int:
    return x
'''


@pytest.mark.slow
def test_start_method_null_works_as_the_error_of_a_forked_profile_says(tmp_path):
    """A team's `start_method: fork` cannot run on Flyte 2, and the error says to delete it in a higher layer
    (`start_method: null`). Both ways of doing so work: `render --set elastic.start_method=null --as flyte` prints
    the task Flyte 2 serializes, and `Elastic(start_method=None)` defines it; its pod runs torch with spawn."""
    import asyncio
    import sys

    from cli_runner import invoke
    from flyte._internal.runtime.convert import convert_from_native_to_inputs
    from flyte_pods import container_env, run_a0

    image = tmp_path / "image"
    (image / "team").mkdir(parents=True)
    (image / "team" / "forked.yaml").write_text("extends: cpu-small\nelastic:\n  start_method: fork\n", encoding="utf-8")
    (image / "kfd2_forked.py").write_text(FORKED_APP, encoding="utf-8")
    team = str(image / "team")
    refused = invoke(["render", "forked", "--team", team, "--target", "flyte2"])
    assert refused.exit_code == 1 and "(`start_method: null` in a higher layer)" in refused.stderr
    rendered = invoke(["render", "forked", "--team", team, "--target", "flyte2", "--set", "elastic.start_method=null",
                       "--as", "flyte", "-o", "json"])
    assert rendered.exit_code == 0, rendered.output
    previewed = json.loads(rendered.stdout)

    sys.path.insert(0, str(image))
    try:
        import kfd2_forked

        context = SerializationContext(version="v1", project="p", domain="development", org="o", root_dir=image)
        template = MessageToDict(translate_task_to_wire(kfd2_forked.train, context).task_template)
        inputs = asyncio.run(convert_from_native_to_inputs(kfd2_forked.train.native_interface, x=3))
    finally:
        sys.path.remove(str(image))
        sys.modules.pop("kfd2_forked", None)
    assert template["custom"] == previewed["custom"]
    registered = json.loads(container_env(template)[RUNTIME_ENV])["elastic"]
    assert registered == json.loads(container_env(previewed)[RUNTIME_ENV])["elastic"]
    assert "start_method" not in registered and registered["nproc_per_node"] == 2

    proc, launched = run_a0(image, template, tmp_path / "work", inputs)
    assert proc.returncode == 0 and len(launched) == 1, proc.stderr[-3000:]
    assert launched[0]["start_method"] == "spawn" and launched[0]["nproc_per_node"] == 2
    assert launched[0]["rdzv_configs"] == registered["rdzv_configs"]
