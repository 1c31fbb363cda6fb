"""The JobSet Flyte's backend creates for a registered clustered task (``flyte.clustered``, task type
``clustered-task``, version 1).

Restated from flyteorg/flyte at commit 6fadb90d65af26f4db908ec1c5f5af546a3e4299 (2026-08-21; the plugin's last change
403c41e, flyte#7849), ``flyteplugins/go/tasks/plugins/k8s/clustered``: ``build.go`` (``BuildResource``),
``failure.go`` (``buildFailurePolicy``), ``runtime_torch.go`` (``injectTorchRunEnv``, ``upsertEnv``),
``interconnect.go`` (``applyInterconnect``: every value but TCP only logs a warning) and ``util.go`` (the name's
bound), with the object metadata of ``executor/pkg/plugin/k8s/plugin_manager.go`` (``addObjectMetadata``). The pod
is flyte v2's ``flytek8s.ToK8sPodSpec`` (:func:`~.pod.build_pod_spec` with ``BackendConfig(flyte2=True)``), the
cluster's PodTemplate merged in as for any pod:

* one replicated job ``workers`` with ``replicas: 1``, whose Job runs ``parallelism = completions = replicas``
  pods, ``completionMode: Indexed`` (the pod's index is its node rank), ``backoffLimit: 0``;
* the pod's ``restartPolicy`` is ``Never`` and its ``subdomain`` the JobSet's name (``network.enableDNSHostnames``
  gives each pod a DNS name there), unless the pod template names a subdomain;
* the eight variables of :func:`torchrun_env` replace any entry of the same name in the primary container's ``env``
  (the others keep their place), new ones appended;
* ``failurePolicy.maxRestarts`` only when ``failure_policy.max_restarts`` > 0; ``ttlSecondsAfterFinished`` when
  given.

Kueue's annotations and labels reach the pods through the pod template: ``spec.replicatedJobs[0].template.spec.
template.metadata`` (:data:`POD_TEMPLATE_PATH`).
"""

from __future__ import annotations

import base64
import dataclasses
import re
from typing import Any

from ..errors import BackendError
from .config import BackendConfig, ExecutionContext
from .gojson import JSON
from .pod import build_pod_spec
from .pytorchjob import _union

API_VERSION = "jobset.x-k8s.io/v1alpha2"
TASK_TYPE = "clustered-task"
WORKERS = "workers"
"""``workersReplicatedJobName``: the one replicated job; pod names are ``<jobset>-workers-0-<index>``."""
POD_TEMPLATE_PATH = ("spec", "replicatedJobs", 0, "template", "spec", "template")
"""Where the pods' template sits in the JobSet: its ``metadata`` is what Kueue and the scheduler read."""
MASTER_PORT = "29500"
"""The rendezvous port, fixed by the plugin (runtime_torch.go); the SDK has no field for it."""
MAX_REPLICAS = 100000
"""``maxReplicasForNaming`` (util.go): more replicas are refused, their pod names could pass 63 characters."""
NAME_MAX_LENGTH = 63 - len(f"-{WORKERS}-0-{MAX_REPLICAS - 1}") - len("-abcde")
"""``generatedNameMaxLength`` (41): the JobSet's name leaves room for the longest pod name's suffix."""
PRIMARY_ANNOTATION = "flyte.org/primary-container"
_RDZV = {1: "c10d", "C10D": "c10d"}
_INT32_MAX = 2**31 - 1


def fixed_length_unique_id(name: str, max_length: int) -> str:
    """``encoding.FixedLengthUniqueID``: ``name`` when it fits, else ``f`` and its FNV-1a 32-bit hash in base32 (the
    alphabet ``a-z1-6``), as the plugin manager names a JobSet (``GetGeneratedNameWith(0, 41)``)."""
    if len(name) <= max_length:
        return name
    h = 0x811C9DC5
    for byte in name.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    encoded = base64.b32encode(h.to_bytes(4, "big")).decode().rstrip("=")
    return "f" + encoded.translate(str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "abcdefghijklmnopqrstuvwxyz123456"))


