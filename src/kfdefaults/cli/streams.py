"""Standard output and standard error of the command line: any text written whatever the locale, and what a
command wrote kept for :mod:`.replay`. Imports nothing but the standard library's always-loaded modules: the
replay of an unchanged ``render`` goes through here and no further."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, TextIO


def escape_what_the_locale_cannot_write() -> None:
    """Let standard output and standard error write any text, whatever the locale's encoding.

    A character the encoding cannot hold (a ``description`` in Japanese under ``de_DE.ISO-8859-1``, or under
    the ``C`` locale without Python's UTF-8 mode) is written as a backslash escape (``\\u65e5``) instead of
    ending the command with a ``UnicodeEncodeError``; bytes a file name could not decode (Python's
    ``surrogateescape``) are written back as they were. JSON and YAML output escapes them in its own syntax
    first (:func:`kfdefaults.show.output.output_encoding`), so that it reads back as the same data; this is
    for text (tables, messages).
    """
    import codecs

    try:
        codecs.lookup_error(_ESCAPE)
    except LookupError:
        codecs.register_error(_ESCAPE, _escape)
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) in ("strict", "surrogateescape") and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors=_ESCAPE)
            except (ValueError, OSError):  # pragma: no cover - a stream that cannot change
                pass


_ESCAPE = "kfdefaults-escape"


def _escape(error: UnicodeError) -> tuple[str | bytes, int]:
    """The codec error handler of :func:`escape_what_the_locale_cannot_write`, one character at a time."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    code = ord(error.object[error.start])
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's: the byte it stands for
        return bytes([code - 0xDC00]), error.start + 1
    escape = f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return escape, error.start + 1


class Kept:
    """A text stream that writes through to ``stream`` and keeps every string written, in order, as
    ``[number, text]`` in ``writes``, a list the two standard streams share (0 for output, 1 for error).

    Anything written around it (through ``.buffer``, or by another file object on the same descriptor) is not
    kept: a command whose output is kept writes only with ``write`` (:func:`kfdefaults.cli.common.out` and
    ``err``), and reaching for ``.buffer`` marks the copy incomplete (:attr:`complete`), so that it is never
    replayed.
    """

    def __init__(self, stream: TextIO, number: int, writes: list[list]) -> None:
        self.stream = stream
        self.number = number
        self.writes = writes
        self.complete = True

    def write(self, text: str) -> int:
        written = self.stream.write(text)
        self.writes.append([self.number, text])
        return written

    def __getattr__(self, name: str) -> Any:
        if name in ("buffer", "fileno", "writelines"):
            self.complete = False
        return getattr(self.stream, name)


def terminal_width(stream: Any) -> int | None:
    """The width of the terminal ``stream`` writes to; ``None`` when it is not one (a pipe, a file, a CI log). A
    :class:`Kept` stream is asked through to its own, which the replay's key holds, without marking it incomplete."""
    import os

    stream = stream.stream if isinstance(stream, Kept) else stream
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream.isatty() else None
    except (AttributeError, ValueError, OSError):
        return None
