"""The task a ``kfdefaults.Elastic`` config defines: :class:`ProfileElasticTask`, a ``PytorchElasticFunctionTask``
that carries the merged pod template (``@task(pod_template=...)`` applied on top, as part of the task layer).

What this module absorbs so that the task gets what ``kfdefaults render`` shows:

* The plugin's deprecated ``increase_shared_mem`` is always off: the profile owns ``/dev/shm``. No second mount,
  no ``ValueError`` for an existing one, no deprecation warning. ``@task(shared_memory=...)`` is the task
  layer: it wins over the profile's ``/dev/shm`` mount, with a :class:`~kfdefaults.KfdefaultsWarning` saying so;
  where the cluster's default PodTemplate mounts ``/dev/shm`` in the primary container, Flyte's backend would fail
  the task, so defining it is an error.
* The pod spec lists the primary container first (:func:`kfdefaults.backend.registered.registered_pod_spec`): Flyte's
  PyTorch plugin gives the worker's name to whichever container is first.
* flytekit replaces the primary container's resources wholesale when the task sets requests or limits;
  :meth:`ProfileElasticTask.get_k8s_pod` merges them per resource name instead, the task winning per key.
* flytekit writes ``@task(environment=...)`` before the pod template's own variables in the primary
  container, and Kubernetes gives the last of two variables of one name: the profile's would win. The task
  layer wins instead: a profile variable the task sets again is left out of the pod template.
* Objects passed in (``PodTemplate``, ``V1PodSpec``) are read, never changed.
* Run locally, a profile of several nodes would wait ``join_timeout`` for nodes that never come:
  :meth:`ProfileElasticTask.execute` says so first (:func:`warn_of_nodes_that_never_come`).
* In the pod, flytekit imports the task's module again, and the image may not hold the profile files. The
  settings resolved at registration travel in the primary container's environment
  (:mod:`kfdefaults.runtime`), and ``Elastic(...)`` uses them there instead of reading files; a task of the same
  module naming a profile the image lacks only fails if it is the one that runs.
"""

from __future__ import annotations

import copy
import os
import warnings
from typing import Any, Callable

from flytekitplugins.kfpytorch.task import PytorchElasticFunctionTask

from ..backend.avoid import template_shm_mount
from ..backend.registered import registered_pod_spec
from ..errors import Finding, KfdefaultsWarning, ProfileError, caller_stacklevel
from ..k8s.mounts import SHM_PATH
from ..k8s.pod import drop_env, drop_shm_mounts, primary_container, set_env
from ..k8s.resources import merge_task_resources
from ..merge.result import Resolved
from ..runtime import for_task
from ..settings import RUNTIME_ENV
from .elastic import Elastic
from .objects import flytekit_pod_template

_CALLERS = ("kfdefaults", "flytekit", "flytekitplugins")
"""Packages whose frames a warning skips to point at the user's ``@task`` line."""


def _refuse_second_shm(config: Elastic, primary: str) -> None:
    """``@task(shared_memory=...)`` where the cluster's default PodTemplate gives the primary container a
    ``/dev/shm``: Flyte's backend adds its shared-memory volume after merging the template, and fails the task
    (``ApplySharedMemory``: "/dev/shm is already mounted in container").

    Raises:
        ProfileError: located at the template's mount.
    """
    cluster = config.pipeline.cluster if config.pipeline is not None else None
    cause = template_shm_mount(cluster, "containers", primary, primary) if cluster is not None else None
    if cause is not None:
        raise ProfileError([Finding(cause, "@task(shared_memory=...)", (
            f"the cluster's default PodTemplate already mounts {SHM_PATH} in the primary container, and Flyte's backend "
            f"fails a task that adds its own (\"{SHM_PATH} is already mounted in container\"): drop shared_memory=, the "
            f"task gets the cluster's {SHM_PATH}"), layer="cluster")])


