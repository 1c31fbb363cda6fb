"""``kfdefaults.flyte2.ClusteredTaskEnvironment``: Flyte 2's ``flyte.clustered.ClusteredTaskEnvironment`` (a task run
as a Kubernetes JobSet), filled in from a profile resolved for the ``clustered`` target.

The environment's clustered fields are the task layer, as ``Elastic(...)``'s keyword arguments are; the profile's
merged settings become the fields of the SDK's environment (:func:`clustered_fields`); its tasks are
:class:`ProfileClusteredTask`, whose pod template is the profile's merged with the environment's ``pod_template``
and ``resources`` (:class:`~.profile_task.ProfileTask`). The profile is resolved by the process's shared
:class:`~kfdefaults.pipeline.Pipeline`, through :class:`ClusteredConfig`, the environment's ``plugin_config``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from flyte.clustered import ClusteredTaskEnvironment as SdkClusteredTaskEnvironment
from flyte.clustered import ClusterFailurePolicy, TorchRun
from flyte.clustered._environment import ClusteredSettings
from flyte.clustered._task import ClusteredTaskTemplate, _ClusteredPlugin
from flyte.extend import TaskPluginRegistry

from ..backend.elastic_config import nnodes_range
from ..targets import CLUSTERED
from .objects import Flyte2Objects, task_resources
from .profile_task import Flyte2Config, ProfileTask

__all__ = ["ClusteredConfig", "ClusteredTaskEnvironment", "ProfileClusteredTask", "clustered_fields"]


def clustered_fields(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Merged elastic settings (checked for the ``clustered`` target, :mod:`kfdefaults.check.target`) -> the fields of
    ``flyte.clustered.ClusteredTaskEnvironment``: ``replicas`` (``nnodes``), ``nproc_per_node``, ``runtime``
    (``TorchRun(rdzv_backend, max_restarts)``), ``failure_policy`` (``ClusterFailurePolicy(cluster_max_restarts,
    restart_on_host_maintenance)``), ``ttl_seconds_after_finished`` (``run_policy``'s, seconds, or ``None``)."""
    policy = settings.get("run_policy") or {}
    return {"replicas": nnodes_range(settings.get("nnodes", 1))[1],
            "nproc_per_node": int(settings.get("nproc_per_node", 1)),
            "runtime": TorchRun(rdzv_backend=settings.get("rdzv_backend", "static"),
                                max_restarts=int(settings.get("max_restarts", 0))),
            "failure_policy": ClusterFailurePolicy(
                max_restarts=int(settings.get("cluster_max_restarts", 0)),
                restart_on_host_maintenance=bool(settings.get("restart_on_host_maintenance", False))),
            "ttl_seconds_after_finished": policy.get("ttl_seconds_after_finished")}


def clustered_settings(settings: Mapping[str, Any]) -> ClusteredSettings:
    """Merged elastic settings -> the SDK's ``ClusteredSettings`` snapshot (``interconnect`` ``tcp``, the backend's
    only working value: flyteplugins .../k8s/clustered/interconnect.go)."""
    return ClusteredSettings(interconnect="tcp", **clustered_fields(settings))


class ClusteredObjects(Flyte2Objects):
    """Flyte 2's objects of a profile resolved for clustered tasks: its settings are a ``ClusteredSettings``."""

    plugin_elastic = staticmethod(clustered_settings)


OBJECTS = ClusteredObjects()


