"""What a result depends on: the input manifest a pipeline keeps as it reads, and the one test of change.

A :class:`~kfdefaults.pipeline.Pipeline` records here everything it reads from outside its arguments, as it
reads it:

* ``file``: a file read, with the digest of the bytes read and the ``stat`` of the open file;
* ``folder``: a folder listed, with its ``stat`` and the digest of its names;
* ``path``: a path looked at, with what is there (nothing, a folder, a file, a symbolic link and its target);
* ``env``: an environment variable read, with its value (or its absence);
* ``module``: an installed package whose code makes the result (an SDK, a platform package's entry point), as
  the ``path`` of the file it is imported from (an upgrade or a reinstall replaces that file).

:meth:`Inputs.changed` is the one test of "did the inputs change", and every memo of kfdefaults asks it: the
process's shared pipeline of ``Elastic(...)`` (:func:`kfdefaults.pipeline.shared_pipeline`), the replay of a
command (:mod:`kfdefaults.cli.replay`) and the installed packages' entry points
(:mod:`kfdefaults.layers.entry_points`). As black's cache does (``Cache.is_changed``), it looks at the ``stat``
first and at the bytes only when the ``stat`` cannot answer: a file whose status is what it was when read, and
had not changed for :data:`RACE_SECONDS` before that, holds the bytes it held; otherwise it is read again and its
digest compared, so that an edit that keeps the size and sets the old modification time back (``cp -p``,
``rsync -t``, ``tar``) is seen all the same: writing a file sets its change time (``ctime``), which no tool sets
back, and replacing it gives another inode.

The one rule for edits too recent to trust: an input whose change time is less than :data:`RACE_SECONDS` before
it was recorded may have changed in the same tick of a coarse clock without a visible trace. Such a manifest is
checked by content (:meth:`Inputs.changed` does that by itself) and is never stored (:meth:`Inputs.settled`).

Only the standard library's always-loaded modules and :mod:`kfdefaults.cache` are imported here: the replay of a
command checks a stored manifest without importing the pipeline.
"""

from __future__ import annotations

import os
import stat
import sys
import time

from . import cache
from .cache import digest

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Mapping, TypeVar

    T = TypeVar("T")

RACE_SECONDS = 2.0
"""How long before it is recorded an input must have last changed status for its ``stat`` to stand for its content:
more than the coarsest timestamp granularity and clock step of a local file system."""

MAX_READ_BYTES = 4 << 20
"""Most bytes of a file read again to compare its digest (the largest input kfdefaults reads is a lock file of
2 MiB); a file grown past it has changed."""

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def file_signature(st: os.stat_result) -> list[int]:
    """``[inode, size, mtime_ns, ctime_ns]``: what says that a file still holds the bytes it held."""
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def path_state(path: str) -> Any:
    """What is at ``path``, as plain data (not following a symbolic link at its end): ``None`` for nothing;
    ``["dir", mode, inode]``; ``["link", target]``; ``["file", mode]`` for anything else (a regular file, a pipe,
    a device: its kind and permissions are in its mode; the bytes of a file read are an input of their own); an
    error's number as ``["error", errno]``."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        return ["error", e.errno]
    except ValueError:  # a name the file system cannot take (a NUL in it)
        return ["error", "name"]
    if stat.S_ISDIR(st.st_mode):
        return ["dir", st.st_mode, st.st_ino]
    if stat.S_ISLNK(st.st_mode):
        try:
            return ["link", os.readlink(path)]
        except OSError as e:
            return ["error", e.errno]
    return ["file", st.st_mode]


def _names_digest(names: Iterable[str]) -> str:
    return digest(*(n.encode("utf-8", "surrogateescape") for n in sorted(names)))


def _folder_state(path: str, names: bool = True) -> Any:
    """``[inode, mtime_ns, ctime_ns, digest of the names or None]`` of a folder (following links), or its error as
    ``["error", ...]``; ``names=False`` leaves the listing out (one ``stat``)."""
    try:
        st = os.stat(path)
        if not stat.S_ISDIR(st.st_mode):
            return ["error", "not a folder"]
        listed = None
        if names:
            with os.scandir(path) as entries:
                listed = _names_digest(e.name for e in entries)
    except OSError as e:
        return ["error", e.errno]
    except ValueError:
        return ["error", "name"]
    return [st.st_ino, st.st_mtime_ns, st.st_ctime_ns, listed]


def _content_digest(path: str) -> str | None:
    """The digest of the bytes of the regular file at ``path`` (following links), ``None`` when it cannot be read
    as one. A pipe put in its place is opened without waiting and not read."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= MAX_READ_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return digest(b"".join(chunks)) if size <= MAX_READ_BYTES else None
    except OSError:
        return None
    finally:
        os.close(fd)


