"""A cache of profile files already parsed and validated, so that unchanged files cost a hash and a read.

Entries are keyed by the file's bytes and by everything else that decides the outcome: the format of the
entry, kfdefaults' own code (its version and a fingerprint of its source files), the kubernetes-validate
schemas and the Kubernetes version checked against. A changed file, a new kfdefaults or a new schema is a new
key; an entry is never reused for anything else, so the cache is never wrong. Only files that validate are
cached (an invalid file is read again, to report its errors). Writes are atomic (a temporary file renamed),
and any trouble reading or writing the cache is treated as a miss: deleting the folder at any time is safe.

Where: ``$KFDEFAULTS_CACHE_DIR``, else ``$XDG_CACHE_HOME/kfdefaults``, else ``~/.cache/kfdefaults``.
``KFDEFAULTS_NO_CACHE=1`` (or ``true``, ``yes``) turns it off.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

from . import __version__
from .settings import CACHE_DIR_ENV, NO_CACHE_ENV, flag
from .smp import schema

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

FORMAT = 2
"""Version of the entry layout; bump when the stored fields change."""


def cache_dir() -> str | None:
    """The cache folder, or ``None`` when the cache is turned off."""
    if flag(NO_CACHE_ENV):
        return None
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kfdefaults")


def source_files() -> list[str]:
    """Every Python source file of the installed kfdefaults, every subpackage included, as paths relative to
    the package folder, sorted (what :func:`_code_fingerprint` covers)."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = []
    for root, folders, files in os.walk(here):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        found.extend(os.path.relpath(os.path.join(root, f), here) for f in files if f.endswith(".py"))
    return sorted(found)


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """kfdefaults' version, every one of its source files (path, size, time) and the kubernetes-validate version:
    a change to any module of the package is a new key for every entry."""
    parts = [f"kfdefaults {__version__}", f"format {FORMAT}"]
    here = os.path.dirname(os.path.abspath(__file__))
    for relative in source_files():
        st = os.stat(os.path.join(here, relative))
        parts.append(f"{relative} {st.st_size} {st.st_mtime_ns}")
    parts.append(f"kubernetes-validate {schema.schema_package_version()}")
    return digest("\n".join(parts).encode("utf-8", "surrogatepass"))


def key(content: bytes, *context: str) -> str:
    """The cache key of a file's bytes in a context (``"profile"``, the Kubernetes version, ...)."""
    return digest(_code_fingerprint().encode(), *(part.encode("utf-8", "surrogatepass") for part in context), content)


def _path(entry_key: str) -> str | None:
    folder = cache_dir()
    return None if folder is None else os.path.join(folder, entry_key[:2], entry_key[2:] + ".json")


def load(entry_key: str) -> Any | None:
    """The value stored under ``entry_key``, or ``None`` (missing, unreadable, or the cache is off)."""
    path = _path(entry_key)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return None


def store(entry_key: str, value: Any) -> None:
    """Store plain JSON data under ``entry_key``; failures are ignored (the next run is a miss)."""
    path = _path(entry_key)
    if path is None:
        return
    import tempfile

    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)  # one write, not one per token
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, TypeError, ValueError):
        pass


def load_patch_schema(kubernetes_version: str | None) -> None:
    """Hand :mod:`kfdefaults.smp.schema` the reduced PodTemplate definitions of ``kubernetes_version`` from the
    cache, computing and storing them on a miss: later processes merge and print without reading the 1.3 MB
    schema file.

    Raises:
        ValueError: no schema for that version.
    """
    minor = schema.normalize_version(kubernetes_version)
    if cache_dir() is None:
        return
    entry_key = key(b"", "patch-definitions", minor, schema.schema_package_version())
    stored = load(entry_key)
    if not isinstance(stored, dict) or not stored:
        stored = schema.reduced_definitions(minor)
        store(entry_key, stored)
    schema.preload(minor, stored)
