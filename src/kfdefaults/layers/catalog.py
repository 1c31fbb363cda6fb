"""Which file defines which profile, in every folder of every layer, from folder names alone.

A profile's name is its file's name without the suffix (``gpu-large.yaml`` defines ``gpu-large``), so finding a
profile reads no file, and lists no folder either: ``render gpu-large`` asks each folder of each layer whether it
holds ``gpu-large.toml``, ``gpu-large.yaml`` or ``gpu-large.yml`` (three ``lstat`` calls a folder), so a folder
of ten thousand profiles costs what a folder of ten does. What needs every name (``list``, ``validate``, the near
names of an unknown profile) lists every folder once, with one ``scandir`` each.
"""

from __future__ import annotations

import os
import re
from typing import Mapping, Sequence

from ..errors import Finding, Location, ProfileError
from ..inputs import Inputs
from ..read import PROFILE_SUFFIXES
from .cluster import CLUSTER_TEMPLATE_FILE, FACTS_FILES, KUEUE_CONFIG_FILES
from .folder import Folder

NAME_PATTERN = r"[a-z0-9][a-z0-9-]*"
"""What a profile name may be: lower-case letters, digits and dashes, not starting with a dash."""

_PROFILE_NAME = re.compile(NAME_PATTERN)

LAYERS = ("builtin", "platform", "team", "task")
"""Layer names, lowest first: a higher layer is applied on top of the lower ones. The task layer has no
folders: it is ``Elastic(...)`` keyword arguments, ``@task(pod_template=...)`` and ``--set``."""

FOLDER_LAYERS = LAYERS[:-1]
"""The layers whose profiles come from folders."""


NOT_PROFILES = (CLUSTER_TEMPLATE_FILE, *FACTS_FILES, *KUEUE_CONFIG_FILES, "pyproject.toml")
"""File names a profile folder may hold that are not profiles."""


def _is_profile_file_name(name: str) -> bool:
    return name.endswith(PROFILE_SUFFIXES) and not name.startswith(".") and name not in NOT_PROFILES


def profile_file_names(folder: str) -> list[str]:
    """The names of the entries directly in ``folder`` named like profile files, sorted; no ``stat`` per entry.

    Every such entry counts, a broken symbolic link or a folder named ``x.yaml`` too: loading it then fails with
    a located error, where leaving it out would hide a profile without a word. The cluster's PodTemplate
    (``_cluster-template.yaml``, :mod:`.cluster`) and a project's ``pyproject.toml`` (a team folder may be the
    project's own) are not profiles.
    """
    return [name for name, _ in _profile_entries(folder)]


def _profile_entries(folder: str) -> list[tuple[str, bool]]:
    """``(name, is a symbolic link)`` of each entry :func:`profile_file_names` lists, sorted by name."""
    try:
        with os.scandir(folder) as entries:
            return sorted((e.name, e.is_symlink()) for e in entries if _is_profile_file_name(e.name))
    except OSError:
        return []


def holds_profile_files(folder: str) -> bool:
    """Whether ``folder`` holds a profile file (as :func:`profile_file_names` counts them), listing it only up to
    the first one."""
    try:
        with os.scandir(folder) as entries:
            return any(_is_profile_file_name(e.name) for e in entries)
    except OSError:
        return False


def folder_names(folder: str) -> list[tuple[str, str]]:
    """``(file, profile name)`` for every profile file in ``folder``, in file-name order."""
    return [(os.path.join(folder, file), profile_name_of(file)) for file in profile_file_names(folder)]


def profile_name_of(path: str) -> str:
    """The profile a file defines: its name without the suffix (``team/gpu-large.yaml`` -> ``gpu-large``)."""
    return os.path.splitext(os.path.basename(path))[0]


