"""``kfdefaults lock``: write, upgrade and check a project's ``kfdefaults.lock`` by walking the pipeline.

The lock covers the profiles the project uses: those its code names in ``Elastic(profile="...")`` (found by
:func:`kfdefaults.lock.profiles_used`, without importing it), those named on the command line, and those already
locked. Each is resolved for every target it is valid for, with the project's layers as a registration finds
them, and recorded with the files it is made of (:mod:`kfdefaults.lock.file`).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from ..check.replaced import replaced_lists
from ..version import __version__
from ..errors import Finding, KfdefaultsError, Location, ProfileError, shown
from ..layers import Project
from ..lock import (
    LOCK_FILE,
    Lock,
    Use,
    profile_files,
    profiles_used,
    read_lock,
    sha256,
    write_lock,
)
from ..lock.entries import project_path, result_leaves
from ..lock.file import MAX_LOCK_BYTES, refuse_link
from ..read.files import read_regular_file
from ..targets import TARGETS
from . import Pipeline


@dataclass
class LockReport:
    """What ``kfdefaults lock`` did or found.

    Attributes:
        path: The lock file.
        profiles: The profiles it covers, sorted.
        written: Whether the file was written.
        changed: Whether what is locked differs from the profiles now (``write`` then writes nothing).
        findings: Errors (a profile that resolves for no target, a change ``--check`` found) and warnings (a call
            whose profile is not a string literal).
        uses: The ``Elastic(...)`` calls found in the project's code.
    """

    path: str
    profiles: list[str] = field(default_factory=list)
    written: bool = False
    changed: bool = False
    findings: list[Finding] = field(default_factory=list)
    uses: list[Use] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]


def lock_project(names: Sequence[str] = (), *, mode: str = "write", kubernetes_version: str | None = None,
                 start: str | None = None, layers: Mapping[str, Any] | None = None) -> LockReport:
    """Write (``mode="write"``), rewrite (``"upgrade"``) or check (``"check"``) the lock file of the project
    whose ``pyproject.toml`` is in ``start`` (default: the working directory) or above it.

    ``write`` creates the file, or adds profiles to it; it refuses to change what is already locked (a changed
    profile is reported as ``check`` reports it: ``upgrade`` rewrites it). ``check`` writes nothing.

    Long because it is the command's walk in order (the project, the old file, the scan, the names, the checks,
    the new file), each step a line or two over the helpers below, under one file lock.

    Args:
        names: Profiles to lock besides those the project's code names.
        mode: ``write``, ``upgrade`` or ``check``.
        kubernetes_version: The Kubernetes minor version of the schema (default 1.32).
        start: Where the project is looked for (it, or the closest folder above it; default: the working
            directory).
        layers: The layer options, as for :meth:`Pipeline.discover` (``platform``, ``team``, ``only``,
            ``flags``): the folders the profiles are resolved with, as ``render`` resolves them.

    Returns:
        A :class:`LockReport`; its ``errors`` say why nothing was written, or what ``check`` found.

    Raises:
        KfdefaultsError: no ``pyproject.toml`` is found, there is no profile to lock, or the file cannot be
            written.
        ProfileError: the project's ``pyproject.toml`` or lock file is broken, a declared platform is missing, or
            (``write``, ``upgrade``) the lock file is a symbolic link.
    """
    project = Project.find([start or os.getcwd()])
    if project.root is None or project.pyproject is None:
        raise KfdefaultsError(f"no pyproject.toml in {start or os.getcwd()} or above: {LOCK_FILE} lives beside the "
                              "project's pyproject.toml")
    path = os.path.join(project.root, LOCK_FILE)
    if mode != "check":
        refuse_link(path)  # before any work: the file would not be written
    with _exclusive(project.pyproject, mode != "check"):  # one `kfdefaults lock` at a time reads and writes it
        report = LockReport(path)
        existing = _existing_lock(path, mode, report)
        _scan(project, names, report)
        pipelines = {name: Pipeline.discover(project=project, target=target, kubernetes_version=kubernetes_version,
                                             use_lock=False, **(layers or {})) for name, target in TARGETS.items()}
        known = set(next(iter(pipelines.values())).catalog.names())
        wanted = _wanted(names, report, existing, known, mode)
        if not wanted:
            raise KfdefaultsError(f"no profile to lock: the code under {project.root} calls no "
                                  "Elastic(profile=\"...\"); name the profiles (`kfdefaults lock gpu-large`)")
        report.profiles = sorted(wanted)
        if existing is None and mode == "check":
            report.findings.append(Finding(Location(project.pyproject, 1, 1), "", (
                f"no {LOCK_FILE} beside this file: `kfdefaults lock` writes it")))
            return report
        if mode == "check" or (mode == "write" and existing is not None):
            # what is locked must still be what it was; --check also wants every profile used to be locked
            locked = set(existing.profiles) if existing else set()
            checked = ([n for n in report.profiles if n in known or n in locked] if mode == "check"
                       else sorted(locked))  # an unknown name the code uses is said at its call
            said: list[Finding] = []
            changes = _changes(existing, checked, project, kubernetes_version, said if mode == "check" else None,
                               layers)
            report.findings += changes + said
            report.changed = any(f.severity == "error" for f in changes)
            if mode == "check" or report.errors:
                return report
        if mode == "upgrade" and existing is not None:  # say what the new lock file gives up or takes in
            kept = sorted(set(existing.profiles) & wanted)
            report.findings += [Finding(f.location, f.path, f"recorded: {f.message.split('; ')[0]}", "warning",
                                        layer=f.layer) for f in _changes(existing, kept, project, kubernetes_version,
                                                                         layers=layers)]
        data = _lock_data([n for n in report.profiles if n in known], pipelines, project, report)
        if not report.errors and (existing is None or data != existing.data):
            write_lock(path, data)
            report.written = True
    return report


def _existing_lock(path: str, mode: str, report: LockReport) -> Lock | None:
    """The lock file as it is; for ``upgrade``, a broken one is reported and written again.

    Raises:
        ProfileError: it is broken (``write``, ``check``).
    """
    if not os.path.lexists(path):
        return None
    try:
        return read_lock(path)
    except ProfileError as e:
        if mode != "upgrade":
            raise
        report.findings += [Finding(f.location, f.path, f"{f.message.split('; ')[0]}: written again from the "
                                    "profiles as they are", "warning") for f in e.findings]
        return None


def _scan(project: Project, names: Sequence[str], report: LockReport) -> None:
    """The project's ``Elastic(profile=...)`` calls, into ``report``, with warnings for what cannot be seen."""
    assert project.root is not None
    skipped: list[tuple[str, str]] = []
    report.uses = profiles_used(project.root, skipped)
    report.findings += [Finding(Location(os.path.join(project.root, file), 1, 1), "", (
        f"not searched for Elastic(profile=...) calls: {reason}; name the profiles it uses on the command line"),
        severity="warning") for file, reason in skipped]
    if not names:  # names given may be the ones these calls use: nothing to say then
        report.findings += [Finding(Location(os.path.join(project.root, u.file), u.line, u.column), "", (
            "Elastic(profile=...) does not name its profile as a string: the lock cannot see which profile it uses; "
            "name it on the command line (`kfdefaults lock NAME`)"), severity="warning")
            for u in report.uses if u.profile is None]


