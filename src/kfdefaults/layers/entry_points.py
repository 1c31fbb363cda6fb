"""Installed packages that register a profiles folder under the entry-point group ``kfdefaults.platform``.

An installed package is someone else's code, run in every command and every ``Elastic()``: its faults are
kept its own (:func:`_contained`). Importing it may not raise (``SystemExit`` included), nor print on standard
output, where it would mix into ``render -o json``: either is an error naming the package and the entry
point. What it writes on standard error is passed on, each line marked with the entry point. A
``entry_points.txt`` that registers the group but cannot be read is an error too, never a silent skip of
the platform layer.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from .. import cache
from ..errors import Finding, Location, ProfileError
from ..escape import printable
from ..inputs import Inputs, remembered
from .folder import Folder

ENTRY_POINT_GROUP = "kfdefaults.platform"


class EntryPointSource:
    """Installed packages that register a profiles folder under the entry-point group ``kfdefaults.platform``.

    The entry point's value is either a module (``acme_profiles = "acme_profiles"``), whose folder holds the
    profile files, or ``module:attribute`` where the attribute is a path or a function returning one.
    A plain module is located without being imported.

    Args:
        inputs: Records what finding the packages read (:func:`registered_entry_points`) and each entry point's
            module.
    """

    layer = "platform"

    def __init__(self, inputs: Inputs | None = None) -> None:
        self.inputs = Inputs() if inputs is None else inputs

    def folders(self) -> list[Folder]:
        """The folder of each registered entry point.

        Raises:
            ProfileError: an ``entry_points.txt`` registering the group cannot be read; an entry point's module
                cannot be found or imported, raises (``SystemExit`` too) or prints on standard output when
                imported, or names no folder. ``KeyboardInterrupt`` is not caught: it is the user's.
        """
        found, findings = [], []
        for name, value, distribution in registered_entry_points(self.inputs):
            try:
                folder = _entry_point_folder(name, value, distribution)
            except ProfileError as e:
                findings.extend(e.findings)
                continue
            self.inputs.module(value.split(":", 1)[0].strip())  # loaded: finding it again runs no code
            found.append(Folder(folder, self.layer, f"entry point {name} ({value})", distribution))
        if findings:
            raise ProfileError(findings)
        return found


def installed_platform_packages(inputs: Inputs | None = None) -> set[str]:
    """The installed distributions that register a ``kfdefaults.platform`` entry point, by normalised name
    (``acme_platform_profiles``)."""
    return {distribution for _, _, distribution in registered_entry_points(inputs)}


def registered_entry_points(inputs: Inputs | None = None) -> list[tuple[str, str, str]]:
    """``(name, value, distribution)`` of every ``kfdefaults.platform`` entry point of the installed distributions,
    sorted; ``inputs`` records what the answer depends on.

    Looks where :mod:`importlib.metadata` looks (each ``*.dist-info`` / ``*.egg-info`` folder on ``sys.path``,
    the first distribution of a name winning) but reads only the ``entry_points.txt`` files that name the
    group, with :mod:`configparser`: a few milliseconds, where reading every distribution's metadata takes
    several times that on every ``Elastic(...)`` of a fresh process.

    The answer depends on the listing of each ``sys.path`` folder (installing or removing a package changes it)
    and on each ``entry_points.txt`` that registers the group (a legacy editable install rewrites it in place):
    it is kept in the cache with those inputs (:mod:`kfdefaults.inputs`), and for the process, per ``sys.path``.
    """
    import sys

    key = tuple(sys.path)
    if key not in _ENTRY_POINTS or _ENTRY_POINTS[key][1].changed() is not None:
        entry_key = cache.key("\0".join(key).encode("utf-8", "surrogatepass"), "entry points", ENTRY_POINT_GROUP)
        _ENTRY_POINTS[key] = remembered(entry_key, lambda recorded: _scan(key, recorded), _are_points)
    points, recorded = _ENTRY_POINTS[key]
    if inputs is not None:
        inputs.update(recorded)
    return [tuple(p) for p in points]  # type: ignore[misc]


_ENTRY_POINTS: dict[tuple[str, ...], tuple[list, Inputs]] = {}


def _are_points(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(p, list) and len(p) == 3 and all(isinstance(x, str) for x in p)
                                           for p in value)


def _scan(path: tuple[str, ...], inputs: Inputs) -> list[list[str]]:
    """The entry points of the distributions in the ``path`` folders, reading each folder's listing and the
    ``entry_points.txt`` files that name the group (recorded in ``inputs``)."""
    seen: set[str] = set()
    found: set[tuple[str, str, str]] = set()
    for entry in path:
        folder = entry or "."
        inputs.folder(folder)
        try:
            with os.scandir(folder) as listing:
                names = sorted(item.name for item in listing if item.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
        for item in names:
            distribution = item.rsplit(".", 1)[0].split("-", 1)[0].lower().replace("-", "_").replace(".", "_")
            points = _entry_points_of(os.path.join(folder, item, "entry_points.txt"), inputs)
            if distribution not in seen:
                seen.add(distribution)
                found.update((name, value, distribution) for name, value in points)
    return [list(p) for p in sorted(found)]


def _entry_points_of(path: str, inputs: Inputs) -> list[tuple[str, str]]:
    """The ``kfdefaults.platform`` entry points an ``entry_points.txt`` registers (none when it does not name
    the group, or cannot be opened: a distribution without one); a file that names it is recorded in ``inputs``.

    Raises:
        ProfileError: a file that names the group is not UTF-8 or not in the INI format of entry points,
            located at the line where reading stopped.
    """
    try:
        with open(path, "rb") as f:
            raw = f.read()
            st = os.fstat(f.fileno())
    except OSError:
        return []
    if ENTRY_POINT_GROUP.encode() not in raw:
        return []
    inputs.file(path, raw, st)
    import configparser

    try:
        text = raw.decode("utf-8")
        parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # names are case-sensitive
        parser.read_string(text, source=path)
    except (UnicodeDecodeError, configparser.Error) as e:
        line, problem = _ini_problem(e, raw)
        raise ProfileError([Finding(Location(path, line, 1), "", f"cannot read the {ENTRY_POINT_GROUP} entry points "
                                    f"of this installed package: {problem}", layer="platform")]) from None
    if not parser.has_section(ENTRY_POINT_GROUP):
        return []
    return [(name.strip(), value.strip()) for name, value in parser.items(ENTRY_POINT_GROUP)]


def _ini_problem(e: Exception, raw: bytes) -> tuple[int, str]:
    """The line and a plain description of why :mod:`configparser` (or UTF-8) refused an ``entry_points.txt``."""
    import configparser

    if isinstance(e, UnicodeDecodeError):
        return raw[: e.start].count(b"\n") + 1, "not UTF-8 text"
    if isinstance(e, configparser.MissingSectionHeaderError):
        return e.lineno, f"line {e.lineno} is neither a [group] header nor NAME = VALUE under one: {e.line.strip()!r}"
    if isinstance(e, configparser.ParsingError) and e.errors:
        line, text = e.errors[0][0], str(e.errors[0][1]).replace("\\n'", "'")
        return line, f"line {line} is not NAME = VALUE: {text}"
    line = getattr(e, "lineno", None) or 1
    return line, str(e).split("]: ", 1)[-1]


def _entry_point_folder(name: str, value: str, distribution: str) -> str:
    """The profiles folder entry point ``name = value`` of ``distribution`` registers.

    A plain module (``acme_profiles``, ``acme.profiles``) names its own folder; it is located without being
    imported, though its parent packages are (a package's ``__init__``). ``module:attribute`` is imported;
    the attribute is a path, or a function returning one.

    Raises:
        ProfileError: as :meth:`EntryPointSource.folders`, located at ``entry point NAME (VALUE)``.
    """
    import importlib.util

    if ":" not in value:
        spec = _contained(name, value, distribution, lambda: importlib.util.find_spec(value.strip()))
        if spec is not None and spec.submodule_search_locations:
            return list(spec.submodule_search_locations)[0]
        if spec is not None and spec.origin:
            return os.path.dirname(spec.origin)
        raise _entry_point_error(name, value, distribution, f"cannot find module {value!r}")
    from importlib.metadata import EntryPoint

    def load() -> Any:
        target = EntryPoint(name, value, ENTRY_POINT_GROUP).load()
        return target() if callable(target) else target

    target = _contained(name, value, distribution, load)
    try:
        return os.fspath(target)
    except TypeError:
        raise _entry_point_error(name, value, distribution, f"names {type(target).__name__} {target!r:.80}, not "
                                                            "a folder path (a str or os.PathLike)") from None


def _entry_point_error(name: str, value: str, distribution: str, problem: str) -> ProfileError:
    return ProfileError([Finding(Location(f"entry point {name} ({value})"), "",
                                 f"cannot load this {ENTRY_POINT_GROUP} entry point of the installed package "
                                 f"{distribution}: {problem}", layer="platform")])


def _contained(name: str, value: str, distribution: str, load: Callable[[], Any]) -> Any:
    """``load()``, which runs an installed package's code, with that code's faults kept its own.

    Standard output and standard error are captured while it runs (Python's ``sys.stdout`` and
    ``sys.stderr``: what ``print`` and ``warnings`` write; a C extension writing to file descriptor 1 directly
    is not seen). Output on standard output is an error: it would be mixed into kfdefaults' own (``render -o
    json``) or into the user's. What was written on standard error is written again, each line marked with
    the entry point. Any exception is an error, ``SystemExit`` included (the package would otherwise end the
    command, which then exits 0 having checked nothing); ``KeyboardInterrupt`` is the user's and goes on.

    Raises:
        ProfileError: naming the package, the entry point and what went wrong.
        KeyboardInterrupt: raised while loading.
    """
    import contextlib
    import io
    import sys

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result = load()
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: B036 - SystemExit and the like too: see the docstring
        kind = "exited" if isinstance(e, SystemExit) else "raised"
        detail = f"SystemExit({e.code!r})" if isinstance(e, SystemExit) else f"{type(e).__name__}: {e}"
        raise _entry_point_error(name, value, distribution, f"importing it {kind}: {detail}") from None
    finally:
        for line in err.getvalue().splitlines():
            sys.stderr.write(printable(f"entry point {name} ({value}): {line}") + "\n")
    printed = out.getvalue()
    if printed:
        first = printed.strip().splitlines()[0] if printed.strip() else repr(printed)
        raise _entry_point_error(name, value, distribution, f"importing it printed on standard output ({first!r:.120}),"
                                 " which would be mixed into kfdefaults' output; a profile package must not print")
    return result
