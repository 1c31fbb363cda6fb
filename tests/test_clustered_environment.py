"""kfdefaults.flyte2.ClusteredTaskEnvironment against the SDK's own flyte.clustered.ClusteredTaskEnvironment.

The differential test: for each fixture profile, the TaskTemplate Flyte 2 serializes (``translate_task_to_wire``,
what ``flyte deploy`` sends; the helper of the flyte2 ``Elastic`` tests) for a task of the kfdefaults environment
equals the one it serializes for the hand-written SDK environment given the rendered values (``custom`` and the pod
template as normalized JSON), but for what kfdefaults adds on purpose (:data:`KFDEFAULTS_ADDS`).
"""

from __future__ import annotations

import copy
import json
import textwrap

import pytest

flyte = pytest.importorskip("flyte")
clustered = pytest.importorskip("flyte.clustered")

import kfdefaults  # noqa: E402
from kfdefaults.errors import ProfileError  # noqa: E402
from kfdefaults.flyte2 import ClusteredTaskEnvironment, ProfileClusteredTask  # noqa: E402
from kfdefaults.settings import RUNTIME_ENV  # noqa: E402
from test_flyte2 import spec  # noqa: E402  (the serializing helper of the flyte2 Elastic tests)

IMAGE = "registry.example.com/train:1"

GPU = """\
extends: gpu-large
elastic:
  nnodes: {nnodes}
  max_restarts: null
  rdzv_configs: null
  run_policy: null
"""

PROFILES = {
    "two-node": GPU.format(nnodes=2),
    "one-node": GPU.format(nnodes=1),
    "sixteen": GPU.format(nnodes=16) + "  cluster_max_restarts: 3\n",
    "c10d": GPU.format(nnodes=4) + "  rdzv_backend: c10d\n  restart_on_host_maintenance: true\n",
    "ttl": GPU.format(nnodes=2).replace("  run_policy: null\n", "  run_policy:\n    clean_pod_policy: null\n"
                                        "    backoff_limit: null\n    ttl_seconds_after_finished: 3600\n"),
    "auto-gpus": GPU.format(nnodes=2) + textwrap.dedent("""\
          nproc_per_node: auto
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  requests: {nvidia.com/gpu: 4}
                  limits: {nvidia.com/gpu: 4}
        """),
    "cpu": textwrap.dedent("""\
        elastic:
          nnodes: 3
          nproc_per_node: 2
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  requests: {cpu: "2", memory: 4Gi}
        """),
    "env-and-tolerations": GPU.format(nnodes=2) + textwrap.dedent("""\
        pod_template:
          labels: {kueue.x-k8s.io/queue-name: training}
          annotations: {team.example.com/owner: ml}
          spec:
            tolerations:
              - {key: pool, operator: Equal, value: a100, effect: NoSchedule}
            nodeSelector: {pool: a100}
            containers:
              - name: primary
                env:
                  - {name: NCCL_DEBUG, value: INFO}
        """),
    "sidecar": GPU.format(nnodes=2) + textwrap.dedent("""\
        pod_template:
          spec:
            containers:
              - name: log-shipper
                image: registry.example.com/log-shipper:1
              - name: primary
        """),
    "image": GPU.format(nnodes=2) + textwrap.dedent("""\
        pod_template:
          spec:
            containers:
              - name: primary
                image: registry.example.com/profile:7
        """),
    "fail-fast": textwrap.dedent("""\
        extends: [gpu-large, nccl-fail-fast]
        elastic:
          nnodes: 2
          max_restarts: null
          rdzv_configs: null
          run_policy: null
        """),
}
"""Fixture profiles a clustered task can run, each exercising other fields."""