class ClusteredConfig(Flyte2Config, _ClusteredPlugin):
    """The ``plugin_config`` of a :class:`ClusteredTaskEnvironment`: the SDK's ``_ClusteredPlugin`` (the
    ``ClusteredSettings`` its tasks serialize), resolved from a profile as ``kfdefaults.flyte2.Elastic`` is.

    Args:
        profile: Profile name; ``None``: the project's ``default_profile``, else the target's defaults alone.
        platform: Extra platform-layer folders.
        team: Extra team-layer folders.
        labels: How messages name each task-layer key (``elastic.nnodes`` ->
            ``ClusteredTaskEnvironment(replicas=2)``); ``Elastic(key=value)`` where not given.
        **overrides: The ``elastic`` section of the task layer, in profile shape (``nnodes``, ``nproc_per_node``,
            ``rdzv_backend``, ``run_policy``, ``cluster_max_restarts``, ``restart_on_host_maintenance``, and what
            the target fixes).

    Raises:
        ProfileError: as ``kfdefaults.flyte2.Elastic``, for the ``clustered`` target (an elastic range, more than
            100000 nodes, rendezvous settings, a variable the backend overwrites).
    """

    TARGET = CLUSTERED
    __setattr__ = object.__setattr__  # the SDK's config is frozen; resolving keeps its call on it
    __delattr__ = object.__delattr__

    def __init__(self, profile: str | None = None, *, platform: Iterable[str] = (), team: Iterable[str] = (),
                 labels: Mapping[str, str] | None = None, **overrides: Any) -> None:
        call = self._resolve_profile(profile, platform, team, overrides, OBJECTS, labels=labels)
        self.settings = clustered_settings(call.settings)

    def plugin_fields(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """Merged elastic settings -> the config's one field, ``settings``."""
        return {"settings": clustered_settings(settings)}


_CLUSTERED_FIELDS = ("replicas", "nproc_per_node", "runtime", "failure_policy", "ttl_seconds_after_finished")


@dataclass(kw_only=True)
class ClusteredTaskEnvironment(SdkClusteredTaskEnvironment):
    """``flyte.clustered.ClusteredTaskEnvironment`` with its clustered fields taken from a profile.

    Usable wherever the SDK's is: it is a subclass, its tasks are ``ClusteredTaskTemplate``\\ s
    (:class:`ProfileClusteredTask`) and serialize to the same task type and ``custom``. Every clustered field
    given is the task layer over the profile: ``replicas`` is ``elastic.nnodes``, ``nproc_per_node`` (a number or
    ``"auto"``: the primary container's GPUs), ``runtime=TorchRun(rdzv_backend, max_restarts)`` both of its fields,
    ``failure_policy=ClusterFailurePolicy(max_restarts, restart_on_host_maintenance)`` is
    ``elastic.cluster_max_restarts`` and ``elastic.restart_on_host_maintenance``, ``ttl_seconds_after_finished``
    (seconds) ``elastic.run_policy.ttl_seconds_after_finished``. ``pod_template`` and ``resources`` are the task
    layer of the pod, as for ``kfdefaults.flyte2.Elastic``. After construction the fields hold the merged values.
    The SDK's own ``plugin_config`` field takes a :class:`ClusteredConfig` resolved already (then the clustered
    fields must be unset); left ``None``, one is made from ``profile`` and the fields.

    Args:
        profile: Profile name, like ``"gpu-large"``; ``None``: the project's ``default_profile``.
        platform: Extra platform-layer folders.
        team: Extra team-layer folders.

    Raises:
        ProfileError: the profile is unknown or invalid, or sets what a clustered task cannot run (an elastic range,
            rendezvous settings, a variable the backend overwrites), at the line that sets it; a field given here is
            named ``ClusteredTaskEnvironment(field=...)``.
        TypeError: a runtime other than ``TorchRun`` (profiles configure torchrun), or another ``plugin_config``.
        ValueError: what the SDK's environment refuses (``resources.gpu`` below ``nproc_per_node``).
    """

    profile: Optional[str] = None
    platform: Sequence[str] = ()
    team: Sequence[str] = ()
    replicas: Optional[int] = None  # type: ignore[assignment]
    nproc_per_node: Union[int, str, None] = None  # type: ignore[assignment]
    runtime: Optional[TorchRun] = None  # type: ignore[assignment]
    failure_policy: Optional[ClusterFailurePolicy] = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        config = self.plugin_config
        if config is None:
            overrides, labels = self._task_layer()
            config = ClusteredConfig(self.profile, platform=self.platform, team=self.team, labels=labels, **overrides)
        elif not isinstance(config, ClusteredConfig) or any(
                getattr(self, f) not in (None, getattr(config.settings, f)) for f in _CLUSTERED_FIELDS):
            # dataclasses.replace (clone_with) passes the merged fields back with the config: those are the same
            raise TypeError("ClusteredTaskEnvironment(plugin_config=...) takes a kfdefaults ClusteredConfig, and "
                            "then no other clustered value: the config is the task layer")
        self.profile = config.profile
        if self.resources is not None and config.resolved is not None:  # nproc_per_node: auto counts its GPUs
            config = config.with_resolved(config.resolve_with_pod_template(None, "", task_resources(self.resources)))
        for name in _CLUSTERED_FIELDS:
            setattr(self, name, getattr(config.settings, name))
        super().__post_init__()
        config.settings = self.plugin_config.settings  # the SDK's own snapshot of the fields
        self.plugin_config = config

    def _task_layer(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The clustered fields given, as the ``elastic`` section of the task layer, and each key's label."""
        section: dict[str, Any] = {}
        labels: dict[str, str] = {}

        def given(key: str, value: Any, argument: str) -> None:
            section[key] = value
            labels[f"elastic.{key}"] = f"ClusteredTaskEnvironment({argument})"

        if self.replicas is not None:
            given("nnodes", self.replicas, f"replicas={self.replicas!r}")
        if self.nproc_per_node is not None:
            given("nproc_per_node", self.nproc_per_node, f"nproc_per_node={self.nproc_per_node!r}")
        if self.runtime is not None:
            if not isinstance(self.runtime, TorchRun):
                raise TypeError(f"ClusteredTaskEnvironment(profile={self.profile!r}) takes runtime=TorchRun(...): "
                                f"profiles configure torchrun, not {type(self.runtime).__name__}; use "
                                "flyte.clustered.ClusteredTaskEnvironment for it")
            given("rdzv_backend", self.runtime.rdzv_backend, f"runtime={self.runtime!r}")
            given("max_restarts", self.runtime.max_restarts, f"runtime={self.runtime!r}")
        if self.failure_policy is not None:
            given("cluster_max_restarts", self.failure_policy.max_restarts, f"failure_policy={self.failure_policy!r}")
            given("restart_on_host_maintenance", self.failure_policy.restart_on_host_maintenance,
                  f"failure_policy={self.failure_policy!r}")
        if self.ttl_seconds_after_finished is not None:
            ttl = self.ttl_seconds_after_finished
            given("run_policy", {"ttl_seconds_after_finished": ttl}, f"ttl_seconds_after_finished={ttl!r}")
        return section, labels


@dataclass(kw_only=True)
class ProfileClusteredTask(ProfileTask, ClusteredTaskTemplate):
    """A ``ClusteredTaskTemplate`` whose pod template is its environment's profile merged with the task layer
    (:class:`~.profile_task.ProfileTask`), and whose ``custom`` follows the task's own resources where the profile
    says ``nproc_per_node: auto``."""

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        """Run the task; in a Flyte pod only on the settings registered for it.

        Raises:
            ProfileError: no settings were registered for this task's call in this pod.
        """
        self._raise_deferred(running=True)
        return await super().execute(*args, **kwargs)


TaskPluginRegistry.register(config_type=ClusteredConfig, plugin=ProfileClusteredTask)
