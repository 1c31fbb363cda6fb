"""The one pipeline: read files -> find layers -> validate -> merge, for every entry point.

The command line, :func:`kfdefaults.resolve`, ``Elastic(profile=...)``, ``diff`` and ``validate`` all build a
:class:`Pipeline` and ask it for profiles. What it reads is fixed when it is built: the folders of each layer
(a :class:`~kfdefaults.layers.Catalog`), the Kubernetes version whose schema checks and merges the pod
templates, and the target SDK (:mod:`kfdefaults.targets`) whose plugin defaults lie below every layer. It loads
each file once (:class:`~kfdefaults.validate.files.DefinitionLoader`), expands each profile's ``extends`` once,
merges with :func:`kfdefaults.merge.fold.merge_fragments`, and checks the result against the target. For
flytekit, whose backend (Flyte 1) it models, when the cluster's default PodTemplate is known
(:mod:`kfdefaults.layers.cluster`), a merged profile leaves out the ``/dev/shm`` the template already gives
(:mod:`kfdefaults.backend.avoid`), and what Flyte's backend would break is checked (:mod:`kfdefaults.backend.checks`).
"""

from __future__ import annotations

import os
import stat
import sys
import time
from typing import Any, Iterable, Mapping, Sequence

from . import cache
from .backend.avoid import leave_out_duplicate_shm
from .backend.checks import backend_errors, backend_warnings
from .backend.cluster import ClusterTemplate, load_cluster_template
from .errors import Finding, ProfileError, sorted_findings
from .layers import (
    CLUSTER_TEMPLATE_FILE,
    NO_PROJECT,
    Catalog,
    ClusterTemplatePath,
    Project,
    discover_folders,
    find_cluster_template,
    folder_listing,
    layer_sources,
    nearest_pyproject,
)
from .layers.pyproject import project_file_bytes
from .lock import (
    LOCK_FILE,
    Lock,
    lock_findings,
    locked_but_missing,
    platform_fallback_warning,
    read_lock,
)
from .lock.file import MAX_LOCK_BYTES
from .read.files import read_regular_file
from .merge.expand import expand
from .merge.fold import merge_fragments
from .merge.result import Resolved, SdkObjects
from .settings import (
    CLUSTER_TEMPLATE_ENV,
    NO_CACHE_ENV,
    NO_ENTRY_POINTS_ENV,
    PLATFORM_ENV,
    TEAM_ENV,
    flag,
)
from .smp.schema import normalize_version
from .targets import Target, default_target, target_named
from .validate.deprecation import deprecations
from .validate.files import DefinitionLoader
from .validate.folders import empty_folder_warnings
from .validate.fragment import Definition, Fragment
from .validate.apiserver import api_server_errors
from .validate.merged import check_merged
from .validate.target import check_target
from .validate.task_layer import task_fragment


