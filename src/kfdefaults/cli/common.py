"""What every command shares: its parser, the layer options, writing output, and turning errors into exit codes.

Exit status: 0 success; 1 bad input (each problem printed as ``FILE:LINE:COLUMN: message`` on standard error,
never a traceback); 2 a usage mistake (argparse's own). ``diff`` exits as ``diff(1)`` does.

Text goes out through :func:`out_lines` and :func:`err`, each line :func:`~kfdefaults.escape.printable`: a name,
key or message from a file shows its control characters as escapes and stays one line. :func:`out` writes JSON
and YAML, which escape them in their own syntax (:mod:`kfdefaults.show.output`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Iterable

from ..errors import KfdefaultsError, ProfileError
from ..escape import printable
from ..targets import TARGETS

WIDTH = 100
"""Help text is wrapped at this width, whatever the terminal, so that it reads the same everywhere."""


class Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help, wrapped at :data:`WIDTH`, descriptions kept as written (their examples line up)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=WIDTH, max_help_position=32)


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A command's parser: ``-h, --help``, and the description as written."""
    return argparse.ArgumentParser(prog=prog, description=description, formatter_class=Formatter)


def kubernetes_version(value: str) -> str:
    """``--kubernetes-version``: ``1.31``, ``v1.31``, ``1.31.2`` -> ``1.31``; a version without a schema is a usage
    mistake (exit 2)."""
    from ..smp.schema import normalize_version

    try:
        return normalize_version(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_kubernetes_version(p: argparse.ArgumentParser, what: str = "Schema version for merging") -> None:
    p.add_argument("--kubernetes-version", type=kubernetes_version, default=None, metavar="X.Y",
                   help=f"{what} (default 1.32).")


def add_target(p: argparse.ArgumentParser) -> None:
    """``--target flytekit|flyte2|clustered``: the SDK to resolve for (:mod:`kfdefaults.targets`)."""
    p.add_argument("--target", choices=list(TARGETS), default=None,
                   help="The SDK the task runs on (clustered: a Flyte 2 ClusteredTaskEnvironment, a JobSet): its "
                        "plugin's defaults lie below every layer, and a setting it cannot honour is an error. "
                        "Default: KFDEFAULTS_TARGET, else [tool.kfdefaults] target in pyproject.toml, else the "
                        "installed SDK (flytekit when both or neither are installed).")


def add_layer_options(p: argparse.ArgumentParser, *, only: bool = True) -> None:
    """``--platform DIR`` and ``--team DIR`` (each repeatable) add a folder to their layer; ``--only-platform DIR``
    and ``--only-team DIR`` make the layer read those folders alone; ``--project DIR`` names the project (else the
    working directory's: :func:`kfdefaults.pipeline.find_project`). A bad folder is bad input (exit 1), found
    when read."""
    p.add_argument("--platform", action="append", default=[], metavar="DIR",
                   help="A platform-layer folder (repeatable); adds to KFDEFAULTS_PLATFORM_PATH and entry points.")
    p.add_argument("--team", action="append", default=[], metavar="DIR",
                   help="A team-layer folder (repeatable); adds to KFDEFAULTS_TEAM_PATH and pyproject.toml.")
    p.add_argument("--project", default=None, metavar="DIR",
                   help="The project whose pyproject.toml ([tool.kfdefaults]) and kfdefaults.lock count: the one in "
                        "DIR or the closest folder above it. Default: the working directory's; a --platform or "
                        "--team folder never brings its own.")
    if only:
        p.add_argument("--only-platform", action="append", default=[], metavar="DIR",
                       help="The platform layer is this folder alone (repeatable): no KFDEFAULTS_PLATFORM_PATH, no "
                            "installed packages.")
        p.add_argument("--only-team", action="append", default=[], metavar="DIR",
                       help="The team layer is this folder alone (repeatable): no KFDEFAULTS_TEAM_PATH, no "
                            "pyproject.toml; to preview another folder inside a project.")


def layer_arguments(p: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """The layer options as keyword arguments of :meth:`kfdefaults.pipeline.Pipeline.discover`
    (``platform``, ``team``, ``only``, ``flags``, ``project``); ``--team`` with ``--only-team`` is a usage
    mistake, and so is ``--project DIR`` where neither DIR nor a folder above it holds a ``pyproject.toml``."""
    from ..layers.pyproject import nearest_pyproject

    out: dict[str, Any] = {"platform": args.platform, "team": args.team, "only": [], "project": None}
    if getattr(args, "project", None) is not None:
        if nearest_pyproject(args.project) is None:
            p.error(f"--project {args.project}: no pyproject.toml in it or in a folder above it")
        out["project"] = [args.project]
    flags = ["--platform", "--team"]
    for i, layer in enumerate(("platform", "team")):
        alone = getattr(args, f"only_{layer}", None)
        if alone:
            if getattr(args, layer):
                p.error(f"--{layer} adds to the {layer} layer and --only-{layer} replaces it: give one of them")
            out[layer] = alone
            out["only"].append(layer)
            flags[i] = f"--only-{layer}"
    out["flags"] = tuple(flags)
    return out


def add_sets(p: argparse.ArgumentParser,
             help: str = "Task-layer value (repeatable), as for render: elastic.nnodes=2.") -> None:
    """``--set KEY=VALUE`` (repeatable): the task layer, read by :func:`task_layer`."""
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help=help)


def discover(p: argparse.ArgumentParser, args: argparse.Namespace, **given: Any) -> Any:
    """The command's :class:`~kfdefaults.pipeline.Pipeline`: its layer options (:func:`layer_arguments`, usage
    mistakes reported by ``p``), and those of ``--kubernetes-version``, ``--target``, ``--cluster-template``,
    ``--facts`` and ``--nodes`` that it has; ``given`` keywords of ``Pipeline.discover`` go over them."""
    from ..pipeline import Pipeline

    options = {key: getattr(args, key) for key in ("kubernetes_version", "target", "cluster_template", "facts",
                                                   "nodes") if hasattr(args, key)}
    return Pipeline.discover(**layer_arguments(p, args), **{**options, **given})


def task_layer(pipeline: Any, name: str, sets: list[str]) -> Any:
    """Profile ``name``'s task layer from the ``--set`` values (:func:`kfdefaults.validate.sets.parse_sets`); a
    bad one is bad input (:class:`~kfdefaults.errors.ProfileError`)."""
    from ..validate.sets import parse_sets

    tree, labels = parse_sets(sets, pipeline.kubernetes_version)
    return pipeline.task_layer(name, tree, source="--set", labels=labels)


def add_cluster_template(p: argparse.ArgumentParser) -> None:
    """``--cluster-template FILE``: the cluster's default PodTemplate, which Flyte's backend merges into every task."""
    p.add_argument("--cluster-template", default=None, metavar="FILE",
                   help="The cluster's default PodTemplate (kubectl get podtemplate NAME -o yaml), which Flyte's "
                        "backend merges into every task's pod; 'none' for no template. Default: "
                        "KFDEFAULTS_CLUSTER_TEMPLATE, else [tool.kfdefaults] cluster_template in pyproject.toml, else "
                        "a platform folder's _cluster-template.yaml.")


def add_cluster_facts(p: argparse.ArgumentParser) -> None:
    """``--facts FILE`` and ``--nodes FILE``: the cluster's facts, and its node list (the node pools)."""
    p.add_argument("--facts", default=None, metavar="FILE",
                   help="The cluster's facts (_cluster-facts.yaml: node pools, timeouts); 'none' for none. Default: "
                        "KFDEFAULTS_CLUSTER_FACTS, else [tool.kfdefaults] cluster_facts in pyproject.toml, else a "
                        "platform folder's _cluster-facts.yaml.")
    p.add_argument("--nodes", default=None, metavar="FILE",
                   help="The cluster's nodes (kubectl get nodes -o json), grouped into node pools; over the node "
                        "list the facts name (their `nodes`).")


def out(text: str) -> None:
    """Write ``text`` to standard output as it is (it ends with a newline where one is wanted): JSON or YAML from
    :mod:`kfdefaults.show.output`, or text already :func:`~kfdefaults.escape.printable`."""
    sys.stdout.write(text)


def out_lines(lines: Iterable[str]) -> None:
    """Write each line to standard output, :func:`~kfdefaults.escape.printable`, ending with a newline."""
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))


