"""Validation beyond the section models: one file's body, one merged profile, and whole folders for CI.

Three levels, each reporting :class:`~kfdefaults.Finding` objects located at ``FILE:LINE:COLUMN``:

1. :func:`check_body`: what one profile file says, checked where the pydantic models of :mod:`kfdefaults._model`
   cannot give a position per key: ``elastic.rdzv_configs`` key by key against what torch's c10d rendezvous reads
   (:data:`kfdefaults._model.RDZV_SETTINGS`), ``pod_template.spec`` against the strict Kubernetes schema and
   the pod's labels and annotations by the API server's name rules (:mod:`kfdefaults._fragment`). Called for
   every file loaded, so ``render`` reports the same errors.
2. :func:`check_merged`: warnings for combinations that only break once the layers are merged, each located at
   the value (in its layer and file) that causes it.
3. :func:`validate_paths`: the ``kfdefaults validate`` command: every file of the given folders, their
   ``extends`` parents, and every profile they define merged across its layers; one file's errors never
   stop the others from being checked.

Nothing here imports jsonschema, flytekit or the kubernetes client.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ._errors import Finding, Location, ProfileError
from ._fragment import describe, join
from ._source import Document

PathT = tuple

SHM_PATH = "/dev/shm"


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Findings without repeats, in file, line and column order (the order they were found within a line)."""
    seen: set[tuple[Any, ...]] = set()
    unique: list[Finding] = []
    for f in findings:
        mark = (str(f.location), f.path, f.message, f.severity)
        if mark not in seen:
            seen.add(mark)
            unique.append(f)
    order = {id(f): i for i, f in enumerate(unique)}
    return sorted(unique, key=lambda f: (f.location.file, f.location.line, f.location.column, order[id(f)]))


# --- one file -------------------------------------------------------------------------------------------------


def check_body(document: Document, data: Any, layer: str | None, kubernetes_version: str | None = None) -> list[Finding]:
    """The checks of one profile body that the section models leave out.

    Args:
        document: The parsed file (for positions).
        data: The profile body as plain data (``document.data``, or the task layer's overrides).
        layer: The layer it belongs to, named in the findings.
        kubernetes_version: Kubernetes minor version of the schema for ``pod_template.spec`` (default 1.32).

    Returns:
        Errors and warnings, each located at the offending key or value.
    """
    from ._fragment import check_pod_metadata, check_pod_spec

    findings: list[Finding] = []
    if not isinstance(data, dict):
        return findings
    elastic = data.get("elastic")
    if isinstance(elastic, dict) and isinstance(elastic.get("rdzv_configs"), dict):
        findings += check_rdzv_configs(document, elastic["rdzv_configs"], layer)
    pod_template = data.get("pod_template")
    if isinstance(pod_template, dict):
        findings += check_pod_metadata(document, pod_template, layer)
    if isinstance(pod_template, dict) and isinstance(pod_template.get("spec"), dict):
        findings += check_pod_spec(document, pod_template["spec"], layer, kubernetes_version=kubernetes_version)
    return findings


