"""The primary container's resources when both the profile and ``@task(requests=, limits=)`` set them."""

from __future__ import annotations

from typing import Any

from ..k8s.quantity import quantity_value

GPU_RESOURCE = "nvidia.com/gpu"
"""What Flyte's backend calls flytekit's ``gpu`` resource by default (propeller's ``gpu-resource-name``)."""


def _resource(name: str) -> str:
    return GPU_RESOURCE if name == "gpu" else name


def merge_task_resources(profile: dict[str, Any], task: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The primary container's ``resources`` from the profile's and the task's (``@task(requests=, limits=)``).

    Shape: ``{"requests": {name: quantity}, "limits": {name: quantity}}``, quantities as strings.

    * Per resource name, ``requests`` and ``limits`` separately, the task winning per key: ``gpu-large``'s
      ``nvidia.com/gpu: 8`` survives ``@task(requests=Resources(cpu="4"))``.
    * flytekit's ``gpu`` is Flyte's ``nvidia.com/gpu``: a task's ``gpu`` replaces the profile's.
    * Where the task sets one side of a resource and the profile's other side would contradict it, the profile's
      side is dropped, so that the API server accepts the pod: a request above the limit (a task limit of
      ``memory: 1Gi`` under a profile request of ``2Gi``; Kubernetes then sets the request to the limit), or, for
      an extended resource or hugepages, a request that is not the limit (``ValidateResourceRequirements`` in
      k8s.io/kubernetes pkg/apis/core/validation).
    """
    kinds = ("limits", "requests")
    merged = {kind: {k: str(v) for k, v in (profile.get(kind) or {}).items()} for kind in kinds}
    task_sets: dict[str, dict[str, str]] = {kind: {} for kind in kinds}  # resource -> the key the task used
    for kind in kinds:
        for key, value in (task.get(kind) or {}).items():
            for other in [k for k in merged[kind] if _resource(k) == _resource(key)]:
                del merged[kind][other]
            merged[kind][key] = value
            task_sets[kind][_resource(key)] = key
    for kind, other_kind in (("limits", "requests"), ("requests", "limits")):
        for resource, key in task_sets[kind].items():
            if resource in task_sets[other_kind]:
                continue  # the task set both sides: its own business
            task_value = quantity_value(merged[kind][key])
            for other in [k for k in merged[other_kind] if _resource(k) == resource]:
                profile_value = quantity_value(merged[other_kind][other])
                if task_value is None or profile_value is None:
                    continue
                request, limit = (profile_value, task_value) if kind == "limits" else (task_value, profile_value)
                exact = "/" in resource and not resource.startswith("kubernetes.io/") or resource.startswith("hugepages-")
                if (request != limit) if exact else (request > limit):
                    del merged[other_kind][other]
    return {kind: values for kind, values in merged.items() if values}


_FLYTEKIT_FIELDS = {"cpu": "cpu", "mem": "memory", "gpu": GPU_RESOURCE, "ephemeral_storage": "ephemeral-storage"}
"""``flytekit.Resources`` fields -> the Kubernetes resource names they become in the task's pod."""


def merged_task_resources(resolved: Any, requests: Any, limits: Any) -> dict[str, dict[str, str]] | None:
    """The primary container's resources once the task's ``requests`` and ``limits`` (``flytekit.Resources``) are
    merged onto the profile's (:func:`merge_task_resources`), with flytekit's ``gpu`` named ``nvidia.com/gpu``;
    ``None`` when a value is not one quantity (flytekit's ``(request, limit)`` pairs are left to flytekit)."""
    task: dict[str, dict[str, str]] = {}
    for kind, resources in (("requests", requests), ("limits", limits)):
        values = {}
        for field, name in _FLYTEKIT_FIELDS.items():
            value = getattr(resources, field, None) if resources is not None else None
            if isinstance(value, (tuple, list)):
                return None
            if value is not None:
                values[name] = str(value)
        if values:
            task[kind] = values
    profile = next((c.get("resources") or {} for c in resolved.pod_spec.get("containers", [])
                    if c.get("name") == resolved.primary_container_name), {})
    return merge_task_resources(profile, task)
