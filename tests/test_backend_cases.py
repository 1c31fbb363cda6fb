"""What Flyte's backend would break in a kfdefaults task, case by case, and what kfdefaults does about each.

Every case runs a real task: defined with ``kfdefaults.Elastic``, serialized by flytekit's translator as
``pyflyte register`` does, then turned into the PyTorchJob by the backend model (whose merge
tests/test_backend_mergo.py checks against Go's mergo). Each case first shows the problem on what the backend
would do without kfdefaults' care, then what kfdefaults does.
"""

from __future__ import annotations

import re

from kfdefaults.errors import BackendError
import warnings
from collections import OrderedDict

import pytest
import yaml
from cli_runner import invoke
from flytekit import task
from flytekit.configuration import ImageConfig, SerializationSettings
from flytekit.tools.translator import get_serializable
from google.protobuf.json_format import MessageToDict

import kfdefaults
from kfdefaults import Elastic
from kfdefaults.backend.pytorchjob import build_pytorch_job
from kfdefaults.settings import CLUSTER_TEMPLATE_ENV

SETTINGS = SerializationSettings(image_config=ImageConfig.auto_default_image())
DSHM_MOUNT = {"name": "dshm", "mountPath": "/dev/shm"}


def cluster_template(spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "flyte-default", "namespace": "flyte"},
            "template": {"spec": spec}}