def _wanted(names: Sequence[str], report: LockReport, existing: Lock | None, known: set[str], mode: str) -> set[str]:
    """The profiles to lock: those named, those the code names, those locked already. A name no layer defines is
    an error at the call that uses it (or for the name given); a locked profile that no layer defines any more and
    nothing uses leaves the lock on ``upgrade``, with a warning."""
    from ..validate.suggest import closest  # lazy: difflib, only where a name is unknown

    def unknown(name: str) -> str:
        near = closest(name, sorted(known))
        return f"no profile named {name!r}" + (f"; did you mean {near!r}?" if near else "")

    used = {u.profile for u in report.uses if u.profile}
    for u in report.uses:
        if u.profile and u.profile not in known:
            report.findings.append(Finding(Location(os.path.join(os.path.dirname(report.path), u.file), u.line,
                                                    u.column), "", f"Elastic(profile={u.profile!r}): {unknown(u.profile)}"))
    for name in names:
        if name not in known:
            report.findings.append(Finding(Location(name), "", unknown(name)))
    locked = set(existing.profiles) if existing is not None else set()
    gone = sorted(n for n in locked - known - used - set(names))
    if mode == "upgrade":
        report.findings += [Finding(existing.location("profiles", n), f"profiles.{n}", (
            f"recorded: profile {n!r} is defined by no layer now and used by no Elastic(...) call: it leaves the "
            "lock"), "warning") for n in gone if existing is not None]
        locked -= set(gone)
    return set(names) | used | locked


