"""Replay of ``kfdefaults render``: a render whose inputs have not changed prints again what it printed, without
importing the pipeline.

What a render prints follows from the command (its arguments, working folder, environment, interpreter and
kfdefaults' own code) and from what it reads: profile files, folder listings, and paths it looks for that may
or may not be there (``pyproject.toml``, ``kfdefaults.lock``, a cluster template, the folders of a layer). The
first run of a command records those inputs as it goes, whoever reads them:

* every file opened for reading (Python's audit event ``open``): kept as the digest of its bytes;
* every folder listed (``os.listdir``, ``os.scandir``, and so ``os.walk``, ``glob`` and the import system):
  kept as its inode and modification and change times, which move with every name made, removed or renamed
  in it (one ``stat``, however many files it holds);
* every path looked at (``os.stat``, ``os.lstat``, and so ``os.path.exists``, ``isfile``, ``isdir``,
  ``realpath`` and ``pathlib``): kept as its kind, size and modification time, or as missing.

It stores them in the cache (:mod:`kfdefaults.cache`) beside the text written to standard output and standard
error. A later run of the same command replays that text only if every input is still what it was: each file
read again and its digest compared (an edit that keeps the size and the time is seen), each folder and path
looked at again. Anything else runs the command and records it anew.

Also kept: the modification time of every ``sys.path`` folder (an install or removal of a package changes
it), the size and time of the source of every module imported from outside the installed environment (an
editable platform package's entry point), and the Kubernetes schema package's version file. Left out on
purpose: modules of the installed environment (kfdefaults' own are in the command's key through
:func:`kfdefaults.cache.source_stamp`), and the cache's own files.

A run is replayed or recorded only when neither standard output nor standard error is a terminal (hooks, CI,
scripts and pipes: on a terminal the output may follow the terminal's width, and a person does not notice
the difference), only for a render that exits 0, and only for the renders that need no SDK (``--as profile``
and ``--as podtemplate``; ``--as flyte`` and ``pytorchjob`` define a real task). Each input's state is read
when the run ends; a run is not stored when an input changed during it or less than :data:`RACE_SECONDS`
before it began, by its change time (which ``cp -p``, ``rsync -t`` or ``tar`` do not set back as they do the
modification time), as a time stamp is coarse and an edit in the same tick would go unseen. ``KFDEFAULTS_NO_CACHE=1`` turns it off with the cache.

Only the standard library's always-loaded modules and :mod:`kfdefaults.cache` are imported here.
"""

from __future__ import annotations

import os
import stat
import sys
import time

from .streams import Kept

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

FORMAT = 1
"""Version of the stored layout; part of every key."""

COMMANDS = frozenset({"render"})
"""The commands that may be replayed; each also decides per run, by its module's ``replayable(args)``."""

RACE_SECONDS = 2.0
"""An input modified less than this before the run began (or during it) keeps the run from being stored."""

_SHELL_BOOKKEEPING = frozenset({"_", "OLDPWD", "SHLVL"})
"""Environment variables a shell changes between two runs of the same command; nothing reads them."""

_MODULE_SUFFIXES = (".py", ".pyc", ".so", ".pyd", ".pth")


def command_key(argv: list[str]) -> str | None:
    """The cache key of running ``kfdefaults`` with ``argv`` here and now, or ``None`` when the command is not
    one that is replayed, a stream is a terminal, or the cache is off.

    The key covers the arguments, the working folder, the environment (but for :data:`_SHELL_BOOKKEEPING`),
    the interpreter (its path, version, flags and ``sys.path``), the encodings of the two streams and
    kfdefaults' code; what the command reads is checked separately (:func:`replay`).
    """
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in COMMANDS or any(_is_terminal(s) for s in (sys.stdout, sys.stderr)):
        return None
    from .. import cache

    if cache.cache_dir() is None:
        return None
    try:
        here = os.getcwd()
    except OSError:  # the working folder was removed
        return None
    environment = "\0".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k not in _SHELL_BOOKKEEPING)
    streams = [f"{getattr(s, 'encoding', None)} {getattr(s, 'errors', None)}" for s in (sys.stdout, sys.stderr)]
    parts = [f"replay {FORMAT}", cache.source_stamp(), sys.executable, sys.version, repr(sys.flags),
             "\0".join(sys.path), here, "\0".join(argv), environment, *streams]
    return cache.digest(*(p.encode("utf-8", "surrogatepass") for p in parts))


def _is_terminal(stream: Any) -> bool:
    try:
        return stream is None or stream.isatty()
    except (AttributeError, ValueError, OSError):
        return True  # a stream of unknown kind: no replay


