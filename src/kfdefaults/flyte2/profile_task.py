"""What a Flyte 2 task on a profile does, whichever task class it is: :class:`ProfileTask`, whose pod template is
its config's profile (:class:`Flyte2Config`) merged with the task layer; the subclasses of each SDK task class are
:class:`~kfdefaults.flyte2.task.ProfileTorchFunctionTask` and :class:`~kfdefaults.flyte2.clustered.ProfileClusteredTask`.
This module imports no plugin (``flyteplugins.pytorch`` imports torch).

What it absorbs so that the task gets what ``kfdefaults render --target flyte2`` (or ``clustered``) shows:

* The environment's (or ``@env.task``'s) ``pod_template`` is the task layer: merged on top of the profile by
  strategic merge patch, exactly as ``@task(pod_template=...)`` is for flytekit. Objects passed in are read,
  never changed.
* ``flyte.Resources(shm=...)`` is the task layer too: it wins over the profile's ``/dev/shm`` mount, with a
  :class:`~kfdefaults.KfdefaultsWarning` saying so. Flyte's backend adds its own shared-memory volume and rejects
  a pod whose primary container already mounts ``/dev/shm``; the pod gets exactly one mount.
* Flyte 2 merges the task's ``Resources`` into the pod template's primary container key by key; kfdefaults first
  drops a profile value the task's would contradict (:func:`~kfdefaults.k8s.resources.merge_task_resources`:
  a profile request above the task's limit, the profile's ``nvidia.com/gpu`` beside the task's ``gpu``).
* Flyte 2 lists the task's ``env_vars`` before the pod template's container environment, so the template's value
  of a variable both set would win; the task layer wins here, as everywhere.
* Flyte 2 keeps a pod template's image over the environment's: ``TaskEnvironment(image=...)`` (any image but
  ``"auto"``) is the task layer and wins over the profile's image, which wins over the deployment's default image
  (``flyte deploy --image``, else the ``"auto"`` image); a :class:`~kfdefaults.KfdefaultsWarning` says which won
  (:mod:`kfdefaults.show.image`).
* ``task.override(pod_template=...)`` builds the task again with the new template as its own, merged over the
  profile; where the profile cannot be merged (a pod running on the registered settings) it is refused.
* In the pod, ``a0`` imports the task's module again, and the image may not hold the profile files. The settings
  resolved at registration travel in the primary container's environment (:mod:`kfdefaults.runtime`), and
  ``Elastic(...)`` (or the clustered environment) uses them there instead of reading files. A profile that cannot be read in a pod is an error
  when that task runs or is submitted (by a parent task, which serializes its children in its own pod), never a
  task silently built from the plugin's defaults.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Optional

import flyte

from ..errors import KfdefaultsError, KfdefaultsWarning, caller_stacklevel, warn_at
from ..k8s.mounts import SHM_PATH
from ..k8s.pod import drop_env, drop_shm_mounts, primary_container, set_env
from ..k8s.resources import merge_task_resources
from ..merge.result import Resolved
from ..receipt import receipt_html, take_receipt
from ..runtime import for_task, resources_replaced
from ..runtime.config import ProfileConfig
from ..settings import RUNTIME_ENV
from ..show.image import (
    ProfileImage,
    profile_image,
    profile_image_wins,
    task_image_wins,
)
from .objects import flyte_pod_template, task_resources

FLYTE_SHM_VOLUME = "flyte-shm"
"""The volume Flyte's backend adds for ``Resources(shm=...)`` (``pod_helper.go``, ``ApplySharedMemory``)."""

TASK_POD_TEMPLATE = "pod_template=flyte.PodTemplate(...)"
"""How messages and ``--explain`` name the task's pod template."""

_CALLERS = ("kfdefaults", "flyte", "flyteplugins", "dataclasses")
"""Frames a warning skips to point at the user's ``@env.task`` line."""


@dataclass
class ProfilePodTemplate(flyte.PodTemplate):
    """A ``flyte.PodTemplate`` merged from a profile and a task's own template.

    Attributes:
        task_layer: The task's own ``flyte.PodTemplate`` (or ``None``) it was merged with: ``task.override(...)``
            builds the task again, and merges that, not the merged template, on top of the profile.
    """

    task_layer: Optional[flyte.PodTemplate] = field(default=None, repr=False, compare=False)
    profile_image: Optional[ProfileImage] = field(default=None, repr=False, compare=False)
    """The profile's image the task registers (the environment gives none of its own), to say so when serialized."""


