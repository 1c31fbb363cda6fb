"""The ``kfdefaults`` command line: a thin layer over the :class:`~kfdefaults.pipeline.Pipeline`.

One module per command (:mod:`.render`, :mod:`.listing`, :mod:`.diff`, :mod:`.fit`, :mod:`.timeline`, :mod:`.verify`, :mod:`.validate`,
:mod:`.schema`, :mod:`.where`, :mod:`.fields`, :mod:`.lock`, :mod:`.cache`), each
with ``build(prog)`` (its argparse parser) and ``run(args)`` (its exit status). Only the command asked for is
imported and parsed: the standard library's argparse, because the start-up of every ``render`` in a pre-commit
hook counts (importing click takes about 75 ms over a bare interpreter, argparse about 25 ms;
docs/performance.md). A replayed ``render`` (:mod:`.replay`) imports neither.
"""

from __future__ import annotations

import importlib
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Sequence

    from .replay import Recording

COMMANDS = {
    "render": ("render", "Print a profile merged across its layers (builtin, platform, team, --set)."),
    "list": ("listing", "List every visible profile: name, the layers that define it, its description."),
    "validate": ("validate", "Check profile files and folders of them, for CI and pre-commit."),
    "diff": ("diff", "Show what differs between two merged profiles, leaf by leaf."),
    "fit": ("fit", "Show which node pools a profile's pods schedule on, why not, and what its job holds."),
    "timeline": ("timeline", "Show which clock fires first when nodes start late or never, or a collective hangs."),
    "verify": ("verify", "Compare a live Pod, PyTorchJob or a task's receipt with what its profile renders now."),
    "why": ("why", "Answer a failed task's log with the profile keys that govern its failure, and what to change."),
    "schema": ("schema", "Print the JSON Schema of a profile file, for editors."),
    "where": ("where", "Show where profiles come from: every source of every layer, and what makes a profile."),
    "fields": ("fields", "Show what a profile key is: its type, and how a higher layer merges onto it."),
    "lock": ("lock", "Write or check kfdefaults.lock: the files each profile of the project is made of."),
    "cache": ("cache", "Show the cache of validated files and merges, or clear it."),
}
"""Command -> (its module in this package, one line of help)."""

PYDANTIC_LOADER = "pydantic.plugin._loader"
"""The module of pydantic that finds its plugins (``get_plugins``), which the command line disables."""

_SUMMARY = "Layered defaults for Flyte's torch elastic (kfpytorch) tasks: pod templates and Elastic settings."


def _version() -> str:
    from ..version import __version__

    return __version__


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: kfdefaults [-h] [--version] [--no-entry-points] COMMAND ...",
        "",
        _SUMMARY,
        "",
        "options:",
        "  -h, --help         show this help message and exit",
        "  --version          show the version and exit",
        "  --no-entry-points  Ignore the platform folders of installed packages (kfdefaults.platform entry",
        "                     points), as KFDEFAULTS_NO_ENTRY_POINTS=1 does; to test a package's own folder",
        "                     with --platform.",
        "",
        "commands:",
    ]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()]
    lines += ["", "`kfdefaults COMMAND -h` shows the options of a command."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``kfdefaults`` with ``argv`` (default: ``sys.argv[1:]``) and exit with its status.

    A ``render`` whose inputs have not changed since it last ran with the same arguments here is replayed
    (:mod:`.replay`): its output written again without importing the pipeline. A reader that goes away
    (``| head``) ends the command quietly, exit status 1, as Python's documentation advises; a closed
    standard output is said on standard error, exit status 1.
    """
    from .streams import escape_what_the_locale_cannot_write

    args = list(sys.argv[1:] if argv is None else argv)
    if sys.stderr is None:  # closed (2>&-): nowhere to say anything, but the output may still be wanted
        sys.stderr = open(os.devnull, "w")
    if sys.stdout is None:  # closed (>&-)
        sys.stderr.write("kfdefaults: standard output is closed\n")
        sys.exit(1)
    escape_what_the_locale_cannot_write()
    try:
        status = _main(args)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush at exit has nowhere to fail
        status = 1
    sys.exit(status)


def _main(args: list[str]) -> int:
    from .replay import Recording, command_key, replay

    key = command_key(args)
    # pydantic looks for its plugins in every installed distribution's entry points when the first model is
    # built (tens of ms); the command line's models are its own, and no plugin of them is wanted
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] in ("__all__", "1", "true") and PYDANTIC_LOADER not in sys.modules:
        # pydantic then loads no plugin, but its loader module still imports importlib.metadata (with email,
        # zipfile and csv: as long as pydantic's own import on a cold render); its one function, answered as
        # pydantic answers it then (pydantic/plugin/_loader.py, get_plugins: no plugins when disabled)
        loader = type(sys)(PYDANTIC_LOADER)
        loader.get_plugins = tuple  # type: ignore[attr-defined]
        sys.modules[PYDANTIC_LOADER] = loader
    if key is None:
        return run(args)
    replayed = replay(key)
    if replayed is not None:
        return replayed
    with Recording(key) as recording:
        status = run(args, recording)
    if status == 0:
        recording.store()
    return status


def run(argv: list[str], recording: Recording | None = None) -> int:
    """Run ``kfdefaults`` with ``argv``; return the exit status (argparse exits 2 itself on a usage mistake).
    A ``recording`` learns whether the command may be replayed (its module's ``replayable(args)``); a command
    that may is given it, to add what it reads (``run(args, recording)``)."""
    while argv and argv[0].startswith("-"):
        option = argv.pop(0)
        if option in ("-h", "--help"):
            sys.stdout.write(_usage())
            return 0
        if option == "--version":
            sys.stdout.write(f"kfdefaults, version {_version()}\n")
            return 0
        if option == "--no-entry-points":
            from ..settings import NO_ENTRY_POINTS_ENV

            os.environ[NO_ENTRY_POINTS_ENV] = "1"
            continue
        return _usage_mistake(f"no such option: {option}")
    if not argv:
        sys.stdout.write(_usage())
        return 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        from ..validate.suggest import closest

        hint = closest(name, COMMANDS)
        return _usage_mistake(f"no such command {name!r}" + (f"; did you mean {hint!r}?" if hint else ""))
    module = importlib.import_module(f".{COMMANDS[name][0]}", __name__)
    args = module.build(f"kfdefaults {name}").parse_args(rest)
    if recording is not None and getattr(module, "replayable", lambda _: False)(args):
        recording.replayable = True
        return module.run(args, recording)
    return module.run(args)


def _usage_mistake(message: str) -> int:
    sys.stderr.write(f"usage: kfdefaults [-h] [--version] [--no-entry-points] COMMAND ...\nkfdefaults: error: {message}\n")
    return 2
