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
* flytekit replaces the primary container's resources wholesale when the task sets requests or limits; they
  merge per resource name instead, the task winning per key (:class:`~kfdefaults.flytekit.pod.PrimaryContainer`).
* ``@task(container_image=...)`` wins over the profile's image, and the profile's image over the registration's
  default image (``pyflyte --image``), each time with a :class:`~kfdefaults.KfdefaultsWarning` saying which won
  (:mod:`kfdefaults.show.image`).
* A workflow node's ``with_overrides(pod_template=...)`` merges over the profile and ``@task(pod_template=...)``
  instead of replacing them (:mod:`kfdefaults.flytekit.overrides`); a map node's, which flytekit registers
  whole as the mapped pods' template, is refused at registration.
* flytekit writes ``@task(environment=...)`` before the pod template's own variables in the primary
  container, and Kubernetes gives the last of two variables of one name: the profile's would win. The task
  layer wins instead: a profile variable the task sets again is left out of the pod template.
* Objects passed in (``PodTemplate``, ``V1PodSpec``) are read, never changed.
* ``elastic.nccl_collective_timeout_sec`` is applied in every worker as Flyte 2's plugin applies it
  (:mod:`kfdefaults.flytekit.collective`): flytekit's plugin has no such field.
* Run locally, a profile of several nodes would wait ``join_timeout`` for nodes that never come:
  :meth:`ProfileElasticTask.execute` says so first (:func:`warn_of_nodes_that_never_come`).
* In the pod, flytekit imports the task's module again, and the image may not hold the profile files. The
  settings resolved at registration travel in the primary container's environment
  (:mod:`kfdefaults.runtime`), and ``Elastic(...)`` uses them there instead of reading files; a task of the same
  module naming a profile the image lacks only fails if it is the one that runs.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from dataclasses import replace
from typing import Any, Callable

from flytekitplugins.kfpytorch.task import PytorchElasticFunctionTask

from ..errors import KfdefaultsWarning, caller_stacklevel, warn_at
from ..merge.result import Resolved
from ..receipt import receipt_html, take_receipt
from ..runtime import for_task, resources_replaced
from ..settings import NO_CACHE_ENV, flag
from ..show.image import ProfileImage, profile_image_wins, task_image_wins
from .collective import WithCollectiveTimeout
from .elastic import Elastic
from .errors import shown_to_the_task_module
from .objects import task_resources
from .overrides import NodeOverrides, auto_differs, is_map_task, map_override_refused, node_of, not_resolved_here
from .pod import CALLERS, TaskArguments, image_of_a_profile, registered_pod_template