def check_rdzv_configs(document: Document, rdzv: dict[str, Any], layer: str | None,
                       path: PathT = ("elastic", "rdzv_configs")) -> list[Finding]:
    """Check ``elastic.rdzv_configs`` key by key against what torch's c10d rendezvous reads.

    Rules (torch.distributed.elastic.rendezvous, as the kfpytorch plugin runs it with ``rdzv_backend="c10d"``):
    a key must be one of :data:`kfdefaults._model.RDZV_SETTINGS`; timeouts and ``keep_alive_interval`` are
    whole seconds > 0 (``RendezvousTimeout`` rejects zero and negative timeouts, ``get_as_int`` truncates
    fractions); ``keep_alive_max_attempt`` an int >= 1; ``is_host`` true or false; ``store_type`` tcp or file.
    ``timeout`` without ``join_timeout`` is a warning: c10d never reads ``timeout``.

    Args:
        document: The parsed file.
        rdzv: The ``rdzv_configs`` mapping as written (``null`` values delete and are not checked).
        layer: The file's layer.
        path: Where the mapping sits in the document.

    Returns:
        One finding per bad key or value.
    """
    from ._elastic import RDZV_SETTINGS, RDZV_STORE_TYPES
    from ._suggest import closest

    findings: list[Finding] = []
    name = ".".join(path)

    def add(key: str, message: str, *, at_key: bool = False, severity: str = "error") -> None:
        findings.append(Finding(document.location(path + (key,), key=at_key), join(name, key), message, severity, layer))

    for key, value in rdzv.items():
        if not isinstance(key, str):
            continue  # the section model reports keys that are not strings
        if key not in RDZV_SETTINGS:
            hint = closest(key, RDZV_SETTINGS)
            known = ", ".join(RDZV_SETTINGS)
            add(key, f"unknown rendezvous setting `{key}`" + (f"; did you mean `{hint}`?" if hint else f"; c10d reads {known}"),
                at_key=True)
            continue
        if value is None:
            continue
        kind, _ = RDZV_SETTINGS[key]
        if kind in ("seconds", "count"):
            lowest = 1
            unit = "a whole number of seconds" if kind == "seconds" else "a whole number"
            if isinstance(value, bool) or not isinstance(value, int):
                hint = "; write it without quotes" if isinstance(value, str) and value.strip().isdigit() else ""
                add(key, f"`{key}` must be {unit} >= {lowest}, got {describe(value)}{hint}")
            elif value < lowest:
                add(key, f"`{key}` must be {unit} >= {lowest}, got {value}"
                    + (" (torch rejects timeouts that are not positive)" if kind == "seconds" else ""))
        elif kind == "bool":
            if not isinstance(value, bool):
                add(key, f"`{key}` must be true or false, got {describe(value)}")
        elif kind == "store" and value not in RDZV_STORE_TYPES:
            hint = closest(str(value), RDZV_STORE_TYPES)
            add(key, f"`{key}` must be tcp or file, got {describe(value)}" + (f"; did you mean `{hint}`?" if hint else ""))
    if rdzv.get("timeout") is not None and rdzv.get("join_timeout") is None:
        add("timeout", "c10d does not read `timeout` (only the static and etcd rendezvous do): set `join_timeout` "
            "to change how long nodes wait to join, or the join timeout stays what the layers below set",
            at_key=True, severity="warning")
    return findings


# --- one merged profile -----------------------------------------------------------------------------------------


def _normal_mount_path(path: Any) -> str:
    return posixpath.normpath(path) if isinstance(path, str) and path else ""


def _find_in(data: Any, steps: Sequence[Any]) -> PathT | None:
    """Follow ``steps`` (keys, and ``(merge_key, value)`` selectors for list items) into ``data``.

    Returns:
        The concrete path (keys and list indices) to a non-null value, or ``None``.
    """
    path: list[Any] = []
    node = data
    for step in steps:
        if isinstance(step, tuple):
            key, wanted = step
            if not isinstance(node, list):
                return None
            for i, item in enumerate(node):
                if isinstance(item, dict) and item.get(key) == wanted:
                    path.append(i)
                    node = item
                    break
            else:
                return None
        else:
            if not isinstance(node, dict) or step not in node:
                return None
            path.append(step)
            node = node[step]
    return tuple(path) if node is not None else None


@dataclass
class _Setter:
    """Which fragment set a merged value, and where."""

    index: int
    layer: str
    location: Location


