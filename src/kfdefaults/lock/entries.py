"""What the lock file records of one profile: the files merged into it, named the same on every machine."""

from __future__ import annotations

import functools
import json
import os
import re
from typing import Any

from ..layers import Catalog
from ..merge.leaves import profile_leaves
from ..merge.result import Resolved
from ..paths import PathT, format_path
from ..read import read_bytes
from .file import sha256

FILE_LAYERS = ("builtin", "platform", "team")
"""The layers whose files a lock records (the task layer is code, the cluster layer is the lock's
``cluster_template``)."""


@functools.lru_cache(maxsize=None)
def installed_package(package: str) -> tuple[str, str]:
    """The name (as ``pip install`` takes it: ``acme-platform-profiles``) and version of the installed
    distribution ``package`` (a normalised name); ``(package, "unknown")`` when its metadata cannot be read."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        found = metadata(package)
    except PackageNotFoundError:
        return package, "unknown"
    return found.get("Name") or package, found.get("Version") or "unknown"


def file_entry(file: str, layer: str, catalog: Catalog, root: str | None) -> dict[str, str]:
    """How the lock names ``file`` of ``layer``: ``{"layer", "file", "digest"}``, plus ``package`` and ``version``
    for a file of an installed package (named then by its name in the package's folder).

    ``file`` is a path relative to ``root`` (the project's folder) when it is inside it, else its name in its folder.

    Raises:
        ProfileError: the file cannot be read.
    """
    entry = {"layer": layer}
    folder = catalog.folder_of(file)
    if folder is not None and folder.package is not None:
        name, version = installed_package(folder.package)
        entry.update(package=name, version=version, file=as_text(os.path.basename(file)))
    else:
        entry["file"] = project_path(file, root)
    entry["digest"] = sha256(read_bytes(file))
    return entry


def as_text(name: str) -> str:
    """A file name as the lock writes it: its bytes read as UTF-8 whatever the locale (a name that is not UTF-8
    written with backslash escapes), so that every machine writes the same lock."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def project_path(file: str, root: str | None) -> str:
    """``file`` relative to ``root`` with ``/`` separators, or its name in its folder when outside ``root``
    (:func:`as_text`)."""
    absolute = os.path.abspath(file)
    if root is not None:
        relative = os.path.relpath(absolute, root)
        if not relative.startswith(os.pardir + os.sep) and relative != os.pardir and not os.path.isabs(relative):
            return as_text(relative.replace(os.sep, "/"))
    return as_text(os.path.basename(absolute))


def profile_files(resolved: Resolved, catalog: Catalog, root: str | None) -> list[dict[str, str]]:
    """The :func:`file_entry` of every file merged into ``resolved``, lowest layer first, each once."""
    out, seen = [], set()
    for fragment in resolved.fragments:
        if fragment.layer in FILE_LAYERS and fragment.source not in seen:
            seen.add(fragment.source)
            out.append(file_entry(fragment.source, fragment.layer, catalog, root))
    return out


def result_leaves(resolved: Resolved) -> dict[str, tuple[PathT, str]]:
    """What ``resolved`` gives a pod, leaf by leaf, as the lock's ``results`` record it: dotted path
    (:func:`~kfdefaults.paths.format_path`) -> ``(path, canonical JSON of the value)``. The leaves are those
    :meth:`Resolved.digest` covers (the elastic settings, the pod template with its primary container's name), so
    two results of one digest have the same leaves; JSON is ASCII, so no value puts a control character in the
    file."""
    data = {k: v for k, v in resolved.to_dict().items() if k not in ("name", "description")}
    return {format_path(path): (path, json.dumps(value, sort_keys=True, separators=(",", ":")))
            for path, value in profile_leaves(data, kubernetes_version=resolved.kubernetes_version).items()}


def entry_key(entry: dict[str, Any]) -> tuple[str, str, str]:
    """What identifies a file between the lock and now: its layer, package (its normalised name, or ``""``) and
    name."""
    package = re.sub(r"[-_.]+", "_", entry.get("package", "")).lower()
    return entry["layer"], package, entry["file"]


def describe(entry: dict[str, Any]) -> str:
    """A file of the lock as messages name it: ``acme_platform 1.4.0, gpu-large.yaml`` or ``profiles/x.yaml``."""
    if entry.get("package"):
        return f"{entry['package']} {entry.get('version', '')}, {entry['file']}".replace(" ,", ",")
    return entry["file"]