class Flyte2Config(ProfileConfig):
    """What a Flyte 2 config on a profile (``kfdefaults.flyte2.Elastic``, a clustered environment's plugin config)
    adds to :class:`~kfdefaults.runtime.config.ProfileConfig`: pickling, and a task's ``flyte.PodTemplate`` merged."""

    def __getstate__(self) -> dict[str, Any]:
        """What pickling keeps (Flyte 2 pickles tasks for interactive runs): the plugin's fields, the profile, the
        key and a deferred error; the merged profile and its pipeline stay in this process."""
        state = dict(self.__dict__)
        state.pop("_call", None)
        state["resolved"] = None
        return state

    def resolve_with_pod_template(self, pod_template: Any, source: str, resources: Any = None) -> Resolved:
        """The profile with a task's ``flyte.PodTemplate`` (the environment's or ``@env.task``'s) added to the task
        layer; ``None`` adds nothing. The template is not changed. ``resources`` (the task's, as a container's
        ``{"requests", "limits"}``) count where the profile writes ``auto`` values
        (:meth:`kfdefaults.runtime.ProfileCall.with_pod_template`).

        Raises:
            KfdefaultsError: this config runs on registered settings (in a pod) and has no profile to merge.
            TypeError: ``pod_template`` names a cluster PodTemplate (a string): kfdefaults cannot merge what it
                cannot read.
        """
        call = self.__dict__.get("_call")
        if call is None:
            raise KfdefaultsError(f"profile {self.profile!r} was not resolved here")
        if pod_template is None:
            return call.with_pod_template(None, source, resources, "flyte.Resources")
        if not isinstance(pod_template, flyte.PodTemplate):
            raise TypeError(f"a task on profile {self.profile!r} takes a flyte.PodTemplate as pod_template, not "
                            f"{type(pod_template).__name__} ({pod_template!r}): kfdefaults merges the profile's pod "
                            "template with yours, and cannot read a cluster PodTemplate named by a string")
        return call.with_pod_template(call.pod_template_section(pod_template), source, resources, "flyte.Resources")


