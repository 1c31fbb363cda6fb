"""Warnings about the folders a layer reads: a folder with no profile file directly in it."""

from __future__ import annotations

import os

from ..errors import Finding, Location
from ..inputs import Inputs
from ..layers import CLUSTER_FILES, Catalog, folder_names


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
