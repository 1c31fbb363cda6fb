"""The ``flytekit.PodTemplate`` a task on a profile registers, and the one a workflow node's override registers:
built the same way from a merged profile and the task's own arguments (:func:`registered_pod_template`).

What it absorbs, each the task layer winning as everywhere (docs/flyte.md):

* the primary container first (:func:`kfdefaults.backend.registered.registered_pod_spec`);
* ``shared_memory=`` (the task's, or a node's ``with_overrides(shared_memory=...)``) wins over the profile's
  ``/dev/shm`` mount;
* ``@task(environment=...)`` wins over the profile's variable of the same name;
* ``@task(container_image=...)`` wins over the profile's image (:mod:`kfdefaults.show.image`);
* the task's requests and limits merge into the profile's per resource name (:class:`PrimaryContainer`);
* the settings resolved at registration travel in the primary container's environment (:mod:`kfdefaults.runtime`).
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

from kubernetes.client import V1Container

from ..backend.registered import registered_pod_spec
from ..errors import Finding, KfdefaultsWarning, ProfileError, caller_stacklevel
from ..k8s.mounts import SHM_PATH
from ..k8s.pod import drop_env, drop_shm_mounts, primary_container, set_env
from ..k8s.resources import merge_task_resources
from ..merge.result import Resolved
from ..settings import RUNTIME_ENV
from ..show.image import ProfileImage, profile_image
from .elastic import Elastic
from .objects import flytekit_pod_template, task_resources

CALLERS = ("kfdefaults", "flytekit", "flytekitplugins")
"""Packages whose frames a warning skips to point at the user's ``@task`` (or ``with_overrides``) line."""


@dataclass(frozen=True)
class TaskArguments:
    """What of a task's own arguments shapes the pod template kfdefaults registers for it.

    Attributes:
        shared_memory: ``@task(shared_memory=...)`` (or a node's ``with_overrides(shared_memory=...)``) is set:
            Flyte's backend mounts its own ``/dev/shm``.
        environment: The names of ``@task(environment=...)``.
        container_image: ``@task(container_image=...)`` is given: the task's image is the task layer.
        shm_size: The size ``@task(shared_memory="...")`` asks for, or ``None``.
        resources: ``@task(requests=..., limits=...)`` as ``(("limits", "memory", "4Gi"), ...)``, which flytekit
            merges into the primary container when it serializes the task (:class:`PrimaryContainer`).
    """

    shared_memory: bool = False
    environment: frozenset[str] = frozenset()
    container_image: bool = False
    shm_size: str | None = None
    resources: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def of_task(cls, kwargs: Mapping[str, Any]) -> TaskArguments:
        """The arguments ``@task(...)`` passes to the task class."""
        shm = kwargs.get("shared_memory")
        resources = task_resources(kwargs.get("requests"), kwargs.get("limits")) or {}
        return cls(bool(shm), frozenset(kwargs.get("environment") or {}), kwargs.get("container_image") is not None,
                   shm if isinstance(shm, str) else None,
                   tuple((kind, k, v) for kind, values in sorted(resources.items()) for k, v in values.items()))

    def task_resources(self) -> dict[str, dict[str, str]]:
        """:attr:`resources` as a container's ``{"requests": {...}, "limits": {...}}``."""
        out: dict[str, dict[str, str]] = {}
        for kind, name, value in self.resources:
            out.setdefault(kind, {})[name] = value
        return out


