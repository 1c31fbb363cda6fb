"""Where profiles come from: the layers and the folders each one reads.

The order of the layers is :data:`LAYERS`, lowest first. Each layer gathers folders from its sources, one
small class per source:

========  ======================================================================================
layer     sources, in the order folders are listed
========  ======================================================================================
builtin   the ``profiles/`` folder inside the installed package
platform  ``--platform DIR`` flags, ``KFDEFAULTS_PLATFORM_PATH`` (an ``os.pathsep`` list),
          installed packages registering a folder under the entry-point group ``kfdefaults.platform``
team      ``--team DIR`` flags, ``KFDEFAULTS_TEAM_PATH``, ``[tool.kfdefaults] team = [...]`` in the
          nearest ``pyproject.toml`` (paths relative to that file)
task      not folders: ``kfdefaults.Elastic(...)`` keyword arguments, ``@task(pod_template=...)``, ``--set``
========  ======================================================================================

Every folder of a layer counts as one pool: two files of one layer that define the same profile are an error.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from ._errors import Finding, Location, ProfileError

NAME_PATTERN = r"[a-z0-9][a-z0-9-]*"
"""What a profile name may be: lower-case letters, digits and dashes, not starting with a dash. A profile's
name is its file's name without the suffix (``gpu-large.yaml`` defines ``gpu-large``)."""

LAYERS = ("builtin", "platform", "team", "task")
"""Layer names, lowest first: a higher layer is applied on top of the lower ones."""

ENTRY_POINT_GROUP = "kfdefaults.platform"
PLATFORM_ENV = "KFDEFAULTS_PLATFORM_PATH"
TEAM_ENV = "KFDEFAULTS_TEAM_PATH"
NO_ENTRY_POINTS_ENV = "KFDEFAULTS_NO_ENTRY_POINTS"


class Folder(NamedTuple):
    """A folder of profile files.

    Attributes:
        path: The folder.
        layer: ``builtin``, ``platform`` or ``team``.
        origin: What named it: ``--team``, ``KFDEFAULTS_TEAM_PATH``, ``entry point acme``, a pyproject.toml path.
    """

    path: str
    layer: str
    origin: str


def builtin_folder() -> str:
    """The builtin profiles folder shipped inside the package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles")


class BuiltinSource:
    """The builtin layer: the package's own ``profiles/`` folder."""

    layer = "builtin"

    def folders(self) -> list[Folder]:
        return [Folder(builtin_folder(), self.layer, "builtin")]


class FlagSource:
    """Folders given on the command line (``--platform DIR``) or as ``resolve(platform=[...])``."""

    def __init__(self, layer: str, paths: Sequence[str | os.PathLike[str]], flag: str) -> None:
        self.layer, self.paths, self.flag = layer, paths, flag

    def folders(self) -> list[Folder]:
        return [Folder(os.fspath(p), self.layer, self.flag) for p in self.paths]


class EnvSource:
    """Folders in an environment variable, separated by ``os.pathsep``; empty entries are skipped."""

    def __init__(self, layer: str, variable: str, environ: Mapping[str, str]) -> None:
        self.layer, self.variable, self.environ = layer, variable, environ

    def folders(self) -> list[Folder]:
        value = self.environ.get(self.variable, "")
        return [Folder(p, self.layer, self.variable) for p in value.split(os.pathsep) if p.strip()]


class EntryPointSource:
    """Installed packages that register a profiles folder under the entry-point group ``kfdefaults.platform``.

    The entry point's value is either a module (``acme_profiles = "acme_profiles"``), whose folder holds the
    profile files, or ``module:attribute`` where the attribute is a path or a function returning one.
    A plain module is located without being imported.
    """

    layer = "platform"

    def folders(self) -> list[Folder]:
        found = []
        for name, value in _registered_entry_points():
            found.append(Folder(_entry_point_folder(name, value), self.layer, f"entry point {name} ({value})"))
        return found


