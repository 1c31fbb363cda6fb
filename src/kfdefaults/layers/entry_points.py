"""Installed packages that register a profiles folder under the entry-point group ``kfdefaults.platform``."""

from __future__ import annotations

import os
from typing import Any

from .. import cache
from ..errors import Finding, Location, ProfileError
from .folder import Folder

ENTRY_POINT_GROUP = "kfdefaults.platform"


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
        # the answer for the whole path at once: one cache read, where reading each folder's own entry costs a
        # read per folder on every Elastic(...) of a fresh process
        stamps = []
        for entry in key:
            try:
                stamps.append(f"{os.path.abspath(entry or '.')}\0{os.stat(entry or '.').st_mtime_ns}")
            except OSError:
                stamps.append(f"{entry}\0-")
        path_key = cache.key("\n".join(stamps).encode("utf-8", "surrogatepass"), "entry points of sys.path", ENTRY_POINT_GROUP)
        stored = cache.load(path_key)
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
        cache.store(path_key, {"points": [list(p) for p in _ENTRY_POINTS[key]], "files": files})
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
    try:
        stamp = os.stat(folder).st_mtime_ns
    except OSError:
        return []
    entry_key = cache.key(f"{os.path.abspath(folder)}\0{stamp}".encode("utf-8", "surrogatepass"), "distributions", ENTRY_POINT_GROUP)
    stored = cache.load(entry_key)
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
    cache.store(entry_key, [[dist, [list(p) for p in points], file] for dist, points, file in out])
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