def registered_pod_template(config: Elastic, resolved: Resolved, arguments: TaskArguments, *,
                            shared_memory_by: str | None = "@task(shared_memory=...)") -> Any:
    """The ``flytekit.PodTemplate`` to register for ``resolved`` (a task's merged profile, or a node's).

    Args:
        config: The task's ``Elastic``.
        resolved: The merged profile, task layer included.
        arguments: The task's own arguments.
        shared_memory_by: What set ``arguments.shared_memory``, named in the warning when it leaves out the
            profile's ``/dev/shm``; ``None`` to warn nothing (said already when the task was defined).

    Raises:
        ProfileError: shared memory is asked for where the cluster's default PodTemplate mounts ``/dev/shm``.
    """
    spec = registered_pod_spec(resolved)
    primary_name = resolved.primary_container_name
    if arguments.shared_memory:
        refuse_second_shm(config, primary_name, shared_memory_by or "@task(shared_memory=...)")
        dropped = drop_shm_mounts(spec, primary_name)
        if dropped and shared_memory_by:
            warnings.warn(
                f"{shared_memory_by} wins over the {SHM_PATH} volume {', '.join(map(repr, dropped))} of "
                f"profile {config.profile!r}: the task gets Flyte's shared-memory volume instead",
                KfdefaultsWarning,
                stacklevel=caller_stacklevel(CALLERS),
            )
    primary = primary_container(spec, primary_name)
    # the task layer wins: flytekit puts the task's variables first, and Kubernetes takes the last of a name
    drop_env(primary, set(arguments.environment) - {RUNTIME_ENV})
    annotations = {**resolved.annotations, **config.provenance()}  # which profile made the pod
    pod = config.expected_pod(resolved, spec, annotations, task_resources=arguments.task_resources(),
                              task_resources_by="@task(requests=..., limits=...)",
                              shared_memory=(arguments.shm_size or True) if arguments.shared_memory else None,
                              shared_memory_by=shared_memory_by or "@task(shared_memory=...)")
    set_env(primary, RUNTIME_ENV, config.runtime_env_value(pod))  # and what the pod should have, for its receipt
    if arguments.container_image and image_of_a_profile(resolved) is not None:
        del primary["image"]  # flytekit fills in the task's image where the template has none
    template = flytekit_pod_template(spec, primary_name, resolved.labels, annotations)
    containers = template.pod_spec.containers
    containers[0] = PrimaryContainer.of(containers[0])  # registered_pod_spec puts the primary first
    return template


def image_of_a_profile(resolved: Resolved) -> ProfileImage | None:
    """The primary container's image when a profile file sets it, not the task's own pod template."""
    found = profile_image(resolved)
    return found if found is not None and not found.by_task else None


def refuse_second_shm(config: Elastic, primary: str, asked_by: str) -> None:
    """Shared memory asked of Flyte's backend (``asked_by``) where the cluster's default PodTemplate gives the
    primary container a ``/dev/shm``: the backend adds its shared-memory volume after merging the template, and
    fails the task (``ApplySharedMemory``: "/dev/shm is already mounted in container").

    Raises:
        ProfileError: located at the template's mount.
    """
    cluster = config.pipeline.cluster if config.pipeline is not None else None
    cause = None
    if cluster is not None:
        from ..backend.avoid import template_shm_mount  # lazy: Go's model of a PodSpec, only for a template

        cause = template_shm_mount(cluster, "containers", primary, primary)
    if cause is not None:
        raise ProfileError([Finding(cause, asked_by, (
            f"the cluster's default PodTemplate already mounts {SHM_PATH} in the primary container, and Flyte's backend "
            f"fails a task that adds its own (\"{SHM_PATH} is already mounted in container\"): drop shared_memory=, the "
            f"task gets the cluster's {SHM_PATH}"), layer="cluster")])


def _plain(resources: Any) -> dict[str, dict[str, str]]:
    """A ``V1ResourceRequirements`` as ``{"limits": {name: quantity}, "requests": {...}}``."""
    return {kind: {k: str(v) for k, v in (getattr(resources, kind, None) or {}).items()}
            for kind in ("limits", "requests")}


class PrimaryContainer(V1Container):
    """The primary container of a pod template kfdefaults registers, whose ``resources``, assigned again, merge
    per resource name into the ones it has.

    Where the task sets requests or limits, flytekit's ``_serialize_pod_spec`` assigns them to the primary container
    of a copy of the pod template (``container.resources = V1ResourceRequirements(...)``), replacing the profile's
    wholesale: ``gpu-large``'s ``nvidia.com/gpu: 8`` would go with ``@task(requests=Resources(cpu="4"))``. flytekit
    serializes the task's own template that way (``get_k8s_pod``), and a workflow node's pod template override
    (``get_serializable_node``); assigned to this container, the task's values merge into the profile's instead, as
    :func:`~kfdefaults.k8s.resources.merge_task_resources` says. A copy (``copy.deepcopy``) is of this class too.
    It works the same on the kubernetes client's classic models and on its pydantic ones (kubernetes >= 35).
    """

    @classmethod
    def of(cls, container: V1Container) -> PrimaryContainer:
        """A copy of ``container``, of this class."""
        primary = copy.copy(container)
        primary.__class__ = cls  # the same fields: a subclass that adds none
        return primary

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "resources" and value is not None:
            current = getattr(self, "resources", None)
            if current is not None:
                merged = merge_task_resources(_plain(current), _plain(value))
                claims = {"claims": current.claims} if getattr(current, "claims", None) else {}
                value = type(current)(limits=merged.get("limits"), requests=merged.get("requests"), **claims)
        super().__setattr__(name, value)
