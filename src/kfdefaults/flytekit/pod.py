"""Edits of a merged pod spec (plain data) that flytekit's task needs: the primary container by name, the
``@task(shared_memory=...)`` rule, the environment variable that carries the registered settings."""

from __future__ import annotations

from typing import Any

from ..k8s.mounts import is_shm_mount
from ..merge.primary import DEFAULT_PRIMARY_CONTAINER_NAME


def primary_container(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """The container named ``name`` in ``spec``, added (named only) when there is none."""
    containers = spec.setdefault("containers", [])
    for container in containers:
        if container.get("name") == name:
            return container
    container = {"name": name}
    containers.append(container)
    return container


def name_primary_as_the_profile_does(spec: dict[str, Any], task_primary: str, profile_primary: str) -> None:
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


def drop_shm_mounts(spec: dict[str, Any], primary_name: str) -> list[str]:
    """Remove the primary container's ``/dev/shm`` mounts, and volumes no container mounts any more."""
    primary = primary_container(spec, primary_name)
    mounts = primary.get("volumeMounts") or []
    dropped = [m.get("name") for m in mounts if is_shm_mount(m.get("mountPath"))]
    if not dropped:
        return []
    primary["volumeMounts"] = [m for m in mounts if not is_shm_mount(m.get("mountPath"))]
    if not primary["volumeMounts"]:
        del primary["volumeMounts"]
    still = {m.get("name") for c in spec.get("containers", []) + spec.get("initContainers", []) for m in c.get("volumeMounts") or []}
    spec["volumes"] = [v for v in spec.get("volumes") or [] if v.get("name") not in dropped or v.get("name") in still]
    if not spec["volumes"]:
        del spec["volumes"]
    return dropped


def drop_env(container: dict[str, Any], names: set[str]) -> list[str]:
    """Remove ``container``'s environment variables named in ``names``, in place; return the names removed."""
    env = container.get("env") or []
    dropped = [e.get("name") for e in env if e.get("name") in names]
    if dropped:
        container["env"] = [e for e in env if e.get("name") not in names]
        if not container["env"]:
            del container["env"]
    return dropped


def _set_env(container: dict[str, Any], name: str, value: str) -> None:
    env = [e for e in container.get("env") or [] if e.get("name") != name]
    env.append({"name": name, "value": value})
    container["env"] = env


def set_env(container: dict[str, Any], name: str, value: str) -> None:
    """Set environment variable ``name`` of ``container`` to ``value``, replacing one of that name."""
    env = [e for e in container.get("env") or [] if e.get("name") != name]
    env.append({"name": name, "value": value})
    container["env"] = env
