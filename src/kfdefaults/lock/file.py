"""``kfdefaults.lock``: reading and writing the file.

The lock file sits beside the project's ``pyproject.toml`` and is TOML, written by ``kfdefaults lock`` and
reviewed in pull requests like a package manager's lock file. Its shape (``version = 1``)::

    version = 1
    kfdefaults = "0.2.0"              # the version that wrote it (information only)
    kubernetes_version = "1.32"       # the schema the profiles were merged with

    [cluster_template]                # the cluster's default PodTemplate, when one applies
    file = "platform/_cluster-template.yaml"
    digest = "sha256:..."

    [profiles.gpu-large]
    flytekit = "sha256:..."           # Resolved.digest() of the profile for each target it resolves for
    flyte2 = "sha256:..."
    files = [                         # every file merged into it, lowest layer first
        { layer = "builtin", package = "kfdefaults", version = "0.2.0", file = "gpu-large.yaml", digest = "sha256:..." },
        { layer = "team", file = "profiles/gpu-large.yaml", digest = "sha256:..." },
    ]

A file of an installed package (the builtin profiles, a platform package) is named by the package and its name in
the package's folder; any other file by its path relative to the lock file, or, outside the project, its name in
its folder: nothing in it depends on where a machine keeps the files.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any

from ..errors import Finding, KfdefaultsError, Location, ProfileError
from ..inputs import Inputs
from ..read import Document
from ..read.document import error
from ..read.files import read_regular_file
from ..read.toml import load_toml, toml_positions
from ..targets import TARGETS

LOCK_FILE = "kfdefaults.lock"
"""The lock file's name, beside the project's ``pyproject.toml``."""

FORMAT = 1
"""The ``version`` of the file's shape this code reads and writes."""

MAX_LOCK_BYTES = 2 << 20
"""Largest lock file read (2 MiB: a profile takes about a kilobyte, so some two thousand profiles; tomllib, which
is pure Python, reads it in about a second)."""

HEADER = (
    "# kfdefaults.lock: the layers and files each profile of this project is made of, and what they merge to.\n"
    "# Written by `kfdefaults lock`; `kfdefaults lock --upgrade` rewrites it after a profile changes. Review it\n"
    "# like code: while it is here, render, validate and Elastic(profile=...) fail rather than use other files.\n"
)

_FILE_KEYS = {"layer": True, "file": True, "digest": True, "package": False, "version": False}
"""The keys of a ``files`` entry, and whether each is required."""


def sha256(raw: bytes) -> str:
    """``sha256:<64 hex digits>`` of ``raw``: how the lock file names a file's content."""
    return "sha256:" + hashlib.sha256(raw).hexdigest()


class Lock:
    """A lock file as read.

    Attributes:
        path: The file.
        digest: :func:`sha256` of its bytes (the ``kfdefaults.io/lock`` annotation of registered pods).
        data: Its content: ``{"version", "kfdefaults", "kubernetes_version", "cluster_template"?, "profiles":
            {name: {"files": [{"layer", "file", "digest", "package"?, "version"?}], target: digest}}}``.
        doc: The parsed document, for the ``FILE:LINE:COLUMN`` of each entry.
    """

    def __init__(self, path: str, digest: str, data: dict[str, Any], doc: Document) -> None:
        self.path, self.digest, self.data, self.doc = path, digest, data, doc

    @property
    def profiles(self) -> dict[str, dict[str, Any]]:
        return self.data.get("profiles", {})

    def location(self, *path: str | int) -> Location:
        """Where the entry at ``path`` is written (the file's first line when unknown)."""
        return self.doc.location(path) if path else Location(self.path, 1, 1)