class Inputs:
    """The inputs one result depends on, recorded as they are read (see the module's description).

    Attributes:
        items: ``(kind, name) -> state``, in the order first recorded, as plain data (stored as it is by
            :meth:`to_data`). A file's state is ``[digest, [inode, size, mtime_ns, ctime_ns], taken]``, a
            folder's ``[listing, taken]`` (:func:`_folder_state`), where ``taken`` is when the ``stat`` was taken
            (nanoseconds since the epoch); a path's is :func:`path_state`; a variable's its value or ``None``.
    """

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Any] = {}

    def __repr__(self) -> str:
        return f"Inputs({len(self.items)} items)"

    # -- recording

    def file(self, path: str, raw: bytes, st: os.stat_result) -> None:
        """Record that ``raw``, the bytes of ``path``, was read, ``st`` the ``fstat`` of the file it was read from."""
        self.items[("file", path)] = [digest(raw), file_signature(st), time.time_ns()]

    def folder(self, path: str) -> None:
        """Record that ``path`` was listed: its names count, the files in it do not (those read are inputs of their
        own)."""
        self.items.setdefault(("folder", path), [_folder_state(path), time.time_ns()])

    def look(self, path: str) -> Any:
        """Record what is at ``path`` (:func:`path_state`) and return it: a path looked for that may or may not
        be there (a ``pyproject.toml`` above the working folder, ``NAME.yaml`` in a layer's folder)."""
        key = ("path", path)
        if key not in self.items:
            self.items[key] = path_state(path)
        return self.items[key]

    def look_through(self, path: str) -> None:
        """Record every link on the way to ``path`` (each component that is a symbolic link, and its target's,
        recursively): a folder named through a link is another folder once the link is pointed elsewhere."""
        seen = 0
        pending = [os.path.abspath(path)]
        while pending and seen < 64:
            current = pending.pop()
            parts = current.split(os.sep)
            for i in range(2, len(parts) + 1):
                prefix = os.sep.join(parts[:i]) or os.sep
                state = self.look(prefix)
                if state is not None and state[0] == "link":
                    seen += 1
                    target = os.path.join(os.path.dirname(prefix), state[1])
                    pending.append(os.path.normpath(os.sep.join([target, *parts[i:]])))
                    break

    def env(self, name: str, environ: Mapping[str, str] | None = None) -> str | None:
        """The value of the environment variable ``name`` (``None`` when unset), recorded."""
        value = (os.environ if environ is None else environ).get(name)
        if environ is None or environ is os.environ:
            self.items[("env", name)] = value
        return value

    def module(self, name: str) -> None:
        """Record the installed package ``name`` (``flytekit``, ``flyteplugins.pytorch``) by the file it is imported
        from and that file's folder, found without importing anything (:func:`module_origin`): an upgrade, a
        reinstall or a removal replaces them."""
        self.items[("module", name)] = _module_state(name)

    def update(self, other: Inputs) -> None:
        """Add what ``other`` recorded (its state wins where both recorded a name)."""
        self.items.update(other.items)

    # -- the test of change

    def changed(self) -> str | None:
        """The first input that is not what it was when recorded, as ``"KIND NAME"``; ``None`` when none changed.

        A file or folder recorded at least :data:`RACE_SECONDS` after its last change of status, whose ``stat`` is
        unchanged, is unchanged; else a file's bytes are read again and their digest compared, a folder's names
        listed again. A file found the same by content whose status has since settled is judged by its
        ``stat`` from then on (the state is updated in place).
        """
        for (kind, name), state in self.items.items():
            if not _SAME[kind](name, state):
                return f"{kind} {name}"
        return None

    def settled(self) -> bool:
        """Whether every input was recorded at least :data:`RACE_SECONDS` after its last change of status, and is
        still what it was: only such a manifest may be stored for another process to trust
        (:meth:`changed` would otherwise have to read every file again, and a same-tick edit could hide)."""
        if self.changed() is not None:
            return False
        for (kind, _), state in self.items.items():
            if kind == "file" and not _trusted(state[1][3], state[2]):
                return False
            if kind == "folder" and state[0][0] != "error" and not _trusted(state[0][2], state[1]):
                return False
        return True

    # -- storing

    def to_data(self) -> list[list[Any]]:
        """The manifest as plain data (``[[kind, name, state], ...]``), for :mod:`marshal` or JSON."""
        return [[kind, name, state] for (kind, name), state in self.items.items()]

    @classmethod
    def from_data(cls, data: Any) -> Inputs | None:
        """The inverse of :meth:`to_data`; ``None`` for data of another shape (a damaged or foreign entry)."""
        if not isinstance(data, list):
            return None
        inputs = cls()
        for item in data:
            if not (isinstance(item, list) and len(item) == 3 and item[0] in _SAME and isinstance(item[1], str)
                    and _WELL_FORMED[item[0]](item[2])):
                return None
            inputs.items[(item[0], item[1])] = item[2]
        return inputs


def _trusted(ctime_ns: int, taken_ns: int) -> bool:
    return ctime_ns < taken_ns - int(RACE_SECONDS * 1e9)


