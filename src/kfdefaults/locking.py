"""``kfdefaults lock``: write, upgrade and check a project's ``kfdefaults.lock`` by walking the pipeline.

The lock covers the profiles the project uses: those its code names in ``Elastic(profile="...")`` (found by
:func:`kfdefaults.lock.profiles_used`, without importing it), those named on the command line, and those already
locked. Each is resolved for every target it is valid for, with the project's layers as a registration finds
them, and recorded with the files it is made of (:mod:`kfdefaults.lock.file`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from . import __version__
from .errors import Finding, KfdefaultsError, Location, ProfileError, sorted_findings
from .layers import Project
from .lock import (
    LOCK_FILE,
    Lock,
    Use,
    profile_files,
    profiles_used,
    read_lock,
    sha256,
    write_lock,
)
from .lock.entries import project_path
from .pipeline import Pipeline
from .targets import TARGETS


@dataclass
class LockReport:
    """What ``kfdefaults lock`` did or found.

    Attributes:
        path: The lock file.
        profiles: The profiles it covers, sorted.
        written: Whether the file was written.
        findings: Errors (a profile that resolves for no target, a change ``--check`` found) and warnings (a call
            whose profile is not a string literal).
        uses: The ``Elastic(...)`` calls found in the project's code.
    """

    path: str
    profiles: list[str] = field(default_factory=list)
    written: bool = False
    findings: list[Finding] = field(default_factory=list)
    uses: list[Use] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]


def lock_project(names: Sequence[str] = (), *, mode: str = "write", kubernetes_version: str | None = None,
                 start: str | None = None) -> LockReport:
    """Write (``mode="write"``), rewrite (``"upgrade"``) or check (``"check"``) the lock file of the project
    whose ``pyproject.toml`` is in ``start`` (default: the working directory) or above it.

    ``write`` creates the file, or adds profiles to it; it refuses to change what is already locked (a changed
    profile is reported as ``check`` reports it: ``upgrade`` rewrites it). ``check`` writes nothing.

    Args:
        names: Profiles to lock besides those the project's code names.
        mode: ``write``, ``upgrade`` or ``check``.
        kubernetes_version: The Kubernetes minor version of the schema (default 1.32).
        start: Where the project is looked for.

    Returns:
        A :class:`LockReport`; its ``errors`` say why nothing was written, or what ``check`` found.

    Raises:
        KfdefaultsError: no ``pyproject.toml`` is found, there is no profile to lock, or the file cannot be
            written.
        ProfileError: the project's ``pyproject.toml`` or lock file is broken, or a declared platform is missing.
    """
    project = Project.find([start or os.getcwd()])
    if project.root is None:
        raise KfdefaultsError(f"no pyproject.toml in {start or os.getcwd()} or above: {LOCK_FILE} lives beside the "
                              "project's pyproject.toml")
    path = os.path.join(project.root, LOCK_FILE)
    existing = read_lock(path) if os.path.lexists(path) else None
    report = LockReport(path, uses=profiles_used(project.root))
    if not names:  # names given may be the ones these calls use: nothing to say then
        report.findings += [Finding(Location(os.path.join(project.root, u.file), u.line, u.column), "", (
            "Elastic(profile=...) does not name its profile as a string: the lock cannot see which profile it uses; "
            "name it on the command line (`kfdefaults lock NAME`)"), severity="warning")
            for u in report.uses if u.profile is None]
    wanted = set(names) | {u.profile for u in report.uses if u.profile} | set(existing.profiles if existing else ())
    if not wanted:
        raise KfdefaultsError(f"no profile to lock: the code under {project.root} calls no Elastic(profile=\"...\"); "
                              "name the profiles (`kfdefaults lock gpu-large`)")
    report.profiles = sorted(wanted)
    pipelines = {name: Pipeline.discover(project=project, target=target, kubernetes_version=kubernetes_version,
                                         use_lock=False) for name, target in TARGETS.items()}
    if mode == "check" or (mode == "write" and existing is not None):
        # what is locked must still be what it was; --check also wants every profile used to be locked
        checked = report.profiles if mode == "check" else sorted(existing.profiles) if existing else []
        report.findings += _changes(existing, checked, project, kubernetes_version, path)
        if mode == "check" or report.errors:
            return report
    if mode == "upgrade" and existing is not None:  # say what the new lock file gives up or takes in
        report.findings += [Finding(f.location, f.path, f"recorded: {f.message.split('; ')[0]}", "warning",
                                    layer=f.layer) for f in _changes(existing, sorted(existing.profiles), project,
                                                                     kubernetes_version, path)]
    data = _lock_data(report.profiles, pipelines, project, report)
    if not report.errors and (existing is None or data != existing.data):
        write_lock(path, data)
        report.written = True
    return report


def _changes(existing: Lock | None, names: list[str], project: Project, kubernetes_version: str | None,
             path: str) -> list[Finding]:
    """Every difference between the profiles as they resolve now and ``existing``, each profile checked for the
    targets it was locked for, as ``render`` and ``Elastic(...)`` check them."""
    if existing is None:
        return [Finding(Location(path), "", f"no {LOCK_FILE}: `kfdefaults lock` writes it")]
    pipelines = {name: Pipeline.discover(project=project, target=target, kubernetes_version=kubernetes_version)
                 for name, target in TARGETS.items()}
    for pipeline in pipelines.values():
        pipeline.require_locked = True  # a profile the code uses must be locked
    found: list[Finding] = []
    for name in names:
        locked = existing.profiles.get(name, {})
        for target in [t for t in TARGETS if t in locked] or list(TARGETS)[:1]:
            try:
                pipelines[target].resolve(name)
            except ProfileError as e:
                found += [f for f in e.findings if f not in found]
    return sorted_findings(found)


def _lock_data(names: list[str], pipelines: dict[str, Pipeline], project: Project, report: LockReport) -> dict[str, Any]:
    """The lock file's content for ``names`` (errors of profiles that resolve for no target go to ``report``)."""
    data: dict[str, Any] = {"version": 1, "kfdefaults": __version__,
                            "kubernetes_version": next(iter(pipelines.values())).kubernetes_version}
    flytekit = pipelines.get("flytekit")
    if flytekit is not None and flytekit.cluster_template is not None:
        with open(flytekit.cluster_template.path, "rb") as f:
            data["cluster_template"] = {"file": project_path(flytekit.cluster_template.path, project.root),
                                        "digest": sha256(f.read())}
    data["profiles"] = {}
    for name in names:
        entry: dict[str, Any] = {}
        problems: list[Finding] = []
        for target, pipeline in pipelines.items():
            try:
                resolved = pipeline.resolve(name)
            except ProfileError as e:
                problems += e.findings
                continue
            entry[target] = resolved.digest()
            entry.setdefault("files", profile_files(resolved, pipeline.catalog, project.root))
        if "files" not in entry:  # valid for no target: the profile itself is broken
            report.findings += problems
            continue
        data["profiles"][name] = {"files": entry.pop("files"), **entry}
    return data