@contextlib.contextmanager
def _exclusive(pyproject: str, exclusive: bool) -> Iterator[None]:
    """Hold an exclusive ``flock`` on the project's ``pyproject.toml`` (where the platform has one; the file is
    only opened for reading), so that two ``kfdefaults lock`` runs read and write the lock file one after the
    other instead of each writing what it read."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock here: one run at a time is then the user's to keep
        yield
        return
    if not exclusive:
        yield
        return
    fd = os.open(pyproject, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _changes(existing: Lock | None, names: list[str], project: Project, kubernetes_version: str | None,
             warnings: list[Finding] | None = None, layers: Mapping[str, Any] | None = None) -> list[Finding]:
    """Every difference between the profiles as they resolve now and ``existing``, each profile checked for the
    targets it was locked for, as ``render`` and ``Elastic(...)`` check them; into ``warnings``, when given, the
    lists each profile replaces whole with a loss (:func:`kfdefaults.check.replaced.replaced_lists`)."""
    if existing is None:
        return []
    pipelines = {name: Pipeline.discover(project=project, target=target, kubernetes_version=kubernetes_version,
                                         **(layers or {})) for name, target in TARGETS.items()}
    for pipeline in pipelines.values():
        pipeline.require_locked = True  # a profile the code uses must be locked
    found: list[Finding] = []
    for name in names:
        locked = existing.profiles.get(name, {})
        for target in [t for t in TARGETS if t in locked] or list(TARGETS)[:1]:
            try:
                resolved = pipelines[target].resolve(name, per_pool=True)
            except ProfileError as e:
                found += [f for f in e.findings if f not in found]
                continue
            if warnings is not None:
                warnings += [w for w in replaced_lists(resolved) if w not in warnings]
    notes = [f for pipeline in pipelines.values() for f in pipeline.lock_notes]
    files = sorted({f.message for f in notes})
    if notes:  # said once: nothing to review, and --upgrade records the files
        found.append(Finding(existing.location(), "", f"files changed, the merged results did not "
                             f"({shown(', '.join(files), 120)}); `kfdefaults lock --upgrade` records the files", "note"))
    return found  # in the order found: each profile's causes before what they brought about


def _lock_data(names: list[str], pipelines: dict[str, Pipeline], project: Project, report: LockReport) -> dict[str, Any]:
    """The lock file's content for ``names`` (errors of profiles that resolve for no target go to ``report``)."""
    data: dict[str, Any] = {"version": 1, "kfdefaults": __version__,
                            "kubernetes_version": next(iter(pipelines.values())).kubernetes_version}
    flytekit = pipelines.get("flytekit")
    if flytekit is not None and flytekit.cluster_template is not None:
        raw = read_regular_file(flytekit.cluster_template.path, MAX_LOCK_BYTES, "cluster's PodTemplate")
        data["cluster_template"] = {"file": project_path(flytekit.cluster_template.path, project.root),
                                    "digest": sha256(raw)}
    data["profiles"] = {}
    for name in names:
        entry: dict[str, Any] = {}
        problems: list[Finding] = []
        for target, pipeline in pipelines.items():
            try:
                resolved = pipeline.resolve(name, per_pool=True)  # as written: a device `auto` is the pool's
            except ProfileError as e:
                problems += [f for f in e.findings if f not in problems]  # each target says it alike
                continue
            entry[target] = resolved.digest()
            entry.setdefault("files", profile_files(resolved, pipeline.catalog, project.root))
            entry.setdefault("results", {})[target] = {k: text for k, (_, text) in result_leaves(resolved).items()}
            report.findings += [w for w in replaced_lists(resolved) if w not in report.findings]  # each target alike
        if "files" not in entry:  # valid for no target: the profile itself is broken
            report.findings += [f for f in problems if f not in report.findings]
            continue
        data["profiles"][name] = {"files": entry.pop("files"), "results": entry.pop("results"), **entry}
    return data