def read_lock(path: str, inputs: Inputs | None = None) -> Lock:
    """Read and check the lock file at ``path``; ``inputs`` records it.

    Raises:
        ProfileError: it cannot be read, is larger than :data:`MAX_LOCK_BYTES`, is not UTF-8 TOML, or is not of
            the shape above, each at its ``FILE:LINE:COLUMN``.
    """
    raw = read_regular_file(path, MAX_LOCK_BYTES, "lock file", inputs)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(path, raw[: e.start].count(b"\n") + 1, 1, "the lock file is not UTF-8 text") from None
    data = load_toml(text, path)
    doc = toml_positions(text, Document(path, data))
    findings = _shape_problems(data, doc)
    if findings:
        raise ProfileError(findings)
    return Lock(path, sha256(raw), data, doc)


def _shape_problems(data: dict[str, Any], doc: Document) -> list[Finding]:
    """What makes ``data`` not a lock file of :data:`FORMAT`, each at its place."""
    def bad(path: tuple, message: str) -> Finding:
        return Finding(doc.location(path), ".".join(str(p) for p in path), message + "; `kfdefaults lock --upgrade` "
                       "writes the file again")

    if type(data.get("version")) is not int or data["version"] != FORMAT:
        return [bad(("version",), f"not a lock file this kfdefaults reads (version {FORMAT} expected)")]
    out = [bad((key,), "must be a string") for key in ("kfdefaults", "kubernetes_version")
           if key in data and not isinstance(data[key], str)]
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict):
        return out + [bad(("profiles",), "must be a table of profiles")]
    for name, entry in profiles.items():
        files = entry.get("files") if isinstance(entry, dict) else None
        if not isinstance(files, list):
            out.append(bad(("profiles", name), "must be a table with a `files` list"))
            continue
        for key, value in entry.items():
            if key != "files" and (key not in TARGETS or not _is_digest(value)):
                out.append(bad(("profiles", name, key), f"must be a digest per target ({', '.join(TARGETS)}: "
                                                        "`sha256:` and 64 hex digits) or `files`"))
        for i, item in enumerate(files):
            if not (isinstance(item, dict) and all(isinstance(item.get(k), str) for k, need in _FILE_KEYS.items() if need)
                    and all(k in _FILE_KEYS and isinstance(v, str) for k, v in item.items())
                    and item["layer"] in ("builtin", "platform", "team") and _is_digest(item["digest"])):
                out.append(bad(("profiles", name, "files", i), "must be a table of `layer`, `file`, `digest` (and "
                                                              "`package`, `version` for a file of a package)"))
    template = data.get("cluster_template")
    if template is not None and not (isinstance(template, dict) and isinstance(template.get("file"), str)
                                     and _is_digest(template.get("digest"))):
        out.append(bad(("cluster_template",), "must be a table of `file` and `digest`"))
    return out


def _is_digest(value: Any) -> bool:
    """Whether ``value`` is a digest as :func:`sha256` writes it."""
    return isinstance(value, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", value) is not None


def write_lock(path: str, data: dict[str, Any]) -> None:
    """Write ``data`` (the shape :class:`Lock` reads) to ``path``, whole or not at all: a temporary file beside it
    (``.kfdefaults.lock.tmp``, the one name every run uses, so that a run killed mid-write leaves nothing more
    behind), renamed over it. A lock file that is a link is written where the link points; its mode is kept.

    Raises:
        KfdefaultsError: the folder cannot be written, or a name in ``data`` cannot be written as UTF-8.
    """
    import tomli_w

    try:
        text = (HEADER + "\n" + tomli_w.dumps(data, multiline_strings=False)).encode("utf-8")
    except UnicodeEncodeError as e:
        raise KfdefaultsError(f"cannot write {path}: a file name is not UTF-8 text ({e.object[e.start:e.end]!r})") from None
    target = os.path.realpath(path)
    temporary = os.path.join(os.path.dirname(target), ".kfdefaults.lock.tmp")
    try:
        mode = os.stat(target).st_mode & 0o777 if os.path.exists(target) else None
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # as any file the user writes
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(text)
            os.chmod(temporary, mode)
            os.replace(temporary, target)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as e:
        raise KfdefaultsError(f"cannot write {path}: {e.strerror or e}") from None
