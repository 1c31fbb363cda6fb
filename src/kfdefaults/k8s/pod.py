"""Edits of a merged pod spec (plain data) that the SDK adapters make: the primary container by name, the pod's
shared memory when the task asks the SDK for it, the primary container's environment."""

from __future__ import annotations

from typing import Any, Iterable

from .mounts import SHM_PATH, is_shm_mount


def primary_container(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """The container named ``name`` in ``spec``, added (named only) when there is none."""
    containers = spec.setdefault("containers", [])
    for container in containers:
        if container.get("name") == name:
            return container
    container = {"name": name}
    containers.append(container)
    return container


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


def shared_memory_patch(spec: dict[str, Any], primary_name: str, wanted: bool) -> dict[str, Any] | None:
    """A strategic merge patch of the pod spec ``spec`` (plain data, not changed) that gives its primary container a
    memory-backed ``/dev/shm`` (``wanted``: its own volume made ``emptyDir: {medium: Memory}``, ``$retainKeys``
    dropping another source, else a volume ``shm`` mounted there, the name the kfpytorch plugin's
    ``add_shared_mem_volume_to_pod_template`` gives it), or takes its ``/dev/shm`` mounts away with the volumes no
    other container mounts; ``None`` when the spec has what is asked already."""
    primary = next((c for c in spec.get("containers") or [] if c.get("name") == primary_name), {})
    mounts = [m for m in primary.get("volumeMounts") or [] if is_shm_mount(m.get("mountPath"))]
    volumes = {v.get("name"): v for v in spec.get("volumes") or []}
    if wanted and mounts:
        name = mounts[0].get("name")
        if (volumes.get(name, {}).get("emptyDir") or {}).get("medium") == "Memory":
            return None
        return {"volumes": [{"name": name, "$retainKeys": ["emptyDir", "name"], "emptyDir": {"medium": "Memory"}}]}
    if wanted:
        return {"volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
                "containers": [{"name": primary_name, "volumeMounts": [{"name": "shm", "mountPath": SHM_PATH}]}]}
    if not mounts:
        return None
    others = {m.get("name") for c in spec.get("containers", []) + spec.get("initContainers", [])
              if c is not primary for m in c.get("volumeMounts") or []}
    gone = [{"name": m.get("name"), "$patch": "delete"} for m in mounts if m.get("name") not in others]
    return {"containers": [{"name": primary_name, "volumeMounts": [{"mountPath": m.get("mountPath"), "$patch": "delete"}
                                                                   for m in mounts]}], **({"volumes": gone} if gone else {})}


def drop_env(container: dict[str, Any], names: Iterable[str]) -> list[str]:
    """Remove ``container``'s environment variables named in ``names``, in place; return the names removed."""
    names = set(names)
    env = container.get("env") or []
    dropped = [e.get("name") for e in env if e.get("name") in names]
    if dropped:
        container["env"] = [e for e in env if e.get("name") not in names]
        if not container["env"]:
            del container["env"]
    return dropped


def set_env(container: dict[str, Any], name: str, value: str) -> None:
    """Set environment variable ``name`` of ``container`` to ``value``, replacing one of that name."""
    env = [e for e in container.get("env") or [] if e.get("name") != name]
    env.append({"name": name, "value": value})
    container["env"] = env
