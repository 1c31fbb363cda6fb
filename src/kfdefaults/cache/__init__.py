"""A cache of profile files already parsed and validated, so that unchanged files cost a hash and a read.

Entries are keyed by the file's bytes and by everything else that decides the outcome: the format of the
entry, kfdefaults' own code (its version and a fingerprint of its source files), the kubernetes-validate
schemas and the Kubernetes version checked against. A changed file, a new kfdefaults or a new schema is a new
key; an entry is never reused for anything else, so the cache is never wrong. Only files that validate are
cached (an invalid file is read again, to report its errors).

Nothing in the folder is trusted: an entry is read only if it is a regular file of this user no larger than
:data:`MAX_ENTRY_BYTES` (opened without following a symbolic link and without waiting on a pipe), whose first
line names its own key and the digest of the rest; each user then checks the shape of the value (:func:`load`
takes the check). Anything else is a miss. Any trouble reading or writing is a miss too: deleting the folder
at any time is safe (``kfdefaults cache clear``).

Every file is written whole, and through no link (:func:`write_file`): into a fresh temporary file of its
folder, created with ``O_EXCL`` (so that no file or link already at that name, dangling or not, is opened),
then renamed over its name (a link there is replaced, never written through). The entries, the sweep's stamp
and ``kfdefaults.lock`` (:func:`kfdefaults.lock.file.write_lock`) are all written so.

The folder is used only if no one but this user can change what it holds, as ``ssh`` refuses a key file that
others can write (OpenSSH ``misc.c``, ``safe_path``): the folder (links resolved) and each of its two-letter
folders must be owned by this user (``os.geteuid()``) and writable by no group nor others; each folder above it
must be owned by this user or root and writable by no one else, unless its sticky bit keeps others from
renaming what it holds (``/tmp``), or its group is this user's own group (a user private group); each symbolic
link on the way must be this user's or root's. Folders the cache makes are made with mode ``0o700``. Otherwise kfdefaults runs without the cache, and says why once per
process on standard error (:func:`cache_dir`): an entry that another user rewrote, its digest recomputed, would
change what ``render`` prints and ``Elastic()`` registers.

The folder is kept under :data:`MAX_CACHE_BYTES`: at most once every :data:`SWEEP_SECONDS`, a write sweeps it
(:func:`sweep`), removing temporary files left by a killed process and the entries used least recently until
it holds three quarters of the cap. An entry's time is refreshed when it is read a day or more after it was
last written or refreshed.

Where: ``$KFDEFAULTS_CACHE_DIR``, else ``$XDG_CACHE_HOME/kfdefaults``, else ``~/.cache/kfdefaults``.
``KFDEFAULTS_NO_CACHE=1`` (or ``true``, ``yes``) turns it off.
"""

from __future__ import annotations

import functools
import marshal
import os
import stat
import time
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

from ..version import __version__
from .folder import cache_dir, configured_dir, private_folder_problem, recheck, write_file

if TYPE_CHECKING:
    from typing import Any, Callable

try:  # the C module hashlib itself uses for BLAKE2; importing hashlib also loads OpenSSL, a few ms more
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover - Python builds without it
    from hashlib import blake2b as _blake2b


def digest(*parts: bytes) -> str:
    """A 256-bit BLAKE2b digest of the parts (separated, so that ``("ab", "c")`` differs from ``("a", "bc")``)."""
    h = _blake2b(digest_size=32)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()

FORMAT = 3
"""Version of the entry layout; bump when the stored fields change."""

MAX_ENTRY_BYTES = 4 << 20
"""Largest entry written or read (4 MiB). The largest a valid profile file makes is well under a MiB (a file
is at most 64 KiB of text, aliases expanded); the Kubernetes definitions kept for merging are about 40 KB."""

MAX_CACHE_BYTES = 128 << 20
"""Size the folder is kept under (128 MiB): about 25,000 profile files of a few KiB, with their merges."""

SWEEP_SECONDS = 3600
"""Least time between two sweeps of the folder (one hour)."""

STALE_TEMPORARY_SECONDS = 600
"""Age at which a temporary file is left over from a killed write rather than being written (ten minutes)."""

_HEADER = b"kfdefaults-cache"
_SWEPT = ".swept"  # the file whose modification time is that of the last sweep


@functools.lru_cache(maxsize=1)
def own_names() -> tuple:
    """The patterns of the names the cache gives: a shard folder, an entry, a temporary file (and the names of
    earlier versions' temporary files). Compiled when a sweep needs them: the replay of a render imports no ``re``."""
    import re

    return (re.compile(r"[0-9a-f]{2}"), re.compile(r"[0-9a-f]{62}\.json"),
            re.compile(r"(?:[0-9a-f]{62}\..*|tmp[a-z0-9_]{8})\.tmp"))


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The installed kfdefaults' folder."""