class ProfileElasticTask(PytorchElasticFunctionTask):
    """A ``PytorchElasticFunctionTask`` whose pod template is the profile's, merged with ``@task(pod_template=...)``.

    Attributes:
        kfdefaults_resolved: The merged profile the task registers with (``None`` in a pod running on the
            registered settings).
    """

    @shown_to_the_task_module
    def __init__(self, task_config: Elastic, task_function: Callable[..., Any], **kwargs: Any) -> None:
        user_template = kwargs.pop("pod_template", None)
        self.kfdefaults_resolved: Resolved | None = None
        self._kfdefaults_own_template = user_template  # node overrides merge over the profile and this
        self._kfdefaults_arguments = TaskArguments.of_task(kwargs)
        self._kfdefaults_resources = (kwargs.get("requests"), kwargs.get("limits"))
        self._kfdefaults_image: ProfileImage | None = None  # a profile's image the task registers, to say so
        self._kfdefaults_said: set[str] = set()
        self._kfdefaults_config = task_config  # the Elastic(...) call's, before the task's resources
        if task_config.resolved is not None:
            task_config, kwargs["pod_template"], found = self._profile_products()
            if found is not None and self._kfdefaults_arguments.container_image:
                warnings.warn(task_image_wins("flytekit", task_config.profile, found), KfdefaultsWarning,
                              stacklevel=caller_stacklevel(CALLERS))
            elif found is not None:
                self._kfdefaults_image = found
        elif user_template is not None:
            kwargs["pod_template"] = copy.deepcopy(user_template)
        super().__init__(task_config=task_config, task_function=task_function, **kwargs)

    def _profile_products(self) -> tuple[Elastic, Any, ProfileImage | None]:
        """The task's config, pod template and profile image, from the profile merged with the task's own pod
        template and resources (``nproc_per_node: auto`` follows the task's GPUs)."""
        config = self._kfdefaults_config
        resolved = config.resolve_with_pod_template(self._kfdefaults_own_template, *self._kfdefaults_resources)
        config = config.with_resolved(resolved)
        self.kfdefaults_resolved = resolved
        template, found = profile_products(config, resolved, self._kfdefaults_arguments)
        return config, template, found

    def _take_registration_resources(self, settings: Any) -> None:
        """``pyflyte register/run --resource-requests/--resource-limits`` (``settings.default_resources``) become
        the resources of a task that sets none of its own: flytekit assigns them to the task itself when it
        serializes it (``PythonAutoContainerTask._get_container``), for good. So does kfdefaults, first: they merge
        into the profile's per resource name as ``@task(requests=..., limits=...)`` would, the profile's ``auto``
        values follow them, and a :class:`~kfdefaults.KfdefaultsWarning` at the task's line names what of the
        profile's resources they replace (:func:`kfdefaults.runtime.task_layer.resources_replaced`)."""
        spec = getattr(settings, "default_resources", None)
        given = (getattr(spec, "requests", None), getattr(spec, "limits", None))
        if (self._kfdefaults_config.resolved is None or task_resources(*self._kfdefaults_resources) is not None
                or task_resources(*given) is None):
            return
        self._kfdefaults_resources = given
        self._task_config, self.pod_template, _ = self._profile_products()
        call = self._kfdefaults_config.call_resolved
        said = resources_replaced(call, self.kfdefaults_resolved, task_resources(*given)) if call is not None else ""
        if said:
            warn_at(f"pyflyte --resource-requests/--resource-limits on task {self.name} (profile "
                    f"{self.task_config.profile!r}): {said}", self.task_function)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the task: run it (a local run), or, in a workflow being compiled, add a node that runs it
        (flytekit's ``flyte_entity_call_handler``, which creates the node itself: ``PythonTask.compile`` is not
        called), whose ``with_overrides(pod_template=...)`` merges over the profile
        (:mod:`kfdefaults.flytekit.overrides`). ``create_node(task)`` and imperative workflows call the task too."""
        outputs = super().__call__(*args, **kwargs)
        node = node_of(outputs)
        if node is not None and not isinstance(getattr(node, "with_overrides", None), NodeOverrides):
            node.with_overrides = NodeOverrides(self, node.with_overrides)
        return outputs

    def node_pod_template(self, override: Any, shared_memory: bool) -> Any:
        """The pod template of a workflow node running this task: the profile, ``@task(pod_template=...)`` and the
        node's ``with_overrides(pod_template=...)`` merged in that order, and built as the task's own is
        (:func:`~kfdefaults.flytekit.pod.registered_pod_template`).

        Args:
            override: The node's ``flytekit.PodTemplate``, or ``None``.
            shared_memory: The node asks for Flyte's shared memory (``with_overrides(shared_memory=...)``).

        Raises:
            KfdefaultsError: no profile to merge with in this process (a Flyte pod running on registered settings),
                or the override changes what the profile's ``auto`` values give (the GPUs behind
                ``nproc_per_node: auto``), which the task registers once for every node.
            ProfileError: the override does not validate or merge.
            TypeError: the override is not a ``flytekit.PodTemplate``.
        """
        config = self.task_config
        if config.resolved is None:
            raise not_resolved_here(config.profile, config.deferred_error)
        resolved = config.resolve_with_pod_template(self._kfdefaults_own_template, *self._kfdefaults_resources,
                                                    node_override=override)
        if resolved.elastic_settings != config.resolved.elastic_settings:
            raise auto_differs(config.profile, config.resolved.elastic_settings, resolved.elastic_settings)
        task_shm = self._kfdefaults_arguments.shared_memory
        arguments = replace(self._kfdefaults_arguments, shared_memory=task_shm or shared_memory)
        return registered_pod_template(config, resolved, arguments,
                                       shared_memory_by=None if task_shm else "with_overrides(shared_memory=...)")

    def get_k8s_pod(self, settings: Any) -> Any:
        """flytekit's pod (the task's requests and limits merged into the profile's per resource name:
        :class:`~kfdefaults.flytekit.pod.PrimaryContainer`); says once per default image when the profile's image
        wins over the registration's default image given with ``pyflyte --image``
        (``settings.image_config.default_image``; flytekit's own default, which nobody chose, goes without saying)."""
        self._refuse_uncarried()
        self._take_registration_resources(settings)
        self._kfdefaults_building_pod = True
        try:
            pod = super().get_k8s_pod(settings)
        finally:
            self._kfdefaults_building_pod = False
        found = self._kfdefaults_image
        if pod is not None and found is not None:
            self._say_the_profile_image_wins(found, settings)
        return pod

    def _get_container(self, settings: Any) -> Any:
        """flytekit's container of the task. Asked for outside the task's own pod (:meth:`get_k8s_pod`) while a map
        task prepares it, it is for a map node's ``with_overrides(pod_template=...)``, which flytekit registers
        as the mapped pods' whole pod template (``get_serializable_array_node_map_task``): refused, since it
        cannot be merged with the profile there (:func:`~kfdefaults.flytekit.overrides.map_override_refused`)."""
        self._refuse_uncarried()
        mapping = getattr(getattr(self, "_get_command_fn", None), "__self__", None)
        if not getattr(self, "_kfdefaults_building_pod", False) and is_map_task(mapping):
            raise map_override_refused(self.name, self.task_config.profile)
        return super()._get_container(settings)

    def _say_the_profile_image_wins(self, found: ProfileImage, settings: Any) -> None:
        from flytekit.configuration.default_images import DefaultImages

        image = getattr(getattr(settings, "image_config", None), "default_image", None)
        default = getattr(image, "full", None) or DefaultImages.default_image()
        # flytekit's own default image is what nobody chose: the profile's winning over it goes without saying
        if default in (found.image, DefaultImages.default_image()) or default in self._kfdefaults_said:
            return
        self._kfdefaults_said.add(default)
        message = profile_image_wins("flytekit", self.task_config.profile, found, f"{default} (pyflyte --image)")
        warn_at(message, self.task_function)

    def get_custom(self, settings: Any) -> Any:
        """The plugin's custom config, of the settings the task registers (with the registration's resources,
        :meth:`_take_registration_resources`)."""
        self._refuse_uncarried()
        self._take_registration_resources(settings)
        return super().get_custom(settings)

    def _refuse_uncarried(self) -> None:
        """Raise, naming the task, when it is compiled in a pod that has no settings for it: a ``@dynamic``'s pod
        whose parent carried none for its ``Elastic(...)`` (:func:`kfdefaults.runtime.carry.not_carried`). Never a
        task without its profile, nor one resolved from the pod's files."""
        config = self.task_config
        if isinstance(config, Elastic) and config.deferred_error is not None:
            raise for_task(config.deferred_error, self.name)

    def execute(self, **kwargs: Any) -> Any:
        """Run the task. In a Flyte pod where no settings were registered for its ``Elastic(...)``, raise
        instead, naming the task (:func:`kfdefaults.runtime.not_registered`): it runs on what was registered or
        not at all. In a pod that runs on the registered settings, take the receipt first, before the plugin
        launches torch's agent (:func:`kfdefaults.receipt.take_receipt`; a Flyte Deck too when the task enables
        decks). Warn first when it is about to wait for nodes that never come
        (:func:`warn_of_nodes_that_never_come`).

        Raises:
            ProfileError: no settings were registered for this task's call in this pod.
            ReceiptError: the pod differs from what was registered and the profile asks for a strict receipt.
        """
        config = self.task_config
        if isinstance(config, Elastic) and (config.unregistered or config.deferred_error) is not None:
            raise for_task(config.unregistered or config.deferred_error, self.name)
        if isinstance(config, Elastic):
            warn_of_nodes_that_never_come(config, self.min_nodes, self.task_function)
            self._take_receipt(config)
        return super().execute(**kwargs)

    def _execute(self, **kwargs: Any) -> Any:
        """The plugin's ``_execute``, its workers running the task function with the profile's
        ``nccl_collective_timeout_sec`` as ``init_process_group``'s NCCL default (:mod:`.collective`)."""
        config = self.task_config
        seconds = config.nccl_collective_timeout_sec if isinstance(config, Elastic) else None
        if seconds is None:
            return super()._execute(**kwargs)
        function = self._task_function
        self._task_function = WithCollectiveTimeout(function, seconds)
        try:
            return super()._execute(**kwargs)
        finally:
            self._task_function = function

    def _take_receipt(self, config: Elastic) -> None:
        """The receipt of this pod against what the task registered, with what the plugin will launch torch with
        (``PytorchElasticFunctionTask._execute`` builds its ``LaunchConfig`` from these)."""
        launch = {"min_nodes": self.min_nodes, "max_nodes": self.max_nodes, "nproc_per_node": config.nproc_per_node,
                  "max_restarts": config.max_restarts, "monitor_interval": config.monitor_interval,
                  "start_method": config.start_method, "rdzv_backend": self.rdzv_backend,
                  "rdzv_configs": dict(config.rdzv_configs or {})}
        receipt = take_receipt(config.registered, self.name, launch)
        if receipt is not None and self.enable_deck:
            from flytekit.deck import Deck

            Deck("kfdefaults receipt", receipt_html(receipt))


_PRODUCTS: dict[tuple, tuple[Any, Resolved, Any, ProfileImage | None]] = {}
"""What :func:`profile_products` made, by what it was made from; each value holds the pipeline and the merged
profile it was made of, so that the ``id()`` in its key stays theirs while it is kept."""

_PRODUCTS_MAX = 4096
"""Entries kept before the memo starts again (a module of thousands of tasks uses a few dozen)."""


def profile_products(config: Elastic, resolved: Resolved, arguments: TaskArguments) -> tuple[Any, ProfileImage | None]:
    """The pod template a task registers (:func:`~kfdefaults.flytekit.pod.registered_pod_template`) and the
    profile's image it carries (:func:`~kfdefaults.flytekit.pod.image_of_a_profile`), made once per process for
    each distinct input: a module of many tasks on a few ``Elastic(...)`` calls builds each template once.

    The key is what decides both: the pipeline (its folders, cluster template and lock, and so the provenance
    annotations), the merged profile's fragments (the same objects for the same profile and keyword arguments while
    the pipeline is, :class:`~kfdefaults.runtime.ProfileCall`; they say who set the image) and its content, the
    call's key (:func:`~kfdefaults.runtime.runtime_key`, in the settings the pod reads back) and the task's
    arguments. Only the profile as merged for the ``Elastic(...)`` call is kept: a task with its own pod template,
    or resources that change its ``auto`` values, is built on its own. Tasks of one key share one
    ``flytekit.PodTemplate``: flytekit and the plugin only read it (flytekit serializes a deep copy, ``_serialize_pod_spec``; the plugin adds a ``/dev/shm``
    only for ``increase_shared_mem``, which is always off). A task asking for shared memory is built on its own, as
    its warning is said at its line. ``KFDEFAULTS_NO_CACHE`` turns the memo off.
    """
    pipeline = config.pipeline
    # only the profile as the Elastic(...) call merged it: a task's own pod template or resources make new fragments
    if resolved is not config.call_resolved or arguments.shared_memory or pipeline is None or flag(NO_CACHE_ENV):
        return registered_pod_template(config, resolved, arguments), image_of_a_profile(resolved)
    try:  # the merged profile as this call holds it (Elastic(...).resolved can be changed), keys in their order
        content = json.dumps([resolved.elastic_settings, resolved.pod_template_spec, resolved.primary_container_name],
                             separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):  # not plain data: built on its own
        return registered_pod_template(config, resolved, arguments), image_of_a_profile(resolved)
    key = (id(pipeline), tuple(map(id, resolved.fragments)), content, config.runtime_key, arguments)
    hit = _PRODUCTS.get(key)
    if hit is not None and hit[0] is pipeline:
        return hit[2], hit[3]
    template, found = registered_pod_template(config, resolved, arguments), image_of_a_profile(resolved)
    if len(_PRODUCTS) >= _PRODUCTS_MAX:
        _PRODUCTS.clear()
    _PRODUCTS[key] = (pipeline, resolved, template, found)
    return template, found


def warn_of_nodes_that_never_come(config: Elastic, min_nodes: int, function: Callable[..., Any]) -> None:
    """Warn when a task of at least two nodes runs outside a PyTorchJob, which is to say locally; the warning is
    placed at the task's ``@task`` line (``function``): ``pyflyte run`` calls the task from its own code.

    The plugin then starts one node whose rendezvous listens on ``localhost:0`` (``PET_RDZV_ENDPOINT`` unset),
    where no other node can join: c10d waits ``join_timeout`` (torch's default 600 s) and fails with
    ``RendezvousTimeoutError``. The plugin itself only logs that the rendezvous "might" time out. A
    PyTorchJob's pods have ``PET_NNODES``, which the plugin reads to tell (``PytorchElasticFunctionTask.execute``).
    ``render`` says nothing of it: it shows what runs on the cluster, where the nodes do come.
    """
    if min_nodes <= 1 or os.environ.get("PET_NNODES") is not None:
        return
    join = (config.rdzv_configs or {}).get("join_timeout", 600)
    warn_at(f"profile {config.profile!r} asks for at least {min_nodes} nodes (nnodes: {config.nnodes}), but this run "
            f"is not part of a PyTorchJob (PET_NNODES is unset): it starts one node, whose rendezvous waits "
            f"join_timeout ({join} s) for nodes that never come and then fails. To run it locally, give it one node: "
            f"Elastic(profile={config.profile!r}, nnodes=1)", function)

