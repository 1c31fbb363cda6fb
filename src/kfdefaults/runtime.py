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
from typing import Any, Mapping, Sequence

from .cache import digest
from .errors import KfdefaultsError, KfdefaultsWarning, ProfileError, caller_stacklevel
from .k8s.models import to_plain
from .merge.primary import name_primary_as_the_profile_does
from .merge.result import Resolved, SdkObjects
from .pipeline import Pipeline, shared_pipeline
from .settings import RUNTIME_ENV
from .targets import Target
from .validate.fragment import Fragment

SDK_PACKAGES = ("kfdefaults", "flytekit", "flytekitplugins", "flyte", "flyteplugins")
"""The packages between the user's code and a warning of ``Elastic(...)``, skipped to point at the caller."""


def runtime_key(target: str, profile: str, platform: list[str], team: list[str], overrides: dict[str, Any]) -> str:
    """Identifies one ``Elastic(...)`` call of the source code for one SDK, the same at registration and in the
    pod (a module may define a flytekit and a Flyte 2 task on the same profile; each gets its own settings)."""
    text = json.dumps([target, profile, platform, team, overrides], sort_keys=True, default=repr)
    return digest(text.encode())[:16]


def embedded_settings(key: str, sdk: SdkObjects) -> dict[str, Any] | None:
    """The settings registered for ``key``, when this process runs a task in a Flyte container
    (:meth:`~kfdefaults.merge.result.SdkObjects.running_a_task`) whose environment carries them; ``None`` anywhere
    else, whatever the environment says: a variable left over in a shell or copied from a pod changes neither
    ``render`` nor a registration."""
    raw = os.environ.get(RUNTIME_ENV)
    if not raw or not sdk.running_a_task():
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("key") == key and isinstance(data.get("elastic"), dict):
        return data["elastic"]
    return None


_RESOLVED: dict[tuple[str, str, str], tuple[Pipeline, Fragment | None, Resolved]] = {}
"""(target, profile, overrides) -> the merged profile, reused while the shared pipeline is the same."""


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
        deferred_error: In a pod, the error resolving the profile, raised only if this task runs (another task
            of the module may be the one running here).

    Raises:
        ProfileError: the profile is unknown or invalid, an override is invalid, or a setting cannot run on the
            target (outside a pod).
    """

    def __init__(self, target: Target, profile: str, platform: list[str], team: list[str], overrides: dict[str, Any],
                 labels: Mapping[str, str], sdk: SdkObjects) -> None:
        self.target = target
        self.profile = profile
        self.key = runtime_key(target.name, profile, platform, team, overrides)
        self.resolved: Resolved | None = None
        self.deferred_error: ProfileError | None = None
        self.pipeline: Pipeline | None = None
        self.task_layer: Fragment | None = None
        settings = embedded_settings(self.key, sdk)
        if settings is None:
            try:
                settings = self._resolve(platform, team, overrides, labels, sdk)
            except ProfileError as e:
                if not sdk.running_a_task():
                    raise
                self.deferred_error = e
                settings = copy.deepcopy(dict(target.defaults))
        self.settings: dict[str, Any] = settings

    def _resolve(self, platform: list[str], team: list[str], overrides: dict[str, Any], labels: Mapping[str, str],
                 sdk: SdkObjects) -> dict[str, Any]:
        self.pipeline = pipeline = shared_pipeline(platform, team, sdk=sdk, target=self.target)
        # key order kept: rdzv_configs={"a": 1, "b": 2} and {"b": 2, "a": 1} merge to dictionaries of other orders
        memo_key = (self.target.name, self.profile, json.dumps(overrides, default=repr))
        hit = _RESOLVED.get(memo_key)
        if hit is not None and hit[0] is pipeline:
            _, self.task_layer, remembered = hit
            self.resolved = remembered.copy()  # each call its own: one may be changed, the next one not
        else:
            self.task_layer = pipeline.task_layer(self.profile, {"elastic": overrides} if overrides else None,
                                                  source="Elastic(...)", labels=labels)
            self.resolved = pipeline.resolve(self.profile, [self.task_layer])
            _RESOLVED[memo_key] = (pipeline, self.task_layer, self.resolved.copy())
        for finding in self.task_layer.warnings if self.task_layer is not None else ():
            # what a file holding these values is warned of (`timeout` without `join_timeout`), at the caller's line
            warnings.warn(str(finding), KfdefaultsWarning, stacklevel=caller_stacklevel(SDK_PACKAGES))
        return copy.deepcopy(self.resolved.elastic_settings)

    def with_pod_template(self, section: Mapping[str, Any] | None, source: str) -> Resolved:
        """The profile with a task-layer pod template on top (``{"spec", "labels", "annotations",
        "primary_container_name"}``, in profile shape), named ``source`` in messages.

        Raises:
            KfdefaultsError: this call runs on registered settings (in a pod) and has no profile to merge.
            ProfileError: the pod template does not validate or merge.
        """
        return self.with_pod_templates([(section, source)])

    def with_pod_templates(self, sections: Sequence[tuple[Mapping[str, Any] | None, str]]) -> Resolved:
        """The profile with task-layer pod templates on top, each merged over the one before it (a task's own
        template, then a workflow node's override of it), each ``(section, source)`` as :meth:`with_pod_template`
        takes them; empty sections add nothing.

        Raises:
            KfdefaultsError: this call runs on registered settings (in a pod) and has no profile to merge.
            ProfileError: a pod template does not validate or merge.
        """
        if self.resolved is None or self.pipeline is None:
            raise KfdefaultsError(f"profile {self.profile!r} was not resolved here")
        fragments = [self.pipeline.task_layer(self.profile, {"pod_template": dict(section)}, source=source)
                     for section, source in sections if section]
        if not fragments:
            return self.resolved
        return self.pipeline.resolve(self.profile, [self.task_layer, *fragments])

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

    def env_value(self, settings: Mapping[str, Any]) -> str:
        """The JSON the pod reads back (:data:`~kfdefaults.settings.RUNTIME_ENV`): this call's key, its target
        and its resolved ``settings``."""
        return json.dumps({"key": self.key, "target": self.target.name, "profile": self.profile,
                           "elastic": dict(settings)}, sort_keys=True, separators=(",", ":"))
