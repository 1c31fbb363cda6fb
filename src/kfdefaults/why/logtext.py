"""A log as ``kfdefaults why`` reads it: bounded, checked to be text, and unfolded into the lines people read.

* Bounded: the first :data:`HEAD` bytes and the last :data:`TAIL` bytes of a longer log (a task's receipt is at its
  start, its failure at its end); the bytes between are read only to count their lines, so that every line keeps its
  number in the file. A binary log is refused once its first :data:`SNIFF` bytes are read (``/dev/zero`` never
  ends).
* Text: a log whose first :data:`SNIFF` bytes hold more than 1% (and more than 8) of control bytes (other than tab,
  line feed, carriage return, escape) or of bytes that are not UTF-8 is refused (a compressed archive, a core dump). NUL bytes are
  dropped (torch's bus error handler writes one after its message).
* Unfolded: a JSON log line (flytekit's ``{"asctime", "name", "levelname", "message"}``, a collector's ``{"log":
  ...}``) is read as the lines of its message, each under the line number of the JSON line; the prefix the container
  runtime writes before each line in its log files (``2026-01-01T00:00:00.000000000Z stderr F``: CRI's logging
  format) is dropped.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from typing import BinaryIO

from ..errors import Finding, Location, ProfileError

HEAD = 2 << 20
"""Bytes kept of the start of a longer log."""

TAIL = 16 << 20
"""Bytes kept of the end of a longer log."""

SNIFF = 64 << 10
"""Bytes looked at to tell text from binary data."""

MAX_JSON_LINE = 4 << 20
"""A longer line is not read as JSON."""

_CHUNK = 1 << 20
_CRI = re.compile(r"^\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d) (?:stdout|stderr) [FP] ")
_MESSAGE_KEYS = ("message", "msg", "log")


@dataclass
class LogText:
    """A log, read.

    Attributes:
        file: Its name (``-``: standard input).
        lines: ``(line number, text)`` of every line read, JSON lines unfolded into their message's lines.
        size: Its size in bytes.
        skipped: Bytes between the start and the end that were not kept (0 for a log read whole).
        notes: What was done to read it.
    """

    file: str
    lines: list[tuple[int, str]] = field(default_factory=list)
    size: int = 0
    skipped: int = 0
    notes: list[str] = field(default_factory=list)


def read_log(file: str, stream: BinaryIO | None = None) -> LogText:
    """Read ``file`` (``-``: standard input, or ``stream``).

    Raises:
        ProfileError: it cannot be read, or it is not text (``FILE:1:1``).
    """
    try:
        if stream is not None or file == "-":
            return _read(file, stream if stream is not None else sys.stdin.buffer)
        with open(file, "rb") as f:
            return _read(file, f)
    except OSError as e:
        raise ProfileError([Finding(Location(file, 1, 1), "", f"cannot read the log: {e.strerror or e}")]) from None


def _read(file: str, stream: BinaryIO) -> LogText:
    head = bytearray()
    tail = bytearray()
    size = skipped = skipped_lines = 0
    sniffed = False
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        size += len(chunk)
        if len(head) < HEAD:
            take = HEAD - len(head)
            head += chunk[:take]
            chunk = chunk[take:]
        if not sniffed and len(head) >= SNIFF:  # refused before the rest is read: /dev/zero, a 500 MB archive
            _refuse_binary(file, bytes(head[:SNIFF]))
            sniffed = True
        tail += chunk
        if len(tail) > 2 * TAIL:  # drop the oldest, counting its lines
            drop = len(tail) - TAIL
            skipped += drop
            skipped_lines += tail.count(b"\n", 0, drop)
            del tail[:drop]
    if not sniffed:
        _refuse_binary(file, bytes(head))
    if len(tail) > TAIL:
        drop = len(tail) - TAIL
        skipped += drop
        skipped_lines += tail.count(b"\n", 0, drop)
        del tail[:drop]
    out = LogText(file, size=size, skipped=skipped)
    if skipped:
        out.notes.append(f"read the first {len(head)} and the last {len(tail)} of {size} bytes")
        _lines(bytes(head), 1, out)  # its last line, and the tail's first, are cut
        _lines(bytes(tail), 1 + head.count(b"\n") + skipped_lines, out)
    else:
        _lines(bytes(head + tail), 1, out)
    return out


def _refuse_binary(file: str, sample: bytes) -> None:
    problem = _binary(sample)
    if problem:
        raise ProfileError([Finding(Location(file, 1, 1), "", f"not a text log: {problem}")])


def _binary(sample: bytes) -> str | None:
    if not sample:
        return None
    control = sum(1 for b in sample if (b < 0x20 and b not in (9, 10, 13, 27)) or b == 0x7F)
    invalid = sample.decode("utf-8", "replace").count("\ufffd") - sample.decode("utf-8", "ignore").count("\ufffd")
    if max(control, invalid) > max(8, len(sample) // 100):
        return (f"{control} control bytes and {invalid} bytes that are not UTF-8 in its first {len(sample)} bytes "
                "(a compressed or binary file?)")
    return None


def _lines(data: bytes, number: int, out: LogText) -> None:
    """Append the lines of ``data`` (its first line numbered ``number``) to ``out``."""
    for offset, raw in enumerate(data.decode("utf-8", "replace").split("\n")):
        text = _CRI.sub("", raw.replace("\x00", "").rstrip("\r"), count=1)
        out.lines += [(number + offset, line) for line in _unfold(text)]


def _unfold(text: str) -> list[str]:
    """The lines of a JSON log line's message, else the line itself."""
    stripped = text.lstrip()
    if stripped.startswith("{") and len(stripped) <= MAX_JSON_LINE:
        try:
            data = json.loads(stripped)
        except (ValueError, RecursionError):
            return [text]
        if isinstance(data, dict):
            message = next((data[k] for k in _MESSAGE_KEYS if isinstance(data.get(k), str)), None)
            if message is not None:
                return message.rstrip("\n").split("\n") or [""]
    return [text]
