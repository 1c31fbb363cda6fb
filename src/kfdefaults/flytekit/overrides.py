"""A workflow node's ``with_overrides(...)`` on a task on a profile: the override merges over the profile.

flytekit serializes a node's ``with_overrides(pod_template=...)`` as the node's ``TaskNodeOverrides.pod_template``,
built from the override alone (``get_serializable_node``), and Flyte's backend runs the node on that pod spec
instead of the task's (``BuildRawPod``, ``ApplyPodTemplateOverride``): the profile's ``/dev/shm``, GPUs,
tolerations and the registered settings (``KFDEFAULTS_ELASTIC``) would all be gone.

**Decision:** the override is one more task-layer pod template, merged by strategic merge patch over the profile
and ``@task(pod_template=...)``, and the node's pod template is built from that merge exactly as the task's own is
(:func:`~kfdefaults.flytekit.pod.registered_pod_template`). :class:`NodeOverrides` replaces the ``pod_template``
a node's ``with_overrides`` receives with that one; :meth:`ProfileElasticTask.compile
<kfdefaults.flytekit.task.ProfileElasticTask.compile>` gives each node it creates one. Only that node's method is
replaced: flytekit's classes are left as they are.

A map node's override (``map_task(task)(...).with_overrides(pod_template=...)``) is registered by flytekit as the
mapped pods' whole pod template, and the node is the map task's, which never reaches kfdefaults: it is refused
when registered (:func:`map_override_refused`).

``with_overrides(shared_memory=...)`` asks Flyte's backend for its ``/dev/shm`` on that node; the node's pod template
then leaves out the profile's, as ``@task(shared_memory=...)`` does. ``with_overrides(task_config=...)`` is refused:
flytekit assigns it to the task itself, every node of it in every workflow, while its pod template and registered
settings stay those of the task's own ``Elastic``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ..errors import KfdefaultsError
from ..settings import RUNTIME_ENV
from .errors import shown_to_the_task_module

OVERRIDE = "with_overrides(pod_template=...)"


class NodeOverrides:
    """``with_overrides`` of one workflow node running a :class:`~kfdefaults.flytekit.task.ProfileElasticTask`.

    Calls flytekit's ``Node.with_overrides`` with the same arguments, but for ``pod_template``: the task's
    merged profile with the override on top (:meth:`ProfileElasticTask.node_pod_template`). flytekit keeps a node's
    ``pod_template`` until another is given and its ``shared_memory`` for one call only; so is it here.

    Args:
        task: The node's task.
        original: The node's own ``with_overrides``.
    """

    def __init__(self, task: Any, original: Callable[..., Any]) -> None:
        self.task = task
        self.original = original
        self.signature = inspect.signature(original)
        self.pod_template: Any = None  # the last override given, as given
        self.merged = False  # the node holds a pod template built here: rebuilt at every call

    @shown_to_the_task_module
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """flytekit's ``Node.with_overrides(...)``; returns the node.

        Raises:
            TypeError: ``pod_template`` is not a ``flytekit.PodTemplate``, or ``task_config`` is given.
            ProfileError: the override does not validate or merge (``with_overrides(pod_template=...)`` in the
                messages).
            KfdefaultsError: the task runs here on the settings registered with it (in a Flyte pod), where there
                is no profile to merge the override with.
        """
        bound = self.signature.bind(*args, **kwargs)
        arguments = bound.arguments
        if arguments.get("task_config") is not None:
            raise TypeError(f"with_overrides(task_config=...) on a task on profile {self.task.task_config.profile!r}: "
                            "flytekit changes the task itself, in every workflow, and leaves its pod template and its "
                            "registered settings those of its own Elastic(...): define another task, "
                            "@task(task_config=Elastic(profile=..., nnodes=...))")
        given = arguments.get("pod_template")
        shared_memory = bool(arguments.get("shared_memory"))
        if given is not None or shared_memory or self.merged:
            if given is not None:
                self.pod_template = given
            arguments["pod_template"] = self.task.node_pod_template(self.pod_template, shared_memory)
            self.merged = True
        return self.original(*bound.args, **bound.kwargs)


def not_resolved_here(profile: str, deferred: Exception | None) -> KfdefaultsError:
    """Why a node's pod template cannot be merged in this process (a Flyte pod that runs a task on the settings
    registered with it, or where the profile cannot be read)."""
    why = (f"its profile cannot be read here ({deferred})" if deferred is not None else
           "this process runs the task on the settings registered with it and reads no profile file")
    return KfdefaultsError(f"{OVERRIDE} on a task on profile {profile!r}: kfdefaults merges the override over the "
                           f"profile, and {why}; compile the workflow where the profile files are (pyflyte run, "
                           "pyflyte register)")


def auto_differs(profile: str, registered: dict[str, Any], node: dict[str, Any]) -> KfdefaultsError:
    """Why a node's pod template cannot change what the profile's ``auto`` values give: the task's elastic settings
    (``nproc_per_node``...) are registered once, with the task, for every node that runs it."""
    changed = ", ".join(f"{key}: {registered.get(key)!r} -> {node.get(key)!r}" for key in sorted(set(registered) | set(node))
                        if registered.get(key) != node.get(key))
    return KfdefaultsError(f"{OVERRIDE} on a task on profile {profile!r} changes what the profile's auto values give "
                           f"({changed}), and the task registers them once for every node: define another task with "
                           "those resources")


def is_map_task(entity: Any) -> bool:
    """Whether ``entity`` is flytekit's map task (``map_task(task)``, an ``ArrayNodeMapTask``)."""
    from flytekit.core.array_node_map_task import ArrayNodeMapTask

    return isinstance(entity, ArrayNodeMapTask)


def map_override_refused(task: str, profile: str) -> KfdefaultsError:
    """Why a map node's ``with_overrides(pod_template=...)`` is refused: flytekit registers it as the whole pod
    template of the mapped pods (``get_serializable_array_node_map_task``), and the node never reaches kfdefaults
    to merge it, so the pods would run without the profile's ``/dev/shm``, resources and registered settings."""
    return KfdefaultsError(
        f"map_task({task}).with_overrides(pod_template=...): flytekit registers the override as the whole pod "
        f"template of the mapped pods, without profile {profile!r}'s (its /dev/shm, resources, tolerations and the "
        f"settings registered with the task, {RUNTIME_ENV}), and kfdefaults cannot merge a map node's override: give "
        "the task the pod template instead, @task(task_config=Elastic(...), pod_template=...), or override a "
        "workflow node of the task itself")


def node_of(outputs: Any) -> Any:
    """The workflow node behind what calling a task in a workflow returned (a ``Promise``, a ``VoidPromise``, or
    a tuple of promises), or ``None`` (a local run: values, not promises)."""
    first = outputs[0] if isinstance(outputs, tuple) and outputs else outputs
    ref = getattr(first, "ref", None)
    return getattr(ref, "node", None)
