"""``kfdefaults.Elastic``: the plugin's ``Elastic`` task config, filled in from a profile.

``@task(task_config=Elastic(profile="gpu-large", nnodes=2))`` resolves the profile across its layers through the
process's shared :class:`~kfdefaults.pipeline.Pipeline`, the keyword arguments as the task layer; the task is
then defined by :class:`~kfdefaults.flytekit.task.ProfileElasticTask`. In a Flyte pod, the settings registered
with the task are used instead of profile files (:mod:`.runtime`).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Iterable

from flytekitplugins.kfpytorch.task import Elastic as PluginElastic
from flytekitplugins.kfpytorch.task import RunPolicy

from ..errors import ProfileError
from ..layers.flags import folder_arguments
from ..merge.result import Resolved, copy_plain
from ..pipeline import Pipeline
from ..runtime import ProfileCall
from ..targets import FLYTEKIT
from ..validate.suggest import ELASTIC_SYNONYMS, closest
from .errors import shown_to_the_task_module
from .objects import OBJECTS, plugin_elastic, task_resources

ELASTIC_FIELDS = ("nnodes", "nproc_per_node", "start_method", "monitor_interval", "max_restarts", "rdzv_configs", "run_policy")
"""The plugin's ``Elastic`` fields a profile sets (``increase_shared_mem`` is the profile's ``/dev/shm``)."""

ARGUMENTS = ELASTIC_FIELDS + tuple(FLYTEKIT.fixed)
"""The keyword arguments ``Elastic(...)`` takes: the plugin's fields, and the settings flytekit fixes
(``rdzv_backend``, always c10d), taken as a profile file takes them: ``None`` deletes a lower layer's (the fix the
error of an ``rdzv_backend: etcd`` profile names), the fixed value is accepted, another is the target's error."""

def unknown_arguments_message(unknown: list[str]) -> str:
    """Why ``Elastic(...)`` refuses keyword arguments, with the one each was probably meant to be, as the command
    line says it (torchrun's and the PyTorchJob's names included: ``nnode``, ``nprocs``, ``maxReplicas``)."""
    parts = []
    for name in unknown:
        if name == "increase_shared_mem":
            parts.append("`increase_shared_mem` (kfdefaults profiles own /dev/shm: give the size in the profile's "
                         "dshm volume, or use @task(shared_memory=...))")
            continue
        near = closest(name, ARGUMENTS + ("profile", "platform", "team"))
        hint = ELASTIC_SYNONYMS.get(name) or (f"`{near}`" if near else None)  # synonyms come quoted
        parts.append(f"`{name}`" + (f" (did you mean {hint}?)" if hint else ""))
    known = ", ".join(("profile", "platform", "team") + ELASTIC_FIELDS)
    return f"Elastic() got unexpected keyword arguments: {'; '.join(parts)}. It takes {known}"


def run_policy_dict(policy: Any) -> Any:
    """A plugin ``RunPolicy`` as the profile format writes it (``clean_pod_policy: running``)."""
    if isinstance(policy, RunPolicy):
        out = {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy) if getattr(policy, f.name) is not None}
        clean = policy.clean_pod_policy
        if clean is not None:
            out["clean_pod_policy"] = clean.name.lower() if hasattr(clean, "name") else clean  # validation says if bad
        return out
    return policy