class Catalog:
    """Every profile visible through a set of folders, indexed by layer and name.

    Args:
        folders: The folders of each layer (:func:`kfdefaults.layers.discover_folders`).
        files: Single files added to a layer besides its folders (``kfdefaults validate FILE``), by layer.
        inputs: Where the folders listed and the names looked for are recorded (:mod:`kfdefaults.inputs`).
    """

    def __init__(self, folders: Mapping[str, list[Folder]], files: Mapping[str, Sequence[str]] | None = None,
                 inputs: Inputs | None = None) -> None:
        self.inputs = Inputs() if inputs is None else inputs
        self.folders = {layer: list(found) for layer, found in folders.items()}
        self.extra_files = {layer: list(found) for layer, found in (files or {}).items()}
        self._index: dict[str, dict[str, list[str]]] | None = None
        self._looked_up: dict[tuple[str, str], list[str]] = {}
        self.origin_of: dict[str, str] = {}
        """File -> what named its folder (``--team``, ``KFDEFAULTS_TEAM_PATH``, a pyproject.toml, an entry point)."""
        self._folder_of: dict[str, Folder] = {}

    def index(self) -> dict[str, dict[str, list[str]]]:
        """layer -> profile name -> files defining it (normally one), folders first, then the files given: every
        folder listed."""
        if self._index is None:
            index: dict[str, dict[str, list[str]]] = {}
            known: set[str] = set()  # the real path of every file, for the files given (a file of a folder, again)
            real_folders: dict[str, str] = {}
            for layer, folders in self.folders.items():
                names = index.setdefault(layer, {})
                for folder in folders:
                    self.inputs.folder(folder.path)
                    for entry, is_link in _profile_entries(folder.path):
                        path = os.path.join(folder.path, entry)
                        names.setdefault(os.path.splitext(entry)[0], []).append(path)
                        if any(self.extra_files.values()):
                            known.add(_real_path(path, is_link, real_folders))
                        self.origin_of[path] = folder.origin
                        self._folder_of[path] = folder
            for layer, files in self.extra_files.items():
                names = index.setdefault(layer, {})
                for path in files:
                    real = _real_path(path, os.path.islink(path), real_folders)
                    if real not in known:
                        known.add(real)
                        names.setdefault(profile_name_of(path), []).append(path)
                        self.origin_of[path] = "given"
            self._index = index
        return self._index

    def _look_up(self, name: str, layer: str) -> list[str] | None:
        """The files of ``layer`` that define ``name``, found without listing a folder: each folder is asked for
        the file names that would define it. ``None`` where only a listing answers alike: files given besides
        the folders (a file given may be a folder's file again), a name that is not a profile name, a folder that
        cannot be listed, or a file system that matches names without regard to case (``Gpu.yaml`` answers for
        ``gpu.yaml`` there, where a listing says ``Gpu``)."""
        if any(self.extra_files.values()) or not _PROFILE_NAME.fullmatch(name):
            return None
        candidates = sorted(name + suffix for suffix in PROFILE_SUFFIXES if name + suffix not in NOT_PROFILES)
        found: list[str] = []
        for folder in self.folders.get(layer, []):
            if not os.access(folder.path, os.R_OK | os.X_OK):
                return None
            for candidate in candidates:
                path = os.path.join(folder.path, candidate)
                if self.inputs.look(path) is not None:
                    stem, suffix = candidate.rsplit(".", 1)
                    if self.inputs.look(os.path.join(folder.path, f"{stem}.{suffix.upper()}")) is not None:
                        return None
                    found.append(path)
                    self.origin_of[path] = folder.origin
                    self._folder_of[path] = folder
        return found

    def folder_of(self, file: str) -> Folder | None:
        """The folder ``file`` was found in (``None`` for a file given on its own)."""
        if file not in self._folder_of:
            self.index()
        return self._folder_of.get(file)

    def holds_profiles(self, folder: Folder) -> bool:
        """Whether a profile file of the catalog lies directly in ``folder`` (one of its own, or a file given)."""
        where = os.path.normpath(folder.path)
        if self._index is not None or any(self.extra_files.values()):
            return any(os.path.normpath(os.path.dirname(f)) == where
                       for names in self.index().values() for files in names.values() for f in files)
        self.inputs.folder(folder.path)
        return holds_profile_files(folder.path) or any(
            os.path.normpath(f.path) == where and holds_profile_files(f.path)
            for folders in self.folders.values() for f in folders)

    def names(self) -> list[str]:
        """Every profile name of every layer, sorted."""
        return sorted({name for names in self.index().values() for name in names})

    def layers_defining(self, name: str) -> list[str]:
        """The layers that define ``name``, lowest first."""
        return [layer for layer in LAYERS if self.files(name, layer)]

    def files(self, name: str, layer: str) -> list[str]:
        """The files of ``layer`` that define ``name``, in the order :meth:`index` gives them."""
        if self._index is None:
            found = self._looked_up.get((name, layer))
            if found is None:
                found = self._look_up(name, layer)
            if found is not None:
                self._looked_up[(name, layer)] = found
                return found
        return self.index().get(layer, {}).get(name, [])

    def the_file(self, name: str, layer: str) -> str | None:
        """The one file of ``layer`` that defines ``name``, or ``None``.

        Raises:
            ProfileError: two files of the layer define the name (every folder of a layer is one pool).
        """
        files = self.files(name, layer)
        if len(files) > 1:
            listed = ", ".join(f"{f} (from {self.origin_of.get(f, 'a folder')})" for f in files)
            hint = f"; --only-{layer} DIR reads one folder alone" if layer in ("platform", "team") else ""
            raise ProfileError(
                [Finding(Location(f, 1, 1), "", f"profile {name!r} is defined twice in the {layer} layer: "
                         f"{listed}{hint}", layer=layer) for f in files[1:]]
            )
        return files[0] if files else None

    def searched(self) -> str:
        """The folders of every layer, for a "no profile named ..." message."""
        return "; ".join(f"{layer}: {', '.join(f.path for f in folders) or 'no folder'}"
                         for layer, folders in self.folders.items())


def _real_path(path: str, is_link: bool, real_folders: dict[str, str]) -> str:
    """``os.path.realpath(path)``, the real path of its folder kept in ``real_folders``: a file that is not a
    symbolic link is its folder's real path and its own name."""
    if is_link:
        return os.path.realpath(path)
    folder, name = os.path.split(path)
    real = real_folders.get(folder)
    if real is None:
        real = real_folders[folder] = os.path.realpath(folder)
    return os.path.join(real, name)
