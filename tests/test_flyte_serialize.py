"""Tasks defined with kfdefaults.Elastic, serialized by the real flytekit as registration does."""

from __future__ import annotations

import dataclasses
import warnings
from collections import OrderedDict

import pytest
from conftest import PLATFORM, TEAM
from flytekit import PodTemplate, task
from flytekit.configuration import ImageConfig, SerializationSettings
from flytekit.tools.translator import get_serializable
from flytekitplugins.kfpytorch import Elastic as PluginElastic
from kubernetes.client import V1Container, V1EnvVar, V1PodSpec, V1Toleration

import kfdefaults
from kfdefaults import Elastic
from kfdefaults.merge.elastic import PLUGIN_ELASTIC_DEFAULTS

with warnings.catch_warnings(record=True) as DEFINITION_WARNINGS:
    warnings.simplefilter("always")

    @task(task_config=Elastic(profile="gpu-large"))
    def gpu_large() -> None: ...

    @task(task_config=Elastic(profile="cpu-small"))
    def cpu_small() -> int:
        return 1

    @task(task_config=Elastic(profile="cpu-small", nnodes="2:4", nproc_per_node=3))
    def cpu_multi() -> None: ...

    USER_TEMPLATE = PodTemplate(
        pod_spec=V1PodSpec(
            containers=[V1Container(name="primary", env=[V1EnvVar(name="TASK_ONLY", value="1")])],
            tolerations=[V1Toleration(key="task", operator="Exists")],
        ),
        labels={"task": "yes"},
    )

    @task(task_config=Elastic(profile="gpu-large", platform=[PLATFORM], team=[TEAM], nnodes=1), pod_template=USER_TEMPLATE)
    def layered() -> None: ...


SETTINGS = SerializationSettings(image_config=ImageConfig.auto_default_image())


def template(t):
    return get_serializable(OrderedDict(), SETTINGS, t).template


def primary_of(tt) -> dict:
    name = tt.config["primary_container_name"]
    [container] = [c for c in tt.k8s_pod.pod_spec["containers"] if c["name"] == name]
    return container


def shm_mounts(tt) -> list:
    return [m for c in tt.k8s_pod.pod_spec["containers"] for m in c.get("volumeMounts", []) if m["mountPath"] == "/dev/shm"]


def test_plugin_defaults_are_the_installed_plugins():
    fields = {f.name: f for f in dataclasses.fields(PluginElastic)}
    for key, value in PLUGIN_ELASTIC_DEFAULTS.items():
        f = fields[key]
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        assert default == value, key


def test_no_deprecation_warning_when_defining_tasks():
    assert not [w for w in DEFINITION_WARNINGS if "increase_shared_mem" in str(w.message)]


