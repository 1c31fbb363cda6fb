"""Replay of ``kfdefaults render``: a render whose inputs have not changed writes again what it wrote, without
importing the pipeline.

What a render writes follows from the command and from what it reads. The command is the key of the stored run
(:func:`command_key`): its arguments, working folder, environment, interpreter, the kind, width and encoding of
its two streams, and kfdefaults' own code. What it reads is the input manifest of the pipelines it walked
(:mod:`kfdefaults.inputs`): the profile files, folders, paths looked for, and, for ``--as flyte`` and
``--as pytorchjob``, the installed SDK's packages and the inputs of the task it defined. The manifest is stored
with the text the command wrote on each stream, in order; a later run with the same key writes that text again
if :meth:`~kfdefaults.inputs.Inputs.changed` finds every input unchanged, and runs the command anew otherwise.

A run is stored only when it exits 0, every write went through the kept streams (:class:`~.streams.Kept`), and
its inputs are settled (:meth:`~kfdefaults.inputs.Inputs.settled`: none changed during the run or just before
it). ``KFDEFAULTS_NO_CACHE=1`` turns it off with the cache.

Only the standard library's always-loaded modules, :mod:`kfdefaults.cache` and :mod:`kfdefaults.inputs` are
imported here.
"""

from __future__ import annotations

import os
import sys

from .streams import Kept, terminal_width

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from ..inputs import Inputs

FORMAT = 2
"""Version of the stored layout; part of every key."""

COMMANDS = frozenset({"render"})
"""The commands that may be replayed; each also decides per run, by its module's ``replayable(args)``."""

_SHELL_BOOKKEEPING = frozenset({"_", "OLDPWD", "SHLVL"})
"""Environment variables a shell changes between two runs of the same command; nothing reads them."""


def command_key(argv: list[str]) -> str | None:
    """The cache key of running ``kfdefaults`` with ``argv`` here and now, or ``None`` when the command is not one
    that is replayed or the cache is off.

    The key covers the arguments, the working folder, the environment (but for :data:`_SHELL_BOOKKEEPING`), the
    interpreter (its path, version, flags and ``sys.path``), each stream's encoding and whether it is a terminal
    (and its width: a table follows it), and kfdefaults' code; what the command reads is checked separately
    (:func:`replay`).
    """
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in COMMANDS:
        return None
    from .. import cache
    from ..inputs import interpreter

    if cache.cache_dir() is None:
        return None
    try:
        here = os.getcwd()
    except OSError:  # the working folder was removed
        return None
    environment = "\0".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k not in _SHELL_BOOKKEEPING)
    parts = [f"replay {FORMAT}", cache.source_stamp(), *interpreter(), here, "\0".join(argv), environment,
             *map(_stream, (sys.stdout, sys.stderr))]
    return cache.digest(*(p.encode("utf-8", "surrogatepass") for p in parts))


def _stream(stream: Any) -> str:
    """What of a stream its output may follow: its encoding, and whether it is a terminal and how wide."""
    width = terminal_width(stream)
    return f"{getattr(stream, 'encoding', None)} {getattr(stream, 'errors', None)} {width}"


def _are_writes(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(w, list) and len(w) == 2 and w[0] in (0, 1)
                                           and isinstance(w[1], str) for w in value)


def replay(key: str) -> int | None:
    """Write again what the command stored under ``key`` wrote, if every input it read is unchanged, and return
    its exit status; ``None``: run the command.

    The writes are made in their order, each to its stream, so that both streams led into one pipe or file
    (``2>&1``) read as the command's own did. An output that cannot be written (a full disk) is said on
    standard error, exit status 1, as a command that runs says it.
    """
    from ..inputs import load_remembered

    found = load_remembered(key, _are_writes)
    if found is None:
        return None
    streams = (sys.stdout, sys.stderr)
    try:
        for stream, text in found[0]:
            streams[stream].write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise  # as when the command runs
    except OSError as e:
        sys.stderr.write(f"kfdefaults: {e.strerror or e}\n")
        return 1
    return 0


class Recording:
    """The inputs and output of one run of a command (a context manager): inside the ``with``, standard output and
    standard error are :class:`~.streams.Kept`; the command adds the inputs of the pipelines it walks to
    :attr:`inputs` (:meth:`add`), and :meth:`store` keeps the run under its key."""

    def __init__(self, key: str) -> None:
        from ..inputs import Inputs

        self.key = key
        self.replayable = False
        """Set by the command once it has parsed its arguments: whether this run may be replayed."""
        self.inputs = Inputs()
        self.writes: list[list] = []

    def add(self, inputs: Inputs) -> None:
        """Add what another manifest recorded, but for its environment variables: the whole environment is in the
        key (and a variable a command sets for a moment, as ``--cluster-template`` does for the task it defines,
        is not the environment of the next run)."""
        self.inputs.items.update((k, v) for k, v in inputs.items.items() if k[0] != "env")

    def __enter__(self) -> Recording:
        self.out, self.err = Kept(sys.stdout, 0, self.writes), Kept(sys.stderr, 1, self.writes)
        sys.stdout, sys.stderr = self.out, self.err
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stdout, sys.stderr = self.out.stream, self.err.stream

    def store(self) -> None:
        """Keep the run in the cache, unless the command said it may not be replayed, its output was written
        around the kept streams, or an input changed during the run or just before it."""
        if self.replayable and self.out.complete and self.err.complete:
            from ..inputs import remember

            remember(self.key, self.writes, self.inputs)
