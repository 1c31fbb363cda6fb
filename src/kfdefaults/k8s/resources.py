"""The primary container's resources when both the profile and the task (flytekit's ``@task(requests=, limits=)``,
Flyte 2's ``Resources``) set them."""

from __future__ import annotations

import re
from typing import Any

from .names import overcommit_allowed
from .quantity import quantity_value

GPU_RESOURCE = "nvidia.com/gpu"
"""What Flyte's backend calls the SDKs' ``gpu`` resource by default (propeller's ``gpu-resource-name``)."""


FABRIC_DEVICE = re.compile(r"vpc\.amazonaws\.com/efa|rdma/[^/]+|nvidia\.com/[^/]*rdma[^/]*")
"""Extended resources that hand a pod an RDMA fabric device: AWS EFA (the aws-efa-k8s-device-plugin), an
``rdma/...`` resource of NVIDIA's RDMA shared device plugin, an ``nvidia.com/...rdma...`` one of its SR-IOV
plugin. A multi-node GPU job that requests none of what its nodes offer talks NCCL over TCP sockets."""


def is_fabric_device(name: str) -> bool:
    """Whether resource ``name`` is a fabric device (:data:`FABRIC_DEVICE`)."""
    return FABRIC_DEVICE.fullmatch(name) is not None


def resource_name(name: str) -> str:
    """A resource as the pod has it: the SDKs' ``gpu`` is ``nvidia.com/gpu`` (:data:`GPU_RESOURCE`)."""
    return GPU_RESOURCE if name == "gpu" else name


def merge_task_resources(profile: dict[str, Any], task: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The primary container's ``resources`` from the profile's and the task's (flytekit's ``@task(requests=,
    limits=)``, Flyte 2's ``Resources``).

    Shape: ``{"requests": {name: quantity}, "limits": {name: quantity}}``, quantities as strings.

    * Per resource name, ``requests`` and ``limits`` separately, the task winning per key: ``gpu-large``'s
      ``nvidia.com/gpu: 8`` survives ``@task(requests=Resources(cpu="4"))``.
    * The SDKs' ``gpu`` is Flyte's ``nvidia.com/gpu``: a task's ``gpu`` replaces the profile's.
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
            for other in [k for k in merged[kind] if resource_name(k) == resource_name(key)]:
                del merged[kind][other]
            merged[kind][key] = value
            task_sets[kind][resource_name(key)] = key
    for kind, other_kind in (("limits", "requests"), ("requests", "limits")):
        for resource, key in task_sets[kind].items():
            if resource in task_sets[other_kind]:
                continue  # the task set both sides: its own business
            task_value = quantity_value(merged[kind][key])
            for other in [k for k in merged[other_kind] if resource_name(k) == resource]:
                profile_value = quantity_value(merged[other_kind][other])
                if task_value is None or profile_value is None:
                    continue
                request, limit = (profile_value, task_value) if kind == "limits" else (task_value, profile_value)
                if (request > limit) if overcommit_allowed(resource) else (request != limit):
                    del merged[other_kind][other]
    return {kind: values for kind, values in merged.items() if values}


def replaced_resources(profile: dict[str, Any], merged: dict[str, Any]) -> list[str]:
    """What of the profile's resources a merge with a task's (:func:`merge_task_resources`) replaced or dropped,
    one phrase each, requests first: ``requests nvidia.com/gpu 8 -> gpu 1``, ``limits memory 2Gi dropped``. Both
    in a container's ``resources`` shape; a resource whose quantity is unchanged is not named."""
    out = []
    for kind in ("requests", "limits"):
        after = {resource_name(k): (k, v) for k, v in (merged.get(kind) or {}).items()}
        for key, value in (profile.get(kind) or {}).items():
            now = after.get(resource_name(key))
            if now is None:
                out.append(f"{kind} {key} {value} dropped")
            elif quantity_value(str(now[1])) != quantity_value(str(value)):
                out.append(f"{kind} {key} {value} -> {now[0]} {now[1]}")
    return out
