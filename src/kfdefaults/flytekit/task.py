"""The task a ``kfdefaults.Elastic`` config defines: :class:`ProfileElasticTask`, a ``PytorchElasticFunctionTask``
that carries the merged pod template (``@task(pod_template=...)`` applied on top, as part of the task layer).

What this module absorbs so that the task gets what ``kfdefaults render`` shows:

* The plugin's deprecated ``increase_shared_mem`` is always off: the profile owns ``/dev/shm``. No second mount,
  no ``ValueError`` for an existing one, no deprecation warning. ``@task(shared_memory=...)`` is the task
  layer: it wins over the profile's ``/dev/shm`` mount, with a :class:`~kfdefaults.KfdefaultsWarning` saying so.
* flytekit replaces the primary container's resources wholesale when the task sets requests or limits;
  :meth:`ProfileElasticTask.get_k8s_pod` merges them per resource name instead, the task winning per key.
* Objects passed in (``PodTemplate``, ``V1PodSpec``) are read, never changed.
* In the pod, flytekit imports the task's module again, and the image may not hold the profile files. The
  settings resolved at registration travel in the primary container's environment
  (:mod:`.runtime`), and ``Elastic(...)`` uses them there instead of reading files; a task of the same
  module naming a profile the image lacks only fails if it is the one that runs.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, Callable

from flytekitplugins.kfpytorch.task import PytorchElasticFunctionTask

from ..errors import KfdefaultsWarning
from ..k8s.mounts import SHM_PATH
from ..merge.result import Resolved
from ..settings import RUNTIME_ENV
from .elastic import Elastic
from .objects import flytekit_pod_template
from .pod import drop_shm_mounts, primary_container, set_env
from .resources import merge_task_resources
from .warn import caller_stacklevel


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
            spec = resolved.pod_spec
            primary_name = resolved.primary_container_name
            if kwargs.get("shared_memory"):
                dropped = drop_shm_mounts(spec, primary_name)
                if dropped:
                    warnings.warn(
                        f"@task(shared_memory=...) wins over the {SHM_PATH} volume {', '.join(map(repr, dropped))} of "
                        f"profile {task_config.profile!r}: the task gets Flyte's shared-memory volume instead",
                        KfdefaultsWarning,
                        stacklevel=caller_stacklevel(),
                    )
            set_env(primary_container(spec, primary_name), RUNTIME_ENV, task_config.runtime_env_value())
            kwargs["pod_template"] = flytekit_pod_template(spec, primary_name, resolved.labels, resolved.annotations)
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
        """Run the task; raises the profile error kept at import if this task's profile could not be read."""
        config = self.task_config
        if isinstance(config, Elastic) and config.deferred_error is not None:
            raise config.deferred_error
        return super().execute(**kwargs)
