"""A profile as it resolves now, held against ``kfdefaults.lock``: what changed, each at the lock's line."""

from __future__ import annotations

import os
from typing import Any

from ..errors import Finding, Location, PathError, ProfileError, shown
from ..read.files import read_regular_file
from ..layers import Catalog
from ..merge.provenance import provenance
from ..merge.result import Resolved
from ..paths import parse_path
from ..targets import TARGETS
from .entries import describe, entry_key, installed_package, profile_files, project_path, result_leaves
from .file import LOCK_FILE, MAX_LOCK_BYTES, Lock, sha256

UPGRADE = "`kfdefaults lock --upgrade` records the change"


def lock_findings(lock: Lock, profile: Resolved, catalog: Catalog, cluster_template: str | None,
                  template_applies: bool = True, require_locked: bool = True) -> list[Finding]:
    """What differs between ``profile`` (merged across its file layers and the cluster's template, the task layer
    left out) and its entry in ``lock``; ``[]`` when it is what was locked.

    Drift is a merged result of another digest than the one locked for the target: files that changed while the
    result did not (a comment, a value written otherwise, a layer gone that set nothing the result keeps) are
    findings of severity ``note``, which stop nothing. Of a result that changed, the findings say the causes by
    layer ("platform layer missing: acme_platform 1.4.0, gpu-large.yaml", a file added to a layer, a file of an
    installed package that the package still ships but the profile no longer merges, after what brought it
    about), then each leaf whose value changed, ``KEY: OLD -> NEW`` at the ``FILE:LINE:COLUMN`` that sets it now
    (from the lock's ``results``; a lock without them names each file that changed, "team file changed:
    profiles/gpu-large.yaml"); from the same files, another kfdefaults or Kubernetes version.

    Args:
        lock: The lock file.
        profile: The profile as the pipeline resolves it now, without the task layer.
        catalog: The folders it was found in.
        cluster_template: The cluster's template file the profile was merged over, if any.
        template_applies: Whether the target merges the cluster's template (Flyte 1's backend does; Flyte 2's
            target is checked without it).
        require_locked: Whether a profile the lock does not list is an error (a registration, ``lock --check``),
            or simply not held to it (``render`` and ``validate`` of a profile the project does not use).
    """
    name, root = profile.name, os.path.dirname(os.path.abspath(lock.path))
    entry = lock.profiles.get(name)
    if entry is None and not require_locked:
        return []
    if entry is None:
        return [Finding(lock.location(), "", f"profile {name!r} is not in {LOCK_FILE}, so what it resolves to has not "
                        f"been reviewed: `kfdefaults lock {name}` adds it")]
    files = _file_findings(lock, name, entry, profile_files(profile, catalog, root), catalog)
    if template_applies and (cluster_template is not None or "cluster_template" in lock.data):
        files += _template_findings(lock, cluster_template, root)
    findings, changed = [f for _, edited, f in files if not edited], [f for _, edited, f in files if edited]
    target = profile.target.name
    locked = entry.get(target)
    if locked is None:
        return findings + changed or [Finding(lock.location("profiles", name), f"profiles.{name}", (
            f"profile {name!r} was locked for {', '.join(k for k in entry if k in TARGETS) or 'no target'}, not "
            f"{target}: {UPGRADE}"))]
    if locked == profile.digest():  # the files may differ (a comment, a missing layer that set nothing)
        return [Finding(f.location, f.path, file, "note", f.layer) for file, _, f in files]
    values = _value_findings(lock, name, entry.get("results", {}).get(target), profile)
    if findings or changed:
        return findings + (values or changed)
    return [Finding(lock.location("profiles", name, target), f"profiles.{name}.{target}", (
        f"profile {name!r} merges to {profile.digest()} now, {locked} when it was locked, from the same files: "
        f"another kfdefaults ({lock.data.get('kfdefaults', '?')} wrote the lock) or Kubernetes version "
        f"({lock.data.get('kubernetes_version', '?')}) merges them otherwise; {UPGRADE}"))] + values