class ProfileTask:
    """What a Flyte 2 task on a profile adds to its SDK's task class (a ``TorchFunctionTask``, a
    ``ClusteredTaskTemplate``; listed before it): its pod template is its config's profile merged with the task
    layer.

    Attributes:
        kfdefaults_resolved: The merged profile the task registers with (``None`` in a pod running on the
            registered settings, or with the SDK's own config).
    """

    plugin_config: Any

    def __post_init__(self) -> None:
        config = self.plugin_config
        own = self.pod_template
        if isinstance(own, ProfilePodTemplate):
            own = own.task_layer  # built again (task.override): merge the task's own template, not the result
        self.kfdefaults_resolved: Resolved | None = None
        if isinstance(config, Flyte2Config) and config.resolved is not None:
            self.pod_template = self._profile_pod_template(config, own)
        else:
            self.pod_template = own
        super().__post_init__()

    def _profile_pod_template(self, config: Flyte2Config, own: Any) -> ProfilePodTemplate:
        resources = self.resources
        resolved = config.resolve_with_pod_template(own, TASK_POD_TEMPLATE, task_resources(resources))
        config = config.with_resolved(resolved)  # nproc_per_node: auto follows the task's GPUs
        self.plugin_config = config
        self.kfdefaults_resolved = resolved
        spec = resolved.pod_spec
        primary_name = resolved.primary_container_name
        if resources is not None and resources.shm is not None:
            dropped = drop_shm_mounts(spec, primary_name)
            if dropped:
                warnings.warn(
                    f"flyte.Resources(shm=...) wins over the {SHM_PATH} volume {', '.join(map(repr, dropped))} of "
                    f"profile {config.profile!r}: the task gets Flyte's shared-memory volume instead",
                    KfdefaultsWarning,
                    stacklevel=caller_stacklevel(_CALLERS),
                )
            _check_shm_volume_is_free(spec, primary_name, config.profile)
        primary = primary_container(spec, primary_name)
        found = profile_image(resolved)
        found = found if found is not None and not found.by_task else None
        if found is not None and self._environment_gives_image():
            del primary["image"]  # Flyte 2 fills in the environment's image where the template has none
            warnings.warn(task_image_wins("flyte2", config.profile, found), KfdefaultsWarning,
                          stacklevel=caller_stacklevel(_CALLERS))
            found = None
        own_resources = task_resources(resources)
        if own_resources and primary.get("resources"):
            primary["resources"] = merge_task_resources(primary["resources"], own_resources)
        if self.env_vars:
            drop_env(primary, self.env_vars)
        annotations = {**resolved.annotations, **config.provenance()}  # which profile made the pod
        shm = resources.shm if resources is not None else None
        pod = config.expected_pod(resolved, spec, annotations, shared_memory=shm,
                                  shared_memory_by="flyte.Resources(shm=...)")
        set_env(primary, RUNTIME_ENV, config.runtime_env_value(pod))  # and what the pod should have, for its receipt
        return flyte_pod_template(spec, primary_name, resolved.labels, annotations, cls=ProfilePodTemplate,
                                  task_layer=own, profile_image=found)

    def _environment_gives_image(self) -> bool:
        """Whether the task's ``TaskEnvironment`` names an image of its own (not ``"auto"``, not ``None``): read on
        the environment, since the task holds ``"auto"`` as an image already once built."""
        env = self.parent_env() if self.parent_env is not None else None
        image = env.image if env is not None else self.image
        return image is not None and not (isinstance(image, str) and image == "auto")

    def override(self, **kwargs: Any) -> Any:
        """Flyte 2's ``TaskTemplate.override``: the task built again, a ``pod_template`` given as its own, merged
        over the profile; ``resources`` merged into the profile's per resource name, as the environment's are,
        with a :class:`~kfdefaults.KfdefaultsWarning` naming what of the profile's they replace
        (:func:`kfdefaults.runtime.resources_replaced`: ``gpu=1`` on ``gpu-large``'s 8 GPUs, whose
        ``nproc_per_node`` stays 8).

        Raises:
            KfdefaultsError: a ``pod_template`` is given where this process runs the task on the settings
                registered with it (a Flyte pod), with no profile to merge it with.
        """
        config = kwargs.get("plugin_config") or self.plugin_config
        if kwargs.get("pod_template") is not None and isinstance(config, Flyte2Config) and config.resolved is None:
            why = (f"its profile cannot be read here ({config.deferred_error})" if config.deferred_error is not None
                   else "this process runs the task on the settings registered with it and reads no profile file")
            raise KfdefaultsError(f"task.override(pod_template=...) on a task on profile {config.profile!r}: "
                                  f"kfdefaults merges the template over the profile, and {why}")
        built = super().override(**kwargs)
        resources = task_resources(kwargs.get("resources"))
        resolved = getattr(built, "kfdefaults_resolved", None)
        call = built.plugin_config.__dict__.get("_call") if isinstance(built.plugin_config, Flyte2Config) else None
        said = resources_replaced(call.resolved, resolved, resources) if resources and resolved and call else ""
        if said:  # the override merges per resource name, as the task layer does: say what it replaces
            warnings.warn(f"task.override(resources=...) on task {built.name} (profile {call.profile!r}): {said}",
                          KfdefaultsWarning, stacklevel=caller_stacklevel(_CALLERS))
        return built

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("kfdefaults_resolved", None)
        return state

    def _raise_deferred(self, running: bool = False) -> None:
        """Raise the error kept at import: the profile could not be read in this pod; and, when this task is the
        one running (``running``), no settings were registered for its call (:func:`kfdefaults.runtime.not_registered`):
        it runs on what was registered or not at all."""
        config = self.plugin_config
        if not isinstance(config, Flyte2Config):
            return
        error = (config.unregistered if running else None) or config.deferred_error
        if error is not None:
            raise for_task(error, self.name)

    def custom_config(self, sctx: Any) -> Any:
        """The plugin's custom config; raises the profile error kept at import when this task, whose profile
        could not be read in this pod, is serialized (a parent task submitting it)."""
        self._raise_deferred()
        self._say_the_profile_image_wins(sctx)
        return super().custom_config(sctx)

    def _say_the_profile_image_wins(self, sctx: Any) -> None:
        """Once per default image: the profile's image wins over the deployment's default image (the environment's
        in the serialization's image cache, ``flyte deploy --image``; else the ``"auto"`` image's reference)."""
        template = self.pod_template
        found = template.profile_image if isinstance(template, ProfilePodTemplate) else None
        if found is None or self.func is None:
            return
        cache = getattr(sctx, "image_cache", None)
        default = (getattr(cache, "image_lookup", None) or {}).get(self.parent_env_name or "")
        if default is None and self.image is not None and not isinstance(self.image, str):
            try:
                default = self.image.uri
            except Exception:  # an image that must be built first: named by its reference alone
                default = None
        default = default or "(to be built)"
        said = self.__dict__.setdefault("_kfdefaults_said", set())
        if default == found.image or default in said:
            return
        said.add(default)
        config = self.plugin_config
        warn_at(profile_image_wins("flyte2", config.profile, found,
                                   f"{default} (flyte deploy --image, else Flyte 2's \"auto\" image)"), self.func)

    def _take_receipt(self, launch: dict[str, Any]) -> None:
        """The pod's receipt (:func:`kfdefaults.receipt.take_receipt`) where it runs on registered settings, with
        what torch is launched with (``launch``), and a report tab when the task has a report.

        Raises:
            ReceiptError: the pod differs from what was registered and the profile asks for a strict receipt.
        """
        config = self.plugin_config
        receipt = take_receipt(config.registered, self.name, launch)
        if receipt is not None and getattr(self, "report", False):
            import flyte.report

            flyte.report.get_tab("kfdefaults receipt").log(receipt_html(receipt))


def _check_shm_volume_is_free(spec: dict[str, Any], primary_name: str, profile: str) -> None:
    """Flyte's backend rejects ``Resources(shm=...)`` when the pod already has a volume, or the primary container a
    mount, named ``flyte-shm`` (BadTaskSpecification at launch): say so at definition instead.

    Raises:
        KfdefaultsError: such a volume or mount is in the merged pod spec.
    """
    volumes = [v.get("name") for v in spec.get("volumes") or []]
    mounts = [m.get("name") for m in primary_container(spec, primary_name).get("volumeMounts") or []]
    if FLYTE_SHM_VOLUME in volumes or FLYTE_SHM_VOLUME in mounts:
        raise KfdefaultsError(f"flyte.Resources(shm=...) adds a volume named {FLYTE_SHM_VOLUME!r}, and the pod "
                              f"template of profile {profile!r} already has one: Flyte's backend would reject the "
                              "task; rename that volume")