class Pipeline:
    """Profiles as one set of folders and one Kubernetes version make them.

    Args:
        catalog: The folders of each layer, and the files they hold.
        kubernetes_version: Kubernetes minor version of the schema (``"1.31"``, ``"v1.31.2"``); ``None``: 1.32.
        sdk: What builds SDK objects for :attr:`Resolved.elastic` and :attr:`Resolved.pod_template`
            (:func:`kfdefaults.resolve` gives the target's); ``None`` where no SDK object is asked for.
        target: The SDK the profiles are resolved for, a :class:`~kfdefaults.targets.Target` or its name
            (``"flytekit"``, ``"flyte2"``); ``None``: :func:`~kfdefaults.targets.default_target`.
        cluster_template: The file of the cluster's default PodTemplate
            (:func:`kfdefaults.layers.find_cluster_template`), or ``None`` when the cluster has none. Flyte 1's
            backend lays it under the task's pod: it counts for the flytekit target only.
        project: The project whose ``pyproject.toml`` named folders (:class:`~kfdefaults.layers.Project`).
        lock: The project's ``kfdefaults.lock``: every profile it lists is held to it (:mod:`kfdefaults.lock`).

    Attributes:
        require_locked: A profile the lock does not list is an error too (``Elastic(...)``, ``lock --check``: the
            project uses it unreviewed); ``False`` for ``render`` and ``validate``, which any profile may be shown by.

    Raises:
        ValueError: no schema for ``kubernetes_version``.
        KfdefaultsError: ``target`` names no target.
    """

    def __init__(self, catalog: Catalog, *, kubernetes_version: str | None = None, sdk: SdkObjects | None = None,
                 target: Target | str | None = None, cluster_template: ClusterTemplatePath | None = None,
                 project: Project = NO_PROJECT, lock: Lock | None = None) -> None:
        self.catalog = catalog
        self.kubernetes_version = normalize_version(kubernetes_version)
        self.sdk = sdk
        self.target = default_target()[0] if target is None else target_named(target)
        self.cluster_template = cluster_template if self.target.name == "flytekit" else None
        self._cluster: ClusterTemplate | None = None
        self.project = project
        self.lock = lock
        self.require_locked = False
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
        target: Target | str | None = None,
        files: Mapping[str, Sequence[str]] | None = None,
        errors: list[Finding] | None = None,
        cluster_template: str | None = None,
        project: Project | Sequence[str] | None = None,
        use_lock: bool = True,
        **sources: Any,
    ) -> Pipeline:
        """A pipeline over every layer source (flags, environment, entry points, ``pyproject.toml``).

        Args:
            platform: Extra platform-layer folders, lowest priority within the layer first.
            team: Extra team-layer folders.
            kubernetes_version: As for :class:`Pipeline`.
            sdk: As for :class:`Pipeline`.
            target: As for :class:`Pipeline`.
            files: Single files added to a layer besides its folders (``kfdefaults validate FILE``).
            errors: When given, a broken source (a missing folder, a broken installed package) is appended to it
                and the rest is read; without it, the first such problem raises.
            cluster_template: The ``--cluster-template`` value: a PodTemplate manifest, or ``none``; ``None``
                looks for one where :mod:`kfdefaults.layers.cluster` says.
            project: The project (:class:`~kfdefaults.layers.Project`), or the folders it is looked for from, in
                order; ``None``: the working directory, then the ``team`` and ``platform`` folders given.
            use_lock: Hold every profile to the project's ``kfdefaults.lock`` when it has one (``diff`` and
                ``kfdefaults lock`` itself do not).
            **sources: Passed to :func:`kfdefaults.layers.layer_sources` (``environ``, ``entry_points``,
                ``pyproject``, ``flags``).

        Raises:
            ProfileError: a named folder does not exist, a declared platform is missing, or ``pyproject.toml``'s
                ``[tool.kfdefaults]`` or ``kfdefaults.lock`` is invalid (without ``errors``).
        """
        found: ClusterTemplatePath | None = None
        lock: Lock | None = None
        project = find_project(project, platform, team, sources.get("pyproject", True))
        folders = discover_folders(layer_sources(platform, team, project=project, **sources), errors)
        try:
            found = find_cluster_template(cluster_template, folders.get("platform", []), environ=sources.get("environ"),
                                          project=project)
            lock = project_lock(project) if use_lock else None
        except ProfileError as e:
            if errors is None:
                raise
            errors.extend(e.findings)
        return cls(Catalog(folders, files), kubernetes_version=kubernetes_version, sdk=sdk, target=target,
                   cluster_template=found, project=project, lock=lock)

    @property
    def cluster(self) -> ClusterTemplate | None:
        """The cluster's default PodTemplate, read when first asked for; ``None`` when the cluster has none.

        Raises:
            ProfileError: the file cannot be read or is not a PodTemplate manifest (located).
        """
        if self._cluster is None and self.cluster_template is not None:
            self._cluster = load_cluster_template(self.cluster_template)
        return self._cluster

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

    def resolve(self, name: str, task: Iterable[Fragment | None] = (), *, remember: bool = True,
                check_lock: bool = True) -> Resolved:
        """Merge profile ``name`` across its layers, the task-layer fragments on top.

        Args:
            name: Profile name.
            task: Task-layer fragments, lowest first (``Elastic(...)``, then ``@task(pod_template=...)``).
            remember: Read and store the merge in the cache (``validate`` merges a thousand profiles once each:
                storing them would cost more than it saves).

        With a cluster template, the merge ends with the cluster layer (:mod:`kfdefaults.backend.avoid`). With a
        lock file, the profile (its file layers, the task layer left out) must be what was locked
        (:func:`kfdefaults.lock.lock_findings`).

        Raises:
            ProfileError: the profile is unknown or broken, a pod template patch is rejected, the merged profile
                sets what the target's plugin cannot honour (:func:`kfdefaults.validate.target.check_target`) or
                what the API server rejects (:func:`kfdefaults.validate.apiserver.api_server_errors`), the
                cluster's template is broken, the pod Flyte's backend builds would hold two containers of one
                name (:func:`kfdefaults.backend.checks.backend_errors`, flytekit only), or the profile is not
                what ``kfdefaults.lock`` records (each change at the lock's line).
        """
        task = [f for f in task if f is not None]
        try:
            fragments = self.fragments(name, task)
        except ProfileError as e:  # a profile the lock lists that no layer defines: say what it was made of
            missing = locked_but_missing(self.lock, name) if self.lock is not None else []
            if missing:
                raise ProfileError(missing + e.findings) from None
            raise
        resolved = merge_fragments(name, fragments, kubernetes_version=self.kubernetes_version,
                                   remember=remember, sdk=self.sdk, target=self.target)
        if self.cluster is not None:
            resolved = leave_out_duplicate_shm(resolved, self.cluster, kubernetes_version=self.kubernetes_version)
        errors = [f for f in check_target(resolved) if f.severity == "error"] + api_server_errors(resolved)
        if self.target.name == "flytekit":
            errors += backend_errors(resolved)
        if errors:
            raise ProfileError(errors)
        if self.lock is not None and check_lock:
            profile = self.resolve(name, remember=remember, check_lock=False) if task else resolved
            held = lock_findings(self.lock, profile, self.catalog, self.cluster_template.path if self.cluster_template
                                 else None, template_applies=self.target.name == "flytekit",
                                 require_locked=self.require_locked)
            if held:
                raise ProfileError(held)
        return resolved

    def warnings(self, resolved: Resolved) -> list[Finding]:
        """Every warning about a profile as it was resolved: its folders', its files' and task layer's own (``--set``,
        ``Elastic(...)``), the merged profile's, its deprecation or that of a profile it extends, and those of its
        target; for flytekit, what the cluster's PodTemplate would break in it
        (:func:`kfdefaults.backend.checks.backend_warnings`)."""
        findings = empty_folder_warnings(self.catalog)
        for fragment in resolved.fragments:
            definition = self.loader.loaded.get(fragment.source) if fragment.layer != "task" else None
            findings.extend(definition.warnings if definition is not None else fragment.warnings)
        backend = backend_warnings(resolved, self.cluster) if self.target.name == "flytekit" else []
        fallback = platform_fallback_warning(resolved, self.declared_platform(), self.lock)
        return sorted_findings(findings + check_merged(resolved) + deprecations(resolved) + target_warnings(resolved)
                               + backend + ([fallback] if fallback else []))

    def declared_platform(self) -> list[str]:
        """What the project's ``[tool.kfdefaults] platform`` declares (``[]`` when nothing, or it is broken)."""
        try:
            value = self.project.section.get("platform") or []
        except ProfileError:
            return []
        value = [value] if isinstance(value, str) else value
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def find_project(project: Project | Sequence[str] | None, platform: Iterable[Any], team: Iterable[Any],
             pyproject: bool) -> Project:
    """The project a pipeline reads: given, or found from the folders given (default: the working directory,
    then the ``team`` and ``platform`` folders)."""
    if not pyproject:
        return NO_PROJECT
    if isinstance(project, Project):
        return project
    starts = list(project) if project is not None else [os.getcwd(), *map(os.fspath, team), *map(os.fspath, platform)]
    return Project.find(starts)


