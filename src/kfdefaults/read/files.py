"""Profile files from disk: what may be read (no pipes, devices or oversized files), as bytes, then as text
parsed by the reader its suffix names (:mod:`.yaml`, :mod:`.toml`)."""

from __future__ import annotations

import errno
import os
import stat

from ..inputs import Inputs
from .document import MANIFEST_BUDGET, MAX_FILE_BYTES, Budget, Document, error
from .yaml import parse_yaml, parse_yaml_documents

YAML_SUFFIXES = (".yaml", ".yml")
TOML_SUFFIXES = (".toml",)
PROFILE_SUFFIXES = YAML_SUFFIXES + TOML_SUFFIXES


def read_document(file: str) -> Document:
    """Read one YAML or TOML profile file.

    Args:
        file: Path of a ``.yaml``, ``.yml`` or ``.toml`` file.

    Returns:
        The parsed :class:`Document`.

    Raises:
        ProfileError: the file cannot be read, is too large, or is not valid YAML 1.2 / TOML 1.0, with the
            line and column of the problem.
    """
    return parse_bytes(read_bytes(file), file)


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def path_problem(path: str, want: str) -> str | None:
    """Why ``path`` cannot be read as ``want`` (``"file"`` or ``"folder"``), or ``None`` when it can.

    Says what is there instead: nothing, a broken or looping symbolic link, a pipe or device (which would
    block or never end), a file where a folder is wanted, or no permission to read it.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if os.path.islink(path):
            if e.errno == errno.ELOOP:
                return "a symbolic link that loops (too many levels of symbolic links)"
            return f"a symbolic link to a missing {want} ({os.readlink(path)})"
        return f"no such {want}" if e.errno == errno.ENOENT else f"cannot read: {e.strerror or e}"
    if want == "folder":
        if not stat.S_ISDIR(mode):
            return "not a folder" if stat.S_ISREG(mode) else f"not a folder ({_kind_of(mode)})"
        if not os.access(path, os.R_OK | os.X_OK):
            return "cannot read this folder: permission denied"
        return None
    if not stat.S_ISREG(mode):
        return f"not a profile file ({_kind_of(mode)})"
    if not os.access(path, os.R_OK):
        return "cannot read file: permission denied"
    return None


def read_regular_file(file: str, limit: int, what: str = "file", inputs: Inputs | None = None) -> bytes:
    """The bytes of ``file``, which must be a regular file of at most ``limit`` bytes: opened without waiting
    (a FIFO or a device put in its place is refused, never read), read at most ``limit + 1`` bytes. ``inputs``
    records what was read (:meth:`kfdefaults.inputs.Inputs.file`).

    Raises:
        ProfileError: at ``FILE:1:1``: it cannot be opened, is not a regular file, or is larger than ``limit``.
    """
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise error(file, 1, 1, f"cannot read the {what}: {e.strerror or e}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # before open(): a folder's descriptor makes it raise IsADirectoryError
        os.close(fd)
        raise error(file, 1, 1, f"the {what} is {_kind_of(st.st_mode)}, not a regular file")
    with open(fd, "rb") as f:
        try:
            raw = f.read(limit + 1)
        except OSError as e:
            raise error(file, 1, 1, f"cannot read the {what}: {e.strerror or e}") from None
    if len(raw) > limit:
        raise error(file, 1, 1, f"the {what} is larger than {limit >> 10} KiB")
    if inputs is not None:
        inputs.file(file, raw, st)
    return raw


def read_bytes(file: str, inputs: Inputs | None = None) -> bytes:
    """A profile file's bytes; ``inputs`` records them.

    Raises:
        ProfileError: the file cannot be read (missing, a broken link, a folder, a pipe, a device, no
            permission) or is larger than :data:`MAX_FILE_BYTES`.
    """
    problem = path_problem(file, "file")
    if problem is not None:  # checked first: opening a pipe would block, a device may never end
        raise error(file, 1, 1, problem)
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb") as f:
            st = os.fstat(fd)
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise error(file, 1, 1, f"cannot read file: {e.strerror or e}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise error(file, 1, 1, f"file is larger than {MAX_FILE_BYTES // 1024} KiB; a profile is a few KiB")
    if not stat.S_ISREG(st.st_mode):  # replaced between the check and the open
        raise error(file, 1, 1, f"not a profile file ({_kind_of(st.st_mode)})")
    if inputs is not None:
        inputs.file(file, raw, st)
    return raw


def read_manifests(file: str, budget: Budget = MANIFEST_BUDGET) -> list[Document]:
    """The YAML (or JSON) documents of a file of Kubernetes manifests, as ``kubectl get ... -o yaml`` prints them;
    ``-`` reads standard input.

    Unlike a profile, the file may be a pipe (``kubectl get pod P -o yaml | kfdefaults verify -``, or ``<(...)``)
    and may hold several documents (``---``); it is read up to ``budget.file_bytes``.

    Raises:
        ProfileError: the file cannot be read, a folder, larger than the budget, not UTF-8, or not valid YAML 1.2,
            located at ``FILE:LINE:COLUMN`` (``-`` names standard input).
    """
    return parse_yaml_documents(decode_text(read_input(file, budget.file_bytes), file), file, budget)


def read_input(file: str, limit: int) -> bytes:
    """The bytes of a file of manifests, at most ``limit`` of them: a regular file, a pipe (``<(kubectl ...)``),
    or, for ``-``, standard input.

    Raises:
        ProfileError: at ``FILE:1:1``: the file cannot be read, is a folder, or holds more than ``limit`` bytes.
    """
    import sys

    if file == "-":
        raw = sys.stdin.buffer.read(limit + 1)
    else:
        if os.path.isdir(file):
            raise error(file, 1, 1, "a folder, not a file of manifests")
        try:
            with open(file, "rb") as f:
                raw = f.read(limit + 1)
        except OSError as e:
            raise error(file, 1, 1, path_problem(file, "file") if e.errno == errno.ENOENT else
                        f"cannot read file: {e.strerror or e}") from None
    if len(raw) > limit:
        raise error(file, 1, 1, f"file is larger than {limit >> 10} KiB")
    return raw


def parse_bytes(raw: bytes, file: str) -> Document:
    """Parse a profile file's bytes (UTF-8); the format is chosen by ``file``'s suffix.

    Raises:
        ProfileError: not UTF-8, or not valid YAML 1.2 / TOML 1.0, with the line and column of the problem.
    """
    return parse_text(decode_text(raw, file), file)


def decode_text(raw: bytes, file: str) -> str:
    """A file's bytes as text: UTF-8, a byte order mark dropped.

    Raises:
        ProfileError: not UTF-8, at the line of the first bad byte.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise error(file, line, 1, "file is not UTF-8 text") from None
    return text[1:] if text.startswith("\ufeff") else text


def parse_text(text: str, file: str) -> Document:
    """Parse profile text; the format is chosen by ``file``'s suffix (``.toml`` for TOML, else YAML).

    Raises:
        ProfileError: as :func:`read_document`.
    """
    if file.endswith(TOML_SUFFIXES):
        from .toml import parse_toml  # lazy: the TOML reader, only for a TOML file (most profiles are YAML)

        return parse_toml(text, file)
    return parse_yaml(text, file)
