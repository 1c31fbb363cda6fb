"""What a task's pod should have, written down when the task is registered: the ``pod`` part of the settings that
travel into the pod (:data:`~kfdefaults.settings.RUNTIME_ENV`), which the receipt compares the pod with.

It holds only what a running pod can check about itself (:mod:`.probe`): the ``/dev/shm`` volume, the primary
container's limits, its literal environment variables, the fabric it asks for (its fabric device resources, the
``IPC_LOCK`` capability, the host's network), the pod's labels and annotations, and who set each of them. The
elastic settings travel beside it already; here only the line each of them comes from is added, so that
``kfdefaults why`` can name it from a log alone.

Where a value comes from is written the same on every machine (a task registered twice from two checkouts carries
the same bytes, as Flyte's registration of one version asks): a layer, then the file as ``kfdefaults.lock`` names it
(an installed package's file by package, version and file name; a project's by its path in the project;
:mod:`kfdefaults.lock.entries`), then the line: ``builtin kfdefaults 0.9.0 cpu-small.yaml:27``,
``team profiles/gpu-large.yaml:6``; a value no file set is named by what set it (``task Elastic(nnodes=2)``,
``default plugin default``).
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from ..cache import digest
from ..errors import PathError, shown
from ..k8s.mounts import is_shm_mount
from ..k8s.provenance import ANNOTATIONS as PROVENANCE_ANNOTATIONS
from ..k8s.provenance import RECEIPT_ANNOTATION, RECEIPT_POLICIES
from ..k8s.quantity import quantity_value
from ..k8s.resources import is_fabric_device, merge_task_resources, resource_name
from ..lock.entries import installed_package, project_path
from ..merge.leaves import profile_leaves
from ..merge.origins import DEFAULT_LAYER, Origin, default_origin, written_by
from ..merge.result import Resolved
from ..paths import PathT, Select, format_path, parse_path
from ..settings import RUNTIME_ENV

LIMITS = ("memory", "cpu", "nvidia.com/gpu")
"""The primary container's limits a pod can read back: the memory and CPU limits from its cgroup, the GPUs from
its devices."""


def runtime_key(target: str, profile: str, overrides: dict[str, Any]) -> str:
    """Identifies one ``Elastic(...)`` call of the source code for one SDK, the same at registration and in the
    pod: its target (a module may define a flytekit and a Flyte 2 task on the same profile), profile and keyword
    arguments. It holds no path: ``Elastic(team=...)`` built from ``__file__`` names another folder once the code
    sits in the image, and the call must still find what was registered for it."""
    text = json.dumps([target, profile, overrides], sort_keys=True, default=repr)
    return digest(text.encode())[:16]


def recorded_task(registered: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str], str | None]:
    """The elastic task layer that registered settings record (``KFDEFAULTS_ELASTIC``, a receipt's ``registered``
    with its ``key``): each setting :func:`expected_pod` says a task set (``"elastic.nnodes": "task
    Elastic(nnodes=2)"``), with the value registered, as ``Elastic(...)``'s overrides (``{"nnodes": 2}``) and the
    label of each (``{"elastic.nnodes": "Elastic(nnodes=2)"}``).

    Taken only as far as the settings bind it to the call that made them: their ``key`` must be the
    :func:`runtime_key` of a call of exactly these arguments, which the task's code computes again in its pod to find
    its settings (a pod whose settings are not its code's call does not run). So a claim cannot hide a value beyond
    what the object itself holds: a setting claimed without its call's key, outside ``elastic``, or without a
    registered value, makes the whole claim void.

    Returns:
        ``(overrides, labels, None)``; ``({}, {}, why)`` when the claim is void; ``({}, {}, None)`` without one.
    """
    pod = registered.get("pod")
    claims = pod.get("elastic") if isinstance(pod, Mapping) else None
    claims = {k: v[5:] for k, v in claims.items() if isinstance(v, str) and v.startswith("task ")} if isinstance(
        claims, Mapping) else {}
    elastic = registered.get("elastic")
    values = profile_leaves({"elastic": elastic}) if claims and isinstance(elastic, Mapping) else {}
    overrides: dict[str, Any] = {}
    for dotted in claims:
        try:
            path = tuple(parse_path(dotted))
        except PathError:
            path = ()
        node: Any = overrides
        for part in path[1:-1]:
            node = node.setdefault(part, {}) if isinstance(node, dict) else None
        if path not in values or len(path) < 2 or not all(type(p) is str for p in path) or not isinstance(node, dict):
            return {}, {}, f"{RUNTIME_ENV} says a task set {shown(dotted, 60)}, and holds no value of it"
        node[path[-1]] = type(values[path])() if isinstance(values[path], (dict, list)) else values[path]  # {} or []
    if claims and registered.get("key") != runtime_key(str(registered.get("target")), str(registered.get("profile")),
                                                      overrides):
        return {}, {}, (f"{RUNTIME_ENV} says a task set {shown(', '.join(claims), 60)}, but its key is not that of an "
                        "Elastic(...) call of those values: compared with the profile alone (--set gives the "
                        "task's values)")
    return overrides, {k: shown(v, 60) for k, v in claims.items()}, None


def expected_pod(resolved: Resolved, spec: Mapping[str, Any], annotations: Mapping[str, str], *,
                 catalog: Any = None, root: str | None = None, task_resources: Mapping[str, Any] | None = None,
                 task_resources_by: str = "", shared_memory: Any = None, shared_memory_by: str = "",
                 names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What the pod of a task registered from ``resolved`` should have, and who set each value.

    Args:
        resolved: The task's merged profile (task layer included).
        spec: The pod spec as registered: the primary container first, without a ``/dev/shm`` the SDK replaces.
        annotations: The pod's annotations as registered (the profile's and the provenance annotations).
        catalog: The pipeline's catalog, to name the files (:mod:`kfdefaults.lock.entries`); ``None``: base names.
        root: The project's folder, to name its files by their path in it.
        task_resources: The task's own ``{"requests": {...}, "limits": {...}}`` that the SDK merges into the primary
            container when it serializes (flytekit's ``@task(limits=...)``); ``None`` when already in ``spec``.
        task_resources_by: What set them, for the ``set_by`` of their values.
        shared_memory: The ``/dev/shm`` the SDK asks Flyte's backend for (``@task(shared_memory=...)``, Flyte 2's
            ``Resources(shm=...)``): ``True``, ``"auto"`` or a size; ``None`` when not asked.
        shared_memory_by: What asked for it.
        names: Files already named (:func:`file_name`) where ``catalog`` cannot name them: a profile carried into a
            parent's pod names its files as registration did.

    Returns:
        ``{"primary", "shm", "limits", "pod_memory_limit", "env", "fabric", "labels", "annotations", "elastic",
        "policy"}``:
        ``shm`` is ``{"volume", "medium", "size_limit", "set_by"}`` or ``None`` (no ``/dev/shm`` registered);
        ``limits``, ``env``, ``labels`` and ``annotations`` map a name to ``{"value", "set_by"}``;
        ``pod_memory_limit`` is the sum of every container's memory limit (a quantity), ``None`` unless each has
        one (what the kubelet sizes a memory-backed ``emptyDir`` without ``sizeLimit`` by); ``elastic`` maps each
        elastic setting's path to who set it; ``fabric``: :func:`_fabric`.
    """
    primary = resolved.primary_container_name
    name = _Names(resolved, catalog, root, names)
    containers = [c for c in spec.get("containers") or [] if isinstance(c, Mapping)]
    main = next((c for c in containers if c.get("name") == primary), {})
    resources = dict(main.get("resources") or {})
    if task_resources:
        resources = merge_task_resources(resources, dict(task_resources))
    container = ("pod_template", "spec", "containers", Select("name", primary))
    limits = _limits(resources, container, name, (task_resources or {}).get("limits") or {}, task_resources_by)
    env = {}
    for var in main.get("env") or []:
        if isinstance(var, Mapping) and isinstance(var.get("value"), str) and var.get("name") != RUNTIME_ENV:
            env[str(var["name"])] = {"value": var["value"], "set_by": name.of(container + ("env", Select("name", var["name"]), "value"))}
    metadata = {}
    for part, values in (("labels", resolved.labels), ("annotations", annotations)):
        metadata[part] = {k: {"value": str(v), "set_by": "kfdefaults (registration)" if k in PROVENANCE_ANNOTATIONS
                              else name.of(("pod_template", part, k))} for k, v in values.items()}
    policy = str(annotations.get(RECEIPT_ANNOTATION) or "report")
    return {
        "primary": primary,
        "shm": _shm(spec, main, name, shared_memory, shared_memory_by),
        "limits": limits,
        "pod_memory_limit": _pod_memory_limit(containers, primary, resources),
        "env": env,
        "fabric": _fabric(spec, resources, main, container, name),
        "labels": metadata["labels"],
        "annotations": metadata["annotations"],
        "elastic": {format_path(path): name.of(path) for path in profile_leaves({"elastic": resolved.elastic_settings})},
        "policy": policy if policy in RECEIPT_POLICIES else "report",
    }


def _limits(resources: Mapping[str, Any], container: PathT, name: _Names, task_limits: Mapping[str, Any],
            task_by: str) -> dict[str, dict[str, str]]:
    """The primary container's limits a pod reads back (:data:`LIMITS`), each with who set it."""
    out = {}
    for key, value in (resources.get("limits") or {}).items():
        if resource_name(key) in LIMITS:
            by = f"task {task_by}" if key in task_limits else name.of(container + ("resources", "limits", key))
            out[resource_name(key)] = {"value": str(value), "set_by": by}
    return out


def _fabric(spec: Mapping[str, Any], resources: Mapping[str, Any], main: Mapping[str, Any], container: PathT,
            name: _Names) -> dict[str, Any]:
    """The fabric the primary container asks for (docs/fabric.md): each fabric device resource it limits (requests
    where it sets no limit: an extended resource's request is its limit), ``IPC_LOCK`` among the capabilities its
    ``securityContext`` adds (``CAP_IPC_LOCK`` as the container runtimes also accept it), and ``hostNetwork``:
    ``{"devices": {resource: {"value", "set_by"}}, "ipc_lock": {"value", "set_by"} | None, "host_network": {"value",
    "set_by"} | None}``."""
    devices = {}
    for kind in ("requests", "limits"):  # the limit wins where both are written
        for key, value in (resources.get(kind) or {}).items():
            if is_fabric_device(resource_name(key)):
                devices[resource_name(key)] = {"value": str(value), "set_by": name.of(container + ("resources", kind, key))}
    context = main.get("securityContext")
    capabilities = context.get("capabilities") if isinstance(context, Mapping) else None
    added = capabilities.get("add") if isinstance(capabilities, Mapping) else None
    ipc_lock = isinstance(added, list) and any(str(c).upper() in ("IPC_LOCK", "CAP_IPC_LOCK") for c in added)
    add_path = container + ("securityContext", "capabilities", "add")
    return {"devices": devices,
            "ipc_lock": {"value": "IPC_LOCK", "set_by": name.of(add_path)} if ipc_lock else None,
            "host_network": {"value": "true", "set_by": name.of(("pod_template", "spec", "hostNetwork"))}
            if spec.get("hostNetwork") is True else None}


def _shm(spec: Mapping[str, Any], main: Mapping[str, Any], name: _Names, shared_memory: Any,
         shared_memory_by: str) -> dict[str, Any] | None:
    """The primary container's ``/dev/shm`` as registered: the profile's volume, or the one Flyte's backend adds
    for the SDK's shared memory (an ``emptyDir`` of medium ``Memory``, its ``sizeLimit`` the size asked for:
    ``ApplySharedMemory``, flyteplugins ``pod_helper.go``)."""
    if shared_memory not in (None, False):
        size = shared_memory if isinstance(shared_memory, str) and quantity_value(shared_memory) is not None else None
        return {"volume": "flyte-shm", "medium": "Memory", "size_limit": size, "set_by": f"task {shared_memory_by}"}
    mount = next((m for m in main.get("volumeMounts") or [] if isinstance(m, Mapping) and is_shm_mount(m.get("mountPath"))), None)
    if mount is None:
        return None
    volume_name = mount.get("name")
    volume = next((v for v in spec.get("volumes") or [] if isinstance(v, Mapping) and v.get("name") == volume_name), {})
    empty_dir = volume.get("emptyDir")
    path = ("pod_template", "spec", "volumes", Select("name", volume_name))
    if not isinstance(empty_dir, Mapping):
        kind = next((k for k in volume if k != "name"), None)
        return {"volume": volume_name, "medium": None, "size_limit": None, "kind": kind, "set_by": name.of(path)}
    size = empty_dir.get("sizeLimit")
    key = "sizeLimit" if size is not None else "medium"
    return {"volume": volume_name, "medium": empty_dir.get("medium") or "", "size_limit": None if size is None else str(size),
            "set_by": name.of(path + ("emptyDir", key))}


def _pod_memory_limit(containers: list[Mapping[str, Any]], primary: str, resources: Mapping[str, Any]) -> str | None:
    """The pod's memory limit as the kubelet works it out (``ResourceConfigForPod``, pkg/kubelet/cm): the sum of
    the containers' memory limits when every container has one, else none."""
    total = 0
    for container in containers:
        limits = (resources if container.get("name") == primary else container.get("resources") or {}).get("limits") or {}
        value = quantity_value(limits.get("memory"))
        if value is None:
            return None
        total += value
    return str(int(total)) if containers and total else None


class _Names:
    """Who set a value of a merged profile, written the same on every machine (the module's docstring)."""

    def __init__(self, resolved: Resolved, catalog: Any, root: str | None,
                 names: Mapping[str, str] | None = None) -> None:
        self.resolved, self.catalog, self.root, self.names = resolved, catalog, root, names or {}

    def of(self, path: PathT) -> str:
        setter = written_by(self.resolved.fragments, path)
        origin = setter.origin if setter is not None else default_origin(path, self.resolved.target)
        return self.origin(origin)

    def origin(self, origin: Origin) -> str:
        loc = origin.location
        if not loc.line:  # a label: the SDK's default, or what set a task-layer value
            return loc.file if origin.layer == DEFAULT_LAYER else f"{origin.layer} {loc.file}"
        named = self.names.get(loc.file) or file_name(loc.file, self.catalog, self.root)
        return f"{origin.layer} {named}:{loc.line}"


def file_name(file: str, catalog: Any, root: str | None) -> str:
    """A profile file as ``kfdefaults.lock`` names it, the same on every machine: ``kfdefaults 0.9.0
    cpu-small.yaml`` for a file of an installed package, else its path in the project (``root``), else its name."""
    folder = catalog.folder_of(file) if catalog is not None else None
    if folder is not None and folder.package is not None:
        package, version = installed_package(folder.package)
        return f"{package} {version} {os.path.basename(file)}"
    return project_path(file, root)
