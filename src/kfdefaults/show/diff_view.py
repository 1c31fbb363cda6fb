"""``kfdefaults diff`` on a terminal: the wide table where it fits, else one difference after another.

A pull request's review is read in a terminal of any width. A table of five columns folds each cell within its
column: below its natural width the value columns get a few characters each (a value one or two characters per
line, a 13-line diff 570 lines long at 100 columns). So the table is printed only where every cell fits whole;
below that width each difference is a block: its path, then each side's value beside the side's label, then who
set it, each wrapped at word and path boundaries (:func:`kfdefaults.show.wrap.wrap`), as ``render --explain``
does for its own narrow layout (:func:`kfdefaults.show.explain_view.narrow_lines`). Files are named relative to
their layer's folder, given once at the top (:func:`~kfdefaults.show.explain_view.layer_folders`).

:func:`show_diff` prints a diff in each of ``diff``'s formats: this table or these blocks, stable text, JSON, YAML
or Markdown (those written by :mod:`.diff`, which compares and knows nothing of how it is shown).
"""

from __future__ import annotations

from typing import Sequence

from ..escape import printable
from ..paths import format_path
from .diff import (Difference, Side, diff_document, diff_lines, diff_markdown, differences, fit_changes,
                   fit_lines)
from .explain_view import layer_folders, origin_text
from .leaves import format_value
from .output import output_encoding, to_json, to_yaml
from .wrap import hanging

MARKS = {"added": "+", "removed": "-", "changed": "~"}
STYLES = {"added": "green", "removed": "red", "changed": "yellow"}


def print_diff_table(a: Side, b: Side, diffs: Sequence[Difference], width: int | None = None) -> None:
    """Print ``diffs`` for a terminal ``width`` columns wide (the terminal's when ``None``): the wide table where it
    fits, else :func:`diff_blocks`. Additions green, removals red, changes yellow; every text escaped
    (:func:`~kfdefaults.escape.printable`) before it is measured, so the columns stay aligned."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    encoding = output_encoding()
    console = Console(highlight=False, width=width)
    if not diffs:
        for line in hanging("", printable(f"{a.label} and {b.label}: no differences", encoding), console.width):
            console.print(Text(line), soft_wrap=True)
        return
    arrow = "→" if printable("→", encoding) == "→" else "->"
    noun = "difference" if len(diffs) == 1 else "differences"
    title = printable(f"{a.label} {arrow} {b.label}: {len(diffs)} {noun}", encoding)
    named: list = []  # the origins the "set by" texts name
    for d in diffs:
        d.cause(name=lambda o: named.append(o) or "")
    folders = layer_folders(named)
    legend = [line for layer, folder in sorted(folders.items())
              for line in hanging(f"  {layer:<9} ", printable(folder, encoding), console.width)]
    rows = [(MARKS[d.change], printable(format_path(d.path), encoding),
             printable(format_value(d.before), encoding) if d.change != "added" else "",
             printable(format_value(d.after), encoding) if d.change != "removed" else "",
             printable(d.cause(name=lambda o: origin_text(o, folders)), encoding)) for d in diffs]
    columns = ("", "path", printable(a.label, encoding), printable(b.label, encoding), "set by")
    natural = sum(max(len(c), *(len(r[i]) for r in rows)) + 3 for i, c in enumerate(columns)) + 1
    for line, style in [(line, "bold") for line in hanging("", title, console.width)] + [(x, "dim") for x in legend]:
        console.print(Text(line, style=style), soft_wrap=True)
    if natural > console.width:
        for text, style in diff_blocks(a.label, b.label, diffs, rows, console.width, encoding):
            console.print(Text(text, style=style), soft_wrap=True)
        return
    table = Table()
    for column in columns:
        table.add_column(Text(column), no_wrap=True)
    for d, (mark, path, before, after, cause) in zip(diffs, rows):
        table.add_row(Text(mark, style=STYLES[d.change]), Text(path), Text(before, style="red" if before else ""),
                      Text(after, style="green" if after else ""), Text(cause, style="dim"))
    console.print(table)


def diff_blocks(label_a: str, label_b: str, diffs: Sequence[Difference], rows: Sequence[tuple[str, ...]],
                width: int, encoding: str | None) -> list[tuple[str, str]]:
    """The layout below the table's width, as ``(line, rich style)``, no line longer than ``width`` unless one
    word of a value is::

        ~ elastic.nnodes
            gpu-large        "2:4"
            vision-finetune  1
            set by team vision-finetune.yaml:4 (was platform gpu-large.yaml:4)

    ``rows`` are the table's cells of each difference, escaped. A side's label longer than a third of the width
    goes on a line of its own, its value on the next ones.
    """
    labels = (printable(label_a, encoding), printable(label_b, encoding))
    column = max(len(x) for x in labels) + 2
    beside = 4 + column <= width // 3
    lines: list[tuple[str, str]] = []
    for d, (mark, path, before, after, cause) in zip(diffs, rows):
        lines += [(text, f"bold {STYLES[d.change]}") for text in hanging(f"{mark} ", path, width)]
        sides = [(labels[0], before, "red")] if d.change != "added" else []
        sides += [(labels[1], after, "green")] if d.change != "removed" else []
        for label, value, style in sides:
            if beside:
                lines += [(text, style) for text in hanging(f"    {label:<{column}}", value, width)]
            else:
                lines.append((f"    {label}:", "dim"))
                lines += [(text, style) for text in hanging("      ", value, width)]
        if cause:
            set_by = cause if cause.startswith(("removed by ", "was ")) else f"set by {cause}"
            lines += [(text, "dim") for text in hanging("    ", set_by, width)]
    return lines


def show_diff(a: Side, b: Side, output: str) -> int:
    """Print the differences between ``a`` and ``b``.

    Args:
        output: ``table`` (for a terminal: :func:`print_diff_table`), ``text`` (stable plain text), ``json``, ``yaml`` or ``markdown``.

    Returns:
        The exit status, as ``diff`` gives it: 0 when equal, 1 when different (a pool's fit that changes is a
        difference).
    """
    import sys

    diffs = differences(a, b)
    changes = fit_changes(a, b)
    if output == "table":
        print_diff_table(a, b, diffs)
        for line in fit_lines(changes, printable):
            sys.stdout.write(printable(line, output_encoding()) + "\n")
    elif output in ("json", "yaml"):
        document = diff_document(a, b, diffs)
        encoding = output_encoding()
        sys.stdout.write(to_json(document, encoding=encoding) if output == "json" else to_yaml(document, encoding=encoding))
    elif output == "markdown":
        sys.stdout.write(diff_markdown(a, b, diffs))
    else:
        for line in diff_lines(diffs) + fit_lines(changes, printable):
            sys.stdout.write(line + "\n")
    return 1 if diffs or changes else 0