def _value_findings(lock: Lock, name: str, recorded: dict[str, str] | None, profile: Resolved) -> list[Finding]:
    """Each leaf of ``profile`` whose value is not the one the lock's ``results`` record (:func:`result_leaves`),
    as ``KEY: OLD -> NEW`` at the ``FILE:LINE:COLUMN`` that sets it now (that removes it, for a leaf gone; the
    lock's line when no file does); ``[]`` for a lock written without ``results``."""
    if recorded is None:
        return []
    now = result_leaves(profile)
    record = provenance(profile)
    out = []
    for key in [k for k in now if recorded.get(k) != now[k][1]] + [k for k in recorded if k not in now]:
        setter = record.setter(now[key][0], defaults=True) if key in now else _remover(record, key)
        where = setter.origin.location if setter is not None and setter.origin.location.line else None
        by = f", {shown(setter.origin.where, 80)}" if setter is not None and where is None else ""  # a default
        out.append(Finding(where or lock.location("profiles", name), f"profiles.{name}", (
            f"{shown(key, 100)}: {_value(recorded.get(key))} -> {_value(now[key][1] if key in now else None)} "
            f"(locked -> now{by}); {UPGRADE}"), layer=setter.origin.layer if setter is not None else None))
    return out


def _remover(record: Any, key: str) -> Any:
    """Who removed the leaf the lock records as ``key`` (``None`` when it cannot be told)."""
    try:
        return record.remover(tuple(parse_path(key)))
    except PathError:
        return None


def _value(text: str | None) -> str:
    return "(absent)" if text is None else shown(text, 80)


def _file_findings(lock: Lock, name: str, entry: dict[str, Any], now: list[dict[str, str]],
                   catalog: Catalog) -> list[tuple[str, bool, Finding]]:
    """``(file, whether it holds other bytes, finding)`` of each file of ``entry`` missing, added, no longer
    merged now (after the others), or holding other bytes."""
    locked = {entry_key(item): (i, item) for i, item in enumerate(entry["files"])}
    current = {entry_key(item): item for item in now}
    findings: list[tuple[str, bool, Finding]] = []
    consequences: list[tuple[str, bool, Finding]] = []
    for key, (i, item) in locked.items():
        where, path = lock.location("profiles", name, "files", i), f"profiles.{name}.files[{i}]"
        found = current.get(key)
        if found is None and _still_shipped(item, catalog):
            consequences.append((describe(item), False, Finding(where, path, (
                f"{item['layer']} file no longer merged: {describe(item)} is installed, but profile {name!r} no longer "
                "extends it, because of the change said before this"), layer=item["layer"])))
        elif found is None:
            what = f"{item['layer']} layer missing" if item.get("package") else f"{item['layer']} file missing"
            findings.append((describe(item), False, Finding(
                where, path, f"{what}: {describe(item)}, which profile {name!r} was locked with, is not found now"
                f"{_missing_hint(item)}; only if the profile should no longer use it, `kfdefaults lock --upgrade` "
                "records that", layer=item["layer"])))
        elif found["digest"] != item["digest"]:
            versions = (f" ({item['package']} {item.get('version')} locked, {found.get('version')} now)"
                        if item.get("package") and item.get("version") != found.get("version") else "")
            findings.append((describe(found), True, Finding(
                where, path, f"{item['layer']} file changed: {describe(found)}{versions}; {UPGRADE}", layer=item["layer"])))
    for key, item in current.items():
        if key not in locked:
            findings.append((describe(item), False, Finding(lock.location("profiles", name), f"profiles.{name}", (
                f"{item['layer']} file added: {describe(item)} is merged into profile {name!r} now, and was not when "
                f"it was locked; {UPGRADE}"), layer=item["layer"])))
    return findings + consequences


