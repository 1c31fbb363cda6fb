"""``[tool.kfdefaults]`` in the nearest ``pyproject.toml``: the project's team folders and the cluster's default
PodTemplate (``cluster_template``, :mod:`.cluster`).

A ``pyproject.toml`` is the project's file, not a profile: it may be large and hold anything. It is read only
as far as needed to know whether it says anything to kfdefaults (:func:`project_file_bytes`), and parsed
without the budgets of profile files; a file that holds no ``[tool.kfdefaults]`` never stops a command.
"""

from __future__ import annotations

import mmap
import os
import re
import stat

from ..errors import Finding, ProfileError
from ..read import Document
from ..read.document import error
from ..read.toml import load_toml, toml_positions
from .folder import Folder

KEYS = ("team", "cluster_template")
"""The keys ``[tool.kfdefaults]`` takes."""

MAX_PROJECT_FILE_BYTES = 1 << 20
"""Largest ``pyproject.toml`` whose ``[tool.kfdefaults]`` is read (1 MiB; a project file is a few KiB, and
tomllib, which is pure Python, reads a MiB in about a second). A larger one that does not name
``tool.kfdefaults`` is ignored; one that does is an error, not a silent skip of the team layer."""

_MENTION = re.compile(
    rb"""tool["']?[ \t]*\.[ \t]*["']?kfdefaults["']?[ \t]*[\].=]"""  # [tool.kfdefaults], tool.kfdefaults.team = ...
    rb"""|^[ \t]*["']?kfdefaults["']?[ \t]*[.=]"""  # kfdefaults = {...} or kfdefaults.team = ... under [tool]
    rb"""|\btool[ \t]*=[ \t]*\{[^}]*kfdefaults""",  # tool = {kfdefaults = {...}}
    re.MULTILINE,
)
"""Where a TOML file may set ``tool.kfdefaults``: a cheap test that lets a project file that cannot be about
kfdefaults (a dependency on ``kfdefaults>=1`` is not) go unparsed. It may say yes wrongly, never no."""


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


def project_file_bytes(path: str) -> bytes | None:
    """The bytes of the project file ``path`` when it may set ``tool.kfdefaults``; ``None`` when it cannot.

    A file over :data:`MAX_PROJECT_FILE_BYTES` is searched (not parsed) for ``tool.kfdefaults``.

    Raises:
        ProfileError: the file cannot be read, or it is over the size cap and sets ``tool.kfdefaults``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a pipe put in its place does not block
        with open(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            raw = f.read(MAX_PROJECT_FILE_BYTES + 1)
            if len(raw) <= MAX_PROJECT_FILE_BYTES:
                return raw if _MENTION.search(raw) else None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as whole:
                if _MENTION.search(whole) is None:
                    return None
    except OSError as e:
        raise error(path, 1, 1, f"cannot read file: {e.strerror or e}") from None
    raise error(path, 1, 1, f"file is larger than {MAX_PROJECT_FILE_BYTES >> 20} MiB and sets tool.kfdefaults: "
                            "kfdefaults reads [tool.kfdefaults] from a pyproject.toml of at most that size; name "
                            "the team folders with KFDEFAULTS_TEAM_PATH or --team instead")


def kfdefaults_section(path: str) -> tuple[Document, dict] | None:
    """The ``[tool.kfdefaults]`` table of the pyproject.toml at ``path`` and its document (positions filled in),
    ``None`` when it has none.

    Raises:
        ProfileError: the file cannot be read, is not UTF-8 or not TOML, is over the size cap and sets
            ``tool.kfdefaults``, the section is not a table, or it has a key other than :data:`KEYS`, each at its
            ``FILE:LINE:COLUMN``.
    """
    raw = project_file_bytes(path)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(path, raw[: e.start].count(b"\n") + 1, 1, "file is not UTF-8 text") from None
    text = text[1:] if text.startswith("\ufeff") else text
    data = load_toml(text, path)
    tool = data.get("tool")
    section = tool.get("kfdefaults") if isinstance(tool, dict) else None
    if section is None:
        return None
    doc = toml_positions(text, Document(path, data))
    if not isinstance(section, dict):
        raise ProfileError([Finding(doc.location(("tool", "kfdefaults")), "tool.kfdefaults", "must be a table")])
    findings = [Finding(doc.location(("tool", "kfdefaults", key), key=True), f"tool.kfdefaults.{key}",
                        f"unknown key; [tool.kfdefaults] takes {' and '.join(f'`{k}`' for k in KEYS)}")
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
