"""``kfdefaults.Elastic``: the plugin's ``Elastic`` task config, filled in from a profile.

``@task(task_config=Elastic(profile="gpu-large", nnodes=2))`` resolves the profile across its layers through the
process's shared :class:`~kfdefaults.pipeline.Pipeline`, the keyword arguments as the task layer; the task is
then defined by :class:`~kfdefaults.flytekit.task.ProfileElasticTask`. In a Flyte pod, the settings registered
with the task are used instead of profile files (:mod:`.runtime`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from flytekitplugins.kfpytorch.task import Elastic as PluginElastic

from ..merge.result import Resolved
from ..runtime.config import ProfileConfig
from ..targets import FLYTEKIT
from .errors import shown_to_the_task_module
from .objects import OBJECTS, plugin_elastic, task_resources


class Elastic(ProfileConfig, PluginElastic):
    """``flytekitplugins.kfpytorch.Elastic`` with its settings taken from a profile.

    Usable wherever the plugin's ``Elastic`` is: it is a subclass, and a task defined with it is a
    ``PytorchElasticFunctionTask`` (:class:`~kfdefaults.flytekit.task.ProfileElasticTask`) that carries the
    profile's pod template.

    Args:
        profile: Profile name, like ``"gpu-large"``; ``None``: the project's ``[tool.kfdefaults] default_profile``,
            else the plugin's own defaults with the cluster's template only (docs/flyte.md).
        platform: Extra platform-layer folders (besides ``KFDEFAULTS_PLATFORM_PATH`` and entry points).
        team: Extra team-layer folders (besides ``KFDEFAULTS_TEAM_PATH`` and pyproject.toml).
        increase_shared_mem: ``True`` keeps the profile's memory-backed ``/dev/shm`` or adds one (a volume
            ``shm``), ``False`` removes the profile's, both as task-layer changes; ``None`` (not given) leaves the
            profile's as it is, and without a profile is the plugin's default, ``True``.
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
        TypeError: an unknown keyword argument.
    """

    TARGET = FLYTEKIT
    KEYWORDS = ("profile", "platform", "team", "increase_shared_mem")
    PLUGIN_SHARED_MEMORY = True

    @shown_to_the_task_module
    def __init__(self, profile: str | None = None, *, platform: Iterable[str] = (), team: Iterable[str] = (),
                 increase_shared_mem: bool | None = None, **overrides: Any) -> None:
        if not isinstance(increase_shared_mem, (bool, type(None))):
            raise TypeError(f"Elastic(increase_shared_mem=...) takes True or False, not {increase_shared_mem!r}")
        call = self._resolve_profile(profile, platform, team, overrides, OBJECTS, increase_shared_mem)
        super().__init__(**self.plugin_fields(call.settings))

    def plugin_fields(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """Merged elastic settings -> the plugin's fields (:func:`~.objects.plugin_elastic`)."""
        base = plugin_elastic(settings)
        return {f.name: getattr(base, f.name) for f in dataclasses.fields(PluginElastic)}

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

    @property
    def nccl_collective_timeout_sec(self) -> int | None:
        """The profile's ``elastic.nccl_collective_timeout_sec`` (seconds), which kfdefaults applies in the workers
        (:mod:`kfdefaults.flytekit.collective`), or ``None``."""
        settings = self.resolved.elastic_settings if self.resolved is not None else self._call.settings
        value = settings.get("nccl_collective_timeout_sec")
        return value if isinstance(value, int) and not isinstance(value, bool) else None