def clustered_custom(settings: Any) -> JSON:
    """The ``custom`` a clustered task registers for ``settings`` (:attr:`kfdefaults.Resolved.elastic_settings`),
    in protobuf JSON as ``flyte.clustered``'s ``ClusteredSettings.to_custom_dict`` writes it for the environment
    kfdefaults builds: zeros and ``false`` left out, enums by name, ``runtime`` and ``failurePolicy`` always."""
    def some(message: JSON) -> JSON:
        return {k: v for k, v in message.items() if v not in (0, False, None)}

    custom = {"replicas": int(str(settings.get("nnodes", 1)).split(":")[-1]),
              "nprocPerNode": settings.get("nproc_per_node", 1),
              "runtime": {"torchrun": some({"rdzvBackend": "C10D" if settings.get("rdzv_backend") == "c10d" else 0,
                                            "maxRestarts": settings.get("max_restarts", 0)})},
              "failurePolicy": some({"maxRestarts": settings.get("cluster_max_restarts", 0),
                                     "restartOnHostMaintenance": settings.get("restart_on_host_maintenance", False)})}
    ttl = (settings.get("run_policy") or {}).get("ttl_seconds_after_finished")
    return {**custom, "ttlSecondsAfterFinished": ttl} if ttl is not None else custom


def _field_env(name: str, path: str) -> JSON:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def torchrun_env(spec: JSON) -> list[JSON]:
    """``injectTorchRunEnv``: what the plugin writes into the primary container for the ``clustered`` launcher, from
    the task's ``custom`` (a ``ClusteredTaskSpec`` in protobuf JSON)."""
    torchrun = (spec.get("runtime") or {}).get("torchrun") or {}
    backend = _RDZV.get(torchrun.get("rdzvBackend", 0), "static")
    restarts = (spec.get("failurePolicy") or {}).get("maxRestarts", 0)
    return [{"name": "NNODES", "value": str(int(spec.get("replicas", 0)))},
            {"name": "NPROC_PER_NODE", "value": str(int(spec.get("nprocPerNode", 0)))},
            {"name": "MASTER_PORT", "value": MASTER_PORT},
            {"name": "RDZV_BACKEND", "value": backend},
            {"name": "JOBSET_MAX_RESTARTS", "value": str(int(restarts))},
            _field_env("JOBSET_NAME", "metadata.labels['jobset.sigs.k8s.io/jobset-name']"),
            _field_env("JOBSET_RESTART_ATTEMPT", "metadata.annotations['jobset.sigs.k8s.io/restart-attempt']"),
            _field_env("POD_NAMESPACE", "metadata.namespace")]


def upsert_env(existing: list[JSON], updates: list[JSON]) -> list[JSON]:
    """``upsertEnv``: each update replaces the entry of its name (the last of that name), or is appended."""
    out = list(existing)
    where = {e.get("name", ""): i for i, e in enumerate(out)}
    for entry in updates:
        if entry["name"] in where:
            out[where[entry["name"]]] = entry
        else:
            where[entry["name"]] = len(out)
            out.append(entry)
    return out


def failure_policy(spec: JSON) -> JSON | None:
    """``buildFailurePolicy``: ``{"maxRestarts": N}`` for N > 0, else none.

    Raises:
        BackendError: a negative ``max_restarts``.
    """
    restarts = int((spec.get("failurePolicy") or {}).get("maxRestarts", 0))
    if restarts < 0:
        raise BackendError(f"failure_policy.max_restarts must be >= 0, got {restarts}")
    return {"maxRestarts": restarts} if restarts else None


def _checked(spec: JSON) -> tuple[int, int]:
    replicas, nproc = int(spec.get("replicas", 0)), int(spec.get("nprocPerNode", 0))
    if replicas < 1:
        raise BackendError(f"replicas must be >= 1, got {replicas}")
    if replicas > MAX_REPLICAS:
        raise BackendError(f"replicas must be <= {MAX_REPLICAS}, got {replicas}")
    if nproc < 1:
        raise BackendError(f"nproc_per_node must be >= 1, got {nproc}")
    return replicas, nproc


