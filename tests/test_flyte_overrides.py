"""A workflow node's ``with_overrides(pod_template=...)`` on a task on a profile, serialized by the real flytekit
as ``pyflyte register`` does: the node's pod template keeps the profile and adds the override."""

from __future__ import annotations

import json
import warnings
from collections import OrderedDict
from typing import NamedTuple

import pytest
from conftest import TEAM
from flytekit import PodTemplate, Resources, task, workflow
from flytekit.configuration import ImageConfig, SerializationSettings
from flytekit.core.node_creation import create_node
from flytekit.tools.translator import get_serializable
from kubernetes.client import V1Container, V1EnvVar, V1PodSpec, V1ResourceRequirements, V1Toleration
from smp_oracle import kubectl_apply
from test_flyte_integration import in_a_flyte_task_container, leftover_runtime_value

import kfdefaults
from kfdefaults import Elastic
from kfdefaults.k8s.models import to_plain
from kfdefaults.settings import RUNTIME_ENV

SETTINGS = SerializationSettings(image_config=ImageConfig.auto_default_image())

OVERRIDE = PodTemplate(
    pod_spec=V1PodSpec(containers=[V1Container(name="primary", env=[V1EnvVar(name="NODE_ONLY", value="1")])],
                       node_selector={"pool": "a100-80g"}),
    labels={"node": "yes"},
)
TASK_TEMPLATE = PodTemplate(
    pod_spec=V1PodSpec(containers=[V1Container(name="primary", env=[V1EnvVar(name="TASK_ONLY", value="1")])]),
    labels={"task": "yes"},
)


@task(task_config=Elastic(profile="gpu-large"), pod_template=TASK_TEMPLATE)
def train() -> None: ...


@task(task_config=Elastic(profile="gpu-large"), requests=Resources(cpu="4"))
def train_with_requests() -> int:
    return 1


class Pair(NamedTuple):
    a: int
    b: int


@task(task_config=Elastic(profile="cpu-small"))
def pair() -> Pair:
    return Pair(1, 2)


def serialized_nodes(wf) -> dict:
    """node id -> (the node's TaskNodeOverrides, the TaskTemplate of its task)."""
    entities: OrderedDict = OrderedDict()
    spec = get_serializable(entities, SETTINGS, wf)
    templates = {t.template.id: t.template for t in entities.values() if hasattr(t, "template") and
                 hasattr(t.template, "k8s_pod")}
    return {n.id: (n.task_node.overrides, templates[n.task_node.reference_id]) for n in spec.template.nodes}


def primary_of(spec: dict, name: str = "primary") -> dict:
    [container] = [c for c in spec["containers"] if c["name"] == name]
    return container


