"""The Python entry points, each a walk of the one :class:`~kfdefaults.pipeline.Pipeline`.

:func:`resolve` merges a profile for scripts and tests; :func:`validate_paths` checks files and folders for CI
(the ``validate`` command); :func:`compare` resolves the two sides of a ``diff``. Resolving imports no SDK nor
the kubernetes client; :attr:`Resolved.elastic`, :attr:`Resolved.pod_template` and
:meth:`Resolved.v1_pod_template` import them when first asked for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Collection, Iterable, Mapping, Sequence

from . import check
from .backend.cluster import load_cluster_template
from .check.deprecation import NOTE
from .check.folders import empty_folder_warnings, given_cluster_files, given_files
from .errors import Finding, Location, ProfileError, once_per_cause, sorted_findings
from .layers import (
    FOLDER_LAYERS,
    Catalog,
    CLUSTER_FACTS,
    CLUSTER_FILES,
    Folder,
    Project,
    discover_folders,
    find_cluster_template,
    find_platform_file,
    folder_names,
    layer_sources,
    profile_name_of,
)
from .layers.flags import folder_arguments
from .lock import Lock
from .merge.result import Resolved
from .pipeline import Pipeline
from .pipeline.project import find_project, or_report, profiles_in_use, project_lock
from .show.diff import Side, side
from .targets import Target

__all__ = ["Report", "Resolved", "compare", "resolve", "validate_paths"]


class _SdkObjects:
    """An SDK's objects for :class:`Resolved` (``OBJECTS`` of :mod:`kfdefaults.flytekit.objects` or
    :mod:`kfdefaults.flyte2.objects`), imported when first asked for: flytekit takes over a second to import, and
    Flyte 2's PyTorch plugin imports torch (several seconds)."""

    def __init__(self, module: str) -> None:
        self.module = module

    def __getattr__(self, name: str) -> Any:
        import importlib

        # lazy: imports the SDK (a second or more), only when one of its objects is asked for
        return getattr(importlib.import_module(self.module, __package__).OBJECTS, name)


FLYTEKIT_OBJECTS = _SdkObjects(".flytekit.objects")
FLYTE2_OBJECTS = _SdkObjects(".flyte2.objects")
SDK_OBJECTS = {"flytekit": FLYTEKIT_OBJECTS, "flyte2": FLYTE2_OBJECTS, "clustered": _SdkObjects(".flyte2.clustered")}
"""Target name -> what builds its SDK's objects for :attr:`Resolved.elastic` and :attr:`Resolved.pod_template`."""