def _registered_entry_points() -> list[tuple[str, str]]:
    """``(name, value)`` of every ``kfdefaults.platform`` entry point of the installed distributions.

    Looks where :mod:`importlib.metadata` looks (each ``*.dist-info`` / ``*.egg-info`` folder on ``sys.path``,
    the first distribution of a name winning) but reads only the ``entry_points.txt`` files that name the
    group, with :mod:`configparser`: a few milliseconds, where reading every distribution's metadata takes
    several times that on every ``Elastic(...)`` of a fresh process.

    The answer is cached, for the whole ``sys.path`` and for each folder, keyed by the folders' modification
    times (which change whenever a package is installed or removed) and checked against the modification time
    of every ``entry_points.txt`` that registers a folder (which changes when a legacy editable install
    rewrites it in place); it is kept for the process, per ``sys.path``.
    """
    import sys

    key = tuple(sys.path)
    if key not in _ENTRY_POINTS:
        from . import _cache

        # the answer for the whole path at once: one cache read, where reading each folder's own entry costs a
        # read per folder on every Elastic(...) of a fresh process
        stamps = []
        for entry in key:
            try:
                stamps.append(f"{os.path.abspath(entry or '.')}\0{os.stat(entry or '.').st_mtime_ns}")
            except OSError:
                stamps.append(f"{entry}\0-")
        path_key = _cache.key("\n".join(stamps).encode("utf-8", "surrogatepass"), "entry points of sys.path", ENTRY_POINT_GROUP)
        stored = _cache.load(path_key)
        try:
            if _unchanged(stored["files"]):
                _ENTRY_POINTS[key] = [(str(name), str(value)) for name, value in stored["points"]]
                return _ENTRY_POINTS[key]
        except (TypeError, KeyError, ValueError):
            pass  # missing or not of this shape: computed again below
        seen: set[str] = set()
        found: set[tuple[str, str]] = set()
        files: list[list[Any]] = []
        for entry in key:
            for distribution, points, stamp in _distributions_in(entry or "."):
                if stamp:
                    files.append(stamp)
                if distribution not in seen:
                    seen.add(distribution)
                    found.update((name, value) for name, value in points)
        _ENTRY_POINTS[key] = sorted(found)
        _cache.store(path_key, {"points": [list(p) for p in _ENTRY_POINTS[key]], "files": files})
    return _ENTRY_POINTS[key]


_ENTRY_POINTS: dict[tuple[str, ...], list[tuple[str, str]]] = {}


def _unchanged(files: Any) -> bool:
    """Whether every ``[path, mtime_ns]`` still has that modification time."""
    for path, stamp in files:
        try:
            if os.stat(path).st_mtime_ns != stamp:
                return False
        except OSError:
            return False
    return True


def _distributions_in(folder: str) -> list[tuple[str, list[tuple[str, str]], list[Any] | None]]:
    """``(distribution, its kfdefaults.platform entry points, [entry_points.txt, mtime_ns] or None)`` for each
    distribution installed in ``folder``; the file is given for the distributions that register entry points."""
    from . import _cache

    try:
        stamp = os.stat(folder).st_mtime_ns
    except OSError:
        return []
    entry_key = _cache.key(f"{os.path.abspath(folder)}\0{stamp}".encode("utf-8", "surrogatepass"), "distributions", ENTRY_POINT_GROUP)
    stored = _cache.load(entry_key)
    if isinstance(stored, list):
        try:
            out = [(str(dist), [(str(n), str(v)) for n, v in points], file) for dist, points, file in stored]
            if _unchanged(file for _, _, file in out if file):
                return out
        except (TypeError, ValueError):
            pass
    out = []
    try:
        with os.scandir(folder) as listing:
            for item in listing:
                if item.name.endswith((".dist-info", ".egg-info")):
                    distribution = item.name.rsplit(".", 1)[0].split("-", 1)[0].lower().replace("-", "_").replace(".", "_")
                    path = os.path.join(item.path, "entry_points.txt")
                    points = _entry_points_of(path)
                    file = None
                    if points:
                        try:
                            file = [path, os.stat(path).st_mtime_ns]
                        except OSError:
                            file = None
                    out.append((distribution, points, file))
    except OSError:
        return []
    out.sort(key=lambda row: (row[0], row[1]))
    _cache.store(entry_key, [[dist, [list(p) for p in points], file] for dist, points, file in out])
    return out


def _entry_points_of(path: str) -> list[tuple[str, str]]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return []
    if ENTRY_POINT_GROUP not in text:
        return []
    import configparser

    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # names are case-sensitive
    try:
        parser.read_string(text, source=path)
    except configparser.Error:
        return []
    if not parser.has_section(ENTRY_POINT_GROUP):
        return []
    return [(name.strip(), value.strip()) for name, value in parser.items(ENTRY_POINT_GROUP)]