def err(text: str, *, wrap: bool = False) -> None:
    """Write one line to standard error, :func:`~kfdefaults.escape.printable` (a line break in it is written
    ``\\n``: a message never starts a line of its own choosing in a CI log); with ``wrap``, at a terminal, cut
    between words to its width (80 columns at most), the lines after the first indented by 4."""
    line = printable(text)
    if wrap and sys.stderr.isatty():
        import shutil

        from ..show.wrap import hanging, wrap

        width = min(80, shutil.get_terminal_size((80, 24)).columns)
        first = wrap(line, width)[0]
        rest = line[len(first):].lstrip(" ")
        line = "\n".join([first, *hanging("    ", rest, width)]) if rest else first
    sys.stderr.write(line + "\n")


def report(findings: Iterable[Any]) -> None:
    """Each finding on standard error, the one place every command's problems are written: an error on one line,
    ``FILE:LINE:COLUMN: [layer] path: message; detail; ...``; a warning or a note as :func:`finding_lines` lays it
    out for the terminal standard error is (or for a pipe)."""
    from .streams import terminal_width

    width = None
    for finding in findings:
        if finding.severity == "error":
            err(str(finding))
            continue
        width = terminal_width(sys.stderr) if width is None else width
        sys.stderr.write("".join(line + "\n" for line in finding_lines(finding, width or None)))


