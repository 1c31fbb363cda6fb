"""What both SDK adapters' ``Elastic`` share: the call's arguments checked and turned into the task layer, and
the methods that speak of the profile behind the plugin's fields.

``kfdefaults.Elastic`` (flytekit) and ``kfdefaults.flyte2.Elastic`` are each a subclass of :class:`ProfileConfig`
and of their plugin's ``Elastic``; they differ only in the :class:`~kfdefaults.targets.Target` they resolve for and
in how the merged settings become the plugin's fields (:meth:`ProfileConfig.plugin_fields`).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Iterable, Mapping

from ..errors import ProfileError
from ..k8s.models import to_k8s_model
from ..layers.flags import folder_arguments
from ..merge.result import Resolved, SdkObjects, copy_plain
from ..pipeline import Pipeline
from ..targets import OFF, Target
from ..validate.suggest import ELASTIC_SYNONYMS, closest
from . import ProfileCall

FOLDER_ARGUMENTS = ("profile", "platform", "team")
"""The keyword arguments of ``Elastic(...)`` that are not the plugin's fields."""


def run_policy_dict(policy: Any) -> Any:
    """A plugin's ``RunPolicy`` (flytekit's, whose ``clean_pod_policy`` is an enum, or Flyte 2's, a string) as the
    profile format writes it (``clean_pod_policy: running``); anything else (a mapping in profile shape) as it is:
    validation says if it is bad."""
    if not dataclasses.is_dataclass(policy) or isinstance(policy, type):
        return policy
    out = {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy) if getattr(policy, f.name) is not None}
    clean = out.get("clean_pod_policy")
    if clean is not None:
        clean = getattr(clean, "name", clean)  # flytekit's CleanPodPolicy.RUNNING, Flyte 2's "Running"
        out["clean_pod_policy"] = clean.lower() if isinstance(clean, str) else clean
    return out


def arguments(target: Target) -> tuple[str, ...]:
    """The plugin's fields ``Elastic(...)`` takes for ``target``: its settings, and those the SDK fixes (taken as a
    profile file takes them: ``None`` deletes a lower layer's, the fixed value is accepted, another is the
    target's error)."""
    return target.settings + tuple(target.fixed)


def unknown_arguments_message(target: Target, unknown: Iterable[str], refused: Mapping[str, str],
                              keywords: tuple[str, ...] = FOLDER_ARGUMENTS) -> str:
    """Why ``Elastic(...)`` refuses keyword arguments, with why (``refused``) or the one each was probably meant to
    be, as the command line says it (torchrun's and the PyTorchJob's names included: ``nnode``, ``nprocs``,
    ``maxReplicas``)."""
    parts = []
    for name in unknown:
        if name in refused:
            parts.append(f"`{name}` ({refused[name]})")
            continue
        near = closest(name, arguments(target) + keywords)
        hint = ELASTIC_SYNONYMS.get(name) or (f"`{near}`" if near else None)  # synonyms come quoted
        parts.append(f"`{name}`" + (f" (did you mean {hint}?)" if hint else ""))
    return (f"Elastic() got unexpected keyword arguments: {'; '.join(parts)}. It takes "
            f"{', '.join(keywords + target.settings)}")