def project_lock(project: Project) -> Lock | None:
    """The project's ``kfdefaults.lock``, beside its ``pyproject.toml``, if it has one.

    Raises:
        ProfileError: the file is broken.
    """
    path = os.path.join(project.root, LOCK_FILE) if project.root else None
    return read_lock(path) if path is not None and os.path.lexists(path) else None


def target_warnings(resolved: Resolved) -> list[Finding]:
    """The warnings of :func:`kfdefaults.validate.target.check_target` (its errors stop :meth:`Pipeline.resolve`)."""
    return [f for f in check_target(resolved) if f.severity != "error"]


_SHARED: dict[tuple, tuple[tuple, Pipeline]] = {}


def shared_pipeline(platform: Sequence[str] = (), team: Sequence[str] = (), *, kubernetes_version: str | None = None,
                    sdk: SdkObjects | None = None, target: Target | str | None = None,
                    project: Sequence[str] = ()) -> Pipeline:
    """The process's pipeline for these folders, built again only when something it read changed.

    ``Elastic(profile=...)`` runs at every import of a workflow module, often many times for one profile. The
    pipeline is kept, keyed by the arguments and everything that names folders (the environment variables,
    the working directory, ``sys.path``), and reused as long as no folder's listing changed (names, sizes and
    times: a few ``stat`` calls) and neither the ``pyproject.toml`` nor any profile file it read holds other
    bytes (read again and compared by digest: a same-size edit that keeps the old time, as ``rsync -t``,
    ``tar`` or ``cp -p`` make, is seen), nor the lock file. Once every file and folder it read has not changed
    status for :data:`SETTLED_SECONDS`, an unchanged ``stat`` of each (inode, size, times, ctime included) stands
    for its bytes, and calls stop reading them (:func:`_settled`). ``KFDEFAULTS_NO_CACHE`` turns this off too.

    ``project`` lists the folders the project's ``pyproject.toml`` is looked for from, first to last
    (``Elastic(...)`` gives the folder of the module that calls it); the working directory is always last.

    Raises:
        ProfileError: as :meth:`Pipeline.discover`.
    """
    starts = (*project, os.getcwd())
    target = default_target()[0] if target is None else target_named(target)
    key = (tuple(platform), tuple(team), os.environ.get(PLATFORM_ENV, ""), os.environ.get(TEAM_ENV, ""),
           os.environ.get(NO_ENTRY_POINTS_ENV, ""), os.environ.get(CLUSTER_TEMPLATE_ENV, ""), starts, tuple(sys.path),
           kubernetes_version, id(sdk), target.name)
    hit = None if flag(NO_CACHE_ENV) else _SHARED.get(key)
    if hit is not None:
        (folders, signature, stamp), pipeline = hit
        seen = _QUICK.get(key)
        if seen is not None and seen[0] is pipeline and _quick_signature(starts, folders, pipeline) == seen[1]:
            return pipeline
        since = time.time()
        quick = _quick_signature(starts, folders, pipeline)  # before the bytes are read: a later write shows
        if (stamp == _stamp(starts, pipeline) and tuple((f, folder_listing(f)) for f in folders) == signature
                and pipeline.loader.unchanged()):
            if _settled(quick, since):
                _QUICK[key] = (pipeline, quick)
            return pipeline
    pipeline = Pipeline.discover(platform, team, kubernetes_version=kubernetes_version, sdk=sdk, target=target,
                                 flags=("platform=", "team="), project=starts)
    pipeline.require_locked = True  # a registration uses the profile: it must have been locked
    signature = pipeline.catalog.signature()
    _SHARED[key] = ((tuple(f for f, _ in signature), signature, _stamp(starts, pipeline)), pipeline)
    _QUICK.pop(key, None)
    return pipeline


