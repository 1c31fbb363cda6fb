"""Step 2, find layers: where each layer reads its folders, and which file defines which profile.

The order of the layers is :data:`LAYERS`, lowest first; :func:`layer_sources` lists each layer's sources in
order, one small class per kind of source:

========  ======================================================================================
layer     sources, in the order folders are listed
========  ======================================================================================
builtin   the ``profiles/`` folder shipped with the package (:mod:`.builtin`)
platform  ``--platform DIR`` flags (:mod:`.flags`), ``KFDEFAULTS_PLATFORM_PATH`` (an ``os.pathsep`` list,
          :mod:`.environment`), installed packages registering a folder under the entry-point group
          ``kfdefaults.platform`` (:mod:`.entry_points`), ``[tool.kfdefaults] platform = [...]`` of the
          project: packages that must be installed, folders (:mod:`.pyproject`)
team      ``--team DIR`` flags, ``KFDEFAULTS_TEAM_PATH``, ``[tool.kfdefaults] team = [...]`` in the
          project's ``pyproject.toml``, paths relative to that file (:mod:`.pyproject`)
task      not folders: ``kfdefaults.Elastic(...)`` keyword arguments, ``@task(pod_template=...)``, ``--set``
========  ======================================================================================

:func:`discover_folders` turns sources into folders; a :class:`Catalog` of them says which file defines which
profile. Every folder of a layer counts as one pool: two files of one layer that define one profile are an
error. Nothing here reads a profile file. :func:`find_cluster_template` says where the cluster's default
PodTemplate is (:mod:`.cluster`), which Flyte's backend lays under every task.
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping

from ..errors import Finding, Location, ProfileError
from ..inputs import Inputs
from ..read import path_problem
from ..settings import NO_ENTRY_POINTS_ENV, PLATFORM_ENV, TEAM_ENV, flag
from .builtin import BuiltinSource, builtin_folder
from .catalog import (
    FOLDER_LAYERS,
    LAYERS,
    NAME_PATTERN,
    Catalog,
    folder_names,
    profile_name_of,
)
from .cluster import (
    CLUSTER_FACTS,
    CLUSTER_FILES,
    CLUSTER_TEMPLATE_FILE,
    ClusterTemplatePath,
    find_cluster_template,
    find_platform_file,
)
from .entry_points import (
    ENTRY_POINT_GROUP,
    EntryPointSource,
    installed_platform_packages,
)
from .environment import EnvSource
from .flags import FlagSource
from .folder import Folder, Source
from .pyproject import (
    NO_PROJECT,
    DeclaredPlatformSource,
    Project,
    PyprojectSource,
    nearest_pyproject,
)

__all__ = ["BuiltinSource", "CLUSTER_FACTS", "CLUSTER_FILES", "CLUSTER_TEMPLATE_FILE", "Catalog", "ClusterTemplatePath", "DeclaredPlatformSource",
           "ENTRY_POINT_GROUP", "EntryPointSource", "EnvSource", "FOLDER_LAYERS", "FlagSource", "Folder", "LAYERS",
           "NAME_PATTERN", "NO_PROJECT", "Project", "PyprojectSource", "Source", "builtin_folder",
           "discover_folders", "find_cluster_template", "find_platform_file", "folder_names", "layer_sources", "nearest_pyproject",
           "profile_name_of"]


def layer_sources(
    platform: Iterable[str | os.PathLike[str]] = (),
    team: Iterable[str | os.PathLike[str]] = (),
    *,
    environ: Mapping[str, str] | None = None,
    project: Project | None = None,
    entry_points: bool | None = None,
    pyproject: bool = True,
    flags: tuple[str, str] = ("--platform", "--team"),
    only: Iterable[str] = (),
    inputs: Inputs | None = None,
) -> dict[str, list[Source]]:
    """The sources of each folder layer, in the order of :data:`LAYERS`.

    ``flags`` names what gave ``platform`` and ``team`` in messages: the command-line flags, or the keyword
    arguments of the Python call (``resolve(team=...)``).

    ``only`` names layers (``"platform"``, ``"team"``) that read the folders given as ``platform`` / ``team``
    and nothing else: not their environment variable, not the installed packages, not pyproject.toml
    (``--only-team DIR``; ``diff --team-against``).

    ``entry_points=None`` reads installed packages' folders unless ``KFDEFAULTS_NO_ENTRY_POINTS`` is set (to
    test a package's own folder, given with ``--platform``, while an older version of it is installed).

    ``project`` is the project whose ``pyproject.toml`` declares team folders and a platform
    (:class:`~kfdefaults.layers.pyproject.Project`; default: found from the working directory);
    ``pyproject=False`` reads none.

    ``inputs`` records the environment variables read and, through the sources, what they read
    (:mod:`kfdefaults.inputs`).

    Long because it is the one place where the order of the sources is written, with what each takes.

    Raises:
        ProfileError: the project's ``pyproject.toml`` is broken.
    """
    inputs = Inputs() if inputs is None else inputs
    if environ is None:
        for variable in (PLATFORM_ENV, TEAM_ENV, NO_ENTRY_POINTS_ENV):
            inputs.env(variable)
    environ = os.environ if environ is None else environ
    if entry_points is None:
        entry_points = not flag(NO_ENTRY_POINTS_ENV, environ)
    # the order of the layers, and of the sources within each: the one place it is written
    if project is None:
        project = Project.find([os.getcwd()], inputs) if pyproject else NO_PROJECT
    sources: tuple[Source | None, ...] = (
        BuiltinSource(),
        FlagSource("platform", platform, flags[0]),
        EnvSource("platform", PLATFORM_ENV, environ),
        EntryPointSource(inputs) if entry_points else None,
        DeclaredPlatformSource(project, (lambda: installed_platform_packages(inputs)) if entry_points else None)
        if pyproject else None,
        FlagSource("team", team, flags[1]),
        EnvSource("team", TEAM_ENV, environ),
        PyprojectSource(project) if pyproject else None,
    )
    only = set(only)
    out: dict[str, list[Source]] = {layer: [] for layer in FOLDER_LAYERS}
    for source in sources:
        if source is not None and (source.layer not in only or isinstance(source, FlagSource)):
            out[source.layer].append(source)
    return out


def discover_folders(sources: Mapping[str, list[Source]], errors: list[Finding] | None = None,
                     inputs: Inputs | None = None) -> dict[str, list[Folder]]:
    """The folders of each layer, duplicates (same real path) dropped, missing folders an error. ``inputs``
    records each folder's path and the links on the way to it.

    With ``errors``, problems are appended to it and the folders that could be found are returned (``validate``
    checks the files it was given even when a context folder or an installed package is broken).

    Raises:
        ProfileError: a folder named by a flag, variable, entry point or pyproject.toml does not exist, is
            not a folder or cannot be read.
    """
    out: dict[str, list[Folder]] = {}
    findings = []
    seen: dict[str, set[str]] = {}  # layer -> real paths
    for layer, layer_sources_ in sources.items():
        folders = []
        for source in layer_sources_:
            try:
                found = source.folders()
            except ProfileError as e:  # a broken installed package or pyproject.toml (said once, read by two sources)
                findings.extend(f for f in e.findings if f not in findings)
                continue
            for folder in found:
                if inputs is not None:
                    inputs.look_through(folder.path)
                real = os.path.realpath(folder.path)
                problem = path_problem(folder.path, "folder")
                if problem is not None:
                    where = "" if os.path.isabs(folder.path) else f" ({os.path.abspath(folder.path)}, from this folder)"
                    findings.append(Finding(Location(folder.path), "", f"{layer} folder (from {folder.origin}): "
                                            f"{problem}{where}", layer=layer))
                    continue
                if real in seen.get(layer, set()):
                    continue
                other = next((other for other, paths in seen.items() if real in paths), None)
                if other is not None:
                    findings.append(Finding(Location(folder.path), "", f"this folder is in the {other} layer and in "
                                            f"the {layer} layer (from {folder.origin}); a folder belongs to one layer",
                                            layer=layer))
                    continue
                seen.setdefault(layer, set()).add(real)
                folders.append(folder)
        out[layer] = folders
    if findings and errors is None:
        raise ProfileError(findings)
    if errors is not None:
        errors.extend(findings)
    return out