def _same_file(path: str, state: list[Any]) -> bool:
    known, signature, taken = state
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    now = file_signature(st)
    if now == signature and _trusted(signature[3], taken):
        return True
    if _content_digest(path) != known:
        return False
    state[1], state[2] = now, time.time_ns()  # the same bytes: their stat stands for them once settled
    return True


def _same_folder(path: str, state: list[Any]) -> bool:
    listing, taken = state
    now = _folder_state(path, names=False)
    if listing[0] == "error" or now[0] == "error":
        return now == listing
    if now[:3] == listing[:3] and _trusted(listing[2], taken):
        return True
    now = _folder_state(path)
    if now[0] == "error" or now[3] != listing[3]:
        return False
    state[0], state[1] = now, time.time_ns()  # the same names: the folder's stat stands for them once settled
    return True


def module_origin(name: str) -> str | None:
    """The file the module ``name`` is imported from (a package's ``__init__.py``), found on ``sys.path`` without
    importing it or its parents (no package's code runs), or, once it is imported, where it was imported from (an
    editable install's own finder puts it anywhere); ``None`` when there is none (not installed, a namespace
    package, a module built into the interpreter)."""
    from importlib.machinery import PathFinder

    imported = sys.modules.get(name)
    if imported is not None:
        return getattr(imported, "__file__", None)
    path = None
    spec = None
    for part in name.split("."):
        spec = PathFinder.find_spec(part if spec is None else f"{spec.name}.{part}", path)
        if spec is None:
            return None
        path = spec.submodule_search_locations
    return spec.origin if spec is not None and spec.has_location else None


def _module_state(name: str) -> list[Any]:
    """``[origin, its signature, its folder's signature]`` of the package ``name``; ``[None, None, None]`` when it
    is not installed (or is a namespace package)."""
    try:
        origin = module_origin(name)
    except (ImportError, ValueError, OSError):
        origin = None
    out: list[Any] = [origin]
    for path in (origin, os.path.dirname(origin) if origin else None):
        try:
            out.append(file_signature(os.stat(path)) if path else None)
        except OSError:
            out.append(None)
    return out


_SAME = {
    "file": _same_file,
    "folder": _same_folder,
    "path": lambda path, state: path_state(path) == state,
    "env": lambda name, value: os.environ.get(name) == value,
    "module": lambda name, state: _module_state(name) == state,
}
"""Each kind of input and how it is found unchanged."""


def _is_int_list(value: Any, n: int) -> bool:
    return isinstance(value, list) and len(value) == n and all(type(v) is int for v in value)


_WELL_FORMED = {
    "file": lambda s: (isinstance(s, list) and len(s) == 3 and isinstance(s[0], str) and _is_int_list(s[1], 4)
                       and type(s[2]) is int),
    "folder": lambda s: isinstance(s, list) and len(s) == 2 and isinstance(s[0], list) and type(s[1]) is int,
    "path": lambda s: s is None or isinstance(s, list),
    "env": lambda s: s is None or isinstance(s, str),
    "module": lambda s: isinstance(s, list) and len(s) == 3,
}
"""The shape of each kind's state, checked before a stored manifest is trusted."""


def load_remembered(key: str, valid: Callable[[Any], bool]) -> tuple[Any, Inputs] | None:
    """``(value, inputs)`` stored under ``key`` by :func:`remember`, if ``valid(value)`` and no input changed since;
    ``None`` otherwise (missing, damaged, foreign, or out of date)."""
    stored = cache.load(key, lambda v: isinstance(v, dict) and set(v) == {"inputs", "value"} and valid(v["value"]),
                        fast=True)
    if stored is None:
        return None
    inputs = Inputs.from_data(stored["inputs"])
    if inputs is None or inputs.changed() is not None:
        return None
    return stored["value"], inputs


def remember(key: str, value: Any, inputs: Inputs) -> bool:
    """Store ``value`` (plain data) under ``key`` with the inputs it was made from, if they are settled
    (:meth:`Inputs.settled`); return whether it was stored."""
    if not inputs.settled():
        return False
    cache.store(key, {"inputs": inputs.to_data(), "value": value}, fast=True)
    return True


def remembered(key: str, compute: Callable[[Inputs], T], valid: Callable[[Any], bool]) -> tuple[T, Inputs]:
    """``(value, inputs)``: what :func:`remember` stored under ``key`` while its inputs are unchanged, else
    ``compute(inputs)`` with a new manifest that it fills, stored for next time."""
    found = load_remembered(key, valid)
    if found is not None:
        return found
    inputs = Inputs()
    value = compute(inputs)
    remember(key, value, inputs)
    return value, inputs


def interpreter() -> list[str]:
    """The interpreter a result was made with: its path, version, flags and ``sys.path`` (part of every key of
    a stored result, with kfdefaults' own code)."""
    return [sys.executable, sys.version, repr(sys.flags), "\0".join(sys.path)]
