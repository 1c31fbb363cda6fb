"""The pod spec Flyte's backend builds for a task with a pod template: ``flytek8s.ToK8sPodSpec``.

Restated from flyteplugins v1.16.8 ``pluginmachinery/flytek8s/pod_helper.go``, in its order:

1. ``BuildRawPod`` (lines 316-397): the registered ``k8sPod.podSpec`` read into a ``v1.PodSpec``
   (:func:`~.gojson.decode`), its metadata's labels and annotations.
2. ``ApplyFlytePodConfiguration`` (lines 415-543): each container's environment and resources
   (:mod:`.container`); the primary is the *last* container of its name; ``UpdatePod`` (restart policy
   ``Never``, tolerations, node selectors, and an ``affinity`` that is never nil afterwards); then the cluster's
   PodTemplate merged in (:mod:`.template_merge`).
3. After the merge: GPU node selectors, the shared-memory volume of ``@task(shared_memory=...)``
   (``ApplySharedMemory``, lines 134-188, which fails the task when ``/dev/shm`` is already mounted),
   tolerations for extended resources (lines 586-617).
"""

from __future__ import annotations

from typing import Any

from ..errors import BackendError
from .config import BackendConfig, ExecutionContext
from .container import customize_container, template_resources
from .gojson import JSON, canonical, decode, parse_quantity
from .template_merge import merge_base_pod_spec_onto_template, merge_object_meta


def template_parts(cluster_template: JSON | None) -> tuple[JSON | None, JSON]:
    """``(spec, metadata)`` of the ``template`` of a v1 PodTemplate manifest, decoded; ``(None, {})`` for none."""
    if cluster_template is None:
        return None, {}
    template = decode(cluster_template, "PodTemplate").get("template") or {}
    return template.get("spec") or {}, template.get("metadata") or {}


def _add_node_selector_requirements(affinity: JSON, *requirements: JSON, once: bool = False) -> None:
    """``AddRequiredNodeSelectorRequirements``; ``once``: flyte v2's, which skips a requirement a term holds."""
    na = affinity.setdefault("nodeAffinity", {})
    selector = na.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = selector.get("nodeSelectorTerms") or []
    if terms:
        def added(have: list[JSON]) -> list[JSON]:
            return have + [r for r in requirements if not (once and r in have)]
        selector["nodeSelectorTerms"] = [dict(t, matchExpressions=added(list(t.get("matchExpressions") or [])))
                                         for t in terms]
    else:
        selector["nodeSelectorTerms"] = [{"matchExpressions": list(requirements)}]


def _tolerations_for(ctx: ExecutionContext, cfg: BackendConfig, resources: list[JSON]) -> list[JSON]:
    """The configuration's tolerations for the resources the containers name (a Go set: sorted here), the
    interruptible ones, the default ones."""
    names: set[str] = set()
    for r in resources:
        names.update((r.get("limits") or {}).keys())
        names.update((r.get("requests") or {}).keys())
    out: list[JSON] = []
    for name in sorted(names):
        out += cfg.resource_tolerations.get(name, [])
    if ctx.interruptible:
        out += cfg.interruptible_tolerations
    out += cfg.default_tolerations
    return [decode(t, "Toleration") for t in out]


def update_pod(spec: JSON, ctx: ExecutionContext, cfg: BackendConfig, resources: list[JSON]) -> None:
    """``UpdatePod`` (pod_helper.go lines 275-306) and ``ApplyInterruptibleNodeAffinity``, in place."""
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Never"
    tolerations = _tolerations_for(ctx, cfg, resources) + list(spec.get("tolerations") or [])
    if tolerations:
        spec["tolerations"] = tolerations
    if not spec.get("serviceAccountName") and ctx.service_account:
        spec["serviceAccountName"] = ctx.service_account
    if not spec.get("schedulerName") and cfg.scheduler_name:
        spec["schedulerName"] = cfg.scheduler_name
    selector = {**cfg.default_node_selector, **(spec.get("nodeSelector") or {}),
                **(cfg.interruptible_node_selector if ctx.interruptible else {})}
    if selector:
        spec["nodeSelector"] = selector
    else:
        spec.pop("nodeSelector", None)
    for key, default, type_name in (("affinity", cfg.default_affinity, "Affinity"),
                                    ("securityContext", cfg.default_pod_security_context, "PodSecurityContext"),
                                    ("dnsConfig", cfg.default_pod_dns_config, "PodDNSConfig")):
        if spec.get(key) is None and default is not None:
            spec[key] = decode(default, type_name)
    if cfg.enable_host_networking_pod is not None:
        if cfg.enable_host_networking_pod:
            spec["hostNetwork"] = True
        else:
            spec.pop("hostNetwork", None)
    if spec.get("affinity") is None:
        spec["affinity"] = {}  # never nil afterwards, even when nothing is added
    requirement = (cfg.interruptible_node_selector_requirement if ctx.interruptible
                   else cfg.non_interruptible_node_selector_requirement)
    if requirement is not None:
        _add_node_selector_requirements(spec["affinity"], decode(requirement, "NodeSelectorRequirement"), once=cfg.flyte2)


