"""Run ``kfdefaults`` in this process, as a user's shell would: the exit status, standard output, standard error."""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from typing import Mapping, Sequence

from kfdefaults.cli import run


@dataclass
class Result:
    """What a run printed and how it ended.

    Attributes:
        exit_code: The exit status.
        stdout: Standard output.
        stderr: Standard error.
        output: Both, interleaved as a terminal shows them.
    """

    exit_code: int
    stdout: str
    stderr: str
    output: str

    @property
    def unfolded(self) -> str:
        """Standard error with each finding on one line again: its indented lines (the rest of a long message, one
        clause a line, and its details: kfdefaults.errors.finding_lines) joined to it by a space."""
        return unfold(self.stderr)

    @property
    def messages(self) -> str:
        """Standard error without the line ``render`` starts with to say its target (``kfdefaults: target ...``)."""
        return "".join(line for line in self.unfolded.splitlines(keepends=True) if not line.startswith("kfdefaults: target "))


class _Tee(io.StringIO):
    def __init__(self, both: io.StringIO) -> None:
        super().__init__()
        self.both = both

    def write(self, text: str) -> int:
        self.both.write(text)
        return super().write(text)


def invoke(args: Sequence[str], env: Mapping[str, str | None] | None = None) -> Result:
    """Run ``kfdefaults ARGS``; ``env`` sets (or, with ``None``, unsets) environment variables for the run."""
    both = io.StringIO()
    out, err = _Tee(both), _Tee(both)
    saved = dict(os.environ)
    try:
        for key, value in (env or {}).items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = run(list(args))
            except SystemExit as e:  # argparse's usage mistakes
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return Result(code, out.getvalue(), err.getvalue(), both.getvalue())


def unfold(text: str) -> str:
    """``text`` with every line that starts with four spaces joined to the line above it by one space."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("    ") and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return "".join(line + "\n" for line in lines)
