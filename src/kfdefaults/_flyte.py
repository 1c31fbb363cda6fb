"""``kfdefaults.Elastic``: the plugin's ``Elastic`` task config, filled in from a profile.

``@task(task_config=Elastic(profile="gpu-large", nnodes=2))`` resolves the profile across its layers, with the
keyword arguments as the task layer, and defines the task with :class:`ProfileElasticTask`, a
``PytorchElasticFunctionTask`` that carries the merged pod template (``@task(pod_template=...)`` applied on
top, as part of the task layer). Importing this module imports flytekit and the kfpytorch plugin.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

from flytekit.extend import TaskPlugins
from flytekitplugins.kfpytorch.task import Elastic as PluginElastic
from flytekitplugins.kfpytorch.task import PytorchElasticFunctionTask, RunPolicy

from ._api import Resolved, task_fragment
from ._errors import ProfileError
from ._flyte_objects import plugin_elastic, to_plain
from ._resolve import Catalog, Fragment, expand, merge_fragments

_ELASTIC_FIELDS = ("nnodes", "nproc_per_node", "start_method", "monitor_interval", "max_restarts", "rdzv_configs", "run_policy")


def _run_policy_dict(policy: Any) -> Any:
    if policy is None or isinstance(policy, dict):
        return policy
    if isinstance(policy, RunPolicy):
        out = {k: v for k, v in dataclasses.asdict(policy).items() if v is not None}
        if policy.clean_pod_policy is not None:
            out["clean_pod_policy"] = policy.clean_pod_policy.name.lower()
        return out
    return policy


class Elastic(PluginElastic):
    """``flytekitplugins.kfpytorch.Elastic`` with its settings taken from a profile.

    Usable wherever the plugin's ``Elastic`` is: it is a subclass, and a task defined with it is a
    ``PytorchElasticFunctionTask`` that carries the profile's pod template.

    Args:
        profile: Profile name, like ``"gpu-large"``.
        platform: Extra platform-layer folders (besides ``KFDEFAULTS_PLATFORM_PATH`` and entry points).
        team: Extra team-layer folders (besides ``KFDEFAULTS_TEAM_PATH`` and pyproject.toml).
        **overrides: Fields of the plugin's ``Elastic`` (``nnodes``, ``nproc_per_node``, ``start_method``,
            ``monitor_interval`` in seconds, ``max_restarts``, ``rdzv_configs``, ``run_policy``): the task layer,
            applied on top of the profile. ``rdzv_configs`` and ``run_policy`` merge per key.

    Raises:
        ProfileError: the profile is unknown or invalid, or an override is invalid (``FILE:LINE:COLUMN``
            locations; overrides are named ``Elastic(key=...)``).
        TypeError: an unknown keyword argument. ``increase_shared_mem`` is not accepted: the profile owns
            ``/dev/shm``.
    """

    def __init__(
        self,
        profile: str,
        *,
        platform: Iterable[str] = (),
        team: Iterable[str] = (),
        **overrides: Any,
    ) -> None:
        unknown = sorted(set(overrides) - set(_ELASTIC_FIELDS))
        if unknown:
            hint = " (kfdefaults profiles own /dev/shm)" if "increase_shared_mem" in unknown else ""
            raise TypeError(f"Elastic() got unexpected keyword arguments {unknown}{hint}")
        elastic_overrides = {k: (_run_policy_dict(v) if k == "run_policy" else v) for k, v in overrides.items()}
        labels = {f"elastic.{k}": f"Elastic({k}={v!r})" for k, v in overrides.items()}
        self.profile = profile
        self._catalog = Catalog.discover(platform, team)
        self._task_layer = task_fragment(
            profile, {"elastic": elastic_overrides} if elastic_overrides else None, source="Elastic(...)", labels=labels
        )
        self._fragments: list[Fragment] = expand(self._catalog, profile)
        self.resolved = Resolved(merge_fragments(profile, self._fragments + ([self._task_layer] if self._task_layer else [])))
        base = plugin_elastic(self.resolved.elastic_settings)
        super().__init__(**{f.name: getattr(base, f.name) for f in dataclasses.fields(PluginElastic)})

    def resolve_with_pod_template(self, pod_template: Any) -> Resolved:
        """The profile with ``@task(pod_template=...)`` added to the task layer.

        Args:
            pod_template: A ``flytekit.PodTemplate`` or ``None``. Not modified.
        """
        if pod_template is None:
            return self.resolved
        spec = to_plain(pod_template.pod_spec) if pod_template.pod_spec is not None else None
        section: dict[str, Any] = {}
        if spec is not None:
            section["spec"] = spec
        if pod_template.labels:
            section["labels"] = dict(pod_template.labels)
        if pod_template.annotations:
            section["annotations"] = dict(pod_template.annotations)
        if pod_template.primary_container_name and pod_template.primary_container_name != "primary":
            section["primary_container_name"] = pod_template.primary_container_name
        fragment = task_fragment(self.profile, {"pod_template": section}, source="@task(pod_template=...)")
        layers = self._fragments + [f for f in (self._task_layer, fragment) if f is not None]
        return Resolved(merge_fragments(self.profile, layers))


class ProfileElasticTask(PytorchElasticFunctionTask):
    """A ``PytorchElasticFunctionTask`` whose pod template is the profile's, merged with ``@task(pod_template=...)``."""

    def __init__(self, task_config: Elastic, task_function: Callable[..., Any], **kwargs: Any) -> None:
        resolved = task_config.resolve_with_pod_template(kwargs.pop("pod_template", None))
        self.kfdefaults_resolved = resolved
        kwargs["pod_template"] = resolved.pod_template
        super().__init__(task_config=task_config, task_function=task_function, **kwargs)


TaskPlugins.register_pythontask_plugin(Elastic, ProfileElasticTask)

__all__ = ["Elastic", "ProfileElasticTask", "ProfileError"]