def _setter(fragments: Sequence[Any], section: str, steps: Sequence[Any]) -> _Setter | None:
    """The highest fragment that sets the value at ``steps`` in its ``elastic`` or ``pod_template`` section.

    ``pod_template`` steps are in PodTemplateSpec shape (``["spec", "containers", ("name", "primary"), ...]``);
    the location is mapped back to the file's shape (``pod_template.spec...``, ``pod_template.labels``).
    """
    for index in range(len(fragments) - 1, -1, -1):
        fragment = fragments[index]
        data = fragment.elastic if section == "elastic" else fragment.pod_template
        found = _find_in(data, steps)
        if found is None:
            continue
        if section == "elastic":
            file_path: PathT = ("elastic",) + found
        elif found[:1] == ("metadata",):
            file_path = ("pod_template",) + found[1:]
        else:
            file_path = ("pod_template",) + found
        return _Setter(index, fragment.layer, fragment.location(file_path))
    return None


def _named(prefix: str, steps: Sequence[Any]) -> str:
    name = prefix
    for step in steps:
        name = f"{name}[{step[0]}={step[1]}]" if isinstance(step, tuple) else join(name, step)
    return name


def _where(setter: _Setter | None) -> str:
    return f"[{setter.layer}] {setter.location}" if setter else "the defaults"