def task_layer(target: Target, overrides: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``Elastic(key=value, ...)`` as the ``elastic`` section of the task layer and the label of each key:
    ``run_policy`` in profile shape; an explicit ``None`` where the plugin gives ``None`` a meaning
    (:attr:`~kfdefaults.targets.Target.off`: Flyte 2's ``nccl_heartbeat_timeout_sec=None`` leaves torch's own
    default) is ``off``, which stays None over every layer and the plugin's default; elsewhere ``None`` deletes a
    lower layer's value."""
    section = {k: (OFF if v is None and k in target.off else run_policy_dict(v) if k == "run_policy"
                   else copy.deepcopy(v)) for k, v in overrides.items()}
    labels = {f"elastic.{k}": f"Elastic({k}={v!r})" for k, v in overrides.items()}
    return section, labels


class ProfileConfig:
    """The profile side of an adapter's ``Elastic``: set by :meth:`_resolve_profile`, read by the methods below.

    Attributes:
        profile: The profile name.
        resolved: The merged profile (:class:`kfdefaults.Resolved`); ``None`` in a pod that runs on the settings
            registered with the task.
        deferred_error: In a Flyte pod, the error resolving the profile, raised only when the task runs or is
            compiled or submitted there (:mod:`kfdefaults.runtime`).
        unregistered: In a Flyte pod, the error of a call registered for no task here.
        registered: In a pod that runs on the registered settings, what registration put there (the settings and
            what the pod should have, :mod:`kfdefaults.receipt`); else ``None``.
        runtime_key: The call's key (:func:`kfdefaults.runtime.runtime_key`).
    """

    TARGET: Target
    """The SDK the adapter resolves for."""

    REFUSED: Mapping[str, str] = {}
    """Keyword arguments of the plugin's ``Elastic`` that kfdefaults refuses, with why."""

    KEYWORDS = FOLDER_ARGUMENTS
    """The keyword arguments of the class's ``__init__`` besides the plugin's settings."""

    PLUGIN_SHARED_MEMORY: bool | None = None
    """The plugin's ``increase_shared_mem`` default, which a call without a profile gets (flytekit's: on)."""

    resolved: Resolved | None

    def _resolve_profile(self, profile: str | None, platform: Any, team: Any, overrides: dict[str, Any],
                         sdk: SdkObjects, shared_memory: bool | None = None,
                         labels: Mapping[str, str] | None = None) -> ProfileCall:
        """Check the call's arguments, resolve the profile with them as the task layer and keep what it gives.
        Without ``profile``, the project's ``default_profile``, else the plugin's defaults alone
        (:data:`~kfdefaults.settings.NO_PROFILE`); ``shared_memory`` is ``increase_shared_mem``; ``labels`` name
        the arguments in messages where they are not ``Elastic(key=value)`` (dotted key -> label).

        Raises:
            TypeError: an unknown keyword argument, ``profile`` is not a string, or the folders are not paths.
            ProfileError: as :class:`~kfdefaults.runtime.ProfileCall`.
        """
        unknown = sorted(set(overrides) - set(arguments(self.TARGET)))
        if unknown:
            raise TypeError(unknown_arguments_message(self.TARGET, unknown, self.REFUSED, self.KEYWORDS))
        if not isinstance(profile, (str, type(None))):
            raise TypeError(f"Elastic(profile=...) takes a profile name, a string, not {type(profile).__name__}")
        platform, team = folder_arguments(platform, "Elastic(platform=...)"), folder_arguments(team, "Elastic(team=...)")
        section, named = task_layer(self.TARGET, overrides)
        labels = {**named, **(labels or {})}
        self._call = call = ProfileCall(self.TARGET, profile, platform, team, section, labels, sdk, shared_memory,
                                        self.PLUGIN_SHARED_MEMORY)
        self.profile = call.profile
        self.runtime_key = call.key
        self.resolved = call.resolved
        self.deferred_error: ProfileError | None = call.deferred_error
        self.unregistered: ProfileError | None = call.unregistered
        self.registered: dict[str, Any] | None = call.registered
        return call

    def plugin_fields(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """Merged elastic settings -> the values of the plugin's ``Elastic`` fields (each adapter's)."""
        raise NotImplementedError

    @property
    def pipeline(self) -> Pipeline | None:
        """The pipeline this config was resolved by (``None`` in a pod running on the registered settings)."""
        return self._call.pipeline

    @property
    def call_resolved(self) -> Resolved | None:
        """The profile as this ``Elastic(...)`` call merged it, before any task's own pod template or resources."""
        return self._call.resolved

    def with_resolved(self, resolved: Resolved) -> Any:
        """This config, or a copy of it whose plugin settings are those of ``resolved`` (the profile merged with
        the task's own pod template and resources): they differ only where the profile says ``auto``."""
        if self.resolved is None or resolved.elastic_settings == self.resolved.elastic_settings:
            return self
        twin = copy.copy(self)  # Flyte 2's leaves the call out, as pickling must
        twin._call = self._call
        twin.resolved = resolved
        for name, value in self.plugin_fields(resolved.elastic_settings).items():
            setattr(twin, name, value)
        return twin

    def provenance(self) -> dict[str, str]:
        """The annotations of the pods of a task on this config (:meth:`kfdefaults.runtime.ProfileCall.provenance`)."""
        return self._call.provenance()

    def runtime_env_value(self, pod: dict[str, Any] | None = None) -> str:
        """The JSON the pod reads back: this call's key, its resolved settings, and what the pod should have
        (``pod``, :meth:`expected_pod`)."""
        return self._call.env_value(self.elastic_settings(), pod)

    def expected_pod(self, resolved: Resolved, spec: dict[str, Any], annotations: dict[str, str], **task: Any) -> dict[str, Any]:
        """What the pod of a task registered from ``resolved`` with pod spec ``spec`` should have, which its receipt
        compares the pod with (:meth:`kfdefaults.runtime.ProfileCall.expected_pod`)."""
        return self._call.expected_pod(resolved, spec, annotations, **task)

    def elastic_settings(self) -> dict[str, Any]:
        """The settings this config runs with, as plain data (the profile format's keys): the merged profile's,
        else (a pod on the registered settings, an unpickled config) read from the plugin's fields, a ``None``
        where the plugin gives it a meaning written ``off``."""
        if self.resolved is not None:
            return copy_plain(self.resolved.elastic_settings)
        target = self.TARGET
        out = {}
        for key in target.settings + target.applied:
            value = copy.deepcopy(getattr(self, key, None))
            if value is None and key in target.off and target.defaults.get(key) is not None:
                out[key] = OFF
            elif value is not None:
                out[key] = run_policy_dict(value) if key == "run_policy" else value
        return out


def sdk_pod_template(cls: Any, pod_spec: Mapping[str, Any], primary_container_name: str, labels: Mapping[str, str],
                     annotations: Mapping[str, str], **extra: Any) -> Any:
    """An SDK's ``PodTemplate`` class ``cls`` (flytekit's or Flyte 2's: the same four fields; ``extra`` are a
    subclass's own) holding a ``kubernetes.client.V1PodSpec`` built from plain data."""
    spec = dict(pod_spec)
    spec.setdefault("containers", [])
    return cls(pod_spec=to_k8s_model(spec, "V1PodSpec"), primary_container_name=primary_container_name,
               labels=dict(labels) or None, annotations=dict(annotations) or None, **extra)


class AdapterObjects:
    """An SDK's objects of a :class:`~kfdefaults.Resolved` profile (its :attr:`~kfdefaults.Resolved.elastic` and
    :attr:`~kfdefaults.Resolved.pod_template`; :class:`~kfdefaults.merge.result.SdkObjects`), from the adapter's
    two builders of plain data."""

    def plugin_elastic(self, settings: Mapping[str, Any]) -> Any:
        """Merged elastic settings -> the plugin's ``Elastic``."""
        raise NotImplementedError

    def plain_pod_template(self, pod_spec: Mapping[str, Any], primary_container_name: str,
                           labels: Mapping[str, str], annotations: Mapping[str, str]) -> Any:
        """A pod spec and its metadata as plain data -> the SDK's ``PodTemplate``."""
        raise NotImplementedError

    def running_a_task(self) -> bool:
        raise NotImplementedError

    def elastic(self, resolved: Resolved) -> Any:
        return self.plugin_elastic(resolved.elastic_settings)

    def pod_template(self, resolved: Resolved) -> Any:
        return self.plain_pod_template(resolved.pod_spec, resolved.primary_container_name, resolved.labels,
                                       resolved.annotations)
