"""``[tool.kfdefaults]`` in the nearest ``pyproject.toml``: the project's team folders and the cluster's default
PodTemplate (``cluster_template``, :mod:`.cluster`)."""

from __future__ import annotations

import os

from ..errors import Finding, ProfileError
from ..read import Document, parse_bytes, read_bytes
from .folder import Folder

KEYS = ("team", "cluster_template")
"""The keys ``[tool.kfdefaults]`` takes."""


def nearest_pyproject(start: str) -> str | None:
    """The ``pyproject.toml`` in ``start`` or the closest folder above it, if any."""
    here = os.path.abspath(start)
    while True:
        candidate = os.path.join(here, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def kfdefaults_section(path: str) -> tuple[Document, dict] | None:
    """The ``[tool.kfdefaults]`` table of the pyproject.toml at ``path`` and its document, ``None`` when it has none.

    Raises:
        ProfileError: the file cannot be read or parsed, the section is not a table, or it has a key other than
            :data:`KEYS`, each at its ``FILE:LINE:COLUMN``.
    """
    raw = read_bytes(path)  # an unreadable or oversized file is a located error
    if b"kfdefaults" not in raw:
        return None
    doc = parse_bytes(raw, path)  # UTF-8 with or without a BOM, TOML errors located
    tool = doc.data.get("tool") if isinstance(doc.data, dict) else None
    section = tool.get("kfdefaults") if isinstance(tool, dict) else None
    if section is None:
        return None
    if not isinstance(section, dict):
        raise ProfileError([Finding(doc.location(("tool", "kfdefaults")), "tool.kfdefaults", "must be a table")])
    findings = [Finding(doc.location(("tool", "kfdefaults", key), key=True), f"tool.kfdefaults.{key}",
                        "unknown key; [tool.kfdefaults] takes `team` and `cluster_template`")
                for key in section if key not in KEYS]
    if findings:
        raise ProfileError(findings)
    return doc, section


class PyprojectSource:
    """``[tool.kfdefaults] team = ["path", ...]`` in the nearest pyproject.toml; paths relative to it."""

    layer = "team"

    def __init__(self, start: str) -> None:
        self.start = start

    def folders(self) -> list[Folder]:
        path = nearest_pyproject(self.start)
        found = kfdefaults_section(path) if path is not None else None
        if found is None:
            return []
        doc, section = found
        team = section.get("team", [])
        if isinstance(team, str):
            team = [team]
        if not isinstance(team, list) or not all(isinstance(t, str) for t in team):
            raise ProfileError([Finding(doc.location(("tool", "kfdefaults", "team")), "tool.kfdefaults.team",
                                        "must be a list of folder paths")])
        base = os.path.dirname(doc.file)
        return [Folder(os.path.normpath(os.path.join(base, t)), self.layer, doc.file) for t in team]
