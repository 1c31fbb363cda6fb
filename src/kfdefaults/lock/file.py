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

    [profiles.gpu-large.results.flytekit]   # what the digest covers, leaf by leaf: the JSON text of each value
    "elastic.max_restarts" = "3"          # (to name the key, old and new value of a result that changed)

A file of an installed package (the builtin profiles, a platform package) is named by the package and its name in
the package's folder; any other file by its path relative to the lock file, or, outside the project, its name in
its folder: nothing in it depends on where a machine keeps the files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from typing import Any

from ..errors import Finding, KfdefaultsError, Location, ProfileError
from ..inputs import Inputs
from ..read import Document
from ..read.document import error
from ..read.files import read_regular_file
from ..read.toml import load_toml, toml_positions
from ..smp.schema import available_versions
from ..cache import write_file
from ..targets import TARGETS
from . import LOCK_FILE

FORMAT = 1
"""The ``version`` of the file's shape this code reads and writes."""

MAX_LOCK_BYTES = 2 << 20
"""Largest lock file read (2 MiB: a profile, its results leaf by leaf for two targets, takes some 4 KB, so some five
hundred profiles; tomllib, which is pure Python, reads it in about a second)."""

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
            {name: {"files": [{"layer", "file", "digest", "package"?, "version"?}], target: digest, "results"?:
            {target: {dotted key: JSON text}}}}}``.
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
            if key == "results":
                out += [bad(("profiles", name, key, *at), "must be a table per target of dotted keys, each the JSON "
                            "text of its value") for at in _results_problems(value)]
            elif key != "files" and (key not in TARGETS or not _is_digest(value)):
                out.append(bad(("profiles", name, key), f"must be a digest per target ({', '.join(TARGETS)}: "
                                                        "`sha256:` and 64 hex digits), `files` or `results`"))
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
    return out or [bad(path, message) for path, message in _field_problems(data)]


def _results_problems(results: Any) -> list[tuple]:
    """Where ``results`` is not ``{target: {dotted key: JSON text}}`` (each key and text at most
    :data:`MAX_RESULT_TEXT` characters, each text JSON); ``[()]`` when it is no table of targets."""
    if not isinstance(results, dict) or not all(k in TARGETS and isinstance(v, dict) for k, v in results.items()):
        return [()]
    out = []
    for target, leaves in results.items():
        for key, text in leaves.items():
            if not isinstance(text, str) or len(key) > MAX_RESULT_TEXT or len(text) > MAX_RESULT_TEXT:
                out.append((target, key))
                continue
            try:
                json.loads(text)
            except (ValueError, RecursionError):  # 4,000 brackets: refused here, not raised
                out.append((target, key))
    return out


MAX_RESULT_TEXT = 4096
"""The longest key or value text of a lock's ``results`` (a command line, a long annotation fit in it)."""


_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+!_-]{0,63}")
"""A version as a package's metadata gives it (PEP 440's characters, at most 64; ``unknown`` when it has none)."""

_PACKAGE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?")
"""A distribution's name (the Python packaging specification's "Names and normalization"), at most 100 characters."""


def _field_problems(data: dict[str, Any]) -> list[tuple[tuple, str]]:
    """``(path, what is wrong)`` for each value of a lock file of the right shape that no ``kfdefaults lock``
    writes, checked as a profile's values are: a Kubernetes version with no schema here
    (:func:`kfdefaults.smp.schema.available_versions`), a version or package name of other characters, a
    ``file`` that is absolute, climbs out (``..``), is empty or holds a control character. :func:`write_lock`
    writes nothing that this refuses."""
    out: list[tuple[tuple, str]] = []
    known = available_versions()
    if "kubernetes_version" in data and data["kubernetes_version"] not in known:
        out.append((("kubernetes_version",), f"must be a Kubernetes minor version this kfdefaults has a schema for "
                                             f"({', '.join(known)})"))
    if "kfdefaults" in data and not _VERSION.fullmatch(data["kfdefaults"]):
        out.append((("kfdefaults",), "must be a version (letters, digits and . + ! _ -, at most 64)"))
    template = data.get("cluster_template")
    if template is not None and _path_problem(template["file"]):
        out.append((("cluster_template", "file"), _path_problem(template["file"])))
    for name, entry in data.get("profiles", {}).items():
        for i, item in enumerate(entry["files"]):
            where = ("profiles", name, "files", i)
            if _path_problem(item["file"]):
                out.append(((*where, "file"), _path_problem(item["file"])))
            if "package" in item and not _PACKAGE.fullmatch(item["package"]):
                out.append(((*where, "package"), "must be a package name (letters, digits and . _ -, at most 100)"))
            if "version" in item and not _VERSION.fullmatch(item["version"]):
                out.append(((*where, "version"), "must be a version (letters, digits and . + ! _ -, at most 64)"))
    return out


def _path_problem(file: str) -> str | None:
    """Why ``file`` is no path the lock writes (relative, ``/`` separators, in the project; :func:`project_path
    <kfdefaults.lock.entries.project_path>`), or ``None``."""
    if not file:
        return "must name a file"
    bad = next((c for c in file if unicodedata.category(c) in ("Cc", "Cf")), None)
    if bad is not None:
        return f"must not hold a control or format character (U+{ord(bad):04X})"
    if file.startswith(("/", "\\\\")) or re.match(r"[A-Za-z]:[/\\\\]", file):
        return "must be a path relative to the lock file's folder, not an absolute one"
    if ".." in re.split(r"[/\\\\]", file):
        return "must not climb out of the lock file's folder (..)"
    return None


