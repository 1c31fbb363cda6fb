"""Where the cache lives, whether it may be used, and how every file kfdefaults writes is written.

The folder (``$KFDEFAULTS_CACHE_DIR``, else ``$XDG_CACHE_HOME/kfdefaults``, else ``~/.cache/kfdefaults``) is
used only if no one but this user can change what it holds (:func:`cache_dir`; the rule is in
:mod:`kfdefaults.cache`). Every file is written whole, through no link, by :func:`write_file`: the cache's
entries and its sweep's stamp, and ``kfdefaults.lock``.
"""

from __future__ import annotations

import os
import stat

from ..settings import CACHE_DIR_ENV, NO_CACHE_ENV, flag


def configured_dir() -> str:
    """The cache folder the environment names (``$KFDEFAULTS_CACHE_DIR``, else ``$XDG_CACHE_HOME/kfdefaults``, else
    ``~/.cache/kfdefaults``), whether or not it may be used."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kfdefaults")


_checked: dict[str, str | None] = {}
"""Each folder :func:`configured_dir` named in this process -> its real path once made and found safe, else
``None``: checked once per process and folder (a few ``stat`` calls), said once."""


def recheck() -> None:
    """Check the folder again at its next use (it was removed: it is made again then)."""
    _checked.clear()


def cache_dir() -> str | None:
    """The cache folder, links resolved (made, mode ``0o700``, if missing), or ``None`` when the cache is turned off,
    the folder cannot be made, or someone else could change what it holds (said once on standard error, as
    ``kfdefaults: warning: not using the cache at DIR: ...``; the command runs without the cache)."""
    if flag(NO_CACHE_ENV):
        return None
    folder = configured_dir()
    if folder not in _checked:
        _checked[folder] = _safe_folder(folder)
    return _checked[folder]


def _safe_folder(folder: str) -> str | None:
    """``folder``'s real path, made if missing, when only this user can change what it holds; else ``None``."""
    try:
        real, problem = _real_path(folder)
        if problem is None:
            missing, path = [], real
            while not os.path.lexists(path):
                missing.append(path)
                path = os.path.dirname(path)
            for path in reversed(missing):  # os.makedirs gives the folders above the last one the umask's mode
                try:
                    os.mkdir(path, 0o700)
                except FileExistsError:
                    pass
            problem = _others_can_write(real)
    except OSError:  # it cannot be made or looked at: every use would be a miss
        return None
    if problem is None:
        return real
    import sys

    sys.stderr.write(f"kfdefaults: warning: not using the cache at {folder}: {problem}\n")
    return None


def _real_path(path: str, depth: int = 0) -> tuple[str, str | None]:
    """``path`` with every symbolic link resolved, as :func:`os.path.realpath` (a missing tail kept as written), and
    what is wrong: a link met on the way owned by another user than this one or root, who can point it elsewhere
    (what Linux's ``fs.protected_symlinks`` keeps a process from following out of ``/tmp``; ``realpath`` would).

    Raises:
        OSError: a link loops (more than 40 met), or a folder cannot be looked at.
    """
    if depth > 40:
        raise OSError(f"too many levels of symbolic links: {path}")
    real, parts = os.sep, [p for p in os.path.join(os.getcwd(), path).split(os.sep) if p not in ("", ".")]
    for i, part in enumerate(parts):
        if part == "..":  # of what is reached so far, links resolved, as the kernel reads it
            real = os.path.dirname(real)
            continue
        candidate = os.path.join(real, part)
        try:
            st = os.lstat(candidate)
        except FileNotFoundError:
            return os.path.normpath(os.path.join(candidate, *parts[i + 1:])), None
        if not stat.S_ISLNK(st.st_mode):
            real = candidate
            continue
        if hasattr(os, "geteuid") and st.st_uid not in (0, os.geteuid()):
            return candidate, f"it is reached through {candidate}, a symbolic link of uid {st.st_uid}, who can point it elsewhere"
        real, problem = _real_path(os.path.join(real, os.readlink(candidate)), depth + 1)
        if problem is not None:
            return real, problem
    return real, None


def private_folder_problem(st: os.stat_result) -> str | None:
    """Why a folder of the cache, as ``os.lstat`` saw it, is not this user's alone (``None`` when it is): not a
    folder (a link, a file), owned by another user, or writable by its group or others."""
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if uid is not None and st.st_uid != uid:
        return f"it is owned by uid {st.st_uid}, not by this user (uid {uid})"
    if uid is not None and st.st_mode & 0o022:
        return f"it is writable by {'others' if st.st_mode & 0o002 else 'its group'} (mode {st.st_mode & 0o7777:04o})"
    return None


def _others_can_write(real: str) -> str | None:
    """What lets someone else change what the folder ``real`` (a real path) holds: the folder itself
    (:func:`private_folder_problem`), or a folder above it owned by another user than this one or root, or
    writable by others (or by a group not this user's own) without the sticky bit; ``None`` when nothing does."""
    problem = private_folder_problem(os.stat(real))
    if problem is not None or not hasattr(os, "geteuid"):
        return problem
    uid, gid, above = os.geteuid(), os.getegid(), real
    while os.path.dirname(above) != above:
        above = os.path.dirname(above)
        st = os.stat(above)
        mode = st.st_mode & 0o7777
        if st.st_uid not in (0, uid):
            return f"the folder above it, {above}, is owned by uid {st.st_uid}, who can put another folder in its place"
        if not mode & stat.S_ISVTX and (mode & 0o002 or (mode & 0o020 and st.st_gid != gid)):
            return (f"the folder above it, {above}, is writable by {'others' if mode & 0o002 else 'its group'} "
                    f"(mode {mode:04o}, no sticky bit), who can put another folder in its place")
    return None


def write_file(path: str, data: bytes, *, prefix: str, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` whole or not at all, through no link: into a fresh temporary file of ``path``'s
    folder, ``PREFIX<random>.tmp``, which :func:`tempfile.mkstemp` creates with ``O_CREAT | O_EXCL`` (a file or a
    link already at that name, dangling or not, is never opened: another name is drawn), given ``mode``
    (``fchmod``; default mkstemp's ``0o600``), then renamed over ``path`` (``os.replace``, which replaces a link
    at ``path`` itself). A process killed half-way leaves the temporary file, never a partial ``path``.

    Raises:
        OSError: the folder cannot be written; the temporary file is removed.
    """
    import tempfile

    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or os.curdir, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            f.write(data)  # one write, not one per token
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
