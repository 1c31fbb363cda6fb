"""Run time equals registration: the settings resolved when a task is registered travel with it, for every SDK.

In the pod, flytekit's ``pyflyte-execute`` and Flyte 2's ``a0`` import the task's module again, and the image may
not hold the profile files. The settings resolved at registration are in the primary container's environment
(:data:`~kfdefaults.settings.RUNTIME_ENV`), keyed by the ``Elastic(...)`` call that made them (and its target),
and ``Elastic(...)`` uses them there instead of reading files. :class:`ProfileCall` is that call, shared by the
adapters (:mod:`kfdefaults.flytekit`, :mod:`kfdefaults.flyte2`).
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from contextvars import ContextVar
from typing import Any, Mapping, Sequence

from ..errors import (
    Finding,
    KfdefaultsError,
    KfdefaultsWarning,
    Location,
    ProfileError,
    caller_stacklevel,
)
from ..k8s.models import to_plain
from ..k8s.pod import shared_memory_patch
from ..k8s.provenance import provenance_annotations
from ..k8s.resources import merge_task_resources, resource_name
from .. import lock as locks  # the lock's names are imported when first used (most projects have none)
from ..merge.auto import uses_auto
from ..merge.primary import name_primary_as_the_profile_does
from ..merge.result import Resolved, SdkObjects, copy_plain
from ..pipeline import Pipeline
from ..pipeline.carried import carried_entry, carried_pipeline
from ..pipeline.shared import shared_pipeline
from ..receipt.expect import expected_pod, runtime_key
from ..settings import NO_PROFILE, RUNTIME_ENV
from ..targets import Target
from ..check.deprecation import deprecations
from ..check.replaced import replaced_lists
from ..validate.fragment import Fragment
from .carry import carried_calls, carry_profiles, not_carried
from .task_layer import resources_replaced

__all__ = ["ProfileCall", "carry_profiles", "for_task", "not_registered", "registered_settings", "resources_replaced",
           "runtime_key"]

SDK_PACKAGES = ("kfdefaults", "flytekit", "flytekitplugins", "flyte", "flyteplugins", "dataclasses")
"""The packages between the user's code and a warning of ``Elastic(...)``, skipped to point at the caller (Flyte 2
builds tasks again through ``dataclasses.replace``)."""


def registered_settings(sdk: SdkObjects) -> dict[str, Any] | None:
    """What registration put in this pod's environment (:data:`~kfdefaults.settings.RUNTIME_ENV`: ``{"key",
    "target", "profile", "elastic"}``) when this process runs a task in a Flyte container
    (:meth:`~kfdefaults.merge.result.SdkObjects.running_a_task`); ``None`` anywhere else, whatever the environment
    says: a variable left over in a shell or copied from a pod changes neither ``render`` nor a registration."""
    raw = os.environ.get(RUNTIME_ENV)
    if not raw or not sdk.running_a_task():
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # not what registration writes: no settings registered here
        return None
    return data if isinstance(data, dict) and isinstance(data.get("elastic"), dict) else None


def not_registered(call: str, registered: Mapping[str, Any] | None) -> ProfileError:
    """The error of an ``Elastic(...)`` call that finds no settings registered for it in a Flyte pod: kfdefaults
    does not read profile files there (they may be missing from the image, or other files), so that the task runs
    on what was registered, or not at all. Raised only if the call's task is the one that runs."""
    if registered is None:
        why = (f"this pod's primary container has no {RUNTIME_ENV} (a pod template replaced the registered one, or "
               "the task was registered without kfdefaults)")
    else:
        why = (f"the settings registered with this pod are those of another call (profile "
               f"{registered.get('profile')!r}, target {registered.get('target')!r}): the code in the image is not "
               "the code that was registered")
    return ProfileError([Finding(Location(call), "", (
        f"no settings were registered for {call}: {why}. In a Flyte pod kfdefaults runs a task on the settings "
        "registered with it and never reads profile files instead; register the task again from this code"))])