class ProfileElasticTask(PytorchElasticFunctionTask):
    """A ``PytorchElasticFunctionTask`` whose pod template is the profile's, merged with ``@task(pod_template=...)``.

    Attributes:
        kfdefaults_resolved: The merged profile the task registers with (``None`` in a pod running on the
            registered settings).
    """

    def __init__(self, task_config: Elastic, task_function: Callable[..., Any], **kwargs: Any) -> None:
        user_template = kwargs.pop("pod_template", None)
        self.kfdefaults_resolved: Resolved | None = None
        if task_config.resolved is not None:
            resolved = task_config.resolve_with_pod_template(user_template, kwargs.get("requests"), kwargs.get("limits"))
            task_config = task_config.with_resolved(resolved)  # nproc_per_node: auto follows the task's GPUs
            self.kfdefaults_resolved = resolved
            spec = registered_pod_spec(resolved)
            primary_name = resolved.primary_container_name
            if kwargs.get("shared_memory"):
                _refuse_second_shm(task_config, primary_name)
                dropped = drop_shm_mounts(spec, primary_name)
                if dropped:
                    warnings.warn(
                        f"@task(shared_memory=...) wins over the {SHM_PATH} volume {', '.join(map(repr, dropped))} of "
                        f"profile {task_config.profile!r}: the task gets Flyte's shared-memory volume instead",
                        KfdefaultsWarning,
                        stacklevel=caller_stacklevel(_CALLERS),
                    )
            # the task layer wins: flytekit puts the task's variables first, and Kubernetes takes the last of a name
            drop_env(primary_container(spec, primary_name), set(kwargs.get("environment") or {}) - {RUNTIME_ENV})
            set_env(primary_container(spec, primary_name), RUNTIME_ENV, task_config.runtime_env_value())
            annotations = {**resolved.annotations, **task_config.provenance()}  # which profile made the pod
            kwargs["pod_template"] = flytekit_pod_template(spec, primary_name, resolved.labels, annotations)
        elif user_template is not None:
            kwargs["pod_template"] = copy.deepcopy(user_template)
        super().__init__(task_config=task_config, task_function=task_function, **kwargs)

    def get_k8s_pod(self, settings: Any) -> Any:
        """flytekit's pod, with the profile's resources kept where the task sets no value for that resource.

        flytekit replaces the primary container's ``resources`` wholesale when the task has requests or limits;
        here they merge as :func:`merge_task_resources` says.
        """
        pod = super().get_k8s_pod(settings)
        resolved = self.kfdefaults_resolved
        if pod is None or resolved is None:
            return pod
        profile_containers = {c.get("name"): c for c in resolved.pod_spec.get("containers", [])}
        profile_resources = (profile_containers.get(resolved.primary_container_name) or {}).get("resources") or {}
        if not profile_resources:
            return pod
        for container in pod.pod_spec.get("containers", []):
            if container.get("name") == resolved.primary_container_name:
                container["resources"] = merge_task_resources(profile_resources, container.get("resources") or {})
        return pod

    def execute(self, **kwargs: Any) -> Any:
        """Run the task. In a Flyte pod where no settings were registered for its ``Elastic(...)``, raise
        instead, naming the task (:func:`kfdefaults.runtime.not_registered`): it runs on what was registered or
        not at all. Warn first when it is about to wait for nodes that never come
        (:func:`warn_of_nodes_that_never_come`)."""
        config = self.task_config
        if isinstance(config, Elastic) and (config.unregistered or config.deferred_error) is not None:
            raise for_task(config.unregistered or config.deferred_error, self.name)
        if isinstance(config, Elastic):
            warn_of_nodes_that_never_come(config, self.min_nodes)
        return super().execute(**kwargs)


def warn_of_nodes_that_never_come(config: Elastic, min_nodes: int) -> None:
    """Warn when a task of at least two nodes runs outside a PyTorchJob, which is to say locally.

    The plugin then starts one node whose rendezvous listens on ``localhost:0`` (``PET_RDZV_ENDPOINT`` unset),
    where no other node can join: c10d waits ``join_timeout`` (torch's default 600 s) and fails with
    ``RendezvousTimeoutError``. The plugin itself only logs that the rendezvous "might" time out. A
    PyTorchJob's pods have ``PET_NNODES``, which the plugin reads to tell (``PytorchElasticFunctionTask.execute``).
    ``render`` says nothing of it: it shows what runs on the cluster, where the nodes do come.
    """
    if min_nodes <= 1 or os.environ.get("PET_NNODES") is not None:
        return
    join = (config.rdzv_configs or {}).get("join_timeout", 600)
    warnings.warn(
        f"profile {config.profile!r} asks for at least {min_nodes} nodes (nnodes: {config.nnodes}), but this run is "
        f"not part of a PyTorchJob (PET_NNODES is unset): it starts one node, whose rendezvous waits join_timeout "
        f"({join} s) for nodes that never come and then fails. To run it locally, give it one node: "
        f"Elastic(profile={config.profile!r}, nnodes=1)",
        KfdefaultsWarning,
        stacklevel=caller_stacklevel(_CALLERS),
    )