class _MergedChecker:
    def __init__(self, merged: Any) -> None:
        self.merged = merged
        self.fragments = merged.fragments
        self.findings: list[Finding] = []

    def warn(self, name: str, message: str, *setters: _Setter | None) -> None:
        """A warning located at the highest of ``setters`` (the layer that made the combination)."""
        present = [s for s in setters if s is not None]
        top = max(present, key=lambda s: s.index) if present else None
        location = top.location if top else Location(f"<profile {self.merged.name}>")
        self.findings.append(Finding(location, name, message, "warning", top.layer if top else None))

    def pod_setter(self, steps: Sequence[Any]) -> _Setter | None:
        return _setter(self.fragments, "pod", steps)

    def run(self) -> list[Finding]:
        spec = (self.merged.pod_template or {}).get("spec") or {}
        containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
        primary_name = self.merged.primary_container_name
        primary = next((c for c in containers if c.get("name") == primary_name), None)
        if containers and primary is None:
            self.primary_not_named(containers, primary_name)
        if primary is not None:
            self.gpus(primary)
        for field in ("containers", "initContainers"):
            for container in spec.get(field) or []:
                if isinstance(container, dict) and container is not primary and not container.get("image"):
                    self.no_image(field, container, primary_name)
        volumes = {v.get("name"): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
        for volume in volumes.values():
            self.volume_sources(volume)
        for container in containers:
            self.shm(container, volumes)
        self.join_timeout()
        self.run_policy_of_a_single_pod()
        return self.findings

    def run_policy_of_a_single_pod(self) -> None:
        elastic = self.merged.elastic
        if elastic.get("nnodes") == 1 and elastic.get("run_policy"):
            self.warn(
                "elastic.run_policy",
                "has no effect: with `nnodes: 1` the task runs as a plain pod, and `run_policy` is a PyTorchJob's "
                "(flytekitplugins.kfpytorch serializes it only for several nodes); remove it or set `run_policy: null`",
                _setter(self.fragments, "elastic", ["run_policy"]),
                _setter(self.fragments, "elastic", ["nnodes"]),
            )

    def primary_not_named(self, containers: list[dict[str, Any]], primary_name: str) -> None:
        from ._suggest import closest

        names = [str(c.get("name")) for c in containers]
        setter = None
        for index in range(len(self.fragments) - 1, -1, -1):
            if self.fragments[index].primary_container_name is not None:
                fragment = self.fragments[index]
                setter = _Setter(index, fragment.layer, fragment.location(("pod_template", "primary_container_name")))
                break
        first = self.pod_setter(["spec", "containers", ("name", containers[0].get("name")), "name"])
        hint = closest(primary_name, names)
        self.warn(
            "pod_template.primary_container_name",
            f"no container is named `{primary_name}` (the primary container): the pod's containers are "
            f"{', '.join(f'`{n}`' for n in names)}. flytekit adds an empty `{primary_name}` container to run the task, "
            "and the settings written for the others do not reach it"
            + (f"; did you mean `{hint}`?" if hint else f"; name one of them `{primary_name}` or set primary_container_name"),
            setter, first,
        )

    def gpus(self, primary: dict[str, Any]) -> None:
        from ._quantity import quantity_value

        nproc = self.merged.elastic.get("nproc_per_node")
        limits = (primary.get("resources") or {}).get("limits") or {}
        if not isinstance(nproc, int) or isinstance(nproc, bool) or not isinstance(limits, dict):
            return
        for resource, amount in limits.items():
            if "/" not in resource or resource.rsplit("/", 1)[-1] != "gpu":
                continue
            gpus = quantity_value(amount)
            if gpus is None or gpus < 1 or nproc <= gpus:
                continue
            name = primary.get("name")
            gpu_steps = ["spec", "containers", ("name", name), "resources", "limits", resource]
            gpu_setter = self.pod_setter(gpu_steps)
            nproc_setter = _setter(self.fragments, "elastic", ["nproc_per_node"])
            shown = int(gpus) if gpus.denominator == 1 else float(gpus)
            self.warn(
                "elastic.nproc_per_node",
                f"nproc_per_node is {nproc} ({_where(nproc_setter)}) but the primary container `{name}` has {shown} "
                f"`{resource}` ({_where(gpu_setter)}): torch elastic starts {nproc} workers per node, one per GPU, "
                f"so workers beyond {shown} share a GPU or fail to get one; set nproc_per_node to {shown} or raise the limit",
                nproc_setter, gpu_setter,
            )

    def shm(self, container: dict[str, Any], volumes: dict[Any, dict[str, Any]]) -> None:
        from ._quantity import quantity_value

        name = container.get("name")
        base = ["spec", "containers", ("name", name)]
        mounts = [m for m in container.get("volumeMounts") or [] if isinstance(m, dict)]
        for mount in mounts:
            if mount.get("name") is not None and mount.get("name") not in volumes:
                steps = base + ["volumeMounts", ("mountPath", mount.get("mountPath")), "name"]
                self.warn(_named("pod_template", steps[:-1]),
                          f"container `{name}` mounts volume `{mount.get('name')}` at `{mount.get('mountPath')}`, "
                          "but no layer defines that volume in pod_template.spec.volumes: Kubernetes rejects the pod",
                          self.pod_setter(steps))
        shm = [m for m in mounts if _normal_mount_path(m.get("mountPath")) == SHM_PATH]
        setters = [self.pod_setter(base + ["volumeMounts", ("mountPath", m.get("mountPath"))]) for m in shm]
        if len(shm) > 1:
            top = max(range(len(shm)), key=lambda i: setters[i].index if setters[i] else -1)
            listed = "; ".join(f"`{m.get('mountPath')}` (volume `{m.get('name')}`, {_where(s)})" for m, s in zip(shm, setters))
            self.warn(
                _named("pod_template", base + ["volumeMounts", ("mountPath", shm[top].get("mountPath"))]),
                f"container `{name}` mounts /dev/shm {len(shm)} times: {listed}. One mount hides the other; keep one "
                "(a layer replaces a lower layer's mount by giving the same mountPath)",
                *setters,
            )
        limits = (container.get("resources") or {}).get("limits") or {}
        memory_text = limits.get("memory") if isinstance(limits, dict) else None
        memory = quantity_value(memory_text) if memory_text is not None else None
        if memory is None:
            return
        for mount in shm:
            volume = volumes.get(mount.get("name")) or {}
            empty_dir = volume.get("emptyDir") if isinstance(volume.get("emptyDir"), dict) else {}
            size_text = empty_dir.get("sizeLimit")
            size = quantity_value(size_text) if size_text is not None else None
            if size is None or size <= memory:
                continue
            size_steps = ["spec", "volumes", ("name", volume.get("name")), "emptyDir", "sizeLimit"]
            memory_steps = base + ["resources", "limits", "memory"]
            size_setter = self.pod_setter(size_steps)
            memory_setter = self.pod_setter(memory_steps)
            memory_is_higher = memory_setter is not None and (size_setter is None or memory_setter.index > size_setter.index)
            self.warn(
                _named("pod_template", memory_steps if memory_is_higher else size_steps),  # the path of the line shown
                f"/dev/shm sizeLimit {size_text} ({_where(size_setter)}) is above the memory limit {memory_text} of "
                f"container `{name}` ({_where(memory_setter)}): /dev/shm in memory counts against the container's "
                "memory, so the container is OOM-killed before /dev/shm is full; keep sizeLimit below the memory limit",
                size_setter, memory_setter,
            )

    def no_image(self, field: str, container: dict[str, Any], primary_name: str) -> None:
        """A container other than the primary one without an image: the API server requires one
        (``validateContainerCommon``: "image: Required value"); flytekit sets the primary container's only."""
        from ._suggest import closest

        name = container.get("name")
        steps = ["spec", field, ("name", name)]
        hint = closest(str(name), [primary_name]) if field == "containers" else None
        self.warn(
            _named("pod_template", steps),
            f"container `{name}` has no image: Kubernetes rejects the pod (flytekit gives an image to the primary "
            f"container `{primary_name}` only)" + (f"; did you mean `{primary_name}`?" if hint else "; give it one"),
            self.pod_setter(steps + ["name"]),
        )

    def volume_sources(self, volume: dict[str, Any]) -> None:
        """A volume with two sources (``emptyDir`` and ``hostPath``), most often from two layers.

        The API server accepts exactly one source per volume ("may not specify more than 1 volume type",
        ``ValidateVolumes`` in k8s.io/kubernetes pkg/apis/core/validation); a strategic merge patch keeps the
        lower layer's source beside a higher layer's new one unless the higher layer deletes it. The sources
        are the fields of the schema's ``Volume`` other than ``name``.
        """
        set_keys = [k for k, v in volume.items() if k != "name" and v is not None]
        if len(set_keys) < 2:  # the common case decides without the schema
            return
        from ._k8s_schema import schema_type

        source_fields = set(schema_type("io.k8s.api.core.v1.Volume").field_names()) - {"name"}
        sources = [k for k in set_keys if k in source_fields]
        if len(sources) < 2:
            return
        name = volume.get("name")
        setters = [self.pod_setter(["spec", "volumes", ("name", name), k]) for k in sources]
        listed = ", ".join(f"`{k}` ({_where(s)})" for k, s in zip(sources, setters))
        top = max(range(len(sources)), key=lambda i: setters[i].index if setters[i] else -1)
        lower = [k for i, k in enumerate(sources) if i != top]
        self.warn(
            _named("pod_template", ["spec", "volumes", ("name", name), sources[top]]),
            f"volume `{name}` has {len(sources)} sources: {listed}. Kubernetes rejects the pod (a volume has exactly "
            f"one source); to replace a lower layer's source, delete it where the new one is set "
            f"({', '.join(f'`{k}: null`' for k in lower)})",
            *setters,
        )

    def join_timeout(self) -> None:
        rdzv = self.merged.elastic.get("rdzv_configs") or {}
        if isinstance(rdzv, dict) and rdzv.get("timeout") is not None and rdzv.get("join_timeout") is None:
            self.warn(
                "elastic.rdzv_configs.timeout",
                "c10d ignores `timeout` and no layer sets `join_timeout`: the join timeout stays torch's 600 s; "
                "set `join_timeout`",
                _setter(self.fragments, "elastic", ["rdzv_configs", "timeout"]),
            )


def check_merged(merged: Any) -> list[Finding]:
    """Warnings for a merged profile whose settings break together at run time.

    * ``nproc_per_node`` larger than the primary container's GPU limit (``nvidia.com/gpu`` or another
      ``*/gpu`` resource): torch elastic starts one worker per process slot, one per GPU.
    * a ``/dev/shm`` volume whose ``emptyDir.sizeLimit`` is above the mounting container's memory limit
      (memory-backed emptyDir pages are charged to the container writing them; Kubernetes docs, emptyDir).
    * two ``/dev/shm`` mounts in one container (``/dev/shm`` and ``/dev/shm/`` are different merge keys).
    * containers none of which is the primary container (flytekit then adds an empty one,
      ``flytekit.core.utils._serialize_pod_spec``).
    * ``rdzv_configs.timeout`` without any ``join_timeout``.
    * a volume with two sources (``emptyDir`` from one layer, ``hostPath`` from another): the API server
      accepts one.
    * a container or init container, other than the primary container, without an image (a misspelt
      primary container name, most often).
    * a ``run_policy`` with ``nnodes: 1``: the plugin runs a plain pod and serializes no run policy.

    Args:
        merged: A :class:`kfdefaults._resolve.Merged` (or anything with its attributes, such as
            :class:`kfdefaults._api.Resolved`'s source).

    Returns:
        Warnings, each located at the value of the highest layer involved and naming the other values' places.
    """
    return sorted_findings(_MergedChecker(_as_merged(merged)).run())


def _as_merged(obj: Any) -> Any:
    """A :class:`kfdefaults._resolve.Merged` view of a ``Merged`` or a :class:`kfdefaults._api.Resolved`."""
    if not hasattr(obj, "pod_template_spec"):
        return obj
    from ._resolve import Merged

    # Resolved: read its plain-data attributes only (its pod_template property imports flytekit)
    return Merged(obj.name, obj.description, obj.elastic_settings, obj.pod_template_spec, obj.primary_container_name,
                  obj.fragments)


def empty_folder_warnings(catalog: Any) -> list[Finding]:
    """A warning for each platform or team folder with no profile file directly in it.

    Folders are not searched recursively, so ``--platform repo`` where the files are in ``repo/profiles/``
    would otherwise add nothing without a word; the warning names the sub-folders that hold profile files.
    """
    findings = []
    index = catalog.index()  # already listed for the lookup: no folder is listed twice
    holding = {os.path.normpath(os.path.dirname(f)) for names in index.values() for files in names.values() for f in files}
    for layer, folders in catalog.folders.items():
        if layer == "builtin":
            continue
        for folder in folders:
            if os.path.normpath(folder.path) in holding:
                continue
            findings.append(Finding(Location(folder.path), "", f"no profile files (*.yaml, *.yml, *.toml) in this "
                                    f"{layer} folder (from {folder.origin}){_sub_folders_hint(folder.path)}",
                                    "warning", layer))
    return findings


def _sub_folders_hint(folder: str) -> str:
    """``; sub-folders are not searched, and profiles/ holds profile files: ...`` when one does, else ``""``."""
    from ._resolve import folder_names

    try:
        with os.scandir(folder) as entries:
            below = sorted(f"{e.name}/" for e in entries if e.is_dir() and folder_names(e.path))
    except OSError:
        below = []
    if not below:
        return ""
    return (f"; sub-folders are not searched, and {', '.join(below)} {'holds' if len(below) == 1 else 'hold'} "
            "profile files: name that folder instead")


def render_warnings(catalog: Any, merged: Any) -> list[Finding]:
    """Every warning about a profile as ``render`` builds it: its files' own, then the merged profile's.

    Args:
        catalog: The :class:`kfdefaults._resolve.Catalog` the profile was expanded from.
        merged: The :class:`kfdefaults._resolve.Merged` or :class:`kfdefaults._api.Resolved` profile.
    """
    view = _as_merged(merged)
    findings: list[Finding] = empty_folder_warnings(catalog)
    for fragment in view.fragments:
        definition = catalog._definitions.get(fragment.source)
        if definition is not None:
            findings.extend(definition.warnings)
    return sorted_findings(findings + _MergedChecker(view).run())


# --- folders, for CI ------------------------------------------------------------------------------------------------


@dataclass
class Report:
    """What :func:`validate_paths` found.

    Attributes:
        findings: Errors and warnings, sorted by file and position.
        files: The profile files checked.
        profiles: The profile names merged and checked.
    """

    findings: list[Finding] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    profiles: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity != "error"]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data: ``{"files", "profiles", "errors", "warnings", "findings": [...]}``."""
        return {
            "files": self.files,
            "profiles": self.profiles,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "findings": [
                {
                    "file": f.location.file,
                    "line": f.location.line,
                    "column": f.location.column,
                    "layer": f.layer,
                    "path": f.path,
                    "severity": f.severity,
                    "message": f.message,
                    "text": str(f),
                }
                for f in self.findings
            ],
        }


def _catalog_with_files(folders: dict[str, list[Any]], files: dict[str, list[str]]) -> Any:
    """A :class:`kfdefaults._resolve.Catalog` of ``folders`` plus single files added to given layers."""
    from ._resolve import Catalog, profile_name_of

    class _FileCatalog(Catalog):
        def index(self) -> dict[str, dict[str, list[str]]]:
            if self._index is None:
                index = super().index()
                known = {os.path.realpath(f) for names in index.values() for fs in names.values() for f in fs}
                for layer, layer_files in files.items():
                    names = index.setdefault(layer, {})
                    for f in layer_files:
                        if os.path.realpath(f) not in known:
                            known.add(os.path.realpath(f))
                            names.setdefault(profile_name_of(f), []).append(f)
            return self._index  # type: ignore[return-value]

    return _FileCatalog(folders)


def validate_paths(
    paths: Sequence[str],
    *,
    layer: str = "team",
    platform: Iterable[str] = (),
    team: Iterable[str] = (),
    kubernetes_version: str | None = None,
) -> Report:
    """Validate profile files and folders: each file, the ``extends`` of each, and each profile merged.

    With ``paths``, the files given (and the profile files directly in the folders given) form the ``layer``
    layer, on top of the layers below it as ``render`` finds them (for the team layer: the builtin profiles,
    ``--platform`` folders, ``KFDEFAULTS_PLATFORM_PATH``, installed platform packages); of the ``layer`` layer
    and above, only the ``platform`` / ``team`` folders given count, as context. Without ``paths``, every
    folder of every layer is checked, found as ``render`` finds them (flags, environment, entry points,
    pyproject.toml).

    Args:
        paths: Profile files (``.yaml``, ``.yml``, ``.toml``) and folders of them (not searched recursively,
            as the layers are not).
        layer: The layer the given paths belong to: ``platform`` or ``team``.
        platform: Platform-layer folders to validate against (context, not reported on unless broken).
        team: Team-layer folders, likewise.
        kubernetes_version: Kubernetes minor version of the schema (default 1.32).

    Returns:
        A :class:`Report`; it never raises for bad input.
    """
    from ._layers import LAYERS, FlagSource, discover_folders, layer_sources
    from ._resolve import expand, folder_names, merge_fragments, profile_name_of
    from ._source import PROFILE_SUFFIXES, path_problem

    findings: list[Finding] = []
    try:
        sources = layer_sources(platform, team)
    except ProfileError as e:
        return Report(sorted_findings(e.findings))
    if paths:
        # below the PATHs' layer, everything render would read (a team repository is checked on top of the
        # installed platform package); in that layer and above, only the folders given as flags, so that
        # the repository's own files are not read twice through pyproject.toml or an installed copy
        for upper in LAYERS[LAYERS.index(layer):-1]:
            sources[upper] = [s for s in sources[upper] if isinstance(s, FlagSource)]
    # a broken context folder or installed package is reported, and the rest is checked all the same
    folders = discover_folders(sources, errors=findings)

    given: list[str] = []
    for path in paths:
        if not path:
            findings.append(Finding(Location("''"), "", "an empty path names no file or folder"))
        elif os.path.isdir(path):
            problem = path_problem(path, "folder")
            if problem is not None:
                findings.append(Finding(Location(path), "", problem))
                continue
            files = [file for file, _ in folder_names(path)]
            if not files:  # a CI job pointed at the wrong folder must not pass
                findings.append(Finding(Location(path), "", "no profile files (*.yaml, *.yml, *.toml) in this folder"
                                        + _sub_folders_hint(path)))
            given.extend(files)
        elif path.endswith(PROFILE_SUFFIXES) and os.path.lexists(path):
            given.append(path)  # reading it says what is wrong with it, if anything
        elif os.path.isfile(path):
            findings.append(Finding(Location(path, 1, 1), "", "not a profile file: profiles end in .yaml, .yml or .toml"))
        else:
            problem = path_problem(path, "file")
            findings.append(Finding(Location(path), "", "no such file or folder" if problem == "no such file" else problem or ""))
    catalog = _catalog_with_files(dict(folders), {layer: given} if paths else {})
    catalog.kubernetes_version = kubernetes_version

    # each file on its own: syntax, sections, rendezvous settings, the PodSpec fragment
    if paths:
        seen: set[str] = set()
        checked = []
        for file in given:
            if os.path.realpath(file) not in seen:
                seen.add(os.path.realpath(file))
                checked.append((file, layer))
    else:
        checked = [(file, file_layer) for file_layer in LAYERS[:-1]
                   for files in catalog.index().get(file_layer, {}).values() for file in files]
    for file, file_layer in checked:
        try:
            definition = catalog.load(file, file_layer)
        except ProfileError as e:
            findings.extend(e.findings)
            continue
        findings.extend(getattr(definition, "warnings", []))

    # each profile they define: duplicates, extends, the merge, and the merged result
    names = sorted({profile_name_of(file) for file, _ in checked} if paths else set(catalog.names()))
    for name in names:
        try:
            fragments = expand(catalog, name)
            merged = merge_fragments(name, fragments, kubernetes_version=kubernetes_version, remember=False)
        except ProfileError as e:
            for f in e.findings:
                if paths and f.layer == layer and "defined twice" in f.message and len(paths) > 1:
                    # two PATH folders meant as two layers (platform, team) are one layer here
                    f.message += (f" (the PATHs are checked together, as the {layer} layer; check a folder of "
                                  "another layer with --layer, or give it as context with --platform / --team)")
            findings.extend(e.findings)
            continue
        findings.extend(check_merged(merged))
    return Report(sorted_findings(findings), [f for f, _ in checked], names)


def task_label(path: str, labels: dict[str, str]) -> str | None:
    """The origin label of a task-layer value at dotted ``path`` (``--set KEY=VALUE``, ``Elastic(key=...)``).

    ``labels`` maps keys as given (``pod_template.spec.containers[name=primary].image``) or with their list
    selectors dropped (``pod_template.spec.containers.image``) to labels. The longest key that ``path``
    starts with wins, so a value set as a whole mapping is named by the ``--set`` that set the mapping.
    """
    import re

    candidates = [path]
    cut = path
    while True:
        m = re.search(r"(\.[^.\[]+|\[[^\]]*\])$", cut)
        if not m or m.start() == 0:
            break
        cut = cut[: m.start()]
        candidates.append(cut)
    for candidate in candidates:
        for key in (candidate, re.sub(r"\[[^\]]*\]", "", candidate)):
            if key in labels:
                return labels[key]
    # a value a --set wrote below ``path`` or beside it in the same list item (an unknown key ``labels`` from
    # ``--set labels.a=b``; the merge key ``containers[name=].name`` of ``--set containers[name=].image=x``)
    for candidate in candidates:
        below = sorted(label for key, label in labels.items()
                       if key.startswith(candidate + ".") or key.startswith(candidate + "["))
        if below and (candidate == path or candidate.endswith("]")):
            return below[0]
    return None