def for_task(error: ProfileError, task: str) -> ProfileError:
    """``error`` (kept at import, raised when the task runs), each problem placed at the task: ``task
    wf.train: no settings were registered for Elastic(...)...``."""
    return ProfileError([Finding(Location(f"task {task}"), f.path, f.message, f.severity, layer=f.layer)
                         for f in error.findings])


PROJECT_FROM: ContextVar[tuple[str, ...] | None] = ContextVar("kfdefaults_project_from", default=None)
"""Set by a preview that defines a task on the user's behalf (``render --as flyte``): the folders the project is
looked for from, as the command line found it (the working directory's project, or ``--project``'s), in place of
the calling module's folder, which is kfdefaults' own or the console script's."""


def caller_folder() -> str | None:
    """The folder of the first module on the stack outside :data:`SDK_PACKAGES` (the user's module that calls
    ``Elastic(...)``), where its project's ``pyproject.toml`` is looked for; ``None`` when it has no file
    (an interactive session)."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.split(".")[0] not in SDK_PACKAGES:
            file = frame.f_globals.get("__file__")
            return os.path.dirname(os.path.abspath(file)) if isinstance(file, str) else None
        frame = frame.f_back
    return None


_RESOLVED: dict[tuple[str, str, bool | None, str], tuple[Pipeline, list[Fragment], Resolved]] = {}
"""(target, profile, shared memory asked for, overrides) -> the merged profile, reused while the shared pipeline is the same."""


_DIGESTS: dict[tuple[int, str], tuple[Pipeline, str]] = {}
"""(pipeline, profile) -> the digest of the profile without its task layer."""


class ProfileCall:
    """One ``Elastic(profile=..., **overrides)`` call: the profile resolved for one target at registration, or the
    settings registered with the task when it runs in a pod.

    Args:
        target: The SDK.
        profile: Profile name.
        platform: Extra platform-layer folders.
        team: Extra team-layer folders.
        overrides: The ``elastic`` section of the task layer, in profile shape.
        labels: Dotted key -> what set it (``elastic.nnodes`` -> ``Elastic(nnodes=2)``), for messages.
        sdk: What builds the SDK's objects for :attr:`Resolved.elastic`.

    Attributes:
        key: :func:`runtime_key` of the call.
        settings: The elastic settings to run with, as plain data.
        resolved: The merged profile; ``None`` in a pod that runs on the registered settings.
        unregistered: In a pod, where no settings were registered for this call, the error its task raises if it
            is the one that runs (:func:`not_registered`): a task runs on what was registered, never on files read
            again.
        deferred_error: In a pod, where this call is neither registered nor carried (:mod:`.carry`), the error its
            task raises if it is compiled or submitted here (a ``@dynamic``'s pod, a Flyte 2 parent's):
            :func:`~.carry.not_carried`. A call whose profile the parent carries is merged from that, with
            :attr:`resolved` and :attr:`pipeline` as at registration; a pod never reads profile files.
        registered: In a Flyte pod running on the registered settings, everything registration put there
            (:func:`registered_settings`: the settings, and what the pod should have, which the receipt compares:
            :mod:`kfdefaults.receipt`); else ``None``.

    The project whose ``pyproject.toml`` names the team folders, the platform and the lock file is found from the
    folder of the module calling ``Elastic(...)``, then the working directory: registering from another folder
    finds the same one.

    Raises:
        ProfileError: the profile is unknown or invalid, an override is invalid, a setting cannot run on the
            target, or the profile is not what the project's ``kfdefaults.lock`` records (outside a pod).
    """

    def __init__(self, target: Target, profile: str | None, platform: list[str], team: list[str],
                 overrides: dict[str, Any], labels: Mapping[str, str], sdk: SdkObjects,
                 shared_memory: bool | None = None, plugin_shared_memory: bool | None = None) -> None:
        self.target = target
        self.profile = profile
        self.given_shared_memory, self.plugin_shared_memory = shared_memory, plugin_shared_memory
        keyed = overrides if shared_memory is None else {**overrides, "increase_shared_mem": shared_memory}
        self.key = runtime_key(target.name, profile, keyed)
        self.resolved: Resolved | None = None
        self.deferred_error: ProfileError | None = None
        self.pipeline: Pipeline | None = None
        self.task_layers: list[Fragment] = []
        self.unregistered: ProfileError | None = None
        self.carried_provenance: dict[str, str] | None = None
        self.registered: dict[str, Any] | None = None
        if sdk.running_a_task():  # in a Flyte pod: what was registered for this call
            registered = registered_settings(sdk)
            if registered is not None and registered.get("key") == self.key:
                self.settings: dict[str, Any] = registered["elastic"]
                self.registered = registered
                self.profile = profile if profile is not None else registered.get("profile")
                return
            # another task's call (a sibling in the module, a child compiled or submitted here): an error if its
            # task is the one that runs; merged from what the parent carries, else an error if compiled here
            call = f"Elastic(profile={profile!r}{''.join(f', {k}={v!r}' for k, v in overrides.items())})"
            self.unregistered = not_registered(call, registered)
            carried = carried_calls(sdk)
            self.settings = copy.deepcopy(dict(target.defaults))
            try:
                if self.key not in carried:
                    raise not_carried(call, carried, target.name)
                self.settings = self._resolve_carried(carried[self.key], overrides, labels, sdk)
            except (ProfileError, KeyError, TypeError, ValueError) as e:
                self.deferred_error = e if isinstance(e, ProfileError) else not_carried(call, {}, target.name)
            return
        self.settings = self._resolve(platform, team, overrides, labels, sdk)

    def _resolve_carried(self, entry: Any, overrides: dict[str, Any], labels: Mapping[str, str],
                         sdk: SdkObjects) -> dict[str, Any]:
        """The call merged from what its parent carried (:func:`~kfdefaults.pipeline.carried.carried_pipeline`): the
        profile's fragments as registration read them, the task layer of this code on top; said nothing of (its
        warnings were said at registration).

        Raises:
            ProfileError: the task layer does not merge (the code is not the code registered).
            KeyError, TypeError, ValueError: ``entry`` is not what :func:`carry_profiles` writes.
        """
        self.pipeline = pipeline = carried_pipeline(entry, sdk)
        self.carried_provenance = dict(entry["provenance"])
        self.profile = self.profile if self.profile is not None else str(entry["profile"])
        self._merge(pipeline, overrides, labels)
        return copy_plain(self.resolved.elastic_settings)

    def _merge(self, pipeline: Pipeline, overrides: dict[str, Any], labels: Mapping[str, str]) -> None:
        """This call's task layer over its profile: the keyword arguments, then the shared memory it asks for
        (``increase_shared_mem``: :func:`~kfdefaults.k8s.pod.shared_memory_patch` of the profile so merged; without
        a profile, the plugin's default), each a fragment ``--explain`` shows."""
        elastic = pipeline.task_layer(self.profile, {"elastic": overrides} if overrides else None,
                                      source="Elastic(...)", labels=labels)
        self.task_layers = [elastic] if elastic is not None else []
        self.resolved = resolved = pipeline.resolve(self.profile, self.task_layers)
        wanted = self.given_shared_memory
        wanted = self.plugin_shared_memory if wanted is None and self.profile == NO_PROFILE else wanted
        patch = shared_memory_patch(resolved.pod_spec, resolved.primary_container_name, wanted) \
            if wanted is not None else None
        if patch is not None:
            self.task_layers.append(pipeline.task_layer(self.profile, {"pod_template": {"spec": patch}},
                                                        source=f"Elastic(increase_shared_mem={wanted})"))
            self.resolved = pipeline.resolve(self.profile, self.task_layers)

    def carried_entry(self) -> dict[str, Any] | None:
        """This call's profile as a parent carries it (:func:`~kfdefaults.pipeline.carried.carried_entry`);
        ``None`` where it has none (a pod running its task on the registered settings, or not carried them)."""
        if self.pipeline is None or self.resolved is None:
            return None
        return carried_entry(self.pipeline, self.profile, self.provenance())

    def _resolve(self, platform: list[str], team: list[str], overrides: dict[str, Any], labels: Mapping[str, str],
                 sdk: SdkObjects) -> dict[str, Any]:
        given = PROJECT_FROM.get()
        here = caller_folder() if given is None else None
        self.pipeline = pipeline = shared_pipeline(platform, team, sdk=sdk, target=self.target,
                                                   project=given if given is not None else (here,) if here else ())
        if self.profile is None:  # the project's default profile, else the plugin's defaults alone
            self.profile = pipeline.project.default_profile() or NO_PROFILE
        # key order kept: rdzv_configs={"a": 1, "b": 2} and {"b": 2, "a": 1} merge to dictionaries of other orders
        memo_key = (self.target.name, self.profile, self.given_shared_memory, json.dumps(overrides, default=repr))
        hit = _RESOLVED.get(memo_key)
        if hit is not None and hit[0] is pipeline:
            _, self.task_layers, remembered = hit
            self.resolved = remembered.copy()  # each call its own: one may be changed, the next one not
        else:
            self._merge(pipeline, overrides, labels)
            _RESOLVED[memo_key] = (pipeline, self.task_layers, self.resolved.copy())
        for finding in (w for layer in self.task_layers for w in layer.warnings):
            # what a file holding these values is warned of (`timeout` without `join_timeout`), at the caller's line
            warnings.warn(KfdefaultsWarning.of(finding), stacklevel=caller_stacklevel(SDK_PACKAGES))
        declared = pipeline.declared_platform()
        fallback = locks.platform_fallback_warning(self.resolved, declared, pipeline.lock) if declared else None
        for finding in [*deprecations(self.resolved), *([fallback] if fallback is not None else [])]:
            warnings.warn(KfdefaultsWarning.of(finding), stacklevel=caller_stacklevel(SDK_PACKAGES))
        return copy_plain(self.resolved.elastic_settings)

    def with_pod_template(self, section: Mapping[str, Any] | None, source: str,
                          resources: Mapping[str, Any] | None = None, resources_source: str = "") -> Resolved:
        """The profile with a task-layer pod template on top (``{"spec", "labels", "annotations",
        "primary_container_name"}``, in profile shape), named ``source`` in messages.

        When the profile has ``auto`` values (:mod:`kfdefaults.merge.auto`), the task's own ``resources`` (a
        container's ``{"requests": {...}, "limits": {...}}``) count too: merged into the primary container's as the
        task's pod will have them (:func:`~kfdefaults.k8s.resources.merge_task_resources`), so that
        ``nproc_per_node: auto`` follows the task's GPUs. They are named ``resources_source`` in messages.

        Raises:
            KfdefaultsError: this call runs on registered settings (in a pod) and has no profile to merge.
            ProfileError: the pod template does not validate or merge.
        """
        return self.with_pod_templates([(section, source)], resources, resources_source)

    def with_pod_templates(self, sections: Sequence[tuple[Mapping[str, Any] | None, str]],
                           resources: Mapping[str, Any] | None = None, resources_source: str = "") -> Resolved:
        """The profile with task-layer pod templates on top, each merged over the one before it (a task's own
        template, then a workflow node's override of it), each ``(section, source)`` as :meth:`with_pod_template`
        takes them (empty sections add nothing), and the task's ``resources`` as there.

        Raises:
            KfdefaultsError: this call runs on registered settings (in a pod) and has no profile to merge.
            ProfileError: a pod template does not validate or merge.
        """
        if self.resolved is None or self.pipeline is None:
            raise KfdefaultsError(f"profile {self.profile!r} was not resolved here")
        task = list(self.task_layers)
        resolved = self.resolved
        for section, source in sections:
            if section:
                task.append(self.pipeline.task_layer(self.profile, {"pod_template": dict(section)}, source=source))
        if len(task) > len(self.task_layers):
            resolved = self.pipeline.resolve(self.profile, task)
            for finding in replaced_lists(resolved, layers=("task",)):  # the files' own: render and validate say them
                warnings.warn(KfdefaultsWarning.of(finding), stacklevel=caller_stacklevel(SDK_PACKAGES))
        if resources and uses_auto(resolved.fragments):
            primary = resolved.primary_container_name
            profile = next((c.get("resources") or {} for c in resolved.pod_spec.get("containers", [])
                            if c.get("name") == primary), {})
            merged = {kind: {resource_name(k): v for k, v in values.items()}
                      for kind, values in merge_task_resources(profile, dict(resources)).items()}
            patch = {"spec": {"containers": [{"name": primary, "resources": {"$patch": "replace", **merged}}]}}
            task.append(self.pipeline.task_layer(self.profile, {"pod_template": patch}, source=resources_source))
            resolved = self.pipeline.resolve(self.profile, task)
        return resolved

    def pod_template_section(self, pod_template: Any, primary: str | None = None) -> dict[str, Any]:
        """A task's ``PodTemplate`` (flytekit's or Flyte 2's: the same four fields) as a profile's ``pod_template``
        section, its container named ``primary`` renamed to the primary container below it: ``primary`` when
        given (the name a lower task-layer template chose), else the profile's
        (:func:`~kfdefaults.merge.primary.name_primary_as_the_profile_does`). The template is not changed."""
        section: dict[str, Any] = {}
        if pod_template.pod_spec is not None:
            section["spec"] = to_plain(pod_template.pod_spec)
            profile_primary = primary or (self.resolved.primary_container_name if self.resolved is not None
                                          else "primary")
            name_primary_as_the_profile_does(section["spec"], pod_template.primary_container_name, profile_primary)
        if pod_template.labels:
            section["labels"] = dict(pod_template.labels)
        if pod_template.annotations:
            section["annotations"] = dict(pod_template.annotations)
        if pod_template.primary_container_name and pod_template.primary_container_name != "primary":
            section["primary_container_name"] = pod_template.primary_container_name
        return section

    def provenance(self) -> dict[str, str]:
        """The annotations that tell which profile made a pod (:func:`kfdefaults.k8s.provenance.provenance_annotations`):
        its name, the digest of the profile merged across its file layers (the task layer left out: the digest
        ``kfdefaults.lock`` records) and the lock file's digest when the project has one.

        Raises:
            KfdefaultsError: this call runs on registered settings (in a pod) and has no profile.
        """
        if self.carried_provenance is not None:  # merged from what a parent carried: registration's annotations
            return dict(self.carried_provenance)
        if self.pipeline is None:
            raise KfdefaultsError(f"profile {self.profile!r} was not resolved here")
        key = (id(self.pipeline), self.profile)
        if _DIGESTS.get(key, (None,))[0] is not self.pipeline:
            # the file layers alone may not run on the target: the task layer may delete what stops them
            digest = self.pipeline.resolve(self.profile, check_lock=False, checked=False).digest()
            _DIGESTS[key] = (self.pipeline, digest)
        lock = self.pipeline.lock
        return provenance_annotations(self.profile, _DIGESTS[key][1], lock.digest if lock is not None else None)

    def env_value(self, settings: Mapping[str, Any], pod: Mapping[str, Any] | None = None) -> str:
        """The JSON the pod reads back (:data:`~kfdefaults.settings.RUNTIME_ENV`): this call's key, its target
        and its resolved ``settings``, and what the task's pod should have (``pod``:
        :func:`kfdefaults.receipt.expect.expected_pod`), which the receipt compares the pod with."""
        value: dict[str, Any] = {"key": self.key, "target": self.target.name, "profile": self.profile,
                                 "elastic": dict(settings)}
        if pod is not None:
            value["pod"] = dict(pod)
        return json.dumps(value, sort_keys=True, separators=(",", ":"))

    def expected_pod(self, resolved: Resolved, spec: Mapping[str, Any], annotations: Mapping[str, str],
                     **task: Any) -> dict[str, Any]:
        """What the pod of a task registered from ``resolved`` should have
        (:func:`kfdefaults.receipt.expect.expected_pod`, files named as this call's project's ``kfdefaults.lock``
        names them); ``task`` holds the task's own resources and shared memory, as that function takes them."""
        pipeline = self.pipeline
        return expected_pod(resolved, spec, annotations, catalog=pipeline.catalog if pipeline is not None else None,
                            root=pipeline.project.root if pipeline is not None else None,
                            names=pipeline.file_names if pipeline is not None else None, **task)