def apply_shared_memory(spec: JSON, primary: str, shared_memory: JSON) -> None:
    """``ApplySharedMemory``: the volume ``@task(shared_memory=...)`` asks for, added after the template merge.

    Raises:
        BackendError: as the backend fails the task: the primary container already mounts the path
            (``/dev/shm is already mounted in container``), or a volume or mount has the name.
    """
    name, path = shared_memory.get("mountName") or "", shared_memory.get("mountPath") or ""
    if not name:
        raise BackendError("mount name is not set")
    if not path:
        raise BackendError("mount path is not set")
    container = None
    for c in spec.get("containers") or []:
        if c.get("name", "") == primary:
            container = c  # the last of that name
    if container is None:
        raise BackendError("Unable to find primary container")
    if any(v.get("name", "") == name for v in spec.get("volumes") or []):
        raise BackendError(f"A volume is already named {name} in pod spec")
    for mount in container.get("volumeMounts") or []:
        if mount.get("name", "") == name:
            raise BackendError(f"A volume is already named {name} in container")
        if mount.get("mountPath", "") == path:
            raise BackendError(f"{path} is already mounted in container")
    size = shared_memory.get("sizeLimit") or ""
    if size:
        parse_quantity(size)
    # SizeLimit is a non-nil pointer: to a zero Quantity ("0") when no size is given
    spec["volumes"] = list(spec.get("volumes") or []) + [{"name": name, "emptyDir": {"medium": "Memory", "sizeLimit": size or "0"}}]
    container["volumeMounts"] = list(container.get("volumeMounts") or []) + [{"name": name, "mountPath": path}]


def apply_gpu_node_selectors(spec: JSON, accelerator: JSON, cfg: BackendConfig) -> None:
    """``ApplyGPUNodeSelectors`` (pod_helper.go lines 190-272): only when a container has a GPU limit."""
    if not any(cfg.gpu_resource_name in ((c.get("resources") or {}).get("limits") or {}) for c in spec.get("containers") or []):
        return
    if spec.get("affinity") is None:
        spec["affinity"] = {}
    device = accelerator.get("device") or ""
    if device:
        _add_node_selector_requirements(spec["affinity"], {"key": cfg.gpu_device_node_label, "operator": "In",
                                                           "values": [device]}, once=cfg.flyte2)
        spec["tolerations"] = list(spec.get("tolerations") or []) + [
            {"key": cfg.gpu_device_node_label, "value": device, "operator": "Equal", "effect": "NoSchedule"}]
    requirement: Any = None
    toleration: Any = None
    if accelerator.get("unpartitioned") is True:
        requirement = cfg.gpu_unpartitioned_node_selector_requirement or {
            "key": cfg.gpu_partition_size_node_label, "operator": "DoesNotExist"}
        toleration = cfg.gpu_unpartitioned_toleration
    elif accelerator.get("partitionSize"):
        size = accelerator["partitionSize"]
        requirement = {"key": cfg.gpu_partition_size_node_label, "operator": "In", "values": [size]}
        toleration = {"key": cfg.gpu_partition_size_node_label, "value": size, "operator": "Equal", "effect": "NoSchedule"}
    if requirement is not None:
        _add_node_selector_requirements(spec["affinity"], requirement, once=cfg.flyte2)
    if toleration is not None:
        spec["tolerations"] = list(spec.get("tolerations") or []) + [toleration]


