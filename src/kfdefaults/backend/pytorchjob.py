"""The PyTorchJob Flyte's backend creates for a registered PyTorch task (task type version 1).

Restated from flyteplugins v1.16.8 ``go/tasks/plugins/k8s/kfoperators/pytorch/pytorch.go`` (``BuildResource``,
lines 56-201) and ``kfoperators/common/common_operator.go`` (lines 208-377), with the object metadata of
flytepropeller's ``plugin_manager.go`` (lines 114-134):

* each replica spec is built by a whole, separate :func:`~.pod.build_pod_spec` (master first, then worker);
* the **first** container named like the primary is renamed ``pytorch``; a container already named ``pytorch``
  stays, so the pod can have two;
* ``_F_WN`` (``FLYTE_INTERNAL_WORKER_NAME``) is appended to ``containers[0]`` of the worker replica, whatever
  that container is: a sidecar listed before the primary gets it;
* with an elastic policy (what ``Elastic`` with more than one node registers) the ``Master`` replica is removed:
  the job has ``Worker`` replicas only, as many as the maximum number of nodes.
"""

from __future__ import annotations

from ..errors import BackendError
import copy
from typing import Any

from .config import BackendConfig, ExecutionContext
from .container import apply_resource_overrides
from .gojson import JSON, parse_quantity
from .pod import build_pod_spec
from .registered import PYTORCH_CONTAINER

WORKER_NAME_ENV = "_F_WN"
"""``FLYTE_INTERNAL_WORKER_NAME``, set from the pod's name on the worker's first container."""
DIST_ERROR_STRATEGY_ENV = "_F_DES"

_RESTART = {0: "Never", 1: "OnFailure", 2: "Always", "RESTART_POLICY_NEVER": "Never",
            "RESTART_POLICY_ON_FAILURE": "OnFailure", "RESTART_POLICY_ALWAYS": "Always"}
_CLEAN_POD = {0: "None", 1: "Running", 2: "All", "CLEANPOD_POLICY_NONE": "None",
              "CLEANPOD_POLICY_RUNNING": "Running", "CLEANPOD_POLICY_ALL": "All"}
_IDL_RESOURCE = {"CPU": "cpu", "MEMORY": "memory", "GPU": "nvidia.com/gpu", "EPHEMERAL_STORAGE": "ephemeral-storage",
                 1: "cpu", 2: "nvidia.com/gpu", 3: "memory", 5: "ephemeral-storage"}


def _int(v: Any) -> int:
    return int(v or 0)


def _idl_resources(resources: JSON | None) -> JSON | None:
    """``ToK8sResourceRequirements``: flyteidl ``Resources`` (protobuf JSON) -> requests and limits."""
    if not resources or not (resources.get("requests") or resources.get("limits")):
        return None
    out: JSON = {"requests": {}, "limits": {}}
    for part in ("requests", "limits"):
        for entry in resources.get(part) or []:
            name = _IDL_RESOURCE.get(entry.get("name", "UNKNOWN"))
            value = str(entry.get("value", ""))
            if name and parse_quantity(value) != 0:
                out[part][name] = value
    return out