def replay(key: str) -> int | None:
    """Write again what the command stored under ``key`` wrote, if every input it read is unchanged, and return
    its exit status; ``None``: run the command.

    The writes are made in their order, each to its stream, so that both streams led into one pipe or file
    (``2>&1``) read as the command's own did. An output that cannot be written (a full disk) is said on
    standard error, exit status 1, as a command that runs says it.
    """
    from .. import cache

    stored = cache.load(key, _is_stored_run, fast=True)
    if stored is None:
        return None
    for kind, path, seen in stored["inputs"]:
        if _state(kind, path) != seen:
            return None
    streams = (sys.stdout, sys.stderr)
    try:
        for stream, text in stored["writes"]:
            streams[stream].write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise  # as when the command runs
    except OSError as e:
        sys.stderr.write(f"kfdefaults: {e.strerror or e}\n")
        return 1
    return 0


def _is_stored_run(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("writes"), list)
            and all(isinstance(w, list) and len(w) == 2 and w[0] in (0, 1) and isinstance(w[1], str)
                    for w in value["writes"])
            and isinstance(value.get("inputs"), list)
            and all(isinstance(i, list) and len(i) == 3 and i[0] in _STATES and isinstance(i[1], str)
                    for i in value["inputs"]))


def _file(path: str) -> Any:
    from ..cache import digest

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb") as f:  # a pipe put in the file's place opens without waiting, and is not read
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "!not a regular file"
        return digest(f.read())


def _folder(path: str) -> Any:
    # a folder's modification and change times move with every name made, removed or renamed in it (POSIX), and
    # its inode with a folder put in its place: one stat, however many files it holds
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        return "!not a folder"
    return [st.st_ino, st.st_mtime_ns, st.st_ctime_ns]


def _looked_at(follow: bool) -> Any:
    def state(path: str) -> Any:
        st = os.stat(path) if follow else os.lstat(path)
        if stat.S_ISDIR(st.st_mode):  # a folder and its permissions: what it holds is an input of its own when listed
            return [st.st_mode]
        if stat.S_ISLNK(st.st_mode):  # where it points, whatever its time says
            return [st.st_mode, os.readlink(path)]
        return [st.st_mode, st.st_size, st.st_mtime_ns]  # kind and permissions (os.access), size, time
    return state


def _time(path: str) -> Any:
    return os.stat(path).st_mtime_ns


_STATES = {"file": _file, "folder": _folder, "stat": _looked_at(True), "lstat": _looked_at(False), "time": _time}
"""Each kind of input and how its state is read: ``file`` the digest of its bytes, ``folder`` its inode and times,
``stat``/``lstat`` the kind, permissions, size and time of what is there (a folder's kind and permissions
alone, a link's target), ``time`` a
folder's modification time (the ``sys.path`` folders, whose time changes when a package is installed or
removed)."""


def _state(kind: str, path: str) -> Any:
    """What ``path`` holds now, as the kind of input ``kind`` keeps it (plain JSON data); an error is a state."""
    try:
        return _STATES[kind](path)
    except OSError as e:
        return f"!{e.errno}"
    except (ValueError, UnicodeError) as e:  # a name the file system cannot take
        return f"!{type(e).__name__}"