KFDEFAULTS_ADDS = {
    f"env[{RUNTIME_ENV}]": "the settings registered with the task, which the pod reads back (docs/receipt.md)",
    "k8sPod.metadata.annotations[kfdefaults.io/*]": "which profile made the pod (docs/provenance.md)",
}
"""Every difference between the two serialized templates, and why."""


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    folder = tmp_path_factory.mktemp("team")
    for name, text in PROFILES.items():
        (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    return str(folder)


def body() -> None: ...


def without_kfdefaults_adds(template: dict) -> dict:
    """The template as normalized JSON, without what :data:`KFDEFAULTS_ADDS` states (each asserted present first
    where kfdefaults made it)."""
    template = json.loads(json.dumps(template, sort_keys=True))
    for container in template["k8sPod"]["podSpec"]["containers"]:
        container["env"] = [e for e in container.get("env", []) if e["name"] != RUNTIME_ENV]
        if not container["env"]:
            del container["env"]
    metadata = template["k8sPod"].get("metadata", {})
    annotations = {k: v for k, v in metadata.get("annotations", {}).items() if not k.startswith("kfdefaults.io/")}
    metadata.pop("annotations", None)
    if annotations:
        metadata["annotations"] = annotations
    return {k: template.get(k) for k in ("type", "taskTypeVersion", "custom", "k8sPod", "config", "container")}


def image_of(name: str) -> str:
    """The environment's image: ``auto`` where the profile names one, which then wins in both environments (an
    image of the environment's own wins over the profile's only in kfdefaults', as the task layer: docs/flyte2.md)."""
    return "auto" if name == "image" else IMAGE


def hand_written(name: str, team: str, **task) -> clustered.ClusteredTaskEnvironment:
    """The SDK's environment, each field written from what ``kfdefaults render --target clustered`` shows."""
    resolved = kfdefaults.resolve(name, team=[team], target="clustered")
    elastic = resolved.elastic_settings
    ttl = (elastic.get("run_policy") or {}).get("ttl_seconds_after_finished")
    return clustered.ClusteredTaskEnvironment(
        name=name, image=image_of(name), replicas=int(elastic["nnodes"]), nproc_per_node=int(task.pop("nproc", elastic["nproc_per_node"])),
        runtime=clustered.TorchRun(rdzv_backend=elastic["rdzv_backend"]),
        failure_policy=clustered.ClusterFailurePolicy(max_restarts=elastic["cluster_max_restarts"],
                                                      restart_on_host_maintenance=elastic["restart_on_host_maintenance"]),
        ttl_seconds_after_finished=ttl, pod_template=resolved.pod_template, **task)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_the_kfdefaults_environment_serializes_as_the_hand_written_one(name, team):
    ours = ClusteredTaskEnvironment(profile=name, team=[team], name=name, image=image_of(name))
    task = ours.task(body)
    assert isinstance(task, ProfileClusteredTask) and isinstance(task, clustered.ClusteredTaskTemplate)
    theirs = hand_written(name, team).task(body)
    ours_spec, theirs_spec = spec(task), spec(theirs)
    assert ours_spec["type"] == "clustered-task" and ours_spec["custom"]["replicas"] >= 1
    primary = [c for c in ours_spec["k8sPod"]["podSpec"]["containers"] if c["name"] == "primary"][0]
    assert any(e["name"] == RUNTIME_ENV for e in primary["env"])  # the stated additions are real
    assert ours_spec["k8sPod"]["metadata"]["annotations"]["kfdefaults.io/profile"] == name
    assert without_kfdefaults_adds(ours_spec) == without_kfdefaults_adds(theirs_spec)
    # the environment's fields hold the merged values, as the SDK's does
    assert (ours.replicas, ours.nproc_per_node, ours.failure_policy) == \
        (theirs.parent_env().replicas, theirs.parent_env().nproc_per_node, theirs.parent_env().failure_policy)


def test_the_environments_fields_are_the_task_layer_over_the_profile(team):
    ours = ClusteredTaskEnvironment(profile="two-node", team=[team], name="layered", image=IMAGE, replicas=4,
                                    runtime=clustered.TorchRun(rdzv_backend="c10d"),
                                    failure_policy=clustered.ClusterFailurePolicy(max_restarts=2),
                                    ttl_seconds_after_finished=60)
    custom = spec(ours.task(body))["custom"]
    assert custom == {"replicas": 4.0, "nprocPerNode": 8.0, "runtime": {"torchrun": {"rdzvBackend": "C10D"}},
                      "failurePolicy": {"maxRestarts": 2.0}, "ttlSecondsAfterFinished": 60.0}
    assert ours.replicas == 4 and ours.runtime == clustered.TorchRun(rdzv_backend="c10d")


def test_a_clone_keeps_the_profiles_values(team):
    ours = ClusteredTaskEnvironment(profile="ttl", team=[team], name="first", image=IMAGE)
    clone = ours.clone_with("second")
    assert isinstance(clone, ClusteredTaskEnvironment) and clone.plugin_config.settings == ours.plugin_config.settings
    assert spec(clone.task(body))["custom"] == spec(ours.task(body))["custom"]


def test_nproc_per_node_auto_follows_the_environments_gpus(team):
    ours = ClusteredTaskEnvironment(profile="auto-gpus", team=[team], name="auto", image=IMAGE,
                                    resources=flyte.Resources(gpu=2))
    assert ours.nproc_per_node == 2
    serialized = spec(ours.task(body))
    theirs = spec(hand_written("auto-gpus", team, nproc=2, resources=flyte.Resources(gpu=2)).task(body))
    assert serialized["custom"]["nprocPerNode"] == 2.0
    assert without_kfdefaults_adds(serialized)["custom"] == without_kfdefaults_adds(theirs)["custom"]


def test_what_a_clustered_task_cannot_run_is_an_error_naming_the_environment(team):
    with pytest.raises(ProfileError) as raised:
        ClusteredTaskEnvironment(profile="gpu-large", name="ranged", image=IMAGE)
    assert "gpu-large.yaml:4:11" in str(raised.value) and "write `nnodes: 4`" in str(raised.value)
    with pytest.raises(ProfileError) as raised:
        ClusteredTaskEnvironment(profile="two-node", team=[team], name="big", image=IMAGE, replicas=100001)
    assert "ClusteredTaskEnvironment(replicas=100001)" in str(raised.value)
    with pytest.raises(ProfileError) as raised:  # no PyTorchJob here: the bound is said for every target's kind
        ClusteredTaskEnvironment(profile="two-node", team=[team], name="none", image=IMAGE, replicas=0)
    assert "ClusteredTaskEnvironment(replicas=0)" in str(raised.value) and "a JobSet's parallelism" in str(raised.value)
    with pytest.raises(TypeError, match="TorchRun"):
        ClusteredTaskEnvironment(profile="two-node", team=[team], name="jax", image=IMAGE, runtime=clustered.JaxRun())


def test_a_pickled_task_keeps_what_it_serializes(team):
    import pickle

    task = ClusteredTaskEnvironment(profile="ttl", team=[team], name="pickled", image=IMAGE).task(body)
    again = pickle.loads(pickle.dumps(task))
    assert again.plugin_config.settings == task.plugin_config.settings
    assert again.custom_config(None) == copy.deepcopy(task.custom_config(None))


LOCAL_RUN = '''\
import sys

import flyte

from kfdefaults.flyte2 import ClusteredTaskEnvironment

env = ClusteredTaskEnvironment(profile="two-node", team=[sys.argv[1]], name="local", image="registry.example.com/t:1")


@env.task
async def add(x: int) -> int:
    return x + 1


if __name__ == "__main__":
    flyte.init()
    print("RESULT", flyte.with_runcontext(mode="local").run(add, x=41).outputs()[0])
'''


def test_a_task_of_the_environment_runs_through_the_sdks_local_execution(team, tmp_path):
    """``flyte.with_runcontext(mode="local").run``: the task's function runs in this process (the JobSet and its
    torchrun launcher are the backend's; locally the SDK runs the function alone)."""
    import subprocess
    import sys

    (tmp_path / "app.py").write_text(LOCAL_RUN, encoding="utf-8")
    done = subprocess.run([sys.executable, str(tmp_path / "app.py"), team], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RESULT 42" in done.stdout, done.stdout