def source_files() -> list[str]:
    """Every Python source file of the installed kfdefaults, every subpackage included, as paths relative to
    the package folder, sorted (what :func:`_code_fingerprint` covers)."""
    here = _PACKAGE
    found = []
    for root, folders, files in os.walk(here):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        found.extend(os.path.relpath(os.path.join(root, f), here) for f in files if f.endswith(".py"))
    return sorted(found)


@functools.lru_cache(maxsize=1)
def source_stamp() -> str:
    """kfdefaults' version and every one of its source files (path, size, time), as one line per part: what
    says that the code is the same as when something was cached (a few hundred ``stat`` calls, no import)."""
    parts = [f"kfdefaults {__version__}", f"format {FORMAT}"]
    here = _PACKAGE
    for relative in source_files():
        st = os.stat(os.path.join(here, relative))
        parts.append(f"{relative} {st.st_size} {st.st_mtime_ns}")
    return "\n".join(parts)


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """:func:`source_stamp` and the kubernetes-validate version: a change to any module of the package or a new
    schema is a new key for every entry."""
    # lazy: the schema module imports json and re, which the replay of a render (through source_stamp) skips
    from ..smp import schema

    stamp = f"{source_stamp()}\nkubernetes-validate {schema.schema_package_version()}"
    return digest(stamp.encode("utf-8", "surrogatepass"))


def key(content: bytes, *context: str) -> str:
    """The cache key of a file's bytes in a context (``"profile"``, the Kubernetes version, ...)."""
    return digest(_code_fingerprint().encode(), *(part.encode("utf-8", "surrogatepass") for part in context), content)


def _path(entry_key: str) -> str | None:
    folder = cache_dir()
    return None if folder is None else os.path.join(folder, entry_key[:2], entry_key[2:] + ".json")


