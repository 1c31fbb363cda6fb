"""``[tool.kfdefaults]`` in the project's ``pyproject.toml``: its team folders, the platform it declares, and
the cluster's default PodTemplate (``cluster_template``, :mod:`.cluster`).

A ``pyproject.toml`` is the project's file, not a profile: it may be large and hold anything. It is read only
as far as needed to know whether it says anything to kfdefaults (:func:`project_file_bytes`), and parsed
without the budgets of profile files; a file that holds no ``[tool.kfdefaults]`` never stops a command.
"""

from __future__ import annotations

import mmap
import os
import re
import stat
from typing import Callable, Sequence

from ..errors import Finding, Location, ProfileError
from ..inputs import Inputs
from ..read import Document
from ..read.document import error
from ..targets import TARGETS
from .folder import Folder

KEYS = ("team", "platform", "cluster_template", "cluster_facts", "default_profile", "target")
"""The keys ``[tool.kfdefaults]`` takes."""

MAX_PROJECT_FILE_BYTES = 1 << 20
"""Largest ``pyproject.toml`` whose ``[tool.kfdefaults]`` is read (1 MiB; a project file is a few KiB, and
tomllib, which is pure Python, reads a MiB in about a second). A larger one that does not name
``tool.kfdefaults`` is ignored; one that does is an error, not a silent skip of the team layer."""

_MENTION = re.compile(
    rb"""tool["']?[ \t]*\.[ \t]*["']?kfdefaults["']?[ \t]*[\].=]"""  # [tool.kfdefaults], tool.kfdefaults.team = ...
    rb"""|^[ \t]*["']?kfdefaults["']?[ \t]*[.=]""",  # kfdefaults = {...} or kfdefaults.team = ... under [tool]
    re.MULTILINE,
)
"""Where a TOML file may set ``tool.kfdefaults`` as a table or a key (:func:`_mentions`)."""

_INLINE_TOOL = re.compile(rb"\btool[ \t]*=[ \t]*\{")
"""An inline ``tool`` table, which may hold ``kfdefaults`` before its ``}`` (:func:`_mentions`)."""


def _mentions(raw: bytes | mmap.mmap) -> bool:
    """Whether a TOML file may set ``tool.kfdefaults``: a cheap test that lets a project file that cannot be about
    kfdefaults (a dependency on ``kfdefaults>=1`` is not) go unparsed. It may say yes wrongly, never no.

    :data:`_MENTION`, or ``kfdefaults`` between an inline ``tool = {`` and the next ``}``, found in one pass: each
    stretch up to a ``}`` is searched once, however many ``tool = {`` it holds (a regular expression
    ``{[^}]*kfdefaults`` searched it again from each, which made ``tool={`` repeated over 1 MiB a search of
    minutes)."""
    if _MENTION.search(raw):
        return True
    searched = 0  # the stretch before it holds no ``kfdefaults`` before its ``}``
    for match in _INLINE_TOOL.finditer(raw):
        if match.end() < searched:
            continue
        close = raw.find(b"}", match.end())
        searched = len(raw) if close < 0 else close
        if raw.find(b"kfdefaults", match.end(), searched) >= 0:
            return True
    return False