class Elastic(PluginElastic):
    """``flytekitplugins.kfpytorch.Elastic`` with its settings taken from a profile.

    Usable wherever the plugin's ``Elastic`` is: it is a subclass, and a task defined with it is a
    ``PytorchElasticFunctionTask`` (:class:`~kfdefaults.flytekit.task.ProfileElasticTask`) that carries the
    profile's pod template.

    Args:
        profile: Profile name, like ``"gpu-large"``.
        platform: Extra platform-layer folders (besides ``KFDEFAULTS_PLATFORM_PATH`` and entry points).
        team: Extra team-layer folders (besides ``KFDEFAULTS_TEAM_PATH`` and pyproject.toml).
        **overrides: Fields of the plugin's ``Elastic`` (``nnodes``, ``nproc_per_node``, ``start_method``,
            ``monitor_interval`` in seconds, ``max_restarts``, ``rdzv_configs``, ``run_policy``): the task layer,
            applied on top of the profile. ``rdzv_configs`` and ``run_policy`` merge per key. ``rdzv_backend``,
            which flytekit fixes to ``c10d``, is taken as a profile file takes it.

    Attributes:
        profile: The profile name.
        resolved: The merged profile (:class:`kfdefaults.Resolved`); ``None`` in a pod that runs on the
            settings registered with the task.
        registered: In a pod that runs on the registered settings, what registration put there (the settings and
            what the pod should have, :mod:`kfdefaults.receipt`); else ``None``.

    Raises:
        ProfileError: the profile is unknown or invalid, or an override is invalid (``FILE:LINE:COLUMN``
            locations; overrides are named ``Elastic(key=...)``). In a Flyte pod, the error is kept and raised
            only if this task runs (see :mod:`kfdefaults.runtime`).
        TypeError: an unknown keyword argument. ``increase_shared_mem=True`` is not accepted: the profile owns
            ``/dev/shm`` (``increase_shared_mem=False``, which agrees, is accepted and ignored).
    """

    @shown_to_the_task_module
    def __init__(self, profile: str, *, platform: Iterable[str] = (), team: Iterable[str] = (), **overrides: Any) -> None:
        if overrides.get("increase_shared_mem") is False:
            del overrides["increase_shared_mem"]  # what kfdefaults does anyway: a port from the plugin keeps working
        unknown = sorted(set(overrides) - set(ARGUMENTS))
        if unknown:
            raise TypeError(unknown_arguments_message(unknown))
        if not isinstance(profile, str):
            raise TypeError(f"Elastic(profile=...) takes a profile name, a string, not {type(profile).__name__}")
        platform, team = folder_arguments(platform, "Elastic(platform=...)"), folder_arguments(team, "Elastic(team=...)")
        elastic_overrides = {k: (run_policy_dict(v) if k == "run_policy" else copy.deepcopy(v)) for k, v in overrides.items()}
        labels = {f"elastic.{k}": f"Elastic({k}={v!r})" for k, v in overrides.items()}
        self.profile = profile
        self._call = call = ProfileCall(FLYTEKIT, profile, platform, team, elastic_overrides, labels, OBJECTS)
        self.runtime_key = call.key
        self.resolved: Resolved | None = call.resolved
        self.deferred_error: ProfileError | None = call.deferred_error
        self.unregistered: ProfileError | None = call.unregistered
        self.registered: dict[str, Any] | None = call.registered
        base = plugin_elastic(call.settings)
        super().__init__(**{f.name: getattr(base, f.name) for f in dataclasses.fields(PluginElastic)})

    @property
    def pipeline(self) -> Pipeline | None:
        """The pipeline this config was resolved by (``None`` in a pod running on the registered settings)."""
        return self._call.pipeline

    @property
    def call_resolved(self) -> Resolved | None:
        """The profile as this ``Elastic(...)`` call merged it, before any task's own pod template or resources."""
        return self._call.resolved

    def resolve_with_pod_template(self, pod_template: Any, requests: Any = None, limits: Any = None,
                                  node_override: Any = None) -> Resolved:
        """The profile with ``@task(pod_template=...)`` added to the task layer, and a workflow node's
        ``with_overrides(pod_template=...)`` over it.

        When the profile has ``auto`` values (:mod:`kfdefaults.merge.auto`), the task's ``requests`` and
        ``limits`` count too: they are merged into the primary container's resources as the task's pod will have
        them (:func:`~kfdefaults.k8s.resources.merge_task_resources`), so that ``nproc_per_node: auto``
        follows ``@task(limits=Resources(gpu="4"))``.

        Args:
            pod_template: A ``flytekit.PodTemplate`` or ``None``. Not modified.
            requests: The task's ``flytekit.Resources`` requests, or ``None``.
            limits: The task's ``flytekit.Resources`` limits, or ``None``.
            node_override: A ``flytekit.PodTemplate`` or ``None``. Not modified.

        Raises:
            KfdefaultsError: this config runs on registered settings (in a pod) and has no profile to merge.
            ProfileError: a pod template does not validate or merge.
            TypeError: a template is not a ``flytekit.PodTemplate``.
        """
        from flytekit import PodTemplate

        sections: list[tuple[dict[str, Any], str]] = []
        for template, source in ((pod_template, "@task(pod_template=...)"),
                                 (node_override, "with_overrides(pod_template=...)")):
            if template is None:
                continue
            if not isinstance(template, PodTemplate):
                raise TypeError(f"{source} takes a flytekit.PodTemplate, not {type(template).__name__}")
            below = self._call.with_pod_templates(sections).primary_container_name if sections else None
            sections.append((self._call.pod_template_section(template, below), source))
        return self._call.with_pod_templates(sections, task_resources(requests, limits),
                                             "@task(requests=..., limits=...)")

    def with_resolved(self, resolved: Resolved) -> Elastic:
        """This config, or a copy of it whose plugin settings are those of ``resolved`` (the profile merged with
        the task's own pod template and resources): they differ only where the profile says ``auto``."""
        if self.resolved is None or resolved.elastic_settings == self.resolved.elastic_settings:
            return self
        twin = copy.copy(self)
        twin.resolved = resolved
        base = plugin_elastic(resolved.elastic_settings)
        for f in dataclasses.fields(PluginElastic):
            setattr(twin, f.name, getattr(base, f.name))
        return twin

    @property
    def nccl_collective_timeout_sec(self) -> int | None:
        """The profile's ``elastic.nccl_collective_timeout_sec`` (seconds), which kfdefaults applies in the workers
        (:mod:`kfdefaults.flytekit.collective`), or ``None``."""
        settings = self.resolved.elastic_settings if self.resolved is not None else self._call.settings
        value = settings.get("nccl_collective_timeout_sec")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

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
        """The settings this config runs with, as plain data."""
        if self.resolved is not None:
            return copy_plain(self.resolved.elastic_settings)
        out: dict[str, Any] = {k: copy.deepcopy(getattr(self, k)) for k in ELASTIC_FIELDS if k != "run_policy"}
        if self.run_policy is not None:
            out["run_policy"] = run_policy_dict(self.run_policy)
        if self.nccl_collective_timeout_sec is not None:
            out["nccl_collective_timeout_sec"] = self.nccl_collective_timeout_sec
        return out