def resolve(
    name: str,
    *,
    platform: Iterable[str | os.PathLike[str]] = (),
    team: Iterable[str | os.PathLike[str]] = (),
    overrides: Mapping[str, Any] | None = None,
    kubernetes_version: str | None = None,
    target: Target | str | None = None,
    project: str | os.PathLike[str] | None = None,
) -> Resolved:
    """Merge a profile across its layers: builtin, platform, team, then ``overrides`` as the task layer.

    Folders come from the arguments and from every other source of their layer
    (``KFDEFAULTS_PLATFORM_PATH``, the ``kfdefaults.platform`` entry points, ``KFDEFAULTS_TEAM_PATH``, the
    project's ``[tool.kfdefaults] team``). The project is the ``pyproject.toml`` in ``project`` or the closest
    folder above it (default: the working directory), never one found from ``platform`` or ``team``. Where the cluster's default PodTemplate is named
    (:mod:`kfdefaults.layers.cluster`), the profile's ``/dev/shm`` is left out where it gives one (docs/backend.md).

    Args:
        name: Profile name, like ``"gpu-large"``.
        platform: Extra platform-layer folders, lowest priority within the layer first.
        team: Extra team-layer folders.
        overrides: The task layer, in the shape of a profile file:
            ``{"elastic": {"nnodes": 2}, "pod_template": {"spec": {...}}}``.
        kubernetes_version: Kubernetes minor version for the strategic merge patch schema (default 1.32).
        target: The SDK the profile is resolved for, ``"flytekit"`` or ``"flyte2"``
            (:mod:`kfdefaults.targets`): its plugin's defaults lie below every layer, and
            :attr:`Resolved.elastic` and :attr:`Resolved.pod_template` are its objects. ``None``:
            ``KFDEFAULTS_TARGET``, else the project's ``[tool.kfdefaults] target``, else the installed SDK (flytekit
            when both or neither are).
        project: The project's folder (its ``pyproject.toml`` and ``kfdefaults.lock``); ``None``: the working
            directory's.

    Returns:
        The merged :class:`Resolved` profile.

    Raises:
        ProfileError: the profile is unknown, a file is invalid, ``extends`` is broken, a pod template patch
            is rejected, a setting cannot run on the target, the cluster's PodTemplate is broken, or the pod Flyte's
            backend builds would hold two containers of one name; every finding has a ``FILE:LINE:COLUMN`` location.
        TypeError: ``name`` is not a string, or ``platform`` / ``team`` is not a path or a list of paths.
        ValueError: no schema for ``kubernetes_version``.
        KfdefaultsError: ``target`` names no target.
    """
    if not isinstance(name, str):
        raise TypeError(f"a profile name is a string, not {type(name).__name__}")
    platform, team = folder_arguments(platform, "platform="), folder_arguments(team, "team=")
    pipeline = Pipeline.discover(platform, team, kubernetes_version=kubernetes_version, target=target,
                                 flags=("platform=", "team="), project=None if project is None else [os.fspath(project)])
    pipeline.sdk = SDK_OBJECTS[pipeline.target.name]
    return pipeline.resolve(name, [pipeline.task_layer(name, overrides)])