def _still_shipped(item: dict[str, Any], catalog: Catalog) -> bool:
    """Whether the installed package that a locked file belongs to is installed at the locked version and still
    holds the file in its folder of that layer: then the file is missing from the profile, not from the machine."""
    if not item.get("package"):
        return False
    package = entry_key(item)[1]
    for folder in catalog.folders.get(item["layer"], []):
        if folder.package is not None and entry_key({"layer": "", "package": folder.package, "file": ""})[1] == package:
            version = installed_package(folder.package)[1]
            return version == item.get("version") and os.path.isfile(os.path.join(folder.path, item["file"]))
    return False


def _missing_hint(item: dict[str, Any]) -> str:
    if item.get("package"):
        return f": install {item['package']} in this environment"
    if item["layer"] == "platform":
        return ": name its folder (KFDEFAULTS_PLATFORM_PATH, --platform, or [tool.kfdefaults] platform)"
    return ": restore the file"


def _template_findings(lock: Lock, cluster_template: str | None, root: str) -> list[tuple[str, bool, Finding]]:
    """As :func:`_file_findings`, of the cluster's PodTemplate."""
    locked = lock.data.get("cluster_template")
    if cluster_template is None:
        return [(locked["file"], False, Finding(lock.location("cluster_template"), "cluster_template", (
            f"the cluster's PodTemplate {locked['file']} was locked, and none is found now; {UPGRADE}")))]
    try:
        digest = sha256(read_regular_file(cluster_template, MAX_LOCK_BYTES, "cluster's PodTemplate"))
    except ProfileError:
        digest = None  # reading it for the merge says what is wrong with it
    file = project_path(cluster_template, root)
    if locked is None:
        return [(file, False, Finding(lock.location(), "", f"the cluster's PodTemplate {file} is merged now, and was "
                                      f"not when the profiles were locked; {UPGRADE}"))]
    if digest != locked["digest"] or file != locked["file"]:
        return [(file, True, Finding(lock.location("cluster_template"), "cluster_template",
                                     f"the cluster's PodTemplate changed: {file}; {UPGRADE}", layer="cluster"))]
    return []


def platform_fallback_warning(profile: Resolved, declared: list[str], lock: Lock | None) -> Finding | None:
    """Without a lock file, a profile that a team (or the task) layer overrides while no platform layer defines
    it, in a project that declares a platform (``[tool.kfdefaults] platform``): the override is layered on the
    builtin profile of that name, which is rarely what the team wrote it against."""
    if lock is not None or not declared:
        return None
    layers = [f.layer for f in profile.fragments if f.profile == profile.name]
    if "platform" in layers or "builtin" not in layers or not {"team", "task"} & set(layers):
        return None
    top = next(f for f in reversed(profile.fragments) if f.profile == profile.name and f.layer in ("team", "task"))
    where = top.document.location(()) if top.document is not None else Location(top.source)
    return Finding(where, "", (
        f"profile {profile.name!r} of the {top.layer} layer is layered on the builtin {profile.name!r}: no "
        f"platform layer defines it, though the project declares the platform {', '.join(declared)}; if the "
        f"platform should define it, check that it is the version you expect (a lock file, `kfdefaults lock`, "
        f"records the layers of each profile, so that one missing later is an error)"), severity="warning", layer=top.layer)


def locked_but_missing(lock: Lock, name: str) -> list[Finding]:
    """Why profile ``name``, which ``lock`` lists, is defined by no layer now: the files it was locked with,
    those of a package first (``[]`` when the lock does not list it)."""
    entry = lock.profiles.get(name)
    if entry is None:
        return []
    files = [item for item in entry["files"] if item["layer"] != "builtin"]
    packages = sorted({item["package"] for item in files if item.get("package")})
    fix = f"install {', '.join(packages)} in this environment" if packages else "name the folders that hold them"
    made_of = "; ".join(f"{item['layer']} {describe(item)}" for item in files) or "no file"
    return [Finding(lock.location("profiles", name), f"profiles.{name}", (
        f"profile {name!r} was locked with {made_of}, and no layer defines it now: {fix}"))]
