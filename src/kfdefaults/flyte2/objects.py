"""Plain data -> the objects Flyte 2 and its PyTorch plugin expect: ``flyteplugins.pytorch.Elastic`` and
``flyte.PodTemplate``; and a task's ``flyte.Resources`` as the primary container's resources."""

from __future__ import annotations

import os
from typing import Any, Mapping

from ..runtime.config import AdapterObjects, sdk_pod_template
from ..targets import FLYTE2, OFF

RUN_BASE_ENV = "_U_RUN_BASE"
"""The run's output folder, set by Flyte's backend in every Flyte 2 task pod."""

CLEAN_POD_POLICIES = {"none": "None", "all": "all", "running": "Running"}
"""The profile's ``clean_pod_policy`` -> the spelling of ``flyteplugins.pytorch.RunPolicy`` (its ``Literal``)."""


def plugin_run_policy(policy: Mapping[str, Any]) -> Any:
    """A profile's ``run_policy`` -> ``flyteplugins.pytorch.task.RunPolicy``."""
    from flyteplugins.pytorch.task import RunPolicy

    fields = dict(policy)
    if fields.get("clean_pod_policy"):
        fields["clean_pod_policy"] = CLEAN_POD_POLICIES[str(fields["clean_pod_policy"]).lower()]
    return RunPolicy(**fields)


def plugin_kwargs(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Merged elastic settings -> the keyword arguments of ``flyteplugins.pytorch.Elastic``.

    Keys the plugin has no field for are the ones Flyte 2 fixes (``start_method: spawn``): the target's check
    (:mod:`kfdefaults.check.target`) lets only their one value through. ``run_policy`` becomes the plugin's
    ``RunPolicy``; a ``nccl_*`` setting absent here, or ``off``, is ``None`` (torch's own default stays).
    """
    kwargs = {k: None if v == OFF and k in FLYTE2.off else v for k, v in settings.items()
              if k in FLYTE2.settings and k != "run_policy"}
    kwargs["rdzv_configs"] = dict(kwargs.get("rdzv_configs") or {})
    kwargs.setdefault("nccl_heartbeat_timeout_sec", None)
    kwargs.setdefault("nccl_collective_timeout_sec", None)
    run_policy = settings.get("run_policy")
    kwargs["run_policy"] = plugin_run_policy(run_policy) if run_policy else None
    return kwargs


def plugin_elastic(settings: Mapping[str, Any]) -> Any:
    """Merged elastic settings -> ``flyteplugins.pytorch.Elastic`` (imports the plugin, and so torch)."""
    from flyteplugins.pytorch import Elastic

    return Elastic(**plugin_kwargs(settings))


def flyte_pod_template(pod_spec: Mapping[str, Any], primary_container_name: str, labels: Mapping[str, str],
                       annotations: Mapping[str, str], cls: Any = None, **extra: Any) -> Any:
    """A ``flyte.PodTemplate`` (or the subclass ``cls``) holding a ``kubernetes.client.V1PodSpec`` built from plain
    data; ``extra`` are the subclass's own fields."""
    import flyte

    return sdk_pod_template(cls or flyte.PodTemplate, pod_spec, primary_container_name, labels, annotations, **extra)


def task_resources(resources: Any) -> dict[str, dict[str, str]]:
    """A task's ``flyte.Resources`` as the primary container gets them: ``{"requests": {name: quantity},
    "limits": {...}}``, named as Flyte 2's serializer names them in the pod spec (``cpu``, ``memory``, ``gpu``,
    ``ephemeral-storage``; ``flyte._internal.runtime.task_serde._get_k8s_pod``). ``shm`` is not a resource of the
    container (it is Flyte's shared-memory volume). ``{}`` for ``None``."""
    from flyte._internal.runtime.resources_serde import get_proto_resources
    from flyte._internal.runtime.task_serde import _sanitize_resource_name

    proto = get_proto_resources(resources)
    if proto is None:
        return {}
    out = {"requests": {_sanitize_resource_name(e): e.value for e in proto.requests},
           "limits": {_sanitize_resource_name(e): e.value for e in proto.limits}}
    return {kind: values for kind, values in out.items() if values}


class Flyte2Objects(AdapterObjects):
    """Flyte 2's objects of a :class:`~kfdefaults.Resolved` profile (its :attr:`~kfdefaults.Resolved.elastic` and
    :attr:`~kfdefaults.Resolved.pod_template`)."""

    plugin_elastic = staticmethod(plugin_elastic)
    plain_pod_template = staticmethod(flyte_pod_template)

    def running_a_task(self) -> bool:
        """Whether the run's output folder is in the environment (``_U_RUN_BASE``): Flyte's backend sets it in
        every task pod, ``a0`` requires it, and the torch workers the plugin starts inherit it; registration,
        ``flyte run --local`` and ``kfdefaults render`` never have it. Flyte 2 has no execution context yet
        while ``a0`` imports the task's module, so the variable is the sign."""
        return RUN_BASE_ENV in os.environ


OBJECTS = Flyte2Objects()