def env_of(container: dict) -> dict:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def test_the_override_merges_over_the_profile_and_the_tasks_own_template(kubectl):
    @workflow
    def wf() -> None:
        train().with_overrides(pod_template=OVERRIDE)

    [(overrides, template)] = serialized_nodes(wf).values()
    node = overrides.pod_template.pod_spec
    own = template.k8s_pod.pod_spec
    # what kubectl makes of the override laid over the task's registered pod spec
    [expected] = kubectl_apply([(own, to_plain(OVERRIDE.pod_spec))], kind="PodSpec")
    assert expected.ok, expected.error
    env = env_of(primary_of(node))
    assert {**node, "containers": None} == {**expected.result, "containers": None}
    assert {**primary_of(node), "env": None} == {**primary_of(expected.result), "env": None}
    assert {**env, RUNTIME_ENV: None} == {**env_of(primary_of(expected.result)), RUNTIME_ENV: None}
    # what the profile gives, still there: /dev/shm, the GPUs and their toleration, the registered settings
    assert primary_of(node)["volumeMounts"] == [{"mountPath": "/dev/shm", "name": "dshm"}]
    assert primary_of(node)["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in node["tolerations"]
    registered, own_registered = json.loads(env[RUNTIME_ENV]), json.loads(env_of(primary_of(own))[RUNTIME_ENV])
    assert {**registered, "pod": None} == {**own_registered, "pod": None}
    # ... and what the node's pod should have, for its receipt: the override's, at the line that set it
    assert registered["pod"]["env"]["NODE_ONLY"] == {"value": "1", "set_by": "task with_overrides(pod_template=...)"}
    assert "NODE_ONLY" not in own_registered["pod"]["env"]
    assert registered["pod"]["labels"]["node"]["value"] == "yes"
    # the task's own template and the override
    assert env["TASK_ONLY"] == "1" and env["NODE_ONLY"] == "1" and node["nodeSelector"] == {"pool": "a100-80g"}
    assert overrides.pod_template.labels == {"task": "yes", "node": "yes"}
    assert overrides.pod_template.primary_container_name == template.config["primary_container_name"]
    assert node["containers"][0]["name"] == "primary"


def test_a_replaced_list_is_replaced_as_kubectl_replaces_it():
    """tolerations has no merge key: an override's list replaces the profile's whole, as @task(pod_template=...)
    would (strategic merge patch); everything else of the profile stays."""
    override = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="primary")],
                                              tolerations=[V1Toleration(key="spot", operator="Exists")]))

    @workflow
    def wf() -> None:
        train().with_overrides(pod_template=override)

    [(overrides, _)] = serialized_nodes(wf).values()
    node = overrides.pod_template.pod_spec
    assert node["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    assert primary_of(node)["resources"]["limits"] == {"nvidia.com/gpu": "8"}


def test_the_task_requests_merge_per_resource_in_the_node_template_too():
    @workflow
    def wf() -> int:
        return train_with_requests().with_overrides(pod_template=OVERRIDE)

    [(overrides, template)] = serialized_nodes(wf).values()
    node = primary_of(overrides.pod_template.pod_spec)
    assert node["resources"] == primary_of(template.k8s_pod.pod_spec)["resources"]
    assert node["resources"]["requests"] == {"nvidia.com/gpu": "8", "cpu": "4"}


def test_every_way_of_calling_the_task_gets_the_merge():
    """A task returning a tuple of promises, one returning one, one returning nothing, and create_node."""

    @workflow
    def wf() -> None:
        p = pair().with_overrides(pod_template=OVERRIDE)
        n = train_with_requests().with_overrides(pod_template=OVERRIDE)
        create_node(train).with_overrides(pod_template=OVERRIDE)
        p >> n

    nodes = serialized_nodes(wf)
    assert len(nodes) == 3
    for overrides, _ in nodes.values():
        env = env_of(primary_of(overrides.pod_template.pod_spec))
        assert env["NODE_ONLY"] == "1" and RUNTIME_ENV in env


def test_nodes_without_an_override_keep_the_tasks_template():
    @workflow
    def wf() -> None:
        train()
        train().with_overrides(retries=2)

    for overrides, _ in serialized_nodes(wf).values():
        assert overrides.pod_template is None


def test_the_last_override_given_is_the_one_merged():
    other = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="primary")], node_selector={"pool": "h100"}))

    @workflow
    def wf() -> None:
        train().with_overrides(pod_template=OVERRIDE).with_overrides(pod_template=other).with_overrides(retries=1)

    [(overrides, _)] = serialized_nodes(wf).values()
    node = overrides.pod_template.pod_spec
    assert node["nodeSelector"] == {"pool": "h100"} and "NODE_ONLY" not in env_of(primary_of(node))
    assert primary_of(node)["volumeMounts"] == [{"mountPath": "/dev/shm", "name": "dshm"}]


def test_node_shared_memory_leaves_out_the_profiles_dev_shm_with_a_message():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        @workflow
        def wf() -> None:
            train().with_overrides(shared_memory="16Gi")

        nodes = serialized_nodes(wf)
    [(overrides, _)] = nodes.values()
    node = overrides.pod_template.pod_spec
    assert "volumeMounts" not in primary_of(node) and "volumes" not in node
    assert primary_of(node)["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    messages = [str(w.message) for w in caught if issubclass(w.category, kfdefaults.KfdefaultsWarning)]
    assert messages == ["with_overrides(shared_memory=...) wins over the /dev/shm volume 'dshm' of profile "
                        "'gpu-large': the task gets Flyte's shared-memory volume instead"]
    assert [w.filename for w in caught if "shared_memory" in str(w.message)] == [__file__]


def test_an_invalid_override_is_a_profile_error_named_after_with_overrides():
    bad = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="primary", image_pull_policy="Sometimes")]))
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        @workflow
        def wf() -> None:
            train().with_overrides(pod_template=bad)

        serialized_nodes(wf)
    assert str(excinfo.value).startswith("with_overrides(pod_template=...)")
    assert "imagePullPolicy" in str(excinfo.value)