def _is_digest(value: Any) -> bool:
    """Whether ``value`` is a digest as :func:`sha256` writes it."""
    return isinstance(value, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", value) is not None


def write_lock(path: str, data: dict[str, Any]) -> None:
    """Write ``data`` (the shape :class:`Lock` reads) to ``path``, whole or not at all and through no link
    (:func:`kfdefaults.cache.write_file`: a fresh temporary file beside it, ``.kfdefaults.lock.<random>.tmp``, made
    with ``O_EXCL``, renamed over it), as :func:`lock_text`. An existing lock file's mode is kept.

    Raises:
        ProfileError: ``path`` is a symbolic link (:func:`refuse_link`).
        KfdefaultsError: the folder cannot be written, or ``data`` holds what the lock file cannot hold (a name
            that is not text, a field :func:`read_lock` would refuse).
    """
    refuse_link(path)
    try:
        text = (HEADER + "\n" + lock_text(data)).encode("utf-8")
    except ValueError as e:
        raise KfdefaultsError(f"cannot write {path}: {e}") from None
    problems = _field_problems(data)
    if problems:
        where, message = problems[0]
        value: Any = data
        for part in where:
            value = value[part]
        raise KfdefaultsError(f"cannot write {path}: {'.'.join(map(str, where))} ({value!r}) {message}")
    try:
        try:
            mode = os.lstat(path).st_mode & 0o777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # as any file the user writes
        write_file(path, text, prefix="." + LOCK_FILE + ".", mode=mode)
    except OSError as e:
        raise KfdefaultsError(f"cannot write {path}: {e.strerror or e}") from None


def refuse_link(path: str) -> None:
    """Refuse to write the lock file at ``path`` when it is a symbolic link: a repository that ships
    ``kfdefaults.lock -> ~/.bashrc`` must not have ``kfdefaults lock`` write there, and replacing the link with a
    file would change what the project holds without a word.

    Raises:
        ProfileError: it is a link, at ``path:1:1``, naming where it points.
    """
    try:
        target = os.readlink(path)
    except OSError:  # not a link (or not there)
        return
    raise ProfileError([Finding(Location(path, 1, 1), "", (
        f"the lock file is a symbolic link (to {target!r}): kfdefaults writes no file through a link; put the file "
        f"itself in its place (or remove the link) and run `kfdefaults lock` again"))])


SAFE_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/-+@=,:_ ")
"""The characters a string of the lock file holds as they are: ASCII letters and digits, ``. _ / - + @ = , :`` and
the space. Every other one is written as a TOML escape (``\\u0024`` for ``$``), so that no name of a repository
puts a ``$``, a backquote, ``;``, ``|``, ``&``, parentheses, ``<``, ``>``, a quote, a newline, a control or bidi
character in the text a reviewer or a shell reads."""


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string, each character outside :data:`SAFE_CHARACTERS` written ``\\uXXXX`` (or
    ``\\UXXXXXXXX`` above U+FFFF): :mod:`tomllib` reads back ``text`` (TOML 1.0, "String").

    Raises:
        ValueError: ``text`` holds a lone surrogate (a file name that is not UTF-8), which TOML cannot hold.
    """
    out = []
    for c in text:
        if c in SAFE_CHARACTERS:
            out.append(c)
            continue
        code = ord(c)
        if 0xD800 <= code <= 0xDFFF:
            raise ValueError(f"a file name is not UTF-8 text ({text!r})")
        out.append(f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}")
    return '"' + "".join(out) + '"'


def lock_text(data: dict[str, Any]) -> str:
    """``data`` as TOML text, laid out as earlier versions wrote it with ``tomli_w`` (scalars, then each table and
    array of tables after a blank line), so that a lock file written again differs only where its data does; every
    key and string written by :func:`toml_string` (a key of letters, digits, ``_`` and ``-`` bare).

    Raises:
        ValueError: a string :func:`toml_string` cannot write.
    """
    def key(name: str) -> str:
        return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else toml_string(name)

    def scalar(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, str):
            return toml_string(value)
        if value == []:
            return "[]"
        raise ValueError(f"a lock file holds no {type(value).__name__}")

    def is_table(value: Any) -> bool:
        return isinstance(value, dict) or (isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value))

    def table(node: dict[str, Any], name: str, in_array: bool) -> list[str]:
        scalars = [(k, v) for k, v in node.items() if not is_table(v)]
        tables = [(k, v) for k, v in node.items() if is_table(v)]
        lines = [f"[[{name}]]" if in_array else f"[{name}]"] if in_array or (name and (scalars or not tables)) else []
        lines += [f"{key(k)} = {scalar(v)}" for k, v in scalars]
        for k, v in tables:
            inner = f"{name}.{key(k)}" if name else key(k)
            for item, item_in_array in ([(i, True) for i in v] if isinstance(v, list) else [(v, False)]):
                if lines:
                    lines.append("")
                lines += table(item, inner, item_in_array)
        return lines

    return "\n".join(table(data, "", False)) + "\n"
