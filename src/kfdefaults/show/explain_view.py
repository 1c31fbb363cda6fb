"""``render --explain`` printed: a rich table on a terminal, stable plain text when piped, JSON or YAML."""

from __future__ import annotations

from typing import Any, Sequence

from ..paths import format_path
from .explain import Entry, explain
from .leaves import format_value
from .output import output_encoding, to_json, to_yaml, writable


def explain_document(name: str, entries: Sequence[Entry]) -> dict[str, Any]:
    """The JSON / YAML form: ``{"name": NAME, "leaves": [Entry.to_dict(), ...]}``."""
    return {"name": name, "leaves": [e.to_dict() for e in entries]}


def explain_lines(entries: Sequence[Entry]) -> list[str]:
    """The plain-text form, one line per entry, columns separated by at least two spaces::

        PATH  VALUE  LAYER  FILE:LINE
        PATH  VALUE  LAYER  FILE:LINE  removed by LAYER FILE:LINE

    Values are written by :func:`kfdefaults.show.leaves.format_value` (a value holding whitespace is quoted).
    """
    rows = [(format_path(e.path), format_value(e.value), e.set_by.layer, e.set_by.where,
             f"removed by {e.removed_by.layer} {e.removed_by.where}" if e.removed_by else "") for e in entries]
    widths = [min(max((len(r[i]) for r in rows), default=0), _MAX_PAD[i]) for i in range(4)]
    lines = []
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(4)] + [row[4]]
        lines.append("  ".join(cells).rstrip())
    return lines


_MAX_PAD = (120, 40, 8, 80)
"""Column widths beyond which a long cell overflows its column instead of widening it for every line."""


def print_explain_table(name: str, entries: Sequence[Entry]) -> None:
    """A rich table on the terminal: removed values dimmed, with who removed them in red."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    encoding = output_encoding()
    any_removed = any(e.removed for e in entries)
    table = Table(title=f"{name}: where each value comes from", title_justify="left")
    for column in ("path", "value", "layer", "set at") + (("removed by",) if any_removed else ()):
        # a path stays whole, so it can be pasted into --set; the other columns wrap
        table.add_column(column, overflow="fold", no_wrap=column == "path")
    for e in entries:
        style = "dim" if e.removed else ""
        cells = [Text(writable(format_path(e.path), encoding), style=style),
                 Text(writable(format_value(e.value), encoding), style=style),
                 Text(e.set_by.layer, style=style or _LAYER_STYLE.get(e.set_by.layer, "")),
                 Text(writable(e.set_by.where, encoding), style=style)]
        if any_removed:
            cells.append(Text(writable(f"{e.removed_by.layer} {e.removed_by.where}", encoding), style="red")
                         if e.removed_by else Text(""))
        table.add_row(*cells)
    Console().print(table)


_LAYER_STYLE = {"default": "dim", "builtin": "cyan", "platform": "magenta", "team": "green", "task": "yellow"}


def show_explain(resolved: Any, output: str, *, kubernetes_version: str | None = None) -> None:
    """Print the provenance of a resolved profile.

    Args:
        resolved: A :class:`~kfdefaults.Resolved`.
        output: ``table`` (rich, for a terminal), ``text`` (stable plain text), ``json`` or ``yaml``.
        kubernetes_version: The version the profile was merged with.
    """
    import sys

    entries = explain(resolved, kubernetes_version=kubernetes_version)
    if output == "table":
        print_explain_table(resolved.name, entries)
    elif output in ("json", "yaml"):
        document = explain_document(resolved.name, entries)
        encoding = output_encoding()
        sys.stdout.write(to_json(document, encoding=encoding) if output == "json" else to_yaml(document, encoding=encoding))
    else:
        for line in explain_lines(entries):
            sys.stdout.write(line + "\n")