SHM_ON = {
    "default": cluster_template({"containers": [{"name": "default", "volumeMounts": [DSHM_MOUNT]}],
                                 "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}),
    "primary": cluster_template({"containers": [{"name": "primary", "volumeMounts": [DSHM_MOUNT]}],
                                 "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}),
}
DSHM_VOLUME_ONLY = cluster_template({"volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]})


def task_template(config: Elastic, **task_kwargs) -> dict:
    """The TaskTemplate a task on ``config`` registers, in protobuf JSON (as the backend reads it)."""
    def body() -> None: ...

    defined = task(task_config=config, **task_kwargs)(body)
    return MessageToDict(get_serializable(OrderedDict(), SETTINGS, defined).template.to_flyte_idl())


def worker_pod(job: dict) -> dict:
    return job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]


def mounts_at(container: dict, path: str) -> list[dict]:
    return [m for m in container.get("volumeMounts") or [] if m["mountPath"] == path]


@pytest.fixture
def cluster_file(tmp_path, monkeypatch):
    """Write a cluster template and name it as the platform would (``KFDEFAULTS_CLUSTER_TEMPLATE``)."""
    def write(manifest: dict) -> str:
        path = tmp_path / "cluster-template.yaml"
        path.write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
        monkeypatch.setenv(CLUSTER_TEMPLATE_ENV, str(path))
        return str(path)

    return write


def team_folder(tmp_path, name: str, text: str) -> str:
    folder = tmp_path / "team"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    return str(folder)


@pytest.mark.parametrize("container", ["default", "primary"])
def test_a_cluster_template_mounting_dev_shm_gives_one_mount(container, cluster_file):
    template = SHM_ON[container]
    unaware = worker_pod(build_pytorch_job(task_template(Elastic(profile="gpu-large")), template))
    (pytorch,) = unaware["containers"]
    assert len(mounts_at(pytorch, "/dev/shm")) == 2  # the API server rejects this pod
    assert [v["name"] for v in unaware["volumes"]] == ["dshm", "dshm"]

    path = cluster_file(template)
    config = Elastic(profile="gpu-large")
    spec = worker_pod(build_pytorch_job(task_template(config), template))
    (pytorch,) = spec["containers"]
    assert mounts_at(pytorch, "/dev/shm") == [DSHM_MOUNT]
    assert [v["name"] for v in spec["volumes"]] == ["dshm"]
    # said in --explain: removed by the cluster layer, at the template's mount
    explained = invoke(["render", "gpu-large", "--explain"])
    line = next(x for x in explained.stdout.splitlines() if "volumeMounts[mountPath=/dev/shm].mountPath" in x)
    assert f"removed by cluster {path}:" in line


def test_a_template_with_only_a_dshm_volume_leaves_one(cluster_file):
    unaware = worker_pod(build_pytorch_job(task_template(Elastic(profile="gpu-large")), DSHM_VOLUME_ONLY))
    assert [v["name"] for v in unaware["volumes"]] == ["dshm", "dshm"]

    cluster_file(DSHM_VOLUME_ONLY)
    spec = worker_pod(build_pytorch_job(task_template(Elastic(profile="gpu-large")), DSHM_VOLUME_ONLY))
    assert spec["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]  # the cluster's
    assert mounts_at(spec["containers"][0], "/dev/shm") == [DSHM_MOUNT]  # the profile's mount, on it


def test_shared_memory_with_a_cluster_dev_shm_is_refused_at_definition(cluster_file):
    template = SHM_ON["default"]
    # the backend adds Flyte's volume after the merge and fails the task
    with pytest.warns(kfdefaults.KfdefaultsWarning, match="wins over the /dev/shm volume 'dshm'"):
        plain = task_template(Elastic(profile="gpu-large"), shared_memory=True)
    with pytest.raises(BackendError, match="/dev/shm is already mounted in container"):
        build_pytorch_job(plain, template)
    # without a cluster /dev/shm the task layer wins, as before: Flyte's volume only
    spec = worker_pod(build_pytorch_job(plain, None))
    assert [v["name"] for v in spec["volumes"]] == ["flyte-shared-memory"]

    path = cluster_file(template)
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        task_template(Elastic(profile="gpu-large"), shared_memory=True)
    (finding,) = excinfo.value.findings
    assert finding.location.file == path
    with open(path, encoding="utf-8") as f:
        assert "/dev/shm" in f.read().splitlines()[finding.location.line - 1]  # the template's mount
    assert "drop shared_memory=" in finding.message


MAIN_AND_SIDECARS = """\
elastic:
  nnodes: 2
pod_template:
  primary_container_name: main
  spec:
    containers:
      - name: main
        image: registry.example.com/train:1
        env:
          - name: FROM_PROFILE
            value: "1"
      - name: log-shipper
        image: registry.example.com/log-shipper:1
    initContainers:
      - name: fetch
        image: busybox
"""


def test_pod_template_name_keeps_only_primary_and_default(tmp_path):
    team = team_folder(tmp_path, "trainer", MAIN_AND_SIDECARS)
    rendered = invoke(["render", "trainer", "--team", team, "--as", "podtemplate"])
    assert rendered.exit_code == 0, rendered.output
    said = " ".join(rendered.stderr.split())  # the warnings' words, however their lines are wrapped
    dropped = re.findall(r"(\S+): \[team\] (\S+): warning: dropped when this PodTemplate is named", said)
    assert [key for _, key in dropped] == [
        "pod_template.spec.containers[name=main]", "pod_template.spec.containers[name=log-shipper]",
        "pod_template.spec.initContainers[name=fetch]"]
    assert dropped[0][0].startswith(f"{team}/trainer.yaml:7:")  # the container main, the primary
    # what the backend does with it: a plain task naming it gets none of the three
    manifest = yaml.safe_load(rendered.stdout)
    plain = {"containers": [{"name": "primary", "image": "task:1"}]}
    tt = {"taskTypeVersion": 1, "custom": {"workerReplicas": {"replicas": 1}}, "config": {"primary_container_name": "primary"},
          "k8sPod": {"podSpec": plain}}
    spec = build_pytorch_job(tt, manifest)["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["pytorch"] and "initContainers" not in spec
    assert spec["containers"][0]["image"] == "task:1"
    assert "FROM_PROFILE" not in {e["name"] for e in spec["containers"][0]["env"]}


PYTORCH_SIDECAR = """\
elastic:
  nnodes: 2
pod_template:
  spec:
    containers:
      - name: primary
        image: registry.example.com/train:1
      - name: pytorch
        image: registry.example.com/metrics:1
"""


def test_a_sidecar_named_pytorch_is_an_error_when_multi_node(tmp_path):
    team = team_folder(tmp_path, "metrics", PYTORCH_SIDECAR)
    # what the backend would build: two containers named pytorch
    unaware = {"taskTypeVersion": 1, "config": {"primary_container_name": "primary"},
               "custom": {"elasticConfig": {"minReplicas": 2, "maxReplicas": 2}, "workerReplicas": {"replicas": 2}},
               "k8sPod": {"podSpec": kfdefaults.resolve("metrics", team=[team], overrides={"elastic": {"nnodes": 1}}).pod_spec}}
    assert [c["name"] for c in worker_pod(build_pytorch_job(unaware))["containers"]] == ["pytorch", "pytorch"]

    rendered = invoke(["render", "metrics", "--team", team])
    assert rendered.exit_code == 1 and rendered.stdout == ""
    assert rendered.stderr.startswith(f"{team}/metrics.yaml:8:15: [team] pod_template.spec.containers[name=pytorch]: "
                                      "a container named `pytorch` beside the primary container `primary`")
    validated = invoke(["validate", team])
    assert validated.exit_code == 1 and "a container named `pytorch` beside" in validated.stderr
    with pytest.raises(kfdefaults.ProfileError, match="renames the primary container `pytorch`"):
        Elastic(profile="metrics", team=[team])
    assert invoke(["render", "metrics", "--team", team, "--set", "elastic.nnodes=1"]).exit_code == 0  # one pod: fine


SIDECAR_FIRST = """\
elastic:
  nnodes: 2
pod_template:
  spec:
    containers:
      - name: side
        image: busybox
      - name: primary
        image: registry.example.com/train:1
"""


def test_the_primary_container_is_registered_first(tmp_path):
    team = team_folder(tmp_path, "sidecar-first", SIDECAR_FIRST)
    worker_name = {"name": "_F_WN", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    unaware = {"taskTypeVersion": 1, "config": {"primary_container_name": "primary"},
               "custom": {"elasticConfig": {"minReplicas": 2, "maxReplicas": 2}, "workerReplicas": {"replicas": 2}},
               "k8sPod": {"podSpec": kfdefaults.resolve("sidecar-first", team=[team]).pod_spec}}
    side, pytorch = worker_pod(build_pytorch_job(unaware))["containers"]
    assert worker_name in side["env"] and worker_name not in pytorch["env"]

    tt = task_template(Elastic(profile="sidecar-first", team=[team]))
    assert [c["name"] for c in tt["k8sPod"]["podSpec"]["containers"]] == ["primary", "side"]
    pytorch, side = worker_pod(build_pytorch_job(tt))["containers"]
    assert pytorch["name"] == "pytorch" and worker_name in pytorch["env"] and worker_name not in side["env"]


def test_render_as_pytorchjob(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(SHM_ON["default"]), encoding="utf-8")
    result = invoke(["render", "gpu-large", "--as", "pytorchjob", "--cluster-template", str(path)])
    assert result.exit_code == 0, result.output
    job = yaml.safe_load(result.stdout)
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
    assert job["spec"]["elasticPolicy"] == {"minReplicas": 1, "maxReplicas": 4, "rdzvBackend": "c10d", "nProcPerNode": 8,
                                            "maxRestarts": 3}
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 4
    (pytorch,) = worker["template"]["spec"]["containers"]
    assert mounts_at(pytorch, "/dev/shm") == [DSHM_MOUNT]
    assert pytorch["resources"]["limits"]["nvidia.com/gpu"] == "8"
    single = invoke(["render", "cpu-small", "--as", "pytorchjob"])
    assert single.exit_code == 1 and "runs as one pod (nnodes: 1), not as a PyTorchJob" in single.stderr
    assert single.stdout == ""


def test_flytekit_registers_what_render_as_flyte_prints(tmp_path, monkeypatch):
    """--as pytorchjob starts from the same TaskTemplate as --as flyte, which defines a real task."""
    rendered = yaml.safe_load(invoke(["render", "gpu-large", "--as", "flyte"]).stdout)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = task_template(Elastic(profile="gpu-large"))
    assert rendered["k8sPod"]["podSpec"]["containers"][0]["volumeMounts"] == direct["k8sPod"]["podSpec"]["containers"][0]["volumeMounts"]
    assert rendered["custom"] == direct["custom"]