# --- validate ---------------------------------------------------------------------------------------------------


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
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def notes(self) -> list[Finding]:
        """Findings that inform and fail nothing, not even with ``--strict`` (a given file's own deprecation)."""
        return [f for f in self.findings if f.severity == NOTE]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data: ``{"files", "profiles", "errors", "warnings", "notes", "findings": [...]}``."""
        return {
            "files": self.files,
            "profiles": self.profiles,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "notes": len(self.notes),
            "findings": [
                {"file": f.location.file, "line": f.location.line, "column": f.location.column, "layer": f.layer,
                 "path": f.path, "severity": f.severity, "message": f.message, "text": str(f)}
                for f in self.findings
            ],
        }


def validate_paths(
    paths: Sequence[str],
    *,
    layer: str = "team",
    platform: Iterable[str] = (),
    team: Iterable[str] = (),
    kubernetes_version: str | None = None,
    only: Iterable[str] = (),
    flags: tuple[str, str] = ("--platform", "--team"),
    target: Target | str | None = None,
    cluster_template: str | None = None,
    facts: str | None = None,
    nodes: str | None = None,
    project: Sequence[str] | None = None,
) -> Report:
    """Validate profile files and folders: each file, the ``extends`` of each, and each profile merged.

    Long because it is the ``validate`` command's walk in order (the files, the context, the pipeline, each file,
    each profile), each step a line or two over the helpers below.

    With ``paths``, the files given (and the profile files directly in the folders given) form the ``layer``
    layer, on top of the layers below it as ``render`` finds them (for the team layer: the builtin profiles,
    ``--platform`` folders, ``KFDEFAULTS_PLATFORM_PATH``, installed platform packages); of the ``layer`` layer
    and above, only the ``platform`` / ``team`` folders given count, as context. Without ``paths``, every
    folder of every layer is checked, found as ``render`` finds them (flags, environment, entry points,
    pyproject.toml).

    Args:
        paths: Profile files (``.yaml``, ``.yml``, ``.toml``) and folders of them (not searched recursively,
            as the layers are not). A file named ``_cluster-facts.yaml`` (``.yml``, ``.toml``) or
            ``_cluster-template.yaml`` is no profile: it is read as ``facts`` or ``cluster_template``.
        layer: The layer the given paths belong to: ``platform`` or ``team``.
        platform: Platform-layer folders to validate against (context, not reported on unless broken).
        team: Team-layer folders, likewise.
        kubernetes_version: Kubernetes minor version of the schema (default 1.32).
        only: Layers that read the ``platform`` / ``team`` folders given and nothing else (``--only-team``).
        flags: What gave ``platform`` and ``team``, for messages.
        target: The SDK each profile is checked for (as for :func:`resolve`): a setting it cannot honour is an
            error.
        cluster_template: The cluster's default PodTemplate manifest (``none``: no template); by default the one
            :mod:`kfdefaults.layers.cluster` finds, a ``_cluster-template.yaml`` of a given platform folder
            included. Each profile is then checked for what Flyte's backend would break in its pod
            (:func:`kfdefaults.check.backend.backend_warnings`).
        facts: The cluster's facts file (``none``: none); by default the one :mod:`kfdefaults.layers.cluster` finds,
            as for the template. It is checked like a profile, and its ``shm_headroom`` counts.
        nodes: The cluster's node list (``kubectl get nodes -o json``), over the one the facts name. With node
            pools known, a profile that fits none is warned about (:func:`kfdefaults.check.fit_causes.misfit_warning`).
        project: The folder of the project whose ``pyproject.toml`` and ``kfdefaults.lock`` count (it, or the
            closest folder above it); ``None``: the working directory's (:func:`kfdefaults.pipeline.find_project`).

    Returns:
        A :class:`Report`; it never raises for bad input.

    Raises:
        KfdefaultsError: ``target`` names no target.
    """
    findings: list[Finding] = []
    given = given_files(paths, findings, layer)
    cluster_files = [file for file in given if os.path.basename(file) in CLUSTER_FILES]
    if cluster_files:  # the cluster's own files, not profiles: without other PATHs, as if none were given
        given = [file for file in given if file not in cluster_files]
        paths = [path for path in paths if path not in cluster_files]
        cluster_template, facts = given_cluster_files(cluster_files, cluster_template, facts, findings)
    project = find_project(project)
    try:
        sources = _context_sources(platform, team, layer if paths else None, only, flags, project)
    except ProfileError as e:
        return Report(sorted_findings(findings + e.findings))
    # a broken context folder or installed package is reported, and the rest is checked all the same
    catalog = Catalog(discover_folders(sources, errors=findings), {layer: given} if paths else {})
    platform_folders = _platform_folders(catalog, paths, layer)
    pipeline = Pipeline(catalog, kubernetes_version=kubernetes_version, target=target,
                        cluster_template=_cluster_template(cluster_template, platform_folders, findings, project),
                        project=project, lock=_lock(project, findings),
                        facts=or_report(findings, find_platform_file, CLUSTER_FACTS, facts, platform_folders,
                                         project=project), nodes=nodes)
    if or_report(findings, lambda: pipeline.facts) is None:
        pipeline.facts_file = None  # broken (reported): the profiles are checked without the facts
    or_report(findings, lambda: pipeline.pools)  # a broken node list is reported once; then no pools
    pipeline.loader.remember = False  # each file is checked once: reading the cache helps, filling it costs more
    findings.extend(empty_folder_warnings(catalog))  # a folder of a layer that adds nothing, as render says it
    checked = _files_to_check(pipeline, given, layer) if paths else _files_to_check(pipeline)
    file_warnings: dict[str, list[Finding]] = {}
    for file, file_layer in checked:  # each file on its own: syntax, sections, rendezvous settings, the PodSpec
        try:
            file_warnings[file] = pipeline.loader.load(file, file_layer).warnings
        except ProfileError as e:
            findings.extend(e.findings)
    names = sorted({profile_name_of(file) for file, _ in checked} if paths else set(pipeline.catalog.names()))
    used = set(names) if paths else profiles_in_use(project, pipeline.lock, pipeline.catalog.index())
    own, read, by_profile = {file for file, _ in checked}, set(), {}
    for name in names:  # each profile they define: duplicates, extends, the merge, and the merged result
        found = _check_profile(pipeline, name, layer, several_paths=len(paths) > 1, own_files=own,
                               read=read if name in used else None)
        # a profile the project neither defines nor uses (a builtin one) is held to its errors only
        by_profile[name] = found if name in used else [f for f in found if f.severity == "error"]
    layer_of = dict(checked)  # a builtin file's own warnings count through a profile in use that merges it
    findings += [w for file, found in file_warnings.items() if layer_of[file] != "builtin" or file in read
                 for w in found]
    return Report(sorted_findings(findings + once_per_cause(by_profile)), [*cluster_files, *(f for f, _ in checked)],
                  names)


def _files_to_check(pipeline: Pipeline, given: Sequence[str] = (), layer: str = "team") -> list[tuple[str, str]]:
    """``(file, layer)`` to check: the files given, each once (given twice or through a link); without them,
    every file of every folder layer."""
    if given:
        by_real_path: dict[str, str] = {}
        for file in given:
            by_real_path.setdefault(os.path.realpath(file), file)
        return [(file, layer) for file in by_real_path.values()]
    return [(file, file_layer) for file_layer in FOLDER_LAYERS
            for files in pipeline.catalog.index().get(file_layer, {}).values() for file in files]


def _lock(project: Project, findings: list[Finding]) -> Lock | None:
    """The project's lock file, which each profile checked is held to; a broken one is reported."""
    try:
        return project_lock(project)
    except ProfileError as e:
        findings.extend(e.findings)
        return None


