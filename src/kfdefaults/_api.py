"""The Python entry point: :func:`resolve` a profile name to a :class:`Resolved` profile.

Resolving imports neither flytekit nor the kubernetes client; :attr:`Resolved.elastic`,
:attr:`Resolved.pod_template` and :meth:`Resolved.v1_pod_template` import them when first asked for.
"""

from __future__ import annotations

import copy
import os
from typing import Any, Iterable, Mapping

from ._resolve import Fragment, Merged, discover_and_expand, merge_fragments

TASK_SOURCE = "overrides"


def _shape_problems(overrides: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What makes task-layer data unreadable before any validation: dotted keys, nesting, cycles.

    Files are held to :data:`kfdefaults._source.MAX_DEPTH` levels by their reader; data from Python is held
    to the same here (a dictionary that contains itself would otherwise nest without end).
    """
    from ._source import MAX_DEPTH

    problems = []
    for key in overrides:
        head, dot, rest = key.partition(".") if isinstance(key, str) else ("", "", "")
        if dot and head in ("elastic", "pod_template"):
            problems.append((key, f"unknown field `{key}`: overrides are nested mappings, "
                                  f"write {{{head!r}: {{{rest!r}: ...}}}}"))
    stack: list[tuple[Any, int]] = [(overrides, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            problems.append(("", f"values nest deeper than {MAX_DEPTH} levels (or a value contains itself)"))
            break
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend((v, depth + 1) for v in value)
    return problems


def task_fragment(
    name: str,
    overrides: Mapping[str, Any] | None,
    *,
    source: str = TASK_SOURCE,
    labels: Mapping[str, str] | None = None,
    kubernetes_version: str | None = None,
) -> Fragment | None:
    """The task layer as a :class:`~kfdefaults._resolve.Fragment`, validated like a profile file.

    Args:
        name: The profile the task layer applies to.
        overrides: A mapping in the shape of a profile file (``{"elastic": {...}, "pod_template": {...}}``).
        source: What to name as the origin of these values in messages and ``--explain``.
        labels: Dotted key -> origin label, for values with their own origin (each ``--set``).
        kubernetes_version: Kubernetes minor version of the schema the PodSpec fragment is checked against.

    Raises:
        ProfileError: the overrides do not validate, or set ``name`` or ``extends`` (which belong to files);
            locations name ``source``.
        TypeError: ``overrides`` is not a mapping.
    """
    if not overrides:
        return None
    if not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a mapping in the shape of a profile file, not {type(overrides).__name__}")
    from ._errors import Finding, Location, ProfileError
    from ._resolve import _validate_body, fragment_from_body
    from ._source import Document
    from ._validate import task_label

    file_only = [k for k in ("name", "extends") if k in overrides]
    if file_only:
        raise ProfileError([Finding(Location(task_label(k, labels or {}) or source), k,
                                    f"`{k}` belongs to a profile file; the task layer sets `elastic` and `pod_template`",
                                    layer="task") for k in file_only])
    problems = _shape_problems(overrides)
    if problems:
        raise ProfileError([Finding(Location(task_label(path, labels or {}) or source), path, message, layer="task")
                            for path, message in problems])
    allowed = {k: v for k, v in overrides.items()}
    doc = Document(source, allowed)
    body, findings = _validate_body(doc, allowed, "task", kubernetes_version)
    if findings:
        for f in findings:
            label = task_label(f.path, labels or {}) or source
            f.location = Location(label)
        raise ProfileError(findings)
    fragment = fragment_from_body(name, "task", source, body, None)
    fragment.locations = dict(labels or {})
    return fragment


class Resolved:
    """A profile merged across its layers.

    Attributes:
        name: The profile name.
        description: Its description (from the highest layer that gives one), or ``None``.
        elastic_settings: The effective ``Elastic`` settings as plain data, the plugin's defaults filled in:
            ``{"nnodes": 1 | "MIN:MAX", "nproc_per_node": int, "start_method": "spawn" | "fork",
            "monitor_interval": seconds, "max_restarts": int, "rdzv_configs": {key: value},
            "run_policy": {...}}`` (``run_policy`` only when set).
        pod_template_spec: The merged PodTemplateSpec as plain data (``{"metadata": {...}, "spec": {...}}``).
        primary_container_name: Name of the container that runs the task.
        fragments: What was merged, lowest layer first (for provenance).
    """

    def __init__(self, merged: Merged) -> None:
        self.name = merged.name
        self.description = merged.description
        self.elastic_settings = merged.elastic
        self.pod_template_spec = merged.pod_template
        self.primary_container_name = merged.primary_container_name
        self.fragments = merged.fragments

    def __repr__(self) -> str:
        return f"Resolved(name={self.name!r}, layers={[f.layer for f in self.fragments]})"

    def copy(self) -> Resolved:
        """A copy whose settings and pod template can be changed without changing this one (fragments shared)."""
        twin = object.__new__(Resolved)
        twin.__dict__.update(self.__dict__)
        twin.elastic_settings = copy.deepcopy(self.elastic_settings)
        twin.pod_template_spec = copy.deepcopy(self.pod_template_spec)
        return twin

    @property
    def labels(self) -> dict[str, str]:
        """The merged pod labels (``pod_template.labels`` of every layer), a new dict."""
        return dict(self.pod_template_spec.get("metadata", {}).get("labels") or {})

    @property
    def annotations(self) -> dict[str, str]:
        """The merged pod annotations (``pod_template.annotations`` of every layer), a new dict."""
        return dict(self.pod_template_spec.get("metadata", {}).get("annotations") or {})

    @property
    def pod_spec(self) -> dict[str, Any]:
        """The merged PodSpec as plain data (camelCase, as in a manifest)."""
        return copy.deepcopy(self.pod_template_spec.get("spec") or {})

    def to_dict(self) -> dict[str, Any]:
        """The merged profile as plain data, in the shape of a profile file.

        Returns:
            ``{"name", "description", "elastic": {...}, "pod_template": {"primary_container_name",
            "labels", "annotations", "spec"}}``; ``description`` is omitted when there is none.
        """
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        out["elastic"] = copy.deepcopy(self.elastic_settings)
        pod: dict[str, Any] = {"primary_container_name": self.primary_container_name}
        if self.labels:
            pod["labels"] = self.labels
        if self.annotations:
            pod["annotations"] = self.annotations
        pod["spec"] = self.pod_spec
        out["pod_template"] = pod
        return out

    def pod_template_manifest(self, name: str | None = None) -> dict[str, Any]:
        """A Kubernetes ``v1 PodTemplate`` manifest of the merged pod template, as plain data.

        Args:
            name: ``metadata.name`` of the PodTemplate; defaults to the profile name. Flyte's
                ``pod_template_name`` refers to a PodTemplate by this name.
        """
        template: dict[str, Any] = {}
        metadata = {k: v for k, v in (("labels", self.labels), ("annotations", self.annotations)) if v}
        if metadata:
            template["metadata"] = metadata
        template["spec"] = self.pod_spec
        return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name or self.name}, "template": template}

    @property
    def elastic(self) -> Any:
        """A ``flytekitplugins.kfpytorch.Elastic`` with the merged settings.

        ``increase_shared_mem`` is ``False``: the profile owns ``/dev/shm``. Imports flytekit.
        """
        from ._flyte_objects import plugin_elastic

        return plugin_elastic(self.elastic_settings)

    @property
    def pod_template(self) -> Any:
        """A ``flytekit.PodTemplate`` whose ``pod_spec`` is a ``kubernetes.client.V1PodSpec``. Imports flytekit."""
        from ._flyte_objects import flytekit_pod_template

        return flytekit_pod_template(self.pod_spec, self.primary_container_name, self.labels, self.annotations)

    def v1_pod_template(self, name: str | None = None) -> Any:
        """A ``kubernetes.client.V1PodTemplate`` (for ``kubectl apply`` and Flyte's ``pod_template_name``)."""
        from ._flyte_objects import to_k8s_model

        manifest = self.pod_template_manifest(name)
        manifest["template"]["spec"].setdefault("containers", [])  # required by the client's model
        return to_k8s_model(manifest, "V1PodTemplate")


def resolve(
    name: str,
    *,
    platform: Iterable[str | os.PathLike[str]] = (),
    team: Iterable[str | os.PathLike[str]] = (),
    overrides: Mapping[str, Any] | None = None,
    kubernetes_version: str | None = None,
) -> Resolved:
    """Merge a profile across its layers: builtin, platform, team, then ``overrides`` as the task layer.

    Folders come from the arguments and from every other source of their layer
    (``KFDEFAULTS_PLATFORM_PATH``, the ``kfdefaults.platform`` entry points, ``KFDEFAULTS_TEAM_PATH``, the nearest
    pyproject.toml's ``[tool.kfdefaults] team``).

    Args:
        name: Profile name, like ``"gpu-large"``.
        platform: Extra platform-layer folders, lowest priority within the layer first.
        team: Extra team-layer folders.
        overrides: The task layer, in the shape of a profile file:
            ``{"elastic": {"nnodes": 2}, "pod_template": {"spec": {...}}}``.
        kubernetes_version: Kubernetes minor version for the strategic merge patch schema (default 1.32).

    Returns:
        The merged :class:`Resolved` profile.

    Raises:
        ProfileError: the profile is unknown, a file is invalid, ``extends`` is broken, or a pod template patch
            is rejected; every finding has a ``FILE:LINE:COLUMN`` location.
    """
    if not isinstance(name, str):
        raise TypeError(f"a profile name is a string, not {type(name).__name__}")
    platform, team = _folders(platform, "platform="), _folders(team, "team=")
    fragments = discover_and_expand(name, platform, team, kubernetes_version=kubernetes_version)
    task = task_fragment(name, overrides, kubernetes_version=kubernetes_version)
    return Resolved(merge_fragments(name, fragments + ([task] if task else []), kubernetes_version=kubernetes_version))


def _folders(value: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], what: str = "folders") -> list[str]:
    """Folders as a list: one path on its own (``platform="/etc/profiles"``) is one folder, not its letters.

    Raises:
        TypeError: ``value`` is neither a path nor an iterable of paths (``str`` or ``os.PathLike``).
    """
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    wrong = f"{what} takes a folder path or a list of them (str or os.PathLike)"
    if isinstance(value, (bytes, dict)) or not isinstance(value, Iterable):
        raise TypeError(f"{wrong}, not {type(value).__name__}")
    out = []
    for v in value:
        if not isinstance(v, (str, os.PathLike)):
            raise TypeError(f"{wrong}, not a list holding {type(v).__name__} {v!r}")
        out.append(os.fspath(v))
    return out