def nearest_pyproject(start: str, inputs: Inputs | None = None) -> str | None:
    """The ``pyproject.toml`` in ``start`` or the closest folder above it, if any; ``inputs`` records each place
    looked at."""
    inputs = Inputs() if inputs is None else inputs
    here = os.path.abspath(start)
    while True:
        candidate = os.path.join(here, "pyproject.toml")
        inputs.look(candidate)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def project_file_bytes(path: str, inputs: Inputs | None = None) -> bytes | None:
    """The bytes of the project file ``path`` when it may set ``tool.kfdefaults``; ``None`` when it cannot.

    A file over :data:`MAX_PROJECT_FILE_BYTES` is searched (not parsed) for ``tool.kfdefaults``. ``inputs``
    records the file read.

    Raises:
        ProfileError: the file cannot be read, or it is over the size cap and sets ``tool.kfdefaults``.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a pipe put in its place does not block
        with open(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            raw = f.read(MAX_PROJECT_FILE_BYTES + 1)
            if len(raw) <= MAX_PROJECT_FILE_BYTES:
                if inputs is not None:
                    inputs.file(path, raw, st)
                return raw if _mentions(raw) else None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as whole:
                if inputs is not None:
                    inputs.file(path, whole, st)  # its digest, not a copy of the file in memory
                if not _mentions(whole):
                    return None
    except OSError as e:
        raise error(path, 1, 1, f"cannot read file: {e.strerror or e}") from None
    raise error(path, 1, 1, f"file is larger than {MAX_PROJECT_FILE_BYTES >> 20} MiB and sets tool.kfdefaults: "
                            "kfdefaults reads [tool.kfdefaults] from a pyproject.toml of at most that size; name "
                            "the team folders with KFDEFAULTS_TEAM_PATH or --team instead")


def kfdefaults_section(path: str, inputs: Inputs | None = None) -> tuple[Document, dict] | None:
    """The ``[tool.kfdefaults]`` table of the pyproject.toml at ``path`` and its document (positions filled in),
    ``None`` when it has none.

    Raises:
        ProfileError: the file cannot be read, is not UTF-8 or not TOML, is over the size cap and sets
            ``tool.kfdefaults``, the section is not a table, or it has a key other than :data:`KEYS`, each at its
            ``FILE:LINE:COLUMN``.
    """
    raw = project_file_bytes(path, inputs)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(path, raw[: e.start].count(b"\n") + 1, 1, "file is not UTF-8 text") from None
    text = text[1:] if text.startswith("\ufeff") else text
    from ..read.toml import load_toml, toml_positions  # lazy: the TOML reader, only where a project file is read

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


class Project:
    """The project a command or an ``Elastic(...)`` call works for: its ``pyproject.toml`` and what
    ``[tool.kfdefaults]`` there declares (the team folders, the platform, the cluster's template), read once.

    Found from a list of folders (:meth:`find`): for ``Elastic(...)`` the folder of the module that calls it,
    then the working directory; for the command line the working directory, then the folders given with
    ``--team`` / ``--platform``. The first of them with a ``pyproject.toml`` in it or above it is the project,
    so registering from another folder finds the same one.

    Attributes:
        pyproject: The ``pyproject.toml`` file, or ``None`` (no project).
        root: Its folder (where ``kfdefaults.lock`` lives), or ``None``.
        inputs: Where what is read of the project is recorded (:mod:`kfdefaults.inputs`).
        doc: The parsed file, with positions, when it has a ``[tool.kfdefaults]`` table (read when first asked
            for; raises ``ProfileError`` when the file is broken).
        section: That table (``{}`` without one).
    """

    def __init__(self, pyproject: str | None, inputs: Inputs | None = None) -> None:
        self.inputs = Inputs() if inputs is None else inputs
        self.pyproject = os.path.abspath(pyproject) if pyproject is not None else None
        self.root = os.path.dirname(self.pyproject) if self.pyproject is not None else None
        self._found: tuple[Document, dict] | None | bool = False  # False: not read yet

    def _read(self) -> tuple[Document, dict] | None:
        """The file's ``[tool.kfdefaults]``, read when first asked for (a broken file is reported by the source
        that reads it, as any source's problem).

        Raises:
            ProfileError: as :func:`kfdefaults_section`.
        """
        if self._found is False:
            self._found = kfdefaults_section(self.pyproject, self.inputs) if self.pyproject is not None else None
        return self._found  # type: ignore[return-value]

    @property
    def doc(self) -> Document | None:
        found = self._read()
        return found[0] if found is not None else None

    @property
    def section(self) -> dict:
        found = self._read()
        return found[1] if found is not None else {}

    @classmethod
    def find(cls, starts: Sequence[str], inputs: Inputs | None = None) -> Project:
        """The project of the first of ``starts`` that has a ``pyproject.toml`` in it or above it; ``inputs``
        records where it was looked for, and what is read of it."""
        inputs = Inputs() if inputs is None else inputs
        for start in starts:
            path = nearest_pyproject(start, inputs)
            if path is not None:
                return cls(path, inputs)
        return cls(None, inputs)

    def paths(self, key: str, what: str) -> list[tuple[int, str]]:
        """``[tool.kfdefaults] KEY``: a string or a list of strings, as ``(index, value)``.

        Raises:
            ProfileError: it is neither, located.
        """
        value = self.section.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise ProfileError([Finding(self.location(key), f"tool.kfdefaults.{key}", f"must be a list of {what}")])
        return list(enumerate(value))

    def default_profile(self) -> str | None:
        """``[tool.kfdefaults] default_profile``: the profile of an ``Elastic(...)`` without ``profile=``.

        Raises:
            ProfileError: it is not a profile name (a non-empty string), located.
        """
        value = self.section.get("default_profile")
        if value is not None and not (isinstance(value, str) and value.strip()):
            raise ProfileError([Finding(self.location("default_profile"), "tool.kfdefaults.default_profile",
                                        "must be a profile name, a string")])
        return value

    def target(self) -> str | None:
        """``[tool.kfdefaults] target``: the SDK the project's tasks run on (:data:`kfdefaults.targets.TARGETS`),
        which every command and ``Elastic(...)`` then resolves for unless ``--target`` or ``KFDEFAULTS_TARGET``
        says otherwise; ``None`` when the file does not say.

        Raises:
            ProfileError: it names no target, located.
        """
        value = self.section.get("target")
        if value is not None and value not in TARGETS:
            raise ProfileError([Finding(self.location("target"), "tool.kfdefaults.target",
                                        f"must be one of {', '.join(TARGETS)}")])
        return value

    def location(self, *path: str | int) -> Location:
        """Where ``[tool.kfdefaults]`` writes ``path`` (the file's start when unknown)."""
        if self.doc is None:
            return Location(self.pyproject or "pyproject.toml", 1, 1)
        return self.doc.location(("tool", "kfdefaults") + path)

    def resolve(self, relative: str) -> str:
        """A path written in the file, relative to its folder, as the file system names it: the file is UTF-8,
        and under a locale whose file-system encoding is not (``LC_ALL=C`` without Python's UTF-8 mode) its bytes
        are the file's name all the same (``os.fsdecode``)."""
        written = os.fsdecode(relative.encode("utf-8", "surrogateescape"))
        return os.path.normpath(os.path.join(self.root or os.getcwd(), written))


NO_PROJECT = Project(None)


class PyprojectSource:
    """``[tool.kfdefaults] team = ["path", ...]`` in the project's pyproject.toml; paths relative to it."""

    layer = "team"

    def __init__(self, project: Project) -> None:
        self.project = project

    def folders(self) -> list[Folder]:
        return [Folder(self.project.resolve(t), self.layer, self.project.pyproject or "pyproject.toml")
                for _, t in self.project.paths("team", "folder paths")]


def declares_a_folder(project: Project, entry: str) -> bool:
    """Whether ``platform = [...]`` entry ``entry`` is a folder (a path, or a folder of that name beside the
    ``pyproject.toml``) rather than an installed package's name."""
    if "/" in entry or os.sep in entry or entry.startswith("."):
        return True
    state = project.inputs.look(project.resolve(entry))
    return state is not None and (state[0] == "dir" or os.path.isdir(project.resolve(entry)))


def normalize_distribution(name: str) -> str:
    """A distribution's name as installed metadata folders spell it (``Acme-Platform.Profiles`` ->
    ``acme_platform_profiles``): PEP 503 normalisation, with underscores."""
    return re.sub(r"[-_.]+", "_", name).lower()


class DeclaredPlatformSource:
    """``[tool.kfdefaults] platform = [...]``: the platform the project is written for, which must be found.

    Each entry is an installed package that registers a ``kfdefaults.platform`` entry point (its name as in
    ``pip install``: ``acme-platform-profiles``), or a folder, relative to the ``pyproject.toml`` (an entry with a
    ``/``, starting with ``.``, or naming a folder there). Packages give their folders through
    :class:`~kfdefaults.layers.entry_points.EntryPointSource`; this source checks that each is installed, and
    gives the folders. With ``KFDEFAULTS_NO_ENTRY_POINTS`` set, packages are not checked (their folder is then
    given with ``--platform``).

    Raises (from :meth:`folders`):
        ProfileError: a declared package is not installed, or a declared folder does not exist, located at the
            entry in ``pyproject.toml``: a platform the project declares is never silently left out.
    """

    layer = "platform"

    def __init__(self, project: Project, installed: Callable[[], set[str]] | None) -> None:
        self.project = project
        self.installed = installed

    def folders(self) -> list[Folder]:
        found, findings = [], []
        for i, entry in self.project.paths("platform", "installed package names or folder paths"):
            where = self.project.location("platform", i)
            if declares_a_folder(self.project, entry):
                path = self.project.resolve(entry)
                self.project.inputs.look_through(path)
                if os.path.isdir(path):
                    found.append(Folder(path, self.layer, self.project.pyproject or "pyproject.toml"))
                else:
                    findings.append(Finding(where, f"tool.kfdefaults.platform[{i}]", f"the platform folder {path} does "
                                            "not exist; the project declares it, so its profiles are not left out "
                                            "silently", layer="platform"))
            elif self.installed is not None and normalize_distribution(entry) not in self.installed():
                findings.append(Finding(where, f"tool.kfdefaults.platform[{i}]", (
                    f"the platform package {entry} is not installed here (no installed package of that name "
                    f"registers a kfdefaults.platform folder): install it in this environment; without it, profiles "
                    "would fall back to the builtin layer"), layer="platform"))
        if findings:
            raise ProfileError(findings)
        return found