def _platform_folders(catalog: Catalog, paths: Sequence[str], layer: str) -> list[Folder]:
    """The platform folders where ``validate`` looks for the cluster's files: folders given as the platform layer
    count as platform folders."""
    folders = list(catalog.folders.get("platform", []))
    if layer == "platform":
        folders += [Folder(p, "platform", "PATH") for p in paths if os.path.isdir(p)]
    return folders


def _cluster_template(explicit: str | None, folders: list[Folder], findings: list[Finding], project: Project) -> Any:
    """The cluster's template for ``validate``, read once: a broken one is reported and the profiles are checked
    without it."""
    try:
        found = find_cluster_template(explicit, folders, project=project)
        if found is not None:
            load_cluster_template(found)  # read and checked here, reported once
        return found
    except ProfileError as e:
        findings.extend(e.findings)
        return None


def _context_sources(platform: Iterable[str], team: Iterable[str], layer: str | None,
                     only: Iterable[str] = (), flags: tuple[str, str] = ("--platform", "--team"),
                     project: Project | None = None) -> dict[str, list[Any]]:
    """The layer sources ``validate`` reads: all of them; or, for files of ``layer``, everything below that layer
    as ``render`` reads it (a team repository is checked on top of the installed platform package) and, in that
    layer and above, only the folders given as flags (the repository's own files are not read twice, through
    pyproject.toml or an installed copy).

    Raises:
        ProfileError: pyproject.toml's ``[tool.kfdefaults]`` is invalid.
    """
    upper = FOLDER_LAYERS[FOLDER_LAYERS.index(layer):] if layer is not None else ()
    return layer_sources(platform, team, only={*upper, *only}, flags=flags, project=project)


def _check_profile(pipeline: Pipeline, name: str, layer: str, *, several_paths: bool,
                   own_files: Collection[str] = (), read: set[str] | None = None) -> list[Finding]:
    """Errors and warnings of profile ``name`` merged across its layers, for the pipeline's target (a deprecation
    declared by one of ``own_files`` is a note); ``read`` collects the files merged into it."""
    try:
        resolved = pipeline.resolve(name, remember=False, per_pool=True)  # a device `auto` is each pool's
        if read is not None:
            read.update(f.source for f in resolved.fragments)
        return check.warnings(resolved, pipeline.cluster, own_files, pools=pipeline.pools, facts=pipeline.facts)
    except ProfileError as e:
        for f in e.findings:
            if several_paths and f.layer == layer and "defined twice" in f.message:
                # two PATH folders meant as two layers (platform, team) are one layer here
                f.message += (f" (the PATHs are checked together, as the {layer} layer; check a folder of "
                              "another layer with --layer, or give it as context with --platform / --team)")
        return e.findings


