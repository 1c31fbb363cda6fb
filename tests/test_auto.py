"""``auto`` values: ``nproc_per_node``, ``OMP_NUM_THREADS`` and a ``/dev/shm`` ``sizeLimit`` worked out from the merged
profile; shown with their rule by ``--explain``; what the plugin receives is the value, checked on tasks that the
real flytekit serializes."""

from __future__ import annotations

import json
import textwrap
from collections import OrderedDict
from pathlib import Path

import pytest
from cli_runner import invoke


def write(folder: Path, name: str, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def render_json(*args: str) -> dict:
    result = invoke(["render", *args, "-o", "json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def primary(profile: dict) -> dict:
    return next(c for c in profile["pod_template"]["spec"]["containers"] if c["name"] == "primary")


@pytest.fixture
def team(tmp_path: Path) -> Path:
    write(tmp_path / "team", "gpu-auto.yaml", """\
        extends: gpu-large
        elastic:
          nproc_per_node: auto
        pod_template:
          spec:
            containers:
              - name: primary
                env:
                  - {name: OMP_NUM_THREADS, value: auto}
                resources:
                  requests: {cpu: "64", memory: 480Gi}
        """)
    return tmp_path / "team"


def test_nproc_per_node_auto_is_the_merged_gpu_limit_and_follows_a_higher_layer(team):
    merged = render_json("gpu-auto", "--team", str(team))
    assert merged["elastic"]["nproc_per_node"] == 8  # gpu-large's nvidia.com/gpu: 8
    assert primary(merged)["env"] == [{"name": "OMP_NUM_THREADS", "value": "8"}]  # 64 cpus / 8 workers
    assert merged["pod_template"]["spec"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "480Gi"}}]
    fewer = render_json("gpu-auto", "--team", str(team),
                        "--set", 'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"=4',
                        "--set", 'pod_template.spec.containers[name=primary].resources.requests."nvidia.com/gpu"=4')
    assert fewer["elastic"]["nproc_per_node"] == 4
    assert primary(fewer)["env"] == [{"name": "OMP_NUM_THREADS", "value": "16"}]


def test_without_gpus_nproc_per_node_auto_is_the_cpu_request_and_at_least_one(tmp_path):
    write(tmp_path / "team", "cpu-auto.yaml", """\
        extends: cpu-small
        elastic:
          nproc_per_node: auto
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  requests: {cpu: 3500m}
        """)
    merged = render_json("cpu-auto", "--team", str(tmp_path / "team"))
    assert merged["elastic"]["nproc_per_node"] == 3
    assert primary(merged)["env"] == [{"name": "OMP_NUM_THREADS", "value": "1"}]  # cpu-small's auto: 3.5 / 3
    small = render_json("cpu-auto", "--team", str(tmp_path / "team"),
                        "--set", "pod_template.spec.containers[name=primary].resources.requests.cpu=500m")
    assert small["elastic"]["nproc_per_node"] == 1
    bare = render_json("elastic-gpu-default", "--set", "elastic.nproc_per_node=auto")
    assert bare["elastic"]["nproc_per_node"] == 1


def test_the_builtins_auto_values():
    cpu_small = render_json("cpu-small")
    assert primary(cpu_small)["env"] == [{"name": "OMP_NUM_THREADS", "value": "1"}]  # 2 cpus / 2 workers
    more = render_json("cpu-small", "--set", "pod_template.spec.containers[name=primary].resources.requests.cpu=8")
    assert primary(more)["env"] == [{"name": "OMP_NUM_THREADS", "value": "4"}]
    gpu_large = render_json("gpu-large")  # no memory set: no sizeLimit, as before
    assert gpu_large["pod_template"]["spec"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    with_memory = render_json("gpu-large", "--set", "pod_template.spec.containers[name=primary].resources.limits.memory=64Gi")
    assert with_memory["pod_template"]["spec"]["volumes"][0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "64Gi"}
    explicit = render_json("gpu-large", "--set", "pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit=8Gi",
                           "--set", "pod_template.spec.containers[name=primary].resources.limits.memory=64Gi")
    assert explicit["pod_template"]["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == "8Gi"


def test_size_limit_auto_on_a_volume_on_disk_sets_no_limit(tmp_path):
    write(tmp_path / "team", "scratch.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources: {requests: {memory: 4Gi}}
                volumeMounts: [{name: scratch, mountPath: /scratch}]
            volumes:
              - {name: scratch, emptyDir: {sizeLimit: auto}}
        """)
    merged = render_json("scratch", "--team", str(tmp_path / "team"))
    assert merged["pod_template"]["spec"]["volumes"] == [{"name": "scratch", "emptyDir": {}}]


def test_explain_shows_each_rule(team):
    result = invoke(["render", "gpu-auto", "--team", str(team), "--explain"])
    assert result.exit_code == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines()}
    file = team / "gpu-auto.yaml"
    assert rows["elastic.nproc_per_node"].split() == [
        "elastic.nproc_per_node", "8", "team", f"{file}:3", "auto:", "the", "nvidia.com/gpu", "limit", "of", "the",
        "primary", "container", "`primary`"]
    assert rows["pod_template.spec.containers[name=primary].env[name=OMP_NUM_THREADS].value"].endswith(
        "auto: cpu request 64 / nproc_per_node 8, rounded down, at least 1")
    assert rows["pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit"].endswith(
        "auto: the memory request of container `primary`, which mounts it")
    data = json.loads(invoke(["render", "gpu-auto", "--team", str(team), "--explain", "-o", "json"]).stdout)
    [leaf] = [leaf for leaf in data["leaves"] if leaf["path"] == "elastic.nproc_per_node"]
    assert leaf["value"] == 8 and leaf["note"].startswith("auto: the nvidia.com/gpu limit")


@pytest.mark.parametrize("text, message", [
    ("elastic:\n  nproc_per_node: Auto\n", "Input should be a valid integer or auto"),
    ("elastic:\n  nproc_per_node: '8'\n", "without quotes"),
    ("pod_template:\n  spec:\n    volumes: [{name: a, emptyDir: {sizeLimit: autox}}]\n", "autox"),
])
def test_only_auto_is_auto(tmp_path, text, message):
    path = write(tmp_path, "p.yaml", text)
    result = invoke(["validate", path])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert message in result.stderr and result.stderr.startswith(f"{path}:")


# --- what the plugin receives ---------------------------------------------------------------------------------------


def serialized(t):
    from flytekit.configuration import ImageConfig, SerializationSettings
    from flytekit.tools.translator import get_serializable

    return get_serializable(OrderedDict(), SerializationSettings(image_config=ImageConfig.auto_default_image()), t).template


def _body() -> None: ...


def test_the_plugin_receives_an_int_that_render_showed(team):
    from flytekit import task

    from kfdefaults import Elastic

    config = Elastic(profile="gpu-large", nproc_per_node="auto")
    assert config.nproc_per_node == 8 and isinstance(config.nproc_per_node, int)
    tt = serialized(task(task_config=config)(_body))
    assert tt.custom["elasticConfig"]["nprocPerNode"] == 8
    rendered = render_json("gpu-large", "--set", "elastic.nproc_per_node=auto")
    assert rendered["elastic"]["nproc_per_node"] == 8
    [container] = tt.k8s_pod.pod_spec["containers"]
    [carried] = [e["value"] for e in container["env"] if e["name"] == "KFDEFAULTS_ELASTIC"]
    assert json.loads(carried)["elastic"]["nproc_per_node"] == 8  # what the pod runs with


def test_nproc_per_node_auto_follows_the_tasks_own_gpus(team):
    from flytekit import PodTemplate, Resources, task
    from kubernetes.client import V1Container, V1PodSpec, V1ResourceRequirements

    from kfdefaults import Elastic

    config = Elastic(profile="gpu-auto", team=[str(team)])
    by_limits = serialized(task(task_config=config, limits=Resources(gpu="2"), requests=Resources(gpu="2"))(_body))
    assert by_limits.custom["elasticConfig"]["nprocPerNode"] == 2
    assert config.nproc_per_node == 8  # the config object passed in is not changed
    by_template = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(
        name="primary", resources=V1ResourceRequirements(limits={"nvidia.com/gpu": "4"}, requests={"nvidia.com/gpu": "4"}))]))
    tt = serialized(task(task_config=Elastic(profile="gpu-auto", team=[str(team)]), pod_template=by_template)(_body))
    assert tt.custom["elasticConfig"]["nprocPerNode"] == 4
    [container] = tt.k8s_pod.pod_spec["containers"]
    assert {"name": "OMP_NUM_THREADS", "value": "16"} in container["env"]