def test_gpu_large_serializes_to_a_pytorch_job():
    tt = template(gpu_large)
    assert tt.type == "pytorch"
    elastic = tt.custom["elasticConfig"]
    assert (elastic["minReplicas"], elastic["maxReplicas"], elastic["nprocPerNode"]) == (1, 4, 8)
    assert elastic["maxRestarts"] == 3
    assert tt.custom["workerReplicas"]["replicas"] == 4
    assert tt.custom["runPolicy"] == {"cleanPodPolicy": "CLEANPOD_POLICY_RUNNING", "backoffLimit": 3}
    assert len(shm_mounts(tt)) == 1
    assert [v["name"] for v in tt.k8s_pod.pod_spec["volumes"]] == ["dshm"]
    primary = primary_of(tt)
    assert primary["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert primary["args"][0] == "pyflyte-execute"
    assert tt.k8s_pod.pod_spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_pod_spec_is_the_rendered_pod_template():
    tt = template(gpu_large)
    rendered = kfdefaults.resolve("gpu-large").pod_spec
    serialized = tt.k8s_pod.pod_spec
    assert serialized["volumes"] == rendered["volumes"]
    assert serialized["tolerations"] == rendered["tolerations"]
    primary = primary_of(tt)
    assert primary["volumeMounts"] == rendered["containers"][0]["volumeMounts"]
    # the kubernetes client writes quantities as strings; the values are the same
    assert primary["resources"] == {k: {r: str(q) for r, q in v.items()} for k, v in rendered["containers"][0]["resources"].items()}


def test_nnodes_1_is_a_plain_pod():
    tt = template(cpu_small)
    assert tt.type == "python-task"
    assert tt.custom is None
    assert primary_of(tt)["resources"]["requests"] == {"cpu": "2", "memory": "2Gi"}


def test_nnodes_range_is_a_pytorch_job_with_min_and_max():
    tt = template(cpu_multi)
    assert tt.type == "pytorch"
    assert (tt.custom["elasticConfig"]["minReplicas"], tt.custom["elasticConfig"]["maxReplicas"]) == (2, 4)
    assert tt.custom["elasticConfig"]["nprocPerNode"] == 3


def test_task_pod_template_is_applied_on_top_and_not_mutated():
    tt = template(layered)
    assert tt.type == "python-task"
    spec = tt.k8s_pod.pod_spec
    # @task(pod_template=...) is the task layer: its tolerations replace the profile's (no merge key)
    assert spec["tolerations"] == [{"key": "task", "operator": "Exists"}]
    env = {e["name"]: e["value"] for e in primary_of(tt)["env"]}
    assert env["TASK_ONLY"] == "1" and env["NCCL_DEBUG"] == "INFO"
    assert tt.k8s_pod.metadata.labels == {"platform.example.com/pool": "a100", "team": "vision", "task": "yes"}
    assert [c["name"] for c in spec["containers"]] == ["primary", "log-shipper"]
    assert len(shm_mounts(tt)) == 1
    # the object the user passed is untouched
    assert USER_TEMPLATE.pod_spec.volumes is None
    assert [c.name for c in USER_TEMPLATE.pod_spec.containers] == ["primary"]
    assert USER_TEMPLATE.pod_spec.containers[0].volume_mounts is None


def test_elastic_is_the_plugins_elastic():
    config = Elastic(profile="gpu-large", max_restarts=1, rdzv_configs={"join_timeout": 60})
    assert isinstance(config, PluginElastic)
    assert config.nnodes == "1:4" and config.nproc_per_node == 8 and config.max_restarts == 1
    assert config.rdzv_configs == {"join_timeout": 60, "timeout": 900, "read_timeout": 900}
    assert config.increase_shared_mem is False


def test_elastic_overrides_are_validated_and_located():
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        Elastic(profile="gpu-large", nproc_per_node=0)
    assert str(excinfo.value).startswith("Elastic(nproc_per_node=0): [task] elastic.nproc_per_node: ")
    with pytest.raises(TypeError, match="takes True or False"):
        Elastic(profile="gpu-large", increase_shared_mem="yes")
    # the plugin's field stays off: kfdefaults' task layer gives the pod its /dev/shm, the plugin changes nothing
    assert Elastic(profile="gpu-large", increase_shared_mem=True).increase_shared_mem is False


def test_tasks_on_one_call_share_the_template_and_register_what_building_each_registers(monkeypatch):
    """A module of many tasks on a few Elastic(...) calls builds each pod template once: tasks of one call and
    the same task arguments share it, and serialize as tasks built one by one (the memo off) do. A task with its
    own pod template, shared memory, or resources that change the profile's auto values is built on its own."""
    from flytekit import Resources

    def define(**kwargs):
        @task(task_config=Elastic(profile="gpu-large", team=[TEAM], nnodes=2), **kwargs)
        def body() -> None: ...
        return body

    first, second = define(), define()
    env, env_again = define(environment={"A": "1"}), define(environment={"A": "1"})
    assert first.pod_template is second.pod_template and env.pod_template is env_again.pod_template
    assert env.pod_template is not first.pod_template
    own, shm = define(pod_template=USER_TEMPLATE), define(shared_memory=True)
    gpus = define(requests=Resources(gpu="8"), limits=Resources(mem="64Gi"))  # /dev/shm sizeLimit: auto follows
    for alone in (own, shm, gpus):
        assert alone.pod_template is not first.pod_template
    monkeypatch.setenv("KFDEFAULTS_NO_CACHE", "1")
    built = [define(), define(environment={"A": "1"})]
    assert built[0].pod_template is not first.pod_template
    for shared, fresh in zip((first, env), built):
        one, other = template(shared), template(fresh)
        assert one.k8s_pod.to_flyte_idl() == other.k8s_pod.to_flyte_idl() and one.custom == other.custom