def _entry_point_folder(name: str, value: str) -> str:
    import importlib.util

    if ":" not in value:
        spec = importlib.util.find_spec(value.strip())
        if spec is not None and spec.submodule_search_locations:
            return list(spec.submodule_search_locations)[0]
        if spec is not None and spec.origin:
            return os.path.dirname(spec.origin)
        raise ProfileError([Finding(Location(f"entry point {name}"), "", f"cannot find module {value!r}")])
    from importlib.metadata import EntryPoint

    try:
        target = EntryPoint(name, value, ENTRY_POINT_GROUP).load()
        if callable(target):
            target = target()
        return os.fspath(target)
    except Exception as e:  # the installed package is broken: say which, do not crash every command
        raise ProfileError([Finding(Location(f"entry point {name} ({value})"), "",
                                    f"cannot load this {ENTRY_POINT_GROUP} entry point: {type(e).__name__}: {e}",
                                    layer="platform")]) from None


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
        from ._source import parse_bytes, read_bytes

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


def layer_sources(
    platform: Iterable[str | os.PathLike[str]] = (),
    team: Iterable[str | os.PathLike[str]] = (),
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | None = None,
    entry_points: bool | None = None,
    pyproject: bool = True,
    flags: tuple[str, str] = ("--platform", "--team"),
) -> dict[str, list]:
    """The sources of each folder layer, in the order of :data:`LAYERS`.

    ``flags`` names what gave ``platform`` and ``team`` in messages: the command-line flags, or the keyword
    arguments of the Python call (``resolve(team=...)``).

    ``entry_points=None`` reads installed packages' folders unless ``KFDEFAULTS_NO_ENTRY_POINTS`` is set (to
    test a package's own folder, given with ``--platform``, while an older version of it is installed).
    """
    environ = os.environ if environ is None else environ
    if entry_points is None:
        from ._env import flag

        entry_points = not flag(NO_ENTRY_POINTS_ENV, environ)
    platform_sources: list = [FlagSource("platform", list(platform), flags[0]), EnvSource("platform", PLATFORM_ENV, environ)]
    if entry_points:
        platform_sources.append(EntryPointSource())
    team_sources: list = [FlagSource("team", list(team), flags[1]), EnvSource("team", TEAM_ENV, environ)]
    if pyproject:
        team_sources.append(PyprojectSource(cwd or os.getcwd()))
    return {"builtin": [BuiltinSource()], "platform": platform_sources, "team": team_sources}


def discover_folders(sources: dict[str, list], errors: list[Finding] | None = None) -> dict[str, list[Folder]]:
    """The folders of each layer, duplicates (same real path) dropped, missing folders an error.

    With ``errors``, problems are appended to it and the folders that could be found are returned (``validate``
    checks the files it was given even when a context folder or an installed package is broken).

    Raises:
        ProfileError: a folder named by a flag, variable, entry point or pyproject.toml does not exist, is
            not a folder or cannot be read.
    """
    from ._source import path_problem

    out: dict[str, list[Folder]] = {}
    findings = []
    seen: dict[str, set[str]] = {}  # layer -> real paths
    for layer, layer_sources_ in sources.items():
        folders = []
        for source in layer_sources_:
            try:
                found = source.folders()
            except ProfileError as e:  # a broken installed package or pyproject.toml
                findings.extend(e.findings)
                continue
            for folder in found:
                real = os.path.realpath(folder.path)
                problem = path_problem(folder.path, "folder")
                if problem is not None:
                    findings.append(
                        Finding(Location(folder.path), "", f"{layer} folder (from {folder.origin}): {problem}", layer=layer)
                    )
                    continue
                if real in seen.get(layer, set()):
                    continue
                other = next((other for other, paths in seen.items() if real in paths), None)
                if other is not None:
                    findings.append(Finding(Location(folder.path), "", f"this folder is in the {other} layer and in "
                                            f"the {layer} layer (from {folder.origin}); a folder belongs to one layer",
                                            layer=layer))
                    continue
                seen.setdefault(layer, set()).add(real)
                folders.append(folder)
        out[layer] = folders
    if findings and errors is None:
        raise ProfileError(findings)
    if errors is not None:
        errors.extend(findings)
    return out