HEAD_MAX = 160
"""The longest first line of a warning: ``FILE:LINE:COLUMN: [layer] path: warning: message``, the message cut to its
first clauses; the rest goes to indented lines below it (:func:`finding_lines`)."""

DETAIL_INDENT = "    "


def finding_lines(finding: Any, width: int | None = None) -> list[str]:
    """A warning (or a note) as the command line prints it: the first line ``FILE:LINE:COLUMN: [layer] path:
    warning: message`` of at most :data:`HEAD_MAX` characters (the message's first clauses that fit), then the
    rest of the message and each of the finding's :attr:`~kfdefaults.errors.Finding.details`, on lines indented by
    :data:`DETAIL_INDENT`, one clause a line (each keeps its ``;`` or ``.``: joined by spaces they are the message).
    A path under the working folder is written relative to it (``platform/h100.yaml:4:11``), in the location and in
    the text. ``width`` (a terminal's) wraps the indented lines between words (:func:`kfdefaults.show.wrap.hanging`);
    without it (a pipe, a CI log) each stays one line, for ``grep``. Every line is
    :func:`~kfdefaults.escape.printable`."""
    from ..errors import relative_text

    head = printable(relative_text(finding.head()))
    clauses = _clauses(printable(relative_text(finding.message)))
    first = clauses.pop(0) if clauses else ""
    while clauses and len(head) + len(first) + 1 + len(clauses[0]) <= HEAD_MAX:
        first += " " + clauses.pop(0)
    if len(head) + len(first) > HEAD_MAX:  # one clause too long for the line: its words go on below
        cut = _cut(first, HEAD_MAX - len(head))
        clauses.insert(0, first[cut + 1:] if cut else first)  # no break outside brackets: the clause goes below whole
        first = first[:cut]
    lines = [(head + first).rstrip()]
    for text in [*clauses, *(printable(relative_text(d.strip())) for d in finding.details)]:
        if width is None or len(DETAIL_INDENT) + len(text) <= width:
            lines.append(DETAIL_INDENT + text)
        else:
            from ..show.wrap import hanging

            lines += hanging(DETAIL_INDENT, text, width)
    return lines


_OPEN, _CLOSE = "([{", ")]}"


def _cut(text: str, limit: int) -> int:
    """Where to break ``text`` to keep its first part within ``limit`` characters: at the last space there outside
    brackets and backticks (a location, a quoted value, a parenthesis stays whole); 0 when there is none."""
    outside, depth, quoted = 0, 0, False
    for i, c in enumerate(text[:limit + 1]):
        if c == "`":
            quoted = not quoted
        elif not quoted and c in _OPEN:
            depth += 1
        elif not quoted and c in _CLOSE:
            depth = max(0, depth - 1)
        elif c == " " and not quoted and depth == 0:
            outside = i
    return outside


def _clauses(message: str) -> list[str]:
    """``message`` cut after its first ``": "`` and after each ``"; "`` and ``". "`` outside brackets and backticks
    (so a location, a quoted value or a parenthesis stays whole), each clause keeping its mark."""
    parts, depth, quoted, start, colon = [], 0, False, 0, False
    for i, c in enumerate(message):
        if c == "`":
            quoted = not quoted
        elif quoted:
            continue
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and message[i + 1:i + 2] == " " and (c in ";." or (c == ":" and not colon)):
            colon = colon or c == ":"
            parts.append(message[start:i + 1])
            start = i + 2
    parts.append(message[start:])
    return [p.strip() for p in parts if p.strip()]


def is_terminal() -> bool:
    return sys.stdout.isatty()


def run(body: Callable[[], int | None], error_code: int = 1) -> int:
    """Run a command body; turn kfdefaults errors into messages and the exit status ``error_code`` (1; 2 for
    ``diff``). An unexpected exception is a bug: one line names it (``KFDEFAULTS_DEBUG=1`` re-raises it)."""
    try:
        return body() or 0
    except ProfileError as e:
        report(e.findings)
    except KfdefaultsError as e:
        err(f"kfdefaults: {e}")
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except OSError as e:  # the output cannot be written (a full disk, a closed pipe)
        err(f"kfdefaults: {e.strerror or e}")
    except Exception as e:  # a bug: say so plainly, keep the traceback for whoever asks
        from ..settings import DEBUG_ENV, flag

        if flag(DEBUG_ENV):
            raise
        err(f"kfdefaults: internal error: {type(e).__name__}: {e} (KFDEFAULTS_DEBUG=1 shows the traceback)")
    return error_code