_QUICK: dict[tuple, tuple[Pipeline, tuple]] = {}
"""Key of :data:`_SHARED` -> (its pipeline, the :func:`_quick_signature` taken before its files' bytes were last
found unchanged)."""

SETTLED_SECONDS = 2.0
"""How long before a check a file's or folder's status must have last changed for its ``stat`` to stand for its
bytes (:func:`_settled`): more than the coarsest timestamp granularity and clock step of a local file system."""


def _quick_signature(starts: Sequence[str], folders: Sequence[str], pipeline: Pipeline) -> tuple:
    """The ``stat`` of everything :func:`shared_pipeline` reads to see that nothing changed: the project's
    ``pyproject.toml``, its lock file, the cluster's template, every layer folder (its entries) and every profile
    file loaded. A file is ``(inode, size, mtime, ctime)``, a folder ``(inode, mtime, ctime)``, ``None`` when
    missing."""
    path = next(filter(None, map(nearest_pyproject, starts)), None)
    lock = os.path.join(os.path.dirname(path), LOCK_FILE) if path is not None else None
    template = pipeline.cluster_template.path if pipeline.cluster_template else None
    out: list[Any] = [path]
    for file in (path, lock, template, *folders, *pipeline.loader.digests):
        try:
            st = os.stat(file) if file else None
        except OSError:
            st = None
        out.append(None if st is None else (file, st.st_ino, -1 if stat.S_ISDIR(st.st_mode) else st.st_size,
                                            st.st_mtime_ns, st.st_ctime_ns))
    return tuple(out)