def build_jobset(task_template: JSON, cluster_template: JSON | None = None, *, config: BackendConfig | None = None,
                 execution: ExecutionContext | None = None) -> JSON:
    """The JobSet the backend creates for a clustered task's TaskTemplate, without its ``status``.

    Args:
        task_template: The TaskTemplate as Flyte 2 registers it, in protobuf JSON (camelCase): ``type:
            clustered-task``, ``custom`` (the ``ClusteredTaskSpec``), ``config``, ``k8sPod``.
        cluster_template: The cluster's default PodTemplate manifest, or ``None``.
        config: The backend's configuration (flyte v2's defaults when ``None``; ``flyte2`` is set either way).
        execution: The execution (placeholders when ``None``; the JobSet's name ``<generated-name>``).

    Returns:
        ``{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": ..., "spec": {"network",
        "successPolicy", "failurePolicy"?, "replicatedJobs": [...], "ttlSecondsAfterFinished"?}}``.

    Raises:
        BackendError: what the backend refuses: ``replicas`` below 1 or above 100000, ``nproc_per_node`` below 1,
            no pod spec or primary container, a ``ttl_seconds_after_finished`` above int32, ``/dev/shm`` mounted
            twice.
    """
    cfg, ctx = dataclasses.replace(config or BackendConfig(), flyte2=True), execution or ExecutionContext()
    spec = task_template.get("custom") or {}
    replicas, _ = _checked(spec)
    pod = task_template.get("k8sPod") or {}
    if pod.get("podSpec") is None:
        raise BackendError("the model covers clustered tasks registered with a pod template (k8sPod.podSpec)")
    primary = (task_template.get("config") or {}).get("primary_container_name", "")
    metadata = pod.get("metadata") or {}
    pod_spec, pod_meta = build_pod_spec(pod["podSpec"], primary, metadata.get("labels"), metadata.get("annotations"),
                                        cluster_template, config=cfg, execution=ctx, task_id=task_template.get("id"),
                                        extended_resources=task_template.get("extendedResources"),
                                        task_config=task_template.get("config"))
    for key, values in (("labels", _union(cfg.default_labels, pod_meta.get("labels"), ctx.labels)),
                        ("annotations", _union(cfg.default_annotations, pod_meta.get("annotations"), ctx.annotations))):
        if values:
            pod_meta[key] = values
    container = next((c for c in pod_spec.get("containers") or [] if c.get("name", "") == primary), None)
    if container is None:
        raise BackendError(f"primary container {primary!r} not found in pod spec")
    container["env"] = upsert_env(container.get("env") or [], torchrun_env(spec))
    pod_spec["restartPolicy"] = "Never"
    name = fixed_length_unique_id(ctx.generated_name or "<generated-name>", NAME_MAX_LENGTH)
    pod_spec["subdomain"] = pod_spec.get("subdomain") or name
    job = {"parallelism": replicas, "completions": replicas, "completionMode": "Indexed", "backoffLimit": 0,
           "template": {**({"metadata": pod_meta} if pod_meta else {}), "spec": pod_spec}}
    body: JSON = {"network": {"enableDNSHostnames": True}, "successPolicy": {"operator": "All"}}
    policy = failure_policy(spec)
    if policy is not None:
        body["failurePolicy"] = policy
    body["replicatedJobs"] = [{"name": WORKERS, "replicas": 1, "template": {"spec": job}}]
    ttl = spec.get("ttlSecondsAfterFinished")
    if ttl is not None:
        if int(ttl) > _INT32_MAX:
            raise BackendError(f"ttl_seconds_after_finished {ttl} exceeds maximum allowed value")
        body["ttlSecondsAfterFinished"] = int(ttl)
    return {"apiVersion": API_VERSION, "kind": "JobSet", "metadata": _metadata(name, primary, cfg, ctx), "spec": body}


def _metadata(name: str, primary: str, cfg: BackendConfig, ctx: ExecutionContext) -> JSON:
    """The JobSet's own metadata: build.go's, then the plugin manager's (``addObjectMetadata``: the configuration's
    and the execution's labels and annotations)."""
    execution_name = ctx.execution_name if ctx.execution_name.startswith("<") else _label_value(ctx.execution_name)
    meta = {"name": name, "namespace": ctx.namespace,
            "labels": _union(cfg.default_labels, {"flyte.org/execution": execution_name}, ctx.labels),
            "annotations": _union(cfg.default_annotations, {"flyte.org/task-type": TASK_TYPE, PRIMARY_ANNOTATION: primary},
                                  ctx.annotations)}
    return {k: v for k, v in meta.items() if v}


def _label_value(value: str) -> str:
    """``sanitizeLabelValue`` (util.go): a valid label value, at most 63 characters, ``none`` for none."""
    if not value:
        return "none"
    s = re.sub(r"[^a-zA-Z0-9._-]", "-", value)
    s = "x" + s[1:] if s[0] in "._-" else s
    s = s[:-1] + "x" if s[-1] in "._-" else s
    s = s[:63]
    return s[:-1] + "x" if s[-1] in "._-" else s


def jobset_pod_template(jobset: JSON) -> JSON:
    """The pods' template of a JobSet (:data:`POD_TEMPLATE_PATH`): ``{"metadata"?, "spec"}``."""
    node: Any = jobset
    for part in POD_TEMPLATE_PATH:
        node = node[part]
    return node
