"""``kfdefaults.flyte2.Elastic``: Flyte 2's ``flyteplugins.pytorch.Elastic``, filled in from a profile.

``flyte.TaskEnvironment(plugin_config=Elastic(profile="gpu-large", nnodes=2))`` resolves the profile for the
Flyte 2 target through the process's shared :class:`~kfdefaults.pipeline.Pipeline`, the keyword arguments as the
task layer; the environment's tasks are :class:`~kfdefaults.flyte2.task.ProfileTorchFunctionTask`. In a Flyte
pod, the settings registered with the task are used instead of profile files (:mod:`kfdefaults.runtime`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from flyteplugins.pytorch.task import Elastic as PluginElastic
from flyteplugins.pytorch.task import RunPolicy

from ..merge.result import Resolved
from ..runtime.config import run_policy_dict
from ..targets import FLYTE2
from .objects import OBJECTS, plugin_kwargs
from .profile_task import Flyte2Config

__all__ = ["Elastic", "RunPolicy", "run_policy_dict"]


class Elastic(Flyte2Config, PluginElastic):
    """``flyteplugins.pytorch.Elastic`` with its settings taken from a profile, for a ``flyte.TaskEnvironment``.

    Usable wherever the plugin's ``Elastic`` is: it is a subclass, and a task of an environment with it as its
    ``plugin_config`` is a ``TorchFunctionTask`` (:class:`~kfdefaults.flyte2.task.ProfileTorchFunctionTask`) that
    carries the profile's pod template, with the environment's (or ``@env.task``'s) ``pod_template`` and
    ``resources`` as the task layer.

    Args:
        profile: Profile name, like ``"gpu-large"``; ``None``: the project's ``[tool.kfdefaults] default_profile``,
            else the plugin's own defaults alone (docs/flyte2.md).
        platform: Extra platform-layer folders (besides ``KFDEFAULTS_PLATFORM_PATH`` and entry points).
        team: Extra team-layer folders (besides ``KFDEFAULTS_TEAM_PATH`` and pyproject.toml).
        **overrides: Fields of the plugin's ``Elastic`` (``nnodes``, ``nproc_per_node``, ``rdzv_backend``,
            ``monitor_interval`` in seconds, ``max_restarts``, ``rdzv_configs``, ``run_policy`` (a ``RunPolicy``
            or a mapping in profile shape), ``nccl_heartbeat_timeout_sec``, ``nccl_async_error_handling``,
            ``nccl_collective_timeout_sec``, ``nccl_enable_monitoring``): the task layer, applied on top of the
            profile. ``rdzv_configs`` and ``run_policy`` merge per key. ``start_method``, which Flyte 2 fixes to
            ``spawn``, is taken as a profile file takes it: ``None`` deletes a lower layer's (the fix the error of
            a ``start_method: fork`` profile names), ``"spawn"`` is accepted.

    Attributes:
        profile: The profile name.
        resolved: The merged profile (:class:`kfdefaults.Resolved`, target ``flyte2``); ``None`` in a pod that
            runs on the settings registered with the task.
        deferred_error: In a Flyte pod, the error resolving the profile, raised only when this task runs or is
            submitted (another task of the module may be the one running here).
        registered: In a pod that runs on the registered settings, what registration put there (the settings and
            what the pod should have, :mod:`kfdefaults.receipt`); else ``None``.

    Raises:
        ProfileError: the profile is unknown or invalid, an override is invalid, or the merged profile sets what
            Flyte 2 cannot honour (``start_method: fork``, from a file or ``Elastic(start_method="fork")``);
            ``FILE:LINE:COLUMN`` locations, overrides named ``Elastic(key=...)``. In a Flyte pod the error is kept
            instead (:attr:`deferred_error`).
        TypeError: an unknown keyword argument, or ``increase_shared_mem`` (the profile owns ``/dev/shm``).
    """

    TARGET = FLYTE2
    REFUSED = {
        "increase_shared_mem": "kfdefaults profiles own /dev/shm: give the size in the profile's dshm volume, or use "
                               "flyte.Resources(shm=...)",
    }
    """Keyword arguments refused, with why. The settings Flyte 2 fixes (``start_method``, always spawn) are taken as a
    profile file takes them (:data:`~kfdefaults.targets.FLYTE2`'s ``fixed``): ``None`` deletes the value below, the
    fixed value is accepted, another is the target's error at ``Elastic(start_method=...)``."""

    def __init__(self, profile: str | None = None, *, platform: Iterable[str] = (), team: Iterable[str] = (), **overrides: Any) -> None:
        call = self._resolve_profile(profile, platform, team, overrides, OBJECTS)
        super().__init__(**self.plugin_fields(call.settings))

    def plugin_fields(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """Merged elastic settings -> the plugin's fields (:func:`~.objects.plugin_kwargs`)."""
        return plugin_kwargs(settings)

    def __repr__(self) -> str:
        fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(PluginElastic))
        return f"{type(self).__qualname__}(profile={self.profile!r}, {fields})"
