"""The parts of the backend model that the mergo oracle does not cover: what flyteplugins v1.16.8 does around the
merge (pod_helper.go, container_helper.go, the PyTorch plugin), one behaviour per test, each read from its source."""

from __future__ import annotations

import pytest

from kfdefaults.backend.config import BackendConfig
from kfdefaults.backend.gojson import canonical_quantity
from kfdefaults.backend.pytorchjob import build_pytorch_job

PRIMARY = {"name": "primary", "image": "img:1", "resources": {"requests": {"cpu": "2", "memory": "8Gi"},
                                                           "limits": {"cpu": "2", "memory": "8Gi"}}}
DSHM_MOUNT = {"name": "dshm", "mountPath": "/dev/shm"}
DSHM_VOLUME = {"name": "dshm", "emptyDir": {"medium": "Memory"}}


def task(pod_spec: dict, custom: dict | None = None, primary: str = "primary") -> dict:
    """A TaskTemplate as flytekitplugins-kfpytorch 1.16 registers Elastic(nnodes="2:4", nproc_per_node=8)."""
    return {"type": "pytorch", "taskTypeVersion": 1, "config": {"primary_container_name": primary},
            "custom": custom or {"elasticConfig": {"rdzvBackend": "c10d", "minReplicas": 2.0, "maxReplicas": 4.0,
                                                   "nprocPerNode": 8.0, "maxRestarts": 3.0},
                                 "workerReplicas": {"replicas": 4.0}},
            "k8sPod": {"podSpec": pod_spec}}


def template(spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": "PodTemplate", "template": {"spec": spec}}


def worker(job: dict) -> dict:
    return job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]


@pytest.mark.parametrize("text, written", [("1000m", "1"), ("1.5", "1500m"), ("1024Mi", "1Gi"), ("1536Mi", "1536Mi"),
                                           ("0.5Ki", "512"), ("1e3", "1e3"), ("1500000", "1500k"), ("0", "0")])
def test_quantities_are_written_as_the_go_type_writes_them(text, written):
    """resource.Quantity's CanonicalizeBytes: the backend's JSON holds the canonical text."""
    assert canonical_quantity(text) == written


def test_an_elastic_job_has_workers_only():
    """pytorch.go BuildResource: with an elastic policy the Master replica spec is deleted."""
    custom = {"elasticConfig": {"rdzvBackend": "c10d", "minReplicas": 2, "maxReplicas": 4, "nprocPerNode": 8, "maxRestarts": 3},
              "workerReplicas": {"replicas": 4},
              "runPolicy": {"cleanPodPolicy": "CLEANPOD_POLICY_ALL", "ttlSecondsAfterFinished": 600, "backoffLimit": 2}}
    job = build_pytorch_job(task({"containers": [PRIMARY]}, custom))
    assert list(job["spec"]["pytorchReplicaSpecs"]) == ["Worker"]
    assert job["spec"]["runPolicy"] == {"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 600, "backoffLimit": 2}
    assert job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 4
    spec = worker(job)
    assert spec["restartPolicy"] == "Never" and spec["affinity"] == {}  # UpdatePod; affinity is never nil after it
    assert build_pytorch_job(task({"containers": [PRIMARY]}))["spec"]["runPolicy"] == {}


def test_a_job_without_elastic_policy_keeps_its_master():
    custom = {"workerReplicas": {"replicas": 2, "restartPolicy": "RESTART_POLICY_ON_FAILURE"}, "masterReplicas": {"replicas": 5}}
    replicas = build_pytorch_job(task({"containers": [PRIMARY]}, custom))["spec"]["pytorchReplicaSpecs"]
    assert (replicas["Master"]["replicas"], replicas["Worker"]["replicas"]) == (1, 2)  # a master is always one
    assert (replicas["Master"]["restartPolicy"], replicas["Worker"]["restartPolicy"]) == ("Never", "OnFailure")
    assert not any(e["name"] == "_F_WN" for e in replicas["Master"]["template"]["spec"]["containers"][0]["env"])


def test_sidecars_get_zero_cpu_and_memory_and_the_primary_the_default_request():
    """container_helper.go: other containers keep theirs in range ("0" when unset); the primary gets the platform's
    default request (1 CPU, 1Gi) where it has none, and a limit equal to its request."""
    spec = worker(build_pytorch_job(task({"containers": [{"name": "primary"}, {"name": "side", "image": "busybox"}]})))
    primary, side = spec["containers"]
    assert side["resources"] == {"limits": {"cpu": "0", "memory": "0"}, "requests": {"cpu": "0", "memory": "0"}}
    assert primary["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}


def test_flyteplugins_before_v1_16_3_layer_a_primary_template_twice():
    """v1.16.0-v1.16.2: the same-name loop did not skip the primary, so a "primary" template is merged twice."""
    tt = task({"containers": [dict(PRIMARY, volumeMounts=[DSHM_MOUNT])], "volumes": [DSHM_VOLUME]})
    tpl = template({"containers": [{"name": "primary", "volumeMounts": [DSHM_MOUNT]}], "volumes": [DSHM_VOLUME]})
    assert worker(build_pytorch_job(tt, tpl, config=BackendConfig(flyteplugins_patch=2)))["containers"][0]["volumeMounts"] == [DSHM_MOUNT] * 3
    assert worker(build_pytorch_job(tt, tpl))["containers"][0]["volumeMounts"] == [DSHM_MOUNT] * 2


def test_a_template_container_of_a_sidecars_name_is_laid_under_it_and_others_are_dropped():
    tpl = template({"containers": [{"name": "main", "image": "renamed-primary:1"}, {"name": "log-shipper", "image": "fluentbit"}],
                    "initContainers": [{"name": "fetch", "image": "busybox"}], "volumes": [{"name": "logs", "emptyDir": {}}]})
    spec = worker(build_pytorch_job(task({"containers": [PRIMARY]}), tpl))
    assert [c["name"] for c in spec["containers"]] == ["pytorch"] and "initContainers" not in spec
    assert spec["volumes"] == [{"name": "logs", "emptyDir": {}}]  # pod-level fields are kept
    spec = worker(build_pytorch_job(task({"containers": [PRIMARY, {"name": "log-shipper"}],
                                          "initContainers": [{"name": "fetch", "args": ["x"]}]}), tpl))
    assert [(c["name"], c.get("image")) for c in spec["containers"]] == [("pytorch", "img:1"), ("log-shipper", "fluentbit")]
    assert [(c["name"], c["image"], c["args"]) for c in spec["initContainers"]] == [("fetch", "busybox", ["x"])]


def test_a_replica_image_goes_to_every_container_named_pytorch():
    custom = {"elasticConfig": {"minReplicas": 2, "maxReplicas": 2}, "workerReplicas": {"replicas": 2, "image": "override:2"}}
    spec = worker(build_pytorch_job(task({"containers": [PRIMARY, {"name": "pytorch", "image": "sidecar:1"}]}, custom)))
    assert [(c["name"], c["image"]) for c in spec["containers"]] == [("pytorch", "override:2"), ("pytorch", "override:2")]
