"""What the task layer of a call replaces of its profile, said where it is merged: the resources a registration or
a submission gives a task (shared by the adapters). A list a task's pod template replaces whole is the one rule of
:mod:`kfdefaults.check.replaced`."""

from __future__ import annotations

from typing import Any, Mapping

from ..k8s.resources import merge_task_resources, replaced_resources, resource_name
from ..merge.result import Resolved


def resources_replaced(profile: Resolved, task: Resolved, resources: Mapping[str, Any]) -> str:
    """What a task's ``resources`` (a container's ``{"requests", "limits"}``, given where the task is registered or
    submitted: ``pyflyte --resource-requests``, Flyte 2's ``task.override(resources=...)``) replace of the
    profile's primary container resources when merged per resource name
    (:func:`~kfdefaults.k8s.resources.merge_task_resources`), and, where they change its GPUs, what becomes of
    ``nproc_per_node`` (``auto`` follows them; a number stays): ``requests nvidia.com/gpu 8 -> gpu 1, limits
    nvidia.com/gpu 8 dropped; nproc_per_node stays 8``. ``""`` when they replace nothing.

    Args:
        profile: The profile as the ``Elastic(...)`` call merged it, before the task's resources.
        task: The profile merged with the task's resources (its ``auto`` values worked out with them).
        resources: The task's resources.
    """
    primary = profile.primary_container_name
    before = next((c.get("resources") or {} for c in profile.pod_spec.get("containers", [])
                   if c.get("name") == primary), {})
    merged = merge_task_resources(before, dict(resources))
    said = replaced_resources(before, merged)
    if not said:
        return ""

    def gpus(values: Mapping[str, Any]) -> dict[str, dict[str, str]]:
        return {kind: {resource_name(k): str(v) for k, v in (values.get(kind) or {}).items()
                       if resource_name(k).endswith("/gpu")} for kind in ("requests", "limits")}

    text = ", ".join(said)
    if gpus(before) != gpus(merged):
        old, new = profile.elastic_settings.get("nproc_per_node"), task.elastic_settings.get("nproc_per_node")
        text += (f"; nproc_per_node stays {new} (the profile sets it; `nproc_per_node: auto` would follow the GPUs)"
                 if old == new else f"; nproc_per_node follows them: {old} -> {new} (auto)")
    return text