# --- diff -------------------------------------------------------------------------------------------------------


def compare(
    name_a: str,
    name_b: str | None = None,
    *,
    platform: Sequence[str] = (),
    team: Sequence[str] = (),
    platform_against: Sequence[str] | None = None,
    team_against: Sequence[str] | None = None,
    kubernetes_version: str | None = None,
    target: Target | str | None = None,
    facts: str | None = None,
    nodes: str | None = None,
    project: Sequence[str] | None = None,
) -> tuple[Any, Any]:
    """Resolve both sides of a comparison (:mod:`kfdefaults.show.diff`).

    A is ``name_a`` with ``platform`` and ``team``; B is ``name_b`` (default: ``name_a``) with the same
    folders, except that ``platform_against`` / ``team_against``, when given, replace that layer's folders.
    A layer compared that way is read from the given folders only, on both sides: its environment variable,
    the ``kfdefaults.platform`` entry points (platform) and pyproject.toml (team) are left out, since they
    would add the same folder to both sides (or the new folder to the old side).

    Comparing one profile under two sets of folders, a profile defined on one side only (new in a pull request,
    or deleted by it) is compared with nothing: every leaf is added (or removed).

    Both sides are resolved for ``target`` (as for :func:`resolve`), in the project found from ``project`` (the
    folders it is looked for from; ``None``: the working directory's). Where a side knows the cluster's node pools
    (``nodes``, ``facts``, or the facts of its own platform folders), it is judged against them
    (:func:`kfdefaults.check.fit.fit`): a pool the profile fits on one side only is a difference.

    Returns:
        ``(side_a, side_b)``, two :class:`kfdefaults.show.diff.Side`.

    Raises:
        ProfileError: a profile is unknown (on both sides, when one profile is compared under two sets of
            folders) or a file is invalid, on either side.
    """
    only = [layer for layer, against in (("platform", platform_against), ("team", team_against)) if against is not None]
    sources: dict[str, Any] = {"only": only}
    b_name = name_b or name_a
    labels = (name_a, b_name) if name_a != b_name else (f"{name_a} (before)", f"{b_name} (after)")
    flags_b = ("--platform" if platform_against is None else "--platform-against",
               "--team" if team_against is None else "--team-against")
    sides, pipeline = [], None
    for label, name, plat, tm, flags in ((labels[0], name_a, platform, team, ("--platform", "--team")),
                                         (labels[1], b_name, platform if platform_against is None else platform_against,
                                          team if team_against is None else team_against, flags_b)):
        pipeline = Pipeline.discover(plat, tm, kubernetes_version=kubernetes_version, target=target,
                                     flags=flags, use_lock=False, facts=facts, nodes=nodes, project=project,
                                     **sources)  # a diff compares what changed
        shown = {layer: [f.path for f in pipeline.catalog.folders.get(layer, [])] for layer in ("platform", "team")}
        if name_b in (None, name_a) and name not in pipeline.catalog.names():
            # one profile under two sets of folders, defined on one side only: new (or deleted) in the change
            sides.append(Side(f"{label}: absent", name, shown, []))
            continue
        resolved = pipeline.resolve(name, per_pool=True)
        sides.append(side(label, resolved, shown, fit=pipeline.fit(resolved)))
    if not sides[0].entries and not sides[1].entries and pipeline is not None:
        pipeline.fragments(name_a)  # on neither side: the unknown-profile error, with its near names
    return sides[0], sides[1]

