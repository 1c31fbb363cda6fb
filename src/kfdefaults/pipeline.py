"""The one pipeline: read files -> find layers -> validate -> merge, for every entry point.

The command line, :func:`kfdefaults.resolve`, ``Elastic(profile=...)``, ``diff`` and ``validate`` all build a
:class:`Pipeline` and ask it for profiles. What it reads is fixed when it is built: the folders of each layer
(a :class:`~kfdefaults.layers.Catalog`) and the Kubernetes version whose schema checks and merges the pod
templates. It loads each file once (:class:`~kfdefaults.validate.files.DefinitionLoader`), expands each
profile's ``extends`` once, and merges with :func:`kfdefaults.merge.fold.merge_fragments`.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Mapping, Sequence

from . import cache
from .errors import Finding, sorted_findings
from .layers import (
    Catalog,
    discover_folders,
    folder_listing,
    layer_sources,
    nearest_pyproject,
)
from .merge.expand import expand
from .merge.fold import merge_fragments
from .merge.result import Resolved, SdkObjects
from .settings import NO_CACHE_ENV, NO_ENTRY_POINTS_ENV, PLATFORM_ENV, TEAM_ENV, flag
from .smp.schema import normalize_version
from .validate.deprecation import deprecations
from .validate.files import DefinitionLoader
from .validate.folders import empty_folder_warnings
from .validate.fragment import Definition, Fragment
from .validate.merged import check_merged
from .validate.task_layer import task_fragment


class Pipeline:
    """Profiles as one set of folders and one Kubernetes version make them.

    Args:
        catalog: The folders of each layer, and the files they hold.
        kubernetes_version: Kubernetes minor version of the schema (``"1.31"``, ``"v1.31.2"``); ``None``: 1.32.
        sdk: What builds SDK objects for :attr:`Resolved.elastic` and :attr:`Resolved.pod_template`
            (:func:`kfdefaults.resolve` gives flytekit's); ``None`` where no SDK object is asked for.

    Raises:
        ValueError: no schema for ``kubernetes_version``.
    """

    def __init__(self, catalog: Catalog, *, kubernetes_version: str | None = None, sdk: SdkObjects | None = None) -> None:
        self.catalog = catalog
        self.kubernetes_version = normalize_version(kubernetes_version)
        self.sdk = sdk
        self.loader = DefinitionLoader(self.kubernetes_version)
        self.expanded: dict[str, list[Fragment]] = {}
        cache.load_patch_schema(self.kubernetes_version)

    @classmethod
    def discover(
        cls,
        platform: Iterable[str | os.PathLike[str]] = (),
        team: Iterable[str | os.PathLike[str]] = (),
        *,
        kubernetes_version: str | None = None,
        sdk: SdkObjects | None = None,
        files: Mapping[str, Sequence[str]] | None = None,
        errors: list[Finding] | None = None,
        **sources: Any,
    ) -> Pipeline:
        """A pipeline over every layer source (flags, environment, entry points, ``pyproject.toml``).

        Args:
            platform: Extra platform-layer folders, lowest priority within the layer first.
            team: Extra team-layer folders.
            kubernetes_version: As for :class:`Pipeline`.
            sdk: As for :class:`Pipeline`.
            files: Single files added to a layer besides its folders (``kfdefaults validate FILE``).
            errors: When given, a broken source (a missing folder, a broken installed package) is appended to it
                and the rest is read; without it, the first such problem raises.
            **sources: Passed to :func:`kfdefaults.layers.layer_sources` (``environ``, ``cwd``, ``entry_points``,
                ``pyproject``, ``flags``).

        Raises:
            ProfileError: a named folder does not exist, or ``pyproject.toml``'s ``[tool.kfdefaults]`` is invalid
                (without ``errors``).
        """
        folders = discover_folders(layer_sources(platform, team, **sources), errors)
        return cls(Catalog(folders, files), kubernetes_version=kubernetes_version, sdk=sdk)

    # -- profiles

    def definition(self, name: str, layer: str) -> Definition | None:
        """The definition of ``name`` in ``layer``, or ``None``.

        Raises:
            ProfileError: two files of the layer define it, or its file is invalid.
        """
        file = self.catalog.the_file(name, layer)
        return None if file is None else self.loader.load(file, layer)

    def fragments(self, name: str, task: Iterable[Fragment | None] = ()) -> list[Fragment]:
        """The fragments of profile ``name``, lowest first, the task-layer fragments given last.

        Raises:
            ProfileError: the profile is unknown, a file is invalid, or ``extends`` is broken.
        """
        if name not in self.expanded:
            self.expanded[name] = expand(self, name)
        return self.expanded[name] + [f for f in task if f is not None]

    def task_layer(self, name: str, overrides: Mapping[str, Any] | None, *, source: str = "overrides",
                   labels: Mapping[str, str] | None = None) -> Fragment | None:
        """The task layer of profile ``name``, validated like a file (:func:`kfdefaults.validate.task_layer.task_fragment`)."""
        return task_fragment(name, overrides, source=source, labels=dict(labels or {}),
                             kubernetes_version=self.kubernetes_version)

    def resolve(self, name: str, task: Iterable[Fragment | None] = (), *, remember: bool = True) -> Resolved:
        """Merge profile ``name`` across its layers, the task-layer fragments on top.

        Args:
            name: Profile name.
            task: Task-layer fragments, lowest first (``Elastic(...)``, then ``@task(pod_template=...)``).
            remember: Read and store the merge in the cache (``validate`` merges a thousand profiles once each:
                storing them would cost more than it saves).

        Raises:
            ProfileError: the profile is unknown or broken, or a pod template patch is rejected.
        """
        return merge_fragments(name, self.fragments(name, task), kubernetes_version=self.kubernetes_version,
                               remember=remember, sdk=self.sdk)

    def warnings(self, resolved: Resolved) -> list[Finding]:
        """Every warning about a profile as it was resolved: its folders', its files' own, the merged profile's, and
        its deprecation or that of a profile it extends."""
        findings = empty_folder_warnings(self.catalog)
        for fragment in resolved.fragments:
            definition = self.loader.loaded.get(fragment.source)
            if definition is not None:
                findings.extend(definition.warnings)
        return sorted_findings(findings + check_merged(resolved) + deprecations(resolved))


_SHARED: dict[tuple, tuple[tuple, Pipeline]] = {}


def shared_pipeline(platform: Sequence[str] = (), team: Sequence[str] = (), *, kubernetes_version: str | None = None,
                    sdk: SdkObjects | None = None) -> Pipeline:
    """The process's pipeline for these folders, built again only when something it read changed.

    ``Elastic(profile=...)`` runs at every import of a workflow module, often many times for one profile. The
    pipeline is kept, keyed by the arguments and everything that names folders (the environment variables,
    the working directory, ``sys.path``), and reused as long as no folder's listing and no ``pyproject.toml``
    changed (a few ``stat`` calls). ``KFDEFAULTS_NO_CACHE`` turns this off too.

    Raises:
        ProfileError: as :meth:`Pipeline.discover`.
    """
    cwd = os.getcwd()
    key = (tuple(platform), tuple(team), os.environ.get(PLATFORM_ENV, ""), os.environ.get(TEAM_ENV, ""),
           os.environ.get(NO_ENTRY_POINTS_ENV, ""), cwd, tuple(sys.path), kubernetes_version, id(sdk))
    hit = None if flag(NO_CACHE_ENV) else _SHARED.get(key)
    if hit is not None:
        (folders, signature, stamp), pipeline = hit
        if stamp == _pyproject_stamp(cwd) and tuple((f, folder_listing(f)) for f in folders) == signature:
            return pipeline
    pipeline = Pipeline.discover(platform, team, kubernetes_version=kubernetes_version, sdk=sdk,
                                 flags=("platform=", "team="))
    signature = pipeline.catalog.signature()
    _SHARED[key] = ((tuple(f for f, _ in signature), signature, _pyproject_stamp(cwd)), pipeline)
    return pipeline


def _pyproject_stamp(cwd: str) -> tuple:
    path = nearest_pyproject(cwd)
    try:
        return (path, os.stat(path).st_mtime_ns) if path else (None,)
    except OSError:
        return (path, None)