def _add_tolerations_for_extended_resources(spec: JSON, cfg: BackendConfig) -> None:
    found = {r for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
             for r in cfg.add_tolerations_for_extended_resources if r in ((c.get("resources") or {}).get("requests") or {})}
    for resource in sorted(found):
        existing = spec.get("tolerations") or []
        if any(t.get("key", "") == resource and t.get("operator", "") == "Exists" and t.get("value", "") == ""
               and t.get("effect", "") == "NoSchedule" for t in existing):  # Toleration.MatchToleration
            continue
        spec["tolerations"] = list(existing) + [{"key": resource, "operator": "Exists", "effect": "NoSchedule"}]


def build_pod_spec(task_pod_spec: JSON, primary: str, labels: dict[str, str] | None = None,
                   annotations: dict[str, str] | None = None, cluster_template: JSON | None = None, *,
                   config: BackendConfig | None = None, execution: ExecutionContext | None = None,
                   task_id: JSON | None = None, extended_resources: JSON | None = None,
                   task_config: dict[str, str] | None = None) -> tuple[JSON, JSON]:
    """``flytek8s.ToK8sPodSpec`` for a task registered with a pod template.

    Args:
        task_pod_spec: The TaskTemplate's ``k8sPod.podSpec``.
        primary: Its ``config["primary_container_name"]``.
        labels: ``k8sPod.metadata.labels``.
        annotations: ``k8sPod.metadata.annotations``.
        cluster_template: The cluster's default PodTemplate manifest (``kubectl get podtemplate NAME -o yaml``),
            or ``None`` when the cluster has none.
        config: The backend's configuration (flyteplugins' defaults when ``None``).
        execution: What the backend knows of the execution (placeholders when ``None``).
        task_id: The TaskTemplate's ``id`` (``project``, ``domain``, ``name``, ``version``).
        extended_resources: The TaskTemplate's ``extendedResources`` (``sharedMemory``, ``gpuAccelerator``).
        task_config: The TaskTemplate's ``config``.

    Returns:
        ``(pod spec, pod metadata)`` as plain data. The primary container keeps its registered name: the PyTorch
        plugin renames it afterwards.

    Raises:
        BackendError: what the backend refuses (no primary container, ``/dev/shm`` already mounted, ...).
    """
    cfg, ctx = config or BackendConfig(), execution or ExecutionContext()
    spec = {**decode(task_pod_spec, "PodSpec"), **({"enableServiceLinks": False} if cfg.flyte2 else {})}  # v2 BuildRawPod
    meta: JSON = {k: dict(v) for k, v in (("labels", labels), ("annotations", annotations)) if v}
    template_spec, template_meta = template_parts(cluster_template)
    console = "link_type" in (task_config or {})
    for c in spec.get("initContainers") or []:  # flyte v2 keeps init containers in range only
        customize_container(c, ctx, cfg, task_id, console, not cfg.flyte2, template_resources(template_spec, c, True, cfg))
    resources, primary_container = [], None
    for c in spec.get("containers") or []:
        is_primary = c.get("name", "") == primary
        customize_container(c, ctx, cfg, task_id, console, is_primary, template_resources(template_spec, c, False, cfg))
        resources.append(c.get("resources") or {})
        if is_primary:
            primary_container = c  # the last of that name
    if primary_container is None:
        raise BackendError(f"invalid TaskSpecification, primary container [{primary}] not defined")
    update_pod(spec, ctx, cfg, resources)
    if primary_container.get("securityContext") is None and cfg.default_security_context is not None:
        primary_container["securityContext"] = decode(cfg.default_security_context, "SecurityContext")
    if template_spec is not None:
        spec = merge_base_pod_spec_onto_template(template_spec, spec, primary, "", legacy=cfg.flyteplugins_patch <= 2,
                                                 flyte2=cfg.flyte2)
        meta = merge_object_meta(template_meta, meta)
    extended = dict(extended_resources or {})
    extended.update({k: v for k, v in (ctx.extended_resources_override or {}).items() if v is not None})
    if extended.get("gpuAccelerator") is not None:
        apply_gpu_node_selectors(spec, extended["gpuAccelerator"], cfg)
    if extended.get("sharedMemory") is not None:
        apply_shared_memory(spec, primary, extended["sharedMemory"])
    _add_tolerations_for_extended_resources(spec, cfg)
    return canonical(spec, "PodSpec"), canonical(meta, "metav1.ObjectMeta")
