"""Warnings about the folders a layer reads: a folder with no profile file directly in it; the files the PATHs of
``validate`` name."""

from __future__ import annotations

import os
from typing import Sequence

from ..errors import Finding, Location
from ..inputs import Inputs
from ..layers import CLUSTER_FILES, CLUSTER_TEMPLATE_FILE, Catalog, folder_names
from ..read import PROFILE_SUFFIXES, path_problem


def empty_folder_warnings(catalog: Catalog) -> list[Finding]:
    """A warning for each platform or team folder with no profile file directly in it (a platform folder that
    states its cluster instead, its PodTemplate or its facts, is not empty).

    Folders are not searched recursively, so ``--platform repo`` where the files are in ``repo/profiles/``
    would otherwise add nothing without a word; the warning names the sub-folders that hold profile files.
    """
    findings = []
    for layer, folders in catalog.folders.items():
        if layer == "builtin":
            continue
        for folder in folders:
            if catalog.holds_profiles(folder):  # listed up to its first profile file only
                continue
            if layer == "platform" and any(catalog.inputs.look(os.path.join(folder.path, name)) is not None
                                           for name in CLUSTER_FILES):
                continue
            findings.append(Finding(Location(folder.path), "", f"no profile files (*.yaml, *.yml, *.toml) in this "
                                    f"{layer} folder (from {folder.origin}){sub_folders_hint(folder.path, catalog.inputs)}",
                                    "warning", layer))
    return findings


def sub_folders_hint(folder: str, inputs: Inputs | None = None) -> str:
    """``; sub-folders are not searched, and profiles/ holds profile files: ...`` when one does, else ``""``;
    ``inputs`` records the sub-folders listed."""
    inputs = Inputs() if inputs is None else inputs
    try:
        with os.scandir(folder) as entries:
            subfolders = [e for e in entries if e.is_dir()]
        for e in subfolders:
            inputs.folder(e.path)
        below = sorted(f"{e.name}/" for e in subfolders if folder_names(e.path))
    except OSError:
        below = []
    if not below:
        return ""
    return (f"; sub-folders are not searched, and {', '.join(below)} {'holds' if len(below) == 1 else 'hold'} "
            "profile files: name that folder instead")


def given_files(paths: Sequence[str], findings: list[Finding], layer: str = "team") -> list[str]:
    """The profile files ``paths`` name (a folder's files directly in it); what cannot be one goes to ``findings``.
    A folder with no profile file is an error (a CI job pointed at the wrong folder must not pass), unless it is a
    platform folder that states its cluster instead, as :func:`empty_folder_warnings` says."""
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
            cluster_files = [name for name in CLUSTER_FILES if os.path.isfile(os.path.join(path, name))]
            if not files and cluster_files and layer != "platform":
                findings.append(Finding(Location(path), "", f"no profile files (*.yaml, *.yml, *.toml) in this folder; "
                                        f"{cluster_files[0]} states a cluster, which only a platform folder does: "
                                        "--layer platform"))
            elif not files and not cluster_files:
                findings.append(Finding(Location(path), "", "no profile files (*.yaml, *.yml, *.toml) in this folder"
                                        + sub_folders_hint(path)))
            given.extend(files)
        elif path.endswith(PROFILE_SUFFIXES) and os.path.lexists(path):
            given.append(path)  # reading it says what is wrong with it, if anything
        elif os.path.isfile(path):
            findings.append(Finding(Location(path, 1, 1), "", "not a profile file: profiles end in .yaml, .yml or .toml"))
        else:
            problem = path_problem(path, "file")
            findings.append(Finding(Location(path), "", "no such file or folder" if problem == "no such file" else problem or ""))
    return given


def given_cluster_files(files: Sequence[str], cluster_template: str | None, facts: str | None,
                        findings: list[Finding]) -> tuple[str | None, str | None]:
    """``(cluster_template, facts)`` with the files a PATH names that state the cluster (``_cluster-facts.yaml``,
    ``_cluster-template.yaml``, as a pre-commit hook passes a changed one): each is checked as what it is, as if
    given with ``--facts`` or ``--cluster-template``, never as a profile; beside that flag, or beside another of
    its kind, it is an error."""
    for file in files:
        is_template = os.path.basename(file) == CLUSTER_TEMPLATE_FILE
        flag, named = ("--cluster-template", cluster_template) if is_template else ("--facts", facts)
        if named is not None:
            what = "the cluster's PodTemplate" if is_template else "the cluster's facts"
            findings.append(Finding(Location(file, 1, 1), "", f"{what} (not a profile), given beside {flag} {named}: "
                                    "give one of the two"))
        elif is_template:
            cluster_template = file
        else:
            facts = file
    return cluster_template, facts