def load(entry_key: str, valid: Callable[[Any], bool] | None = None, *, fast: bool = False) -> Any | None:
    """The value stored under ``entry_key``, or ``None`` (missing, unreadable, not this key's, damaged, of
    another shape, or the cache is off).

    Args:
        entry_key: A key from :func:`key`.
        valid: Says whether a value read back has the shape its user stores; a value it refuses (or raises on)
            is a miss.
        fast: The entry was stored with ``fast=True`` (:func:`store`).
    """
    path = _path(entry_key)
    if path is None:
        return None
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)  # a symbolic link fails, a pipe opens without waiting for a writer
    except OSError:
        return None
    try:
        with open(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES or not _own(st):
                return None
            raw = f.read(MAX_ENTRY_BYTES + 1)
            if time.time() - st.st_mtime > 86400:
                _refresh(fd)
        header, _, body = raw.partition(b"\n")
        if header.split(b" ") != [_HEADER, _format(fast), entry_key.encode(), digest(body).encode()]:
            return None
        value = marshal.loads(body) if fast else _json().loads(body)
        if valid is not None and not valid(value):
            return None
        return value
    except (OSError, ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError, EOFError):
        return None


def _format(fast: bool) -> bytes:
    return f"{FORMAT}{'-marshal' if fast else ''}".encode()


def _json() -> Any:
    import json  # with ``re``, about 5 ms of start-up a replayed render does without

    return json


def _refresh(fd: int) -> None:
    """Mark an entry used now (its modification time), so that a sweep keeps it; failures are ignored."""
    try:
        os.utime(fd)
    except (OSError, NotImplementedError):
        pass


def store(entry_key: str, value: Any, *, fast: bool = False) -> None:
    """Store plain JSON data under ``entry_key``; failures are ignored (the next run is a miss). A value over
    :data:`MAX_ENTRY_BYTES` is not stored.

    ``fast=True`` stores it with :mod:`marshal` instead (the interpreter's own format, read without importing
    anything; the digest in the entry's first line is checked before a byte of it is decoded), for the
    replay of a render, where the few milliseconds of importing :mod:`json` count.
    """
    path = _path(entry_key)
    if path is None:
        return
    try:
        body = (marshal.dumps(value) if fast else
                _json().dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if len(body) > MAX_ENTRY_BYTES - 256:
            return
        folder = os.path.dirname(path)
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except FileNotFoundError:  # the cache folder was removed: checked and made again at the next use
            recheck()
            return
        if private_folder_problem(os.lstat(folder)) is not None:  # a link, or a folder someone else can write
            return
        header = b" ".join([_HEADER, _format(fast), entry_key.encode(), digest(body).encode()]) + b"\n"
        write_file(path, header + body, prefix=entry_key[2:] + ".")
    except (OSError, TypeError, ValueError, RecursionError):
        return
    _sweep_now_and_then(os.path.dirname(folder))


def _own(st: os.stat_result) -> bool:
    """Whether a file is this user's: the cache's folders are, so an entry of another owner was not written by it."""
    return not hasattr(os, "geteuid") or st.st_uid == os.geteuid()


def _sweep_now_and_then(folder: str) -> None:
    """Sweep ``folder`` if the last sweep was :data:`SWEEP_SECONDS` ago or more (one ``lstat`` otherwise): the time
    of the stamp file :data:`_SWEPT`, written again (:func:`write_file`) before the sweep."""
    stamp = os.path.join(folder, _SWEPT)
    try:
        if time.time() - os.lstat(stamp).st_mtime < SWEEP_SECONDS:
            return
    except OSError:
        pass
    try:
        write_file(stamp, b"", prefix=_SWEPT + ".")
    except OSError:
        return
    sweep(folder)


def _own_files(folder: str) -> list[tuple[str, os.stat_result | None, str]]:
    """``(path, its lstat or None, "entry" | "temporary")`` of every file of the cache in ``folder``: the ones
    named as the cache names them, in the folders it names; nothing else in ``folder`` is touched."""
    found: list[tuple[str, os.stat_result | None, str]] = []
    try:
        shard_name, entry_name, temporary_name = own_names()
        shards = [e.path for e in os.scandir(folder) if shard_name.fullmatch(e.name) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return found
    for shard in shards:
        try:
            with os.scandir(shard) as listing:
                for item in listing:
                    kind = ("entry" if entry_name.fullmatch(item.name) else
                            "temporary" if temporary_name.fullmatch(item.name) else None)
                    if kind is None:
                        continue
                    try:
                        found.append((item.path, item.stat(follow_symlinks=False), kind))
                    except OSError:
                        found.append((item.path, None, kind))
        except OSError:
            continue
    return found


def sweep(folder: str | None = None, *, max_bytes: int = MAX_CACHE_BYTES, now: float | None = None) -> int:
    """Keep the cache folder under ``max_bytes``; return how many files were removed.

    Removes temporary files older than :data:`STALE_TEMPORARY_SECONDS` (a write killed half-way), anything
    named as an entry that is not a regular file (a pipe, a link), then, if the entries add up to more than
    ``max_bytes``, the least recently used ones (oldest modification time) until they hold three quarters of it.
    Files being removed by another process at the same time are skipped.
    """
    folder = cache_dir() if folder is None else folder
    if folder is None:
        return 0
    now = time.time() if now is None else now
    removed, kept, total = 0, [], 0
    for path, st, kind in _own_files(folder):
        if st is not None and kind == "entry" and stat.S_ISREG(st.st_mode):
            kept.append((st.st_mtime, st.st_size, path))
            total += st.st_size
        elif kind == "entry" or st is None or now - st.st_mtime > STALE_TEMPORARY_SECONDS:
            removed += _remove(path)
    if total > max_bytes:
        for _, size, path in sorted(kept):
            removed += _remove(path)
            total -= size
            if total <= max_bytes * 3 // 4:
                break
    return removed


def clear(folder: str | None = None) -> int:
    """Remove every entry and temporary file of the cache folder (nothing else in it); return how many."""
    folder = cache_dir() if folder is None else folder
    if folder is None:
        return 0
    removed = sum(_remove(path) for path, _, _ in _own_files(folder))
    for name in os.listdir(folder) if os.path.isdir(folder) else []:
        if own_names()[0].fullmatch(name):
            try:
                os.rmdir(os.path.join(folder, name))  # only if empty
            except OSError:
                pass
    return removed


def usage(folder: str | None = None) -> tuple[int, int]:
    """``(entries, bytes)`` the cache folder holds."""
    folder = cache_dir() if folder is None else folder
    entries = [st.st_size for _, st, kind in _own_files(folder) if kind == "entry" and st is not None] if folder else []
    return len(entries), sum(entries)


def _remove(path: str) -> int:
    try:
        os.unlink(path)
        return 1
    except OSError:
        return 0


def _are_definitions(value: Any) -> bool:
    """Whether ``value`` has the shape of :func:`kfdefaults.smp.schema.reduced_definitions`' answer for a PodTemplate."""
    return (isinstance(value, dict) and isinstance(value.get("io.k8s.api.core.v1.PodTemplate"), dict)
            and all(isinstance(name, str) and isinstance(d, dict) for name, d in value.items()))


def load_patch_schema(kubernetes_version: str | None) -> None:
    """Hand :mod:`kfdefaults.smp.schema` the reduced PodTemplate definitions of ``kubernetes_version`` from the
    cache, computing and storing them on a miss: later processes merge and print without reading the 1.3 MB
    schema file.

    Raises:
        ValueError: no schema for that version.
    """
    # lazy: as in _code_fingerprint
    from ..smp import schema

    minor = schema.normalize_version(kubernetes_version)
    if cache_dir() is None:
        return
    entry_key = key(b"", "patch-definitions", minor, schema.schema_package_version())
    stored = load(entry_key, _are_definitions)
    if stored is None:
        stored = schema.reduced_definitions(minor)
        store(entry_key, stored)
    schema.preload(minor, stored)