def test_an_override_that_is_not_a_flytekit_pod_template_is_refused():
    with pytest.raises(TypeError, match=r"with_overrides\(pod_template=...\) takes a flytekit.PodTemplate, not "
                                        "V1PodSpec"):
        @workflow
        def wf() -> None:
            train().with_overrides(pod_template=OVERRIDE.pod_spec)

        serialized_nodes(wf)


def test_a_task_config_override_is_refused():
    with pytest.raises(TypeError, match=r"with_overrides\(task_config=...\) on a task on profile 'gpu-large'"):
        @workflow
        def wf() -> None:
            train().with_overrides(task_config=Elastic(profile="gpu-large", nnodes=2))

        serialized_nodes(wf)


def test_an_override_where_the_task_runs_on_its_registered_settings_is_refused(monkeypatch):
    """A dynamic workflow compiles its nodes in a Flyte pod, where the task runs on the settings registered with
    it: no profile to merge the override with."""
    monkeypatch.setenv(RUNTIME_ENV, leftover_runtime_value("gpu-large"))
    with in_a_flyte_task_container(monkeypatch):
        config = Elastic(profile="gpu-large")
        assert config.resolved is None

        @task(task_config=config)
        def in_pod() -> None: ...

        @workflow
        def wf() -> None:
            in_pod().with_overrides(pod_template=OVERRIDE)

        with pytest.raises(kfdefaults.KfdefaultsError, match="kfdefaults merges the override over the profile, and "
                                                             "this process runs the task on the settings registered"):
            wf.compile()


def test_a_profile_image_stays_under_a_node_override_without_one():
    @task(task_config=Elastic(profile="gpu-large", team=[TEAM]))
    def team_train() -> None: ...

    @workflow
    def wf() -> None:
        team_train().with_overrides(pod_template=OVERRIDE)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kfdefaults.KfdefaultsWarning)
        [(overrides, template)] = serialized_nodes(wf).values()
    assert primary_of(overrides.pod_template.pod_spec)["image"] == "registry.example.com/vision/train:2.1"
    assert primary_of(template.k8s_pod.pod_spec)["image"] == "registry.example.com/vision/train:2.1"


def test_an_override_that_changes_what_auto_values_give_the_task_is_refused(tmp_path):
    """nproc_per_node: auto follows the primary container's GPUs; the task registers its elastic settings once for
    every node, so a node cannot change the GPUs behind them. What auto gives the pod (OMP_NUM_THREADS) follows
    the node's template."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "gpu-auto.yaml").write_text(
        "extends: gpu-large\n"
        "elastic:\n  nproc_per_node: auto\n"
        "pod_template:\n  spec:\n    containers:\n      - name: primary\n"
        "        env:\n          - {name: OMP_NUM_THREADS, value: auto}\n"
        "        resources:\n          requests: {cpu: \"64\"}\n", encoding="utf-8")

    @task(task_config=Elastic(profile="gpu-auto", team=[str(team)]))
    def auto_train() -> None: ...

    fewer_gpus = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(
        name="primary", resources=V1ResourceRequirements(limits={"nvidia.com/gpu": "4"},
                                                         requests={"nvidia.com/gpu": "4"}))]))
    with pytest.raises(kfdefaults.KfdefaultsError, match=r"changes what the profile's auto values give "
                                                         r"\(nproc_per_node: 8 -> 4\)"):
        @workflow
        def wf() -> None:
            auto_train().with_overrides(pod_template=fewer_gpus)

        wf.compile()
    more_cpus = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(
        name="primary", resources=V1ResourceRequirements(requests={"cpu": "32"}))]))

    @workflow
    def ok() -> None:
        auto_train().with_overrides(pod_template=more_cpus)

    [(overrides, template)] = serialized_nodes(ok).values()
    assert env_of(primary_of(overrides.pod_template.pod_spec))["OMP_NUM_THREADS"] == "4"  # 32 cpus / 8 workers
    assert env_of(primary_of(template.k8s_pod.pod_spec))["OMP_NUM_THREADS"] == "8"
