"""The one pipeline: read files -> find layers -> validate -> merge, for every entry point.

The command line, :func:`kfdefaults.resolve`, ``Elastic(profile=...)``, ``diff`` and ``validate`` all build a
:class:`Pipeline` and ask it for profiles. What it reads is fixed when it is built: the folders of each layer
(a :class:`~kfdefaults.layers.Catalog`), the Kubernetes version whose schema checks and merges the pod
templates, and the target SDK (:mod:`kfdefaults.targets`) whose plugin defaults lie below every layer. It loads
each file once (:class:`~kfdefaults.validate.files.DefinitionLoader`), expands each profile's ``extends`` once,
merges with :func:`kfdefaults.merge.fold.merge_fragments`, and checks the result against the target. For
flytekit, whose backend (Flyte 1) it models, when the cluster's default PodTemplate is known
(:mod:`kfdefaults.layers.cluster`), a merged profile leaves out the ``/dev/shm`` the template already gives
(:mod:`kfdefaults.backend.avoid`), and what Flyte's backend would break is checked (:mod:`kfdefaults.check.backend`).
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Sequence

from .. import cache, check, lock as locks  # the lock's names are imported when first used (most projects have none)
from ..check.folders import empty_folder_warnings
from ..errors import Finding, Location, ProfileError, sorted_findings
from ..inputs import Inputs
from ..layers import (
    CLUSTER_FACTS,
    FOLDER_LAYERS,
    NO_PROJECT,
    Catalog,
    ClusterTemplatePath,
    Project,
    discover_folders,
    find_cluster_template,
    find_platform_file,
    layer_sources,
)
from ..merge.auto import device_autos, offered_by, resolve_devices
from ..merge.expand import expand, extends_location
from ..merge.fold import merge_fragments
from ..merge.result import Resolved, SdkObjects
from ..smp.schema import normalize_version
from ..settings import NO_PROFILE
from ..targets import Target, default_target, target_named
from ..validate.files import DefinitionLoader
from ..validate.fragment import Definition, Fragment
from ..validate.suggest import closest
from ..validate.task_layer import task_fragment
from .project import find_project, or_report, project_lock


TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ..validate.facts import ClusterFacts
    from ..check.fit_report import FitReport
    from ..check.start import ColdStart
    from ..validate.pools import Pool
    from ..backend.cluster import ClusterTemplate

LIBRARIES = ("kubernetes_validate", "deepmerge", "pydantic", "yaml")
"""The installed libraries whose code makes a result besides kfdefaults' own: the Kubernetes schemas that check and
merge the pod templates, the merge of the ``elastic`` sections, the models that validate a file and the YAML
reader. Each is an input of every pipeline (:meth:`kfdefaults.inputs.Inputs.module`): another release of one is
another result."""


class Pipeline:
    """Profiles as one set of folders and one Kubernetes version make them.

    Args:
        catalog: The folders of each layer, and the files they hold.
        kubernetes_version: Kubernetes minor version of the schema (``"1.31"``, ``"v1.31.2"``); ``None``: 1.32.
        sdk: What builds SDK objects for :attr:`Resolved.elastic` and :attr:`Resolved.pod_template`
            (:func:`kfdefaults.resolve` gives the target's); ``None`` where no SDK object is asked for.
        target: The SDK the profiles are resolved for, a :class:`~kfdefaults.targets.Target` or its name
            (``"flytekit"``, ``"flyte2"``); ``None``: :func:`~kfdefaults.targets.default_target` for ``project``.
        cluster_template: The file of the cluster's default PodTemplate
            (:func:`kfdefaults.layers.find_cluster_template`), or ``None`` when the cluster has none. Flyte 1's
            backend lays it under the task's pod, and Flyte 2's ``clustered`` plugin under a JobSet's
            (``flytek8s.ToK8sPodSpec``): it counts for the flytekit and clustered targets.
        project: The project whose ``pyproject.toml`` named folders (:class:`~kfdefaults.layers.Project`).
        lock: The project's ``kfdefaults.lock``: every profile it lists is held to it (:mod:`kfdefaults.lock`).
        facts: The file of the cluster's facts (:mod:`kfdefaults.validate.facts`), or ``None`` when none is stated.
        nodes: The cluster's node list (``kubectl get nodes -o json``, ``--nodes``), over the one the facts name.

    Attributes:
        target_why: ``"given"``, or why :func:`~kfdefaults.targets.default_target` chose :attr:`target`.
        inputs: Everything read so far (:mod:`kfdefaults.inputs`): what a result of this pipeline depends on,
            beside its arguments; the catalog's, the loader's and the project's are this one.
        require_locked: A profile the lock does not list is an error too (``Elastic(...)``, ``lock --check``: the
            project uses it unreviewed); ``False`` for ``render`` and ``validate``, which any profile may be shown by.
        lock_notes: The files that differ from the lock while the results they merge to do not (severity
            ``note``: :func:`kfdefaults.lock.lock_findings`), for ``lock --check`` to say.

    Raises:
        ValueError: no schema for ``kubernetes_version``.
        KfdefaultsError: ``target`` names no target.
    """

    def __init__(self, catalog: Catalog, *, kubernetes_version: str | None = None, sdk: SdkObjects | None = None,
                 target: Target | str | None = None, cluster_template: ClusterTemplatePath | None = None,
                 project: Project = NO_PROJECT, lock: locks.Lock | None = None,
                 facts: ClusterTemplatePath | None = None, nodes: str | None = None) -> None:
        self.catalog = catalog
        self.inputs = catalog.inputs
        self.kubernetes_version = normalize_version(kubernetes_version)
        self.sdk = sdk
        self.target, self.target_why = default_target(inputs=self.inputs, project=project) if target is None else (target_named(target), "given")
        self.cluster_template = cluster_template if self.target.name in ("flytekit", "clustered") else None
        self._cluster: ClusterTemplate | None = None
        self.facts_file = facts
        self._facts: ClusterFacts | None = None
        self.nodes_file = nodes
        self._pools: list[Pool] | None = None
        self._pools_read = False
        self.project = project
        self.lock = lock
        self.require_locked = False
        self.lock_notes: list[Finding] = []
        self.loader = DefinitionLoader(self.kubernetes_version, self.inputs)
        for library in LIBRARIES:
            self.inputs.module(library)
        self.expanded: dict[str, list[Fragment]] = {}
        self.file_names: dict[str, str] = {}
        """Profile files as registration named them, where this pipeline cannot (one over carried profiles)."""
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
        facts: str | None = None,
        nodes: str | None = None,
        project: Project | Sequence[str] | None = None,
        use_lock: bool = True,
        inputs: Inputs | None = None,
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
            facts: The ``--facts`` value: a file of the cluster's facts, or ``none``; ``None`` looks for one as
                for the template.
            nodes: The ``--nodes`` value: the cluster's node list, over the one the facts name.
            project: The project (:class:`~kfdefaults.layers.Project`), or the folders it is looked for from, in
                order; ``None``: the working directory's (:func:`find_project`). The ``team`` and ``platform``
                folders never bring a project of their own.
            use_lock: Hold every profile to the project's ``kfdefaults.lock`` when it has one (``diff`` and
                ``kfdefaults lock`` itself do not).
            inputs: Where the pipeline records what it reads (a new manifest when not given).
            **sources: Passed to :func:`kfdefaults.layers.layer_sources` (``environ``, ``entry_points``,
                ``pyproject``, ``flags``).

        Raises:
            ProfileError: a named folder does not exist, a declared platform is missing, or ``pyproject.toml``'s
                ``[tool.kfdefaults]`` or ``kfdefaults.lock`` is invalid (without ``errors``).
        """
        inputs = Inputs() if inputs is None else inputs
        project = find_project(project, sources.get("pyproject", True), inputs)
        folders = discover_folders(layer_sources(platform, team, project=project, inputs=inputs, **sources), errors,
                                   inputs)
        where = {"environ": sources.get("environ"), "project": project, "inputs": inputs}
        found = or_report(errors, find_cluster_template, cluster_template, folders.get("platform", []), **where)
        facts_file = or_report(errors, find_platform_file, CLUSTER_FACTS, facts, folders.get("platform", []), **where)
        lock = or_report(errors, project_lock, project, inputs) if use_lock else None
        return cls(Catalog(folders, files, inputs), kubernetes_version=kubernetes_version, sdk=sdk, target=target,
                   cluster_template=found, project=project, lock=lock, facts=facts_file, nodes=nodes)

    @property
    def cluster(self) -> ClusterTemplate | None:
        """The cluster's default PodTemplate, read when first asked for; ``None`` when the cluster has none.

        Raises:
            ProfileError: the file cannot be read or is not a PodTemplate manifest (located).
        """
        if self._cluster is None and self.cluster_template is not None:
            from ..backend.cluster import load_cluster_template  # lazy: Go's model of a PodSpec, only for a template
            self._cluster = load_cluster_template(self.cluster_template, self.inputs)
        return self._cluster

    @property
    def facts(self) -> Any:
        """The cluster's facts (:class:`~kfdefaults.validate.facts.ClusterFacts`), read when first asked for;
        ``None`` when none are stated.

        Raises:
            ProfileError: the file cannot be read, or a fact is invalid (located).
        """
        if self._facts is None and self.facts_file is not None:
            # lazy: the facts' models import pydantic (a second on a loaded host); a render without facts never does
            from ..validate.facts import load_facts

            self._facts = load_facts(self.facts_file.path, self.inputs)
        return self._facts

    def _facts_if_sound(self) -> ClusterFacts | None:
        """The facts; ``None`` when none are stated or they are broken (:meth:`warnings` reports that)."""
        try:
            return self.facts
        except ProfileError:
            return None

    def fit(self, resolved: Resolved, topology: str | None = None) -> FitReport | None:
        """``resolved`` judged against the cluster's pools and the domains of ``topology`` (else Kueue's level the
        profile asks): :func:`kfdefaults.check.fit.fit`; ``None`` when no pool is known.

        Raises:
            ProfileError: the facts or the node list are broken (located).
        """
        pools = self.pools
        if not pools:
            return None
        # lazy: the fit check (the scheduler's filters, the PyTorchJob's model) costs about 25 ms to import, which
        # a command without node pools does not pay
        from ..check.fit import fit

        return fit(resolved, pools, cluster=self.cluster, facts=self.facts, topology=topology)

    def cold_start(self, resolved: Resolved, pool: str | None = None) -> ColdStart:
        """How late a cold node starts for a task on ``resolved``: the figures of ``pool``, else of the pool it fits
        (of several, the slowest to start), else the cluster's (:func:`kfdefaults.check.start.cold_start`), the one
        figure ``timeline`` and ``why`` use.

        Raises:
            KfdefaultsError: ``pool`` is named and neither the node list nor the facts know it.
            ProfileError: the facts or the node list are broken (located).
        """
        # lazy: only the commands that judge clocks against the cluster ask
        from ..check.start import cold_start
        from ..errors import KfdefaultsError

        report = self.fit(resolved)
        names = [v.pool.name for v in report.pools] if report is not None else []
        if pool is not None and pool not in names and (self.facts is None or self.facts.get("node_pools", pool) is None):
            raise KfdefaultsError(f"no node pool named {pool!r}"
                                  + (f" (the pools: {', '.join(names)})" if names else " (no node pools known)"))
        return cold_start(self.facts, [v.pool.name for v in report.pools if v.fits] if report is not None else None, pool)

    @property
    def pools(self) -> list[Pool] | None:
        """The cluster's node pools (:func:`kfdefaults.validate.pools.load_pools`), read when first asked for;
        ``None`` when neither a node list nor the facts state one.

        Raises:
            ProfileError: the facts or the node list are broken (located); raised once, ``None`` after that
                (``validate`` reports it and checks the profiles without pools).
        """
        if not self._pools_read and (self.nodes_file is not None or self.facts is not None):
            self._pools_read = True
            # lazy: the node list's reader and the pools are needed only where the cluster states its nodes
            from ..validate.pools import load_pools

            self._pools = load_pools(self.facts, self.nodes_file, self.inputs)
        self._pools_read = True
        return self._pools

    # -- profiles

    def definition(self, name: str, layer: str) -> Definition | None:
        """The definition of ``name`` in ``layer``, or ``None``.

        Raises:
            ProfileError: two files of the layer define it, or its file is invalid.
        """
        file = self.catalog.the_file(name, layer)
        return None if file is None else self.loader.load(file, layer)

    def definitions(self, name: str) -> dict[str, list[Definition]]:
        """Every definition profile ``name`` is made of: its own and, through ``extends``, its parents', each read
        and validated once, by profile name, lowest layer first (what :func:`kfdefaults.merge.expand.expand`
        takes).

        Raises:
            ProfileError: no layer defines ``name`` or a parent it extends, a file is invalid, or two files of a
                layer define one name.
        """
        out: dict[str, list[Definition]] = {}
        pending: list[tuple[str, Definition | None]] = [(name, None)]
        while pending:
            current, child = pending.pop(0)
            if current in out:
                continue
            files = [(layer, self.catalog.the_file(current, layer)) for layer in FOLDER_LAYERS]  # found, then read
            found = [self.loader.load(file, layer) for layer, file in files if file is not None]
            if not found:
                raise ProfileError([self._unknown(current, child)])
            out[current] = found
            pending += [(parent, d) for d in found for parent in d.parents]
        return out

    def _unknown(self, name: str, child: Definition | None) -> Finding:
        """The error of a profile no layer defines: asked for, or a parent ``child`` extends."""
        hint = closest(name, [n for n in self.catalog.names() if child is None or n != child.name])
        hint_text = f"; did you mean {hint!r}?" if hint else ""
        if child is None:
            return Finding(Location("kfdefaults"), "", f"no profile named {name!r}{hint_text} "
                           f"(searched {self.catalog.searched()})")
        return Finding(extends_location(child, name), "extends", f"unknown parent profile {name!r}{hint_text} "
                       f"(extended by {child.file})", layer=child.layer)

    def fragments(self, name: str, task: Iterable[Fragment | None] = ()) -> list[Fragment]:
        """The fragments of profile ``name``, lowest first, the task-layer fragments given last.

        Raises:
            ProfileError: the profile is unknown, a file is invalid, or ``extends`` is broken.
        """
        if name == NO_PROFILE:  # Elastic() without a profile: no file layer defines it
            self.expanded[name] = []
        if name not in self.expanded:
            self.expanded[name] = expand(name, self.definitions(name))
        return self.expanded[name] + [f for f in task if f is not None]

    def task_layer(self, name: str, overrides: Mapping[str, Any] | None, *, source: str = "overrides",
                   labels: Mapping[str, str] | None = None) -> Fragment | None:
        """The task layer of profile ``name``, validated like a file (:func:`kfdefaults.validate.task_layer.task_fragment`)."""
        return task_fragment(name, overrides, source=source, labels=dict(labels or {}),
                             kubernetes_version=self.kubernetes_version)

    def resolve(self, name: str, task: Iterable[Fragment | None] = (), *, remember: bool = True,
                check_lock: bool = True, checked: bool = True, per_pool: bool = False) -> Resolved:
        """Merge profile ``name`` across its layers, the task-layer fragments on top.

        Args:
            name: Profile name.
            task: Task-layer fragments, lowest first (``Elastic(...)``, then ``@task(pod_template=...)``).
            remember: Read and store the merge in the cache (``validate`` merges a thousand profiles once each:
                storing them would cost more than it saves).
            check_lock: Hold the profile to ``kfdefaults.lock``.
            checked: Raise what stops the merged profile (its target's and the backend's errors); ``False`` for
                the digest of a profile's file layers, which its task layer may be what makes runnable
                (``start_method: null`` over a ``start_method: fork`` on Flyte 2).
            per_pool: Leave a fabric device count written ``auto`` for :meth:`fit` to work out pool by pool;
                else it is the count the cluster's pools offer (:func:`kfdefaults.merge.auto.resolve_devices`).

        With a cluster template, the merge ends with the cluster layer (:mod:`kfdefaults.backend.avoid`). With a
        lock file, the profile (its file layers, the task layer left out) must be what was locked
        (:func:`kfdefaults.lock.lock_findings`).

        Raises:
            ProfileError: the profile is unknown or broken, a pod template patch is rejected, the merged profile
                sets what the target's plugin cannot honour (:func:`kfdefaults.check.target.check_target`) or
                what the API server rejects (:func:`kfdefaults.check.apiserver.api_server_errors`), the
                cluster's template is broken, the pod Flyte's backend builds would hold two containers of one
                name (:func:`kfdefaults.check.backend.backend_errors`, flytekit only), a deadline ends the job
                before a cold node is up (:func:`kfdefaults.check.clock_lints.clock_errors`), or the profile is
                not what ``kfdefaults.lock`` records (each change at the lock's line), or a device count written
                ``auto`` that the pools do not give (:func:`kfdefaults.merge.auto.resolve_devices`).
        """
        task = [f for f in task if f is not None]
        try:
            fragments = self.fragments(name, task)
        except ProfileError as e:  # a profile the lock lists that no layer defines: say what it was made of
            missing = locks.locked_but_missing(self.lock, name) if self.lock is not None else []
            if missing:
                raise ProfileError(missing + e.findings) from None
            raise
        resolved = merge_fragments(name, fragments, kubernetes_version=self.kubernetes_version,
                                   remember=remember, sdk=self.sdk, target=self.target)
        if self.cluster is not None:
            from ..backend.avoid import leave_out_duplicate_shm  # lazy: only where the cluster has a template
            resolved = leave_out_duplicate_shm(resolved, self.cluster)
        judged = as_written = resolved
        if device_autos(resolved):
            offered = offered_by(self.pools, resolved, per_pool) if self.facts_file or self.nodes_file else None
            judged = resolve_devices(resolved, offered, next(iter(offered or {"": 0})) if per_pool else None)
            resolved = resolved if per_pool else judged
        errors = check.errors(judged, self._facts_if_sound()) if checked else []
        if errors:
            raise ProfileError(errors)
        if self.lock is not None and check_lock and name != NO_PROFILE:
            profile = self.resolve(name, remember=remember, check_lock=False, per_pool=True) if task else as_written
            held = locks.lock_findings(self.lock, profile, self.catalog, self.cluster_template.path if self.cluster_template
                                 else None, template_applies=self.target.name == "flytekit",
                                 require_locked=self.require_locked)
            if any(f.severity == "error" for f in held):
                raise ProfileError(held)
            self.lock_notes += [f for f in held if f not in self.lock_notes]
        return resolved

    def warnings(self, resolved: Resolved) -> list[Finding]:
        """Every warning about a profile as it was resolved: its folders', its files' and task layer's own (``--set``,
        ``Elastic(...)``), the merged profile's, its deprecation or that of a profile it extends, and those of its
        target; for flytekit, what the cluster's PodTemplate would break in it
        (:func:`kfdefaults.check.backend.backend_warnings`); with the cluster's pools, a profile that fits none
        (:func:`kfdefaults.check.fit_causes.misfit_warning`).

        Raises:
            ProfileError: the cluster's facts or node list are broken (located).
        """
        findings = empty_folder_warnings(self.catalog)
        for fragment in resolved.fragments:
            definition = self.loader.loaded.get(fragment.source) if fragment.layer != "task" else None
            findings.extend(definition.warnings if definition is not None else fragment.warnings)
        fallback = locks.platform_fallback_warning(resolved, declared, self.lock) if (declared := self.declared_platform()) else None
        found = check.warnings(resolved, self.cluster, pools=self.pools, facts=self.facts)
        return sorted_findings(findings + found + ([fallback] if fallback else []))

    def declared_platform(self) -> list[str]:
        """What the project's ``[tool.kfdefaults] platform`` declares (``[]`` when nothing, or it is broken)."""
        try:
            value = self.project.section.get("platform") or []
        except ProfileError:
            return []
        value = [value] if isinstance(value, str) else value
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
