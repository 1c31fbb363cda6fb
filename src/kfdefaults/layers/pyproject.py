"""``[tool.kfdefaults]`` in the nearest ``pyproject.toml``: the project's team folders."""

from __future__ import annotations

import os

from ..errors import Finding, ProfileError
from ..read import parse_bytes, read_bytes
from .folder import Folder


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


class PyprojectSource:
    """``[tool.kfdefaults] team = ["path", ...]`` in the nearest pyproject.toml; paths relative to it."""

    layer = "team"

    def __init__(self, start: str) -> None:
        self.start = start

    def folders(self) -> list[Folder]:
        path = nearest_pyproject(self.start)
        if path is None:
            return []
        raw = read_bytes(path)  # an unreadable or oversized file is a located error
        if b"kfdefaults" not in raw:
            return []
        doc = parse_bytes(raw, path)  # UTF-8 with or without a BOM, TOML errors located
        tool = doc.data.get("tool") if isinstance(doc.data, dict) else None
        if not isinstance(tool, dict):
            return []
        section = tool.get("kfdefaults")
        if section is None:
            return []
        findings = []
        if not isinstance(section, dict):
            findings.append(Finding(doc.location(("tool", "kfdefaults")), "tool.kfdefaults", "must be a table"))
            raise ProfileError(findings)
        for key in section:
            if key != "team":
                findings.append(
                    Finding(doc.location(("tool", "kfdefaults", key), key=True), f"tool.kfdefaults.{key}",
                            "unknown key; [tool.kfdefaults] takes `team`")
                )
        team = section.get("team", [])
        if isinstance(team, str):
            team = [team]
        if not isinstance(team, list) or not all(isinstance(t, str) for t in team):
            findings.append(Finding(doc.location(("tool", "kfdefaults", "team")), "tool.kfdefaults.team",
                                    "must be a list of folder paths"))
        if findings:
            raise ProfileError(findings)
        base = os.path.dirname(path)
        return [Folder(os.path.normpath(os.path.join(base, t)), self.layer, path) for t in team]