def _settled(quick: tuple, since: float) -> bool:
    """Whether nothing in ``quick`` changed status within :data:`SETTLED_SECONDS` of ``since``. Then the same
    ``stat`` later means the same bytes: writing a file, even keeping its size and setting its old modification
    time back (``rsync -t``, ``cp -p``, ``tar``), sets its status-change time (ctime) to the time of the write,
    which no tool sets back; replacing it gives another inode; adding or removing a folder's entry changes the
    folder's times. A file changed just before the check is read again at every call until it settles."""
    limit = int((since - SETTLED_SECONDS) * 1e9)
    return all(item is None or item[4] < limit for item in quick[1:])


def _stamp(starts: Sequence[str], pipeline: Pipeline) -> tuple:
    """What names the pipeline's folders and template besides their listings: the project's ``pyproject.toml``
    and the digest of what kfdefaults reads of it (``None`` when it cannot set ``tool.kfdefaults``, so that other
    edits of the file keep the pipeline), the digests of the lock file and of the cluster's template, and which
    platform folders hold one."""
    out: list[Any] = []
    path = next(filter(None, map(nearest_pyproject, starts)), None)
    try:
        raw = project_file_bytes(path) if path is not None else None
        out.append((path, None if raw is None else cache.digest(raw)))
    except ProfileError as e:
        out.append((path, str(e)))
    lock = os.path.join(os.path.dirname(path), LOCK_FILE) if path is not None else None
    for file in (lock, pipeline.cluster_template.path if pipeline.cluster_template else None):
        try:  # never waiting on a pipe put in its place: what is wrong with it is said when it is read
            out.append((file, cache.digest(read_regular_file(file, MAX_LOCK_BYTES)) if file and os.path.lexists(file)
                        else None))
        except ProfileError as e:
            out.append((file, str(e)))
    out += [os.path.lexists(os.path.join(f.path, CLUSTER_TEMPLATE_FILE)) for f in pipeline.catalog.folders.get("platform", [])]
    return tuple(out)