def _union(*maps: dict[str, str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in maps:
        out.update(m or {})
    return out


def build_replica_spec(task_template: JSON, replica: JSON | None, is_master: bool, cluster_template: JSON | None,
                       cfg: BackendConfig, ctx: ExecutionContext) -> JSON:
    """``common.ToReplicaSpecWithOverrides``: the kubeflow ``ReplicaSpec`` of the master or the workers.

    Args:
        task_template: The TaskTemplate (protobuf JSON).
        replica: The ``masterReplicas`` / ``workerReplicas`` entry of its ``custom``.
        is_master: Master replicas are forced to 1.
        cluster_template: The cluster's default PodTemplate manifest, or ``None``.
        cfg: The backend's configuration.
        ctx: The execution.
    """
    rs = replica or {}
    src = rs.get("common") if rs.get("common") is not None else rs
    ctx = copy.copy(ctx)
    resources = _idl_resources(src.get("resources"))
    if resources is not None:
        ctx.override_resources = apply_resource_overrides(resources, ctx.platform_resources, cfg, True)
    pod = task_template.get("k8sPod") or {}
    metadata = pod.get("metadata") or {}
    primary = task_template["config"]["primary_container_name"]
    spec, meta = build_pod_spec(pod["podSpec"], primary, metadata.get("labels"), metadata.get("annotations"),
                                cluster_template, config=cfg, execution=ctx, task_id=task_template.get("id"),
                                extended_resources=task_template.get("extendedResources"),
                                task_config=task_template.get("config"))
    for c in spec.get("containers") or []:  # OverridePrimaryContainerName: the first match only
        if c.get("name", "") == primary:
            c["name"] = PYTORCH_CONTAINER
            break
    meta = dict(meta)
    for key, values in (("annotations", _union(cfg.default_annotations, meta.get("annotations"), ctx.annotations)),
                        ("labels", _union(cfg.default_labels, meta.get("labels"), ctx.labels))):
        if values:
            meta[key] = values
        else:
            meta.pop(key, None)
    image = src.get("image") or ""
    if image:
        for c in spec.get("containers") or []:  # OverrideContainerSpec: every container named pytorch
            if c.get("name", "") == PYTORCH_CONTAINER:
                c["image"] = image
    template: JSON = {"metadata": meta} if meta else {}
    template["spec"] = spec
    return {"replicas": 1 if is_master else _int(src.get("replicas")), "template": template,
            "restartPolicy": _RESTART.get(src.get("restartPolicy", 0), "")}


def run_policy(policy: JSON) -> JSON:
    """``common.ParseRunPolicy``: ``cleanPodPolicy`` always written (``None`` by default); zero numbers left out."""
    out: JSON = {"cleanPodPolicy": _CLEAN_POD.get(policy.get("cleanPodPolicy", 0), "")}
    for key in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"):
        if _int(policy.get(key)):
            out[key] = _int(policy[key])
    return out


def elastic_policy(config: JSON) -> JSON:
    """``ParseElasticConfig``: five pointers, written even when zero."""
    return {"minReplicas": _int(config.get("minReplicas")), "maxReplicas": _int(config.get("maxReplicas")),
            "rdzvBackend": config.get("rdzvBackend") or "", "nProcPerNode": _int(config.get("nprocPerNode")),
            "maxRestarts": _int(config.get("maxRestarts"))}


def build_pytorch_job(task_template: JSON, cluster_template: JSON | None = None, *, config: BackendConfig | None = None,
                      execution: ExecutionContext | None = None) -> JSON:
    """The PyTorchJob the backend creates for a TaskTemplate, without its ``status``.

    Args:
        task_template: The TaskTemplate as flytekit registers it, in protobuf JSON (camelCase): ``type: pytorch``,
            ``taskTypeVersion: 1``, ``custom``, ``config``, ``k8sPod``, ``extendedResources``.
        cluster_template: The cluster's default PodTemplate manifest, or ``None``.
        config: The backend's configuration (flyteplugins' defaults when ``None``).
        execution: The execution (placeholders when ``None``).

    Returns:
        ``{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": ..., "spec": {"runPolicy",
        "elasticPolicy"?, "pytorchReplicaSpecs": {"Worker": ..., "Master"?: ...}}}``.

    Raises:
        BackendError: what the backend refuses (another task type version, no pod spec, no primary container,
            ``/dev/shm`` already mounted, ...).
    """
    cfg, ctx = config or BackendConfig(), execution or ExecutionContext()
    if _int(task_template.get("taskTypeVersion")) != 1:
        raise BackendError(f"the model covers PyTorch tasks of type version 1 (got {task_template.get('taskTypeVersion')})")
    custom = task_template.get("custom") or {}
    if "primary_container_name" not in (task_template.get("config") or {}):
        raise BackendError("invalid TaskSpecification, config missing [primary_container_name] key")
    if (task_template.get("k8sPod") or {}).get("podSpec") is None:
        raise BackendError("Pod tasks with task type version > 1 should specify their target as a K8sPod with a defined pod spec")
    master = build_replica_spec(task_template, custom.get("masterReplicas"), True, cluster_template, cfg, ctx)
    worker = build_replica_spec(task_template, custom.get("workerReplicas"), False, cluster_template, cfg, ctx)
    first = worker["template"]["spec"]["containers"][0]  # updateEnvVars: whichever container is first
    first["env"] = list(first.get("env") or []) + [{"name": WORKER_NAME_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    if cfg.enable_distributed_error_aggregation:
        first["env"].append({"name": DIST_ERROR_STRATEGY_ENV, "value": "Earliest"})
    replicas = {"Master": master, **({"Worker": worker} if worker["replicas"] > 0 else {})}
    spec: JSON = {"runPolicy": run_policy(custom["runPolicy"]) if custom.get("runPolicy") is not None else {}}
    if custom.get("elasticConfig") is not None:
        spec["elasticPolicy"] = elastic_policy(custom["elasticConfig"])
        del replicas["Master"]
    spec["pytorchReplicaSpecs"] = replicas
    for r in replicas.values():
        if not r["restartPolicy"]:
            del r["restartPolicy"]
    k8s_meta = (task_template.get("metadata") or {}).get("metadata") or {}
    labels = _union(cfg.default_labels, k8s_meta.get("labels"), ctx.labels)
    annotations = _union(cfg.default_annotations, k8s_meta.get("annotations"), ctx.annotations)
    metadata = {k: v for k, v in (("name", ctx.generated_name), ("namespace", ctx.namespace), ("labels", labels),
                                  ("annotations", annotations)) if v}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": metadata, "spec": spec}
