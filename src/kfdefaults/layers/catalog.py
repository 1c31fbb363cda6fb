"""Which file defines which profile, in every folder of every layer, from folder listings alone.

A profile's name is its file's name without the suffix (``gpu-large.yaml`` defines ``gpu-large``), so finding a
profile reads no file: a folder of a thousand profiles costs one ``scandir``.
"""

from __future__ import annotations

import os
from typing import Mapping, Sequence

from ..errors import Finding, Location, ProfileError
from ..read import PROFILE_SUFFIXES
from .cluster import CLUSTER_TEMPLATE_FILE
from .folder import Folder

NAME_PATTERN = r"[a-z0-9][a-z0-9-]*"
"""What a profile name may be: lower-case letters, digits and dashes, not starting with a dash."""

LAYERS = ("builtin", "platform", "team", "task")
"""Layer names, lowest first: a higher layer is applied on top of the lower ones. The task layer has no
folders: it is ``Elastic(...)`` keyword arguments, ``@task(pod_template=...)`` and ``--set``."""

FOLDER_LAYERS = LAYERS[:-1]
"""The layers whose profiles come from folders."""


NOT_PROFILES = (CLUSTER_TEMPLATE_FILE, "pyproject.toml")
"""File names a profile folder may hold that are not profiles."""


def profile_file_names(folder: str) -> list[str]:
    """The names of the entries directly in ``folder`` named like profile files, sorted; no ``stat`` per entry.

    Every such entry counts, a broken symbolic link or a folder named ``x.yaml`` too: loading it then fails with
    a located error, where leaving it out would hide a profile without a word. The cluster's PodTemplate
    (``_cluster-template.yaml``, :mod:`.cluster`) and a project's ``pyproject.toml`` (a team folder may be the
    project's own) are not profiles.
    """
    try:
        with os.scandir(folder) as entries:
            return sorted(e.name for e in entries if e.name.endswith(PROFILE_SUFFIXES) and not e.name.startswith(".")
                          and e.name not in NOT_PROFILES)
    except OSError:
        return []


def folder_listing(folder: str) -> tuple[tuple[str, int, int], ...]:
    """``(file name, size, mtime_ns)`` of every profile file directly in ``folder``, sorted by name (size and time
    ``-1`` when they cannot be read): what an in-process memo compares to see that nothing changed."""
    out = []
    for name in profile_file_names(folder):
        try:
            st = os.stat(os.path.join(folder, name))
            out.append((name, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((name, -1, -1))
    return tuple(out)


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
    """

    def __init__(self, folders: Mapping[str, list[Folder]], files: Mapping[str, Sequence[str]] | None = None) -> None:
        self.folders = {layer: list(found) for layer, found in folders.items()}
        self.extra_files = {layer: list(found) for layer, found in (files or {}).items()}
        self._index: dict[str, dict[str, list[str]]] | None = None
        self.origin_of: dict[str, str] = {}
        """File -> what named its folder (``--team``, ``KFDEFAULTS_TEAM_PATH``, a pyproject.toml, an entry point)."""
        self._folder_of: dict[str, Folder] = {}

    def index(self) -> dict[str, dict[str, list[str]]]:
        """layer -> profile name -> files defining it (normally one), folders first, then the files given."""
        if self._index is None:
            index: dict[str, dict[str, list[str]]] = {}
            known: set[str] = set()
            for layer, folders in self.folders.items():
                names = index.setdefault(layer, {})
                for folder in folders:
                    for path, name in folder_names(folder.path):
                        names.setdefault(name, []).append(path)
                        known.add(os.path.realpath(path))
                        self.origin_of[path] = folder.origin
                        self._folder_of[path] = folder
            for layer, files in self.extra_files.items():
                names = index.setdefault(layer, {})
                for path in files:
                    if os.path.realpath(path) not in known:
                        known.add(os.path.realpath(path))
                        names.setdefault(profile_name_of(path), []).append(path)
                        self.origin_of[path] = "given"
            self._index = index
        return self._index

    def signature(self) -> tuple:
        """What the catalog's answers depend on: each folder's listing (names, sizes, times)."""
        return tuple((folder.path, folder_listing(folder.path)) for folders in self.folders.values() for folder in folders)

    def folder_of(self, file: str) -> Folder | None:
        """The folder ``file`` was found in (``None`` for a file given on its own)."""
        self.index()
        return self._folder_of.get(file)

    def names(self) -> list[str]:
        """Every profile name of every layer, sorted."""
        return sorted({name for names in self.index().values() for name in names})

    def layers_defining(self, name: str) -> list[str]:
        """The layers that define ``name``, lowest first."""
        return [layer for layer in LAYERS if name in self.index().get(layer, {})]

    def files(self, name: str, layer: str) -> list[str]:
        """The files of ``layer`` that define ``name``."""
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