class Recording:
    """The inputs and output of one run of a command, recorded while it runs (a context manager).

    Inside the ``with``, standard output and standard error are :class:`~.streams.Kept`, ``os.stat`` and
    ``os.lstat`` note the paths they are given, and an audit hook notes the files opened for reading and the
    folders listed. :meth:`store` then keeps the run in the cache under its key.
    """

    def __init__(self, key: str) -> None:
        self.key = key
        self.replayable = False
        """Set by the command once it has parsed its arguments: whether this run may be replayed."""
        self.inputs: dict[tuple[str, str], None] = {}
        self.began = time.time()

    def note(self, kind: str, path: Any) -> None:
        try:
            path = os.fsdecode(os.fspath("." if path is None else path))
        except TypeError:  # a file descriptor
            return
        self.inputs.setdefault((kind, path), None)

    def __enter__(self) -> Recording:
        global _recording
        _install_hook()
        self._stat, self._lstat = os.stat, os.lstat
        os.stat, os.lstat = self._noting(self._stat, "stat"), self._noting(self._lstat, "lstat")
        self.writes: list[list] = []
        self.out, self.err = Kept(sys.stdout, 0, self.writes), Kept(sys.stderr, 1, self.writes)
        sys.stdout, sys.stderr = self.out, self.err
        _recording = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _recording
        _recording = None
        os.stat, os.lstat = self._stat, self._lstat
        sys.stdout, sys.stderr = self.out.stream, self.err.stream

    def _noting(self, function: Any, kind: str) -> Any:
        def noted(path: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(path, int) and kwargs.get("dir_fd") is None:
                self.note(kind if kwargs.get("follow_symlinks", True) else "lstat", path)
            return function(path, *args, **kwargs)
        return noted

    def store(self) -> None:
        """Keep the run in the cache, unless the command said it may not be replayed, its output was written
        around the kept streams, or an input changed during the run or just before it."""
        if not (self.replayable and self.out.complete and self.err.complete):
            return
        from .. import cache

        inputs = self._inputs(os.path.abspath(cache.cache_dir() or os.sep))
        if inputs is None or any(self._changed_lately(kind, path) for kind, path in inputs):
            return
        cache.store(self.key, {"inputs": [[kind, path, _state(kind, path)] for kind, path in inputs],
                               "writes": self.writes}, fast=True)

    def _inputs(self, cache_folder: str) -> list[tuple[str, str]] | None:
        """The inputs to keep, in the order first met: files read but for the cache's own and the schema files,
        the source files of modules imported from outside the installed environment (kfdefaults' own are in
        the key), the schema package's version file and the ``sys.path`` folders' times; ``None`` when the run
        read the state of the system (``/proc``, ``/dev``, ``/sys``)."""
        kept: dict[tuple[str, str], None] = {}
        schema = sys.modules.get("kfdefaults.smp.schema")
        schema_root = os.path.dirname(schema._schema_root()) if schema is not None else None
        for kind, path in self.inputs:
            absolute = os.path.abspath(path)
            if kind == "file" and (absolute.endswith(_MODULE_SUFFIXES) or f"{os.sep}__pycache__{os.sep}" in absolute):
                source = _module_source(absolute)
                if source is not None:
                    kept.setdefault(("stat", source), None)
                continue
            if _is_cache_file(absolute, cache_folder) or (schema_root and _inside(absolute, schema_root)):
                continue
            if absolute.startswith(("/proc/", "/dev/", "/sys/")):
                return None
            kept.setdefault((kind, path), None)
        if schema_root is not None:  # the schema files, by their package's version
            kept.setdefault(("file", os.path.join(schema_root, "version.py")), None)
        for entry in sys.path:
            if os.path.isdir(entry or "."):
                kept.setdefault(("time", entry or "."), None)
        return list(kept)

    def _changed_lately(self, kind: str, path: str) -> bool:
        """Whether ``path`` (or what it links to, or, gone, its folder) changed during the run or in the
        :data:`RACE_SECONDS` before it, by its change time, which no tool sets back (``cp -p``, ``rsync -t`` and
        ``tar`` restore the modification time, not this): its state is read now, at the end of the run, and
        must be what the run read."""
        found = []
        for look in (os.lstat, os.stat):
            try:
                found.append(look(path))
            except OSError:
                pass
        since = self.began - RACE_SECONDS
        if not found:  # gone: a file or folder the run read was removed, which changed its folder
            if kind not in ("file", "folder"):
                return False  # a path looked for and not there: one that appears is found above next time
            try:
                parent = os.stat(os.path.dirname(os.path.abspath(path)))
            except OSError:
                return False
            return max(parent.st_mtime, parent.st_ctime) >= since
        for st in found:
            if kind in ("stat", "lstat") and stat.S_ISDIR(st.st_mode):
                continue  # a folder only looked at is kept as being a folder: its times change with every file made in it
            if max(st.st_mtime, st.st_ctime) >= since:
                return True
        return False


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _is_cache_file(path: str, cache_folder: str) -> bool:
    """Whether ``path`` is one of the cache's own: the folder, the sweep's stamp, a file named as an entry or a
    temporary file in a two-letter folder, or such a folder that holds those alone (one that holds anything
    else, such as a team folder named ``be``, is a folder of the project, and its files and listing are inputs)."""
    if not _inside(path, cache_folder):
        return False
    parts = os.path.relpath(path, cache_folder).split(os.sep)
    if parts == ["."] or parts == [".swept"]:
        return True
    from .. import cache

    shard, entry, temporary = cache.own_names()
    if not shard.fullmatch(parts[0]):
        return False
    if len(parts) == 2:
        return entry.fullmatch(parts[1]) is not None or temporary.fullmatch(parts[1]) is not None
    try:
        names = os.listdir(path) if len(parts) == 1 else []
    except OSError:
        return False
    return bool(names) and all(entry.fullmatch(n) or temporary.fullmatch(n) for n in names)


def _module_source(path: str) -> str | None:
    """The source file an imported module was read from (a ``.pyc`` of ``__pycache__`` stands for its ``.py``),
    or ``None`` for a module of the installed environment (the prefix: the standard library and the
    ``site-packages`` whose folder time is an input) or of kfdefaults itself (in the key)."""
    folder, name = os.path.split(path)
    if os.path.basename(folder) == "__pycache__" and name.endswith(".pyc"):
        path = os.path.join(os.path.dirname(folder), name.split(".", 1)[0] + ".py")
    if any(_inside(path, p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, _PACKAGE}):
        return None
    return path


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_recording: Recording | None = None
_hooked = False


def _install_hook() -> None:
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True


def _audit(event: str, args: tuple) -> None:
    """Python's audit hook (it cannot be removed; it does nothing outside a recording): note the files opened
    for reading and the folders listed."""
    recording = _recording
    if recording is None:
        return
    try:
        if event == "open":
            path, mode, flags = args
            writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & (os.O_WRONLY | os.O_RDWR))
            if not writes:
                recording.note("file", path)
        elif event in ("os.listdir", "os.scandir"):
            recording.note("folder", args[0])
    except Exception:  # an audit hook that raises would fail the operation it watches
        pass
