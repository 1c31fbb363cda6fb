"""A log as ``kfdefaults why`` reads it: bounded, checked to be text, and unfolded into the lines people read.

* Bounded: the first :data:`HEAD` bytes and the last :data:`TAIL` bytes of a longer log (a task's receipt is at its
  start, its failure at its end); the bytes between are read only to count their lines, so that every line keeps its
  number in the file. Of a log of short lines (empty lines, say), at most the first :data:`HEAD_LINES` and the last
  :data:`TAIL_LINES` lines are kept, counted the same way, and as many of the lines its JSON log lines unfold into.
  A binary log is refused once its first :data:`SNIFF` bytes are read (``/dev/zero`` never ends).
* Text: a log whose first :data:`SNIFF` bytes hold more than 1% (and more than 8) of control bytes (other than tab,
  line feed, carriage return, escape) or of bytes that are not UTF-8 is refused (a compressed archive, a core dump). NUL bytes are
  dropped (torch's bus error handler writes one after its message).
* Unfolded: a JSON log line (flytekit's ``{"asctime", "name", "levelname", "message"}``, a collector's ``{"log":
  ...}``) is read as the lines of its message, each under the line number of the JSON line; the prefix the container
  runtime writes before each line in its log files (``2026-01-01T00:00:00.000000000Z stderr F``: CRI's logging
  format) is dropped.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import deque
import sys
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

from ..errors import Finding, Location, ProfileError

HEAD = 2 << 20
"""Bytes kept of the start of a longer log."""

TAIL = 16 << 20
"""Bytes kept of the end of a longer log."""

SNIFF = 64 << 10
"""Bytes looked at to tell text from binary data."""

HEAD_LINES = 100_000
"""Lines kept of the start of a log of more lines than this and :data:`TAIL_LINES`: a log whose lines are shorter
than 20 bytes on average (each line read costs some hundred bytes and a few microseconds, whatever its length)."""

TAIL_LINES = 800_000
"""Lines kept of the end of such a log."""

MAX_JSON_LINE = 4 << 20
"""A longer line is not read as JSON."""

_CHUNK = 1 << 20
_CRI = re.compile(r"\d{4}-\d\d-\d\dT[0-9:.]{1,40}(?:Z|[+-]\d\d:\d\d) (?:stdout|stderr) ([FP]) ")  # match(): at the start
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
        first, last = bytes(head), bytes(tail)  # the head's last line, and the tail's first, are cut
        after = head.count(b"\n") + skipped_lines
    else:
        first, last, after = bytes(head + tail), b"", 0
    if first.count(b"\n") + last.count(b"\n") > HEAD_LINES + TAIL_LINES:  # short lines: each costs far more kept
        total = first.count(b"\n") + (not first.endswith(b"\n"))
        kept = _first_lines(first, HEAD_LINES)
        if not skipped:  # one piece: its first lines, and its last of the rest
            first, last, after = kept, first[len(kept):], kept.count(b"\n")
        elif len(kept) < len(first):
            first = kept
        last, dropped = _last_lines(last, TAIL_LINES)
        after += dropped
        if first is kept and first.endswith(b"\n"):
            first = first[:-1]  # the line feed ends its last line: no empty line after it
        out.notes.append(f"read the first {HEAD_LINES} and the last {TAIL_LINES} of its {total} lines" if not skipped
                         else f"read at most the first {HEAD_LINES} and the last {TAIL_LINES} lines of those")
    _keep(out, first, last, after)
    return out


def _keep(out: LogText, first: bytes, last: bytes, after: int) -> None:
    """Add the lines of ``first`` (from line 1) and of ``last`` (from line ``after + 1``) to ``out``, JSON lines
    unfolded: the first :data:`HEAD_LINES` and the last :data:`TAIL_LINES` of them."""
    # past the first HEAD_LINES: a JSON line unfolds into many; one more for the empty line after a last line feed
    kept: deque[tuple[int, str]] = deque(maxlen=TAIL_LINES + 1)
    dropped = 0
    for entry in itertools.chain(_lines(first, 1), _lines(last, 1 + after) if last else ()):
        if len(out.lines) < HEAD_LINES:
            out.lines.append(entry)
        else:
            dropped += len(kept) == kept.maxlen
            kept.append(entry)
    out.lines += kept
    if dropped:
        out.notes.append(f"kept the first {HEAD_LINES} and the last {TAIL_LINES} of the {len(out.lines) + dropped} "
                         "lines of its JSON lines' messages")


def _first_lines(data: bytes, count: int) -> bytes:
    """The first ``count`` lines of ``data``, each with its line feed."""
    end = -1
    for _ in range(count):
        end = data.find(b"\n", end + 1)
        if end < 0:
            return data
    return data[:end + 1]


def _last_lines(data: bytes, count: int) -> tuple[bytes, int]:
    """The last ``count`` lines of ``data``, and how many line feeds come before them."""
    start = len(data)
    if data.endswith(b"\n"):
        start -= 1  # the empty line after a final line feed is not one of them
    for _ in range(count):
        start = data.rfind(b"\n", 0, start)
        if start < 0:
            return data, 0
    return data[start + 1:], data.count(b"\n", 0, start + 1)


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


def _lines(data: bytes, number: int) -> Iterator[tuple[int, str]]:
    """The lines of ``data`` (its first line numbered ``number``), a line the container runtime split into partial
    records joined again (under its first record's number), JSON lines unfolded."""
    pending: list[str] = []  # the parts so far of a line split into partial records
    first = number
    for offset, raw in enumerate(data.decode("utf-8", "replace").split("\n")):
        text, partial = _record(raw.replace("\x00", "").rstrip("\r"))
        if partial:
            first = first if pending else number + offset
            pending.append(text)
            continue
        at = number + offset
        if pending:
            text, at = "".join(pending) + text, first
            pending = []
        for line in _unfold(text):
            yield at, line
    if pending:  # the last record was a partial one: the log ends within a line
        for line in _unfold("".join(pending)):
            yield first, line


def _record(raw: str) -> tuple[str, bool]:
    """A line of a container runtime's log file as the program wrote it, and whether it is a partial record (the
    runtime splits a line longer than 16 KiB): a CRI record (``TIME STREAM P|F TEXT``: ``P`` partial, ``F`` the
    last part) or docker's json-file record (``{"log": TEXT, "stream": ..., "time": ...}``, ``TEXT`` without its
    line feed in a partial one); any other line as it is."""
    cri = _CRI.match(raw)
    if cri is not None:
        return raw[cri.end():], cri.group(1) == "P"
    if raw.startswith('{"log":') and '"stream":' in raw and len(raw) <= MAX_JSON_LINE:
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            return raw, False
        if isinstance(data, dict) and isinstance(data.get("log"), str) and data.get("stream") in ("stdout", "stderr"):
            log = data["log"]
            return (log[:-1], False) if log.endswith("\n") else (log, True)
    return raw, False


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
