"""``kfdefaults.Elastic``: the plugin's ``Elastic`` task config, filled in from a profile.

``@task(task_config=Elastic(profile="gpu-large", nnodes=2))`` resolves the profile across its layers, with
the keyword arguments as the task layer, and defines the task with :class:`ProfileElasticTask`, a
``PytorchElasticFunctionTask`` that carries the merged pod template (``@task(pod_template=...)`` applied on
top, as part of the task layer). Importing this module imports flytekit and the kfpytorch plugin.

What this module absorbs so that the task gets what ``kfdefaults render`` shows:

* The plugin's deprecated ``increase_shared_mem`` is always off: the profile owns ``/dev/shm``. No second mount,
  no ``ValueError`` for an existing one, no deprecation warning. ``@task(shared_memory=...)`` is the task
  layer: it wins over the profile's ``/dev/shm`` mount, with a :class:`KfdefaultsWarning` saying so.
* flytekit replaces the primary container's resources wholesale when the task sets requests or limits;
  :meth:`ProfileElasticTask.get_k8s_pod` merges them per resource name instead, the task winning per key.
* Objects passed in (``PodTemplate``, ``V1PodSpec``) are read, never changed.
* In the pod, flytekit imports the task's module again, and the image may not hold the profile files. The
  settings resolved at registration travel in the primary container's environment
  (:data:`RUNTIME_ENV`), and ``Elastic(...)`` uses them there instead of reading files; a task of the same
  module naming a profile the image lacks only fails if it is the one that runs.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import warnings
from typing import Any, Callable, Iterable

from flytekit.extend import TaskPlugins
from flytekitplugins.kfpytorch.task import Elastic as PluginElastic
from flytekitplugins.kfpytorch.task import PytorchElasticFunctionTask, RunPolicy

from ._api import Resolved, _folders, task_fragment
from ._errors import KfdefaultsError, ProfileError
from ._flyte_objects import flytekit_pod_template, plugin_elastic, to_plain
from ._elastic import PLUGIN_ELASTIC_DEFAULTS
from ._resolve import DEFAULT_PRIMARY_CONTAINER_NAME, Fragment, discover_and_expand, merge_fragments

RUNTIME_ENV = "KFDEFAULTS_ELASTIC"
"""Environment variable of the primary container holding the settings resolved at registration (JSON)."""

SHM_PATH = "/dev/shm"
_ELASTIC_FIELDS = ("nnodes", "nproc_per_node", "start_method", "monitor_interval", "max_restarts", "rdzv_configs", "run_policy")
_FLYTE_POD_SIGNAL = "FLYTE_INTERNAL_EXECUTION_ID"  # set by Flyte's backend in every task pod, never at registration


class KfdefaultsWarning(UserWarning):
    """A choice kfdefaults made for the user that they should know about."""


def _run_policy_dict(policy: Any) -> Any:
    """A plugin ``RunPolicy`` as the profile format writes it (``clean_pod_policy: running``)."""
    if isinstance(policy, RunPolicy):
        out = {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy) if getattr(policy, f.name) is not None}
        clean = policy.clean_pod_policy
        if clean is not None:
            out["clean_pod_policy"] = clean.name.lower() if hasattr(clean, "name") else clean  # validation says if bad
        return out
    return policy


def _runtime_key(profile: str, platform: list[str], team: list[str], overrides: dict[str, Any]) -> str:
    """Identifies one ``Elastic(...)`` call of the source code, the same at registration and in the pod."""
    text = json.dumps([profile, platform, team, overrides], sort_keys=True, default=repr)
    from ._cache import digest

    return digest(text.encode())[:16]


def _embedded_settings(key: str) -> dict[str, Any] | None:
    """The settings registered for ``key``, when running in a pod whose environment carries them."""
    raw = os.environ.get(RUNTIME_ENV)
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("key") == key and isinstance(data.get("elastic"), dict):
        return data["elastic"]
    return None


_RESOLVED: dict[tuple[str, str], tuple[list[Fragment], Fragment | None, Resolved]] = {}
"""(profile, overrides) -> the merged profile, reused while :func:`discover_and_expand` returns the same fragments."""


def _name_primary_as_the_profile_does(spec: dict[str, Any], task_primary: str, profile_primary: str) -> None:
    """Rename the task's ``primary`` container to the profile's primary container name, in place.

    ``PodTemplate(primary_container_name=...)`` defaults to ``"primary"``, so a task that leaves it unset cannot
    be told from one that sets ``"primary"``; either way its container named ``primary`` is the task's primary
    container, and it means the profile's (``main``, say), not a second container beside it. A name the task
    chooses other than the default is a choice, which the merge applies to every layer instead.
    """
    if task_primary != DEFAULT_PRIMARY_CONTAINER_NAME or profile_primary == task_primary:
        return
    containers = spec.get("containers")
    if not isinstance(containers, list):
        return
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    if task_primary in names and profile_primary not in names:
        for container in containers:
            if isinstance(container, dict) and container.get("name") == task_primary:
                container["name"] = profile_primary


GPU_RESOURCE = "nvidia.com/gpu"
"""What Flyte's backend calls flytekit's ``gpu`` resource by default (propeller's ``gpu-resource-name``)."""


def _resource(name: str) -> str:
    return GPU_RESOURCE if name == "gpu" else name


def merge_task_resources(profile: dict[str, Any], task: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The primary container's ``resources`` from the profile's and the task's (``@task(requests=, limits=)``).

    Shape: ``{"requests": {name: quantity}, "limits": {name: quantity}}``, quantities as strings.

    * Per resource name, ``requests`` and ``limits`` separately, the task winning per key: ``gpu-large``'s
      ``nvidia.com/gpu: 8`` survives ``@task(requests=Resources(cpu="4"))``.
    * flytekit's ``gpu`` is Flyte's ``nvidia.com/gpu``: a task's ``gpu`` replaces the profile's.
    * Where the task sets one side of a resource and the profile's other side would contradict it, the profile's
      side is dropped, so that the API server accepts the pod: a request above the limit (a task limit of
      ``memory: 1Gi`` under a profile request of ``2Gi``; Kubernetes then sets the request to the limit), or, for
      an extended resource or hugepages, a request that is not the limit (``ValidateResourceRequirements`` in
      k8s.io/kubernetes pkg/apis/core/validation).
    """
    from ._quantity import quantity_value

    kinds = ("limits", "requests")
    merged = {kind: {k: str(v) for k, v in (profile.get(kind) or {}).items()} for kind in kinds}
    task_sets: dict[str, dict[str, str]] = {kind: {} for kind in kinds}  # resource -> the key the task used
    for kind in kinds:
        for key, value in (task.get(kind) or {}).items():
            for other in [k for k in merged[kind] if _resource(k) == _resource(key)]:
                del merged[kind][other]
            merged[kind][key] = value
            task_sets[kind][_resource(key)] = key
    for kind, other_kind in (("limits", "requests"), ("requests", "limits")):
        for resource, key in task_sets[kind].items():
            if resource in task_sets[other_kind]:
                continue  # the task set both sides: its own business
            task_value = quantity_value(merged[kind][key])
            for other in [k for k in merged[other_kind] if _resource(k) == resource]:
                profile_value = quantity_value(merged[other_kind][other])
                if task_value is None or profile_value is None:
                    continue
                request, limit = (profile_value, task_value) if kind == "limits" else (task_value, profile_value)
                exact = "/" in resource and not resource.startswith("kubernetes.io/") or resource.startswith("hugepages-")
                if (request != limit) if exact else (request > limit):
                    del merged[other_kind][other]
    return {kind: values for kind, values in merged.items() if values}


class Elastic(PluginElastic):
    """``flytekitplugins.kfpytorch.Elastic`` with its settings taken from a profile.

    Usable wherever the plugin's ``Elastic`` is: it is a subclass, and a task defined with it is a
    ``PytorchElasticFunctionTask`` (:class:`ProfileElasticTask`) that carries the profile's pod template.

    Args:
        profile: Profile name, like ``"gpu-large"``.
        platform: Extra platform-layer folders (besides ``KFDEFAULTS_PLATFORM_PATH`` and entry points).
        team: Extra team-layer folders (besides ``KFDEFAULTS_TEAM_PATH`` and pyproject.toml).
        **overrides: Fields of the plugin's ``Elastic`` (``nnodes``, ``nproc_per_node``, ``start_method``,
            ``monitor_interval`` in seconds, ``max_restarts``, ``rdzv_configs``, ``run_policy``): the task layer,
            applied on top of the profile. ``rdzv_configs`` and ``run_policy`` merge per key.

    Attributes:
        profile: The profile name.
        resolved: The merged profile (:class:`kfdefaults.Resolved`); ``None`` in a pod that runs on the
            settings registered with the task.

    Raises:
        ProfileError: the profile is unknown or invalid, or an override is invalid (``FILE:LINE:COLUMN``
            locations; overrides are named ``Elastic(key=...)``). In a Flyte pod, the error is kept and raised
            only if this task runs (see :data:`RUNTIME_ENV`).
        TypeError: an unknown keyword argument. ``increase_shared_mem=True`` is not accepted: the profile owns
            ``/dev/shm`` (``increase_shared_mem=False``, which agrees, is accepted and ignored).
    """

    def __init__(self, profile: str, *, platform: Iterable[str] = (), team: Iterable[str] = (), **overrides: Any) -> None:
        if overrides.get("increase_shared_mem") is False:
            del overrides["increase_shared_mem"]  # what kfdefaults does anyway: a port from the plugin keeps working
        unknown = sorted(set(overrides) - set(_ELASTIC_FIELDS))
        if unknown:
            hint = (" (kfdefaults profiles own /dev/shm: give the size in the profile's dshm volume, or use "
                    "@task(shared_memory=...))") if "increase_shared_mem" in unknown else ""
            raise TypeError(f"Elastic() got unexpected keyword arguments {unknown}{hint}")
        if not isinstance(profile, str):
            raise TypeError(f"Elastic(profile=...) takes a profile name, a string, not {type(profile).__name__}")
        platform, team = _folders(platform, "Elastic(platform=...)"), _folders(team, "Elastic(team=...)")
        elastic_overrides = {k: (_run_policy_dict(v) if k == "run_policy" else copy.deepcopy(v)) for k, v in overrides.items()}
        self.profile = profile
        self.runtime_key = _runtime_key(profile, platform, team, elastic_overrides)
        self.resolved: Resolved | None = None
        self.deferred_error: ProfileError | None = None
        self._fragments: list[Fragment] = []
        self._task_layer: Fragment | None = None

        settings = _embedded_settings(self.runtime_key)
        if settings is None:
            try:
                settings = self._resolve(platform, team, elastic_overrides, overrides)
            except ProfileError as e:
                if _FLYTE_POD_SIGNAL not in os.environ:
                    raise
                # another task of this module may be the one running here: fail only if this one runs
                self.deferred_error = e
                settings = dict(PLUGIN_ELASTIC_DEFAULTS)
        base = plugin_elastic(settings)
        super().__init__(**{f.name: getattr(base, f.name) for f in dataclasses.fields(PluginElastic)})

    def _resolve(self, platform: list[str], team: list[str], elastic_overrides: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
        self._fragments = discover_and_expand(self.profile, platform, team)
        # key order kept: rdzv_configs={"a": 1, "b": 2} and {"b": 2, "a": 1} merge to dictionaries of other orders
        memo_key = (self.profile, json.dumps(elastic_overrides, default=repr))
        hit = _RESOLVED.get(memo_key)
        if hit is not None and hit[0] is self._fragments:
            _, self._task_layer, remembered = hit
            self.resolved = remembered.copy()  # each Elastic its own: one may be changed, the next one not
        else:
            labels = {f"elastic.{k}": f"Elastic({k}={v!r})" for k, v in overrides.items()}
            self._task_layer = task_fragment(
                self.profile, {"elastic": elastic_overrides} if elastic_overrides else None, source="Elastic(...)",
                labels=labels,
            )
            layers = self._fragments + ([self._task_layer] if self._task_layer else [])
            self.resolved = Resolved(merge_fragments(self.profile, layers))
            _RESOLVED[memo_key] = (self._fragments, self._task_layer, self.resolved.copy())
        return copy.deepcopy(self.resolved.elastic_settings)

    def resolve_with_pod_template(self, pod_template: Any) -> Resolved:
        """The profile with ``@task(pod_template=...)`` added to the task layer.

        Args:
            pod_template: A ``flytekit.PodTemplate`` or ``None``. Not modified.

        Raises:
            KfdefaultsError: this config runs on registered settings (in a pod) and has no profile to merge.
        """
        if self.resolved is None:
            raise KfdefaultsError(f"profile {self.profile!r} was not resolved here")
        if pod_template is None:
            return self.resolved
        from flytekit import PodTemplate

        if not isinstance(pod_template, PodTemplate):
            raise TypeError(f"@task(pod_template=...) takes a flytekit.PodTemplate, not {type(pod_template).__name__}")
        section: dict[str, Any] = {}
        if pod_template.pod_spec is not None:
            section["spec"] = to_plain(pod_template.pod_spec)
            _name_primary_as_the_profile_does(section["spec"], pod_template.primary_container_name,
                                              self.resolved.primary_container_name)
        if pod_template.labels:
            section["labels"] = dict(pod_template.labels)
        if pod_template.annotations:
            section["annotations"] = dict(pod_template.annotations)
        if pod_template.primary_container_name and pod_template.primary_container_name != "primary":
            section["primary_container_name"] = pod_template.primary_container_name
        fragment = task_fragment(self.profile, {"pod_template": section}, source="@task(pod_template=...)")
        layers = self._fragments + [f for f in (self._task_layer, fragment) if f is not None]
        return Resolved(merge_fragments(self.profile, layers))

    def runtime_env_value(self) -> str:
        """The JSON the pod reads back: this call's key and its resolved settings."""
        return json.dumps({"key": self.runtime_key, "profile": self.profile, "elastic": self.elastic_settings()},
                          sort_keys=True, separators=(",", ":"))

    def elastic_settings(self) -> dict[str, Any]:
        """The settings this config runs with, as plain data."""
        if self.resolved is not None:
            return copy.deepcopy(self.resolved.elastic_settings)
        out: dict[str, Any] = {k: copy.deepcopy(getattr(self, k)) for k in _ELASTIC_FIELDS if k != "run_policy"}
        if self.run_policy is not None:
            out["run_policy"] = _run_policy_dict(self.run_policy)
        return out


def _primary(spec: dict[str, Any], name: str) -> dict[str, Any]:
    containers = spec.setdefault("containers", [])
    for container in containers:
        if container.get("name") == name:
            return container
    container = {"name": name}
    containers.append(container)
    return container


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the user's code: the first frame outside kfdefaults and
    flytekit (the ``@task`` line), counted from the caller of :func:`warnings.warn`."""
    import sys

    frame, level = sys._getframe(1), 1
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.split(".")[0] not in ("kfdefaults", "flytekit", "flytekitplugins"):
            return level
        frame, level = frame.f_back, level + 1
    return 1


def _is_shm(mount_path: Any) -> bool:
    """``/dev/shm`` however written (``/dev/shm/``, ``//dev/shm``): the kubelet mounts them on one directory."""
    import posixpath

    return isinstance(mount_path, str) and posixpath.normpath(mount_path).replace("//", "/") == SHM_PATH


def _drop_shm_mounts(spec: dict[str, Any], primary_name: str) -> list[str]:
    """Remove the primary container's ``/dev/shm`` mounts, and volumes no container mounts any more."""
    primary = _primary(spec, primary_name)
    mounts = primary.get("volumeMounts") or []
    dropped = [m.get("name") for m in mounts if _is_shm(m.get("mountPath"))]
    if not dropped:
        return []
    primary["volumeMounts"] = [m for m in mounts if not _is_shm(m.get("mountPath"))]
    if not primary["volumeMounts"]:
        del primary["volumeMounts"]
    still = {m.get("name") for c in spec.get("containers", []) + spec.get("initContainers", []) for m in c.get("volumeMounts") or []}
    spec["volumes"] = [v for v in spec.get("volumes") or [] if v.get("name") not in dropped or v.get("name") in still]
    if not spec["volumes"]:
        del spec["volumes"]
    return dropped


def _set_env(container: dict[str, Any], name: str, value: str) -> None:
    env = [e for e in container.get("env") or [] if e.get("name") != name]
    env.append({"name": name, "value": value})
    container["env"] = env


class ProfileElasticTask(PytorchElasticFunctionTask):
    """A ``PytorchElasticFunctionTask`` whose pod template is the profile's, merged with ``@task(pod_template=...)``.

    Attributes:
        kfdefaults_resolved: The merged profile the task registers with (``None`` in a pod running on the
            registered settings).
    """

    def __init__(self, task_config: Elastic, task_function: Callable[..., Any], **kwargs: Any) -> None:
        user_template = kwargs.pop("pod_template", None)
        self.kfdefaults_resolved: Resolved | None = None
        if task_config.resolved is not None:
            resolved = task_config.resolve_with_pod_template(user_template)
            self.kfdefaults_resolved = resolved
            spec = resolved.pod_spec
            primary_name = resolved.primary_container_name
            if kwargs.get("shared_memory"):
                dropped = _drop_shm_mounts(spec, primary_name)
                if dropped:
                    warnings.warn(
                        f"@task(shared_memory=...) wins over the {SHM_PATH} volume {', '.join(map(repr, dropped))} of "
                        f"profile {task_config.profile!r}: the task gets Flyte's shared-memory volume instead",
                        KfdefaultsWarning,
                        stacklevel=_caller_stacklevel(),
                    )
            _set_env(_primary(spec, primary_name), RUNTIME_ENV, task_config.runtime_env_value())
            kwargs["pod_template"] = flytekit_pod_template(spec, primary_name, resolved.labels, resolved.annotations)
        elif user_template is not None:
            kwargs["pod_template"] = copy.deepcopy(user_template)
        super().__init__(task_config=task_config, task_function=task_function, **kwargs)

    def get_k8s_pod(self, settings: Any) -> Any:
        """flytekit's pod, with the profile's resources kept where the task sets no value for that resource.

        flytekit replaces the primary container's ``resources`` wholesale when the task has requests or limits;
        here they merge as :func:`merge_task_resources` says.
        """
        pod = super().get_k8s_pod(settings)
        resolved = self.kfdefaults_resolved
        if pod is None or resolved is None:
            return pod
        profile_containers = {c.get("name"): c for c in resolved.pod_spec.get("containers", [])}
        profile_resources = (profile_containers.get(resolved.primary_container_name) or {}).get("resources") or {}
        if not profile_resources:
            return pod
        for container in pod.pod_spec.get("containers", []):
            if container.get("name") == resolved.primary_container_name:
                container["resources"] = merge_task_resources(profile_resources, container.get("resources") or {})
        return pod

    def execute(self, **kwargs: Any) -> Any:
        """Run the task; raises the profile error kept at import if this task's profile could not be read."""
        config = self.task_config
        if isinstance(config, Elastic) and config.deferred_error is not None:
            raise config.deferred_error
        return super().execute(**kwargs)


TaskPlugins.register_pythontask_plugin(Elastic, ProfileElasticTask)

__all__ = ["Elastic", "KfdefaultsWarning", "ProfileElasticTask", "RUNTIME_ENV"]
