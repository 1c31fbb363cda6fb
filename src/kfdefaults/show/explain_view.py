"""``render --explain`` printed: on a terminal a table where it fits and a narrow layout where it does not, stable
plain text when piped, JSON or YAML."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..escape import printable
from ..merge.provenance import Entry
from ..paths import Select, format_path
from .explain import explain
from .image import explain_note
from .leaves import format_value
from .output import output_encoding, to_json, to_yaml


def explain_document(name: str, entries: Sequence[Entry], notes: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON / YAML form: ``{"name": NAME, "leaves": [Entry.to_dict(), ...], "notes": [LINE, ...]}``."""
    return {"name": name, "leaves": [e.to_dict() for e in entries], "notes": list(notes)}


def explain_lines(entries: Sequence[Entry]) -> list[str]:
    """The plain-text form, one line per entry, columns separated by at least two spaces::

        PATH  VALUE  LAYER  FILE:LINE
        PATH  VALUE  LAYER  FILE:LINE  removed by LAYER FILE:LINE
        PATH  VALUE  LAYER  FILE:LINE  locked by LAYER FILE:LINE; auto: RULE

    Values are written by :func:`kfdefaults.show.leaves.format_value` (a value holding whitespace is quoted);
    :func:`show_explain` writes each line :func:`~kfdefaults.escape.printable`.
    """
    rows = [(format_path(e.path), shown_value(e), e.set_by.layer, e.set_by.where, removal(e) or remark(e))
            for e in entries]
    widths = [min(max((len(r[i]) for r in rows), default=0), _MAX_PAD[i]) for i in range(4)]
    lines = []
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(4)] + [row[4]]
        lines.append("  ".join(cells).rstrip())
    return lines


def shown_value(entry: Entry) -> str:
    """The value as a cell: a leaf's value, or for a list replaced whole how many items went."""
    if entry.items is not None:
        return f"({entry.items} item{'s' * (entry.items != 1)})"
    return format_value(entry.value)


def removal(entry: Entry) -> str:
    """``removed by LAYER FILE:LINE``, ``replaced whole by LAYER FILE:LINE``, or ``""`` for a live value."""
    if entry.removed_by is None:
        return ""
    verb = "replaced whole by" if entry.items is not None else "removed by"
    return f"{verb} {entry.removed_by.layer} {entry.removed_by.where}"


def remark(entry: Entry, folders: dict[str, str] | None = None) -> str:
    """For a live value: ``locked by LAYER FILE:LINE`` when a profile locks it, and the ``auto`` rule that gave it,
    joined by ``; ``; ``""`` when neither."""
    parts = []
    if entry.locked_by is not None and not entry.removed:
        parts.append(f"locked by {origin_text(entry.locked_by, folders or {})}")
    if entry.note is not None and not entry.removed:
        parts.append(entry.note)
    return "; ".join(parts)


_MAX_PAD = (120, 40, 8, 80)
"""Column widths beyond which a long cell overflows its column instead of widening it for every line."""


def print_explain_table(name: str, entries: Sequence[Entry], width: int | None = None) -> None:
    """``--explain`` on a terminal: the wide table where it fits in ``width`` columns (the terminal's), else the
    narrow layout (:func:`narrow_lines`). Nothing is cut: a line longer than the terminal wraps there."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    encoding = output_encoding()  # cells escaped before rich measures them: the columns stay aligned
    console = Console(highlight=False, width=width)
    rows = [tuple(printable(cell, encoding) for cell in (format_path(e.path), shown_value(e), e.set_by.layer,
                                                         e.set_by.where, removal(e))) for e in entries]
    any_removed = any(e.removed for e in entries)
    remarks = [printable(remark(e), encoding) for e in entries]
    any_remark = any(remarks)
    columns = (("path", "value", "layer", "set at") + (("removed by",) if any_removed else ())
               + (("locked / auto",) if any_remark else ()))
    widths = [max([len(columns[i])] + [len(r[i]) for r in rows]) for i in range(4)]
    widths += [max([len("removed by")] + [len(r[4]) for r in rows])] if any_removed else []
    widths += [max([len("locked / auto")] + [len(t) for t in remarks])] if any_remark else []
    natural = sum(w + 3 for w in widths) + 1
    if natural > console.width:
        for text, style in narrow_lines(name, entries, console.width):
            console.print(Text(printable(text, encoding), style=style), soft_wrap=True)
        return
    table = Table(title=Text(printable(f"{name}: where each value comes from", encoding), style="table.title"),
                  title_justify="left")
    for column in columns:
        table.add_column(column, no_wrap=True)
    for e, row, said in zip(entries, rows, remarks):
        style = "dim" if e.removed else ""
        cells = [Text(row[0], style=style), Text(row[1], style=style),
                 Text(row[2], style=style or _LAYER_STYLE.get(row[2], "")), Text(row[3], style=style)]
        if any_removed:
            cells.append(Text(row[4], style="red"))
        if any_remark:
            cells.append(Text(said, style="bold" if e.locked_by is not None else ""))
        table.add_row(*cells)
    console.print(table)


def narrow_lines(name: str, entries: Sequence[Entry], width: int) -> list[tuple[str, str]]:
    """The layout for a narrow terminal, as ``(line, rich style)``: the folders of each layer first, then the
    values grouped by section (``elastic``, ``pod_template.spec.containers[name=primary]``...), one per line as
    ``key = value`` with its layer and FILE:LINE (relative to the layer's folder) in a column where it fits, else
    on the next line; a removal starts with ``-`` and says who removed it, a list replaced whole how many items
    went and who replaced it."""
    folders = layer_folders(o for e in entries for o in (e.set_by, e.removed_by))
    rows: list[tuple[tuple, str, str, str]] = []  # (group, text, origin, style)
    for e in entries:
        head, rel = split_group(e.path)
        if e.items is not None:
            text = f"- {_relative(rel) + ': ' if rel else ''}{shown_value(e)} of {origin_text(e.set_by, folders)}"
            rows.append((head, text, removal_text(e, folders), "red"))
            continue
        text = f"{'- ' if e.removed else ''}{_relative(rel)} = {shown_value(e)}"
        origin = origin_text(e.set_by, folders) + (f", {removal_text(e, folders)}" if e.removed else "")
        origin += f", {remark(e, folders)}" if remark(e) else ""
        rows.append((head, text, origin, "dim" if e.removed else ""))
    column = min(max((len(t) for _, t, _, _ in rows), default=0) + 4, max(width // 2, width - 40))
    lines: list[tuple[str, str]] = [(f"{name}: where each value comes from", "bold")]
    lines += [(f"  {layer:<9} {folder}", "dim") for layer, folder in folders.items()]
    group: tuple | None = None
    for head, text, origin, style in rows:
        if head != group:
            lines.append((format_path(head) if head else "", "bold"))
            group = head
        indent = "  " if head else ""
        if len(indent + text) + 2 <= column and column + len(origin) <= width:
            lines.append((f"{indent + text:<{column}}{origin}", style))
        else:
            lines += [(indent + text, style), (f"{indent}    {origin}", style or "dim")]
    return lines


def _relative(rel: tuple) -> str:
    """A path inside its group: ``image``, ``[0].key``, ``resources.limits."nvidia.com/gpu"``."""
    if not rel:
        return ""
    if isinstance(rel[0], (int, Select)):
        return format_path(("x", *rel))[1:]
    return format_path(rel)


def split_group(path: tuple) -> tuple[tuple, tuple]:
    """``(group, rest)``: the section a leaf is shown under, and its path inside it.

    ``elastic.*`` and the pod template's own keys group under ``elastic`` and ``pod_template``; PodSpec fields
    under ``pod_template.spec``, except that the items of a list group under the list (``tolerations``) or the
    item (``containers[name=primary]``).
    """
    if len(path) < 2:
        return (), tuple(path)
    if path[0] != "pod_template" or path[1] != "spec":
        return tuple(path[:1]), tuple(path[1:])
    if len(path) >= 4 and isinstance(path[3], Select):
        return tuple(path[:4]), tuple(path[4:])
    if len(path) >= 3 and (len(path) == 3 or isinstance(path[3], int)):
        return tuple(path[:3]), tuple(path[3:])
    return tuple(path[:2]), tuple(path[2:])


def layer_folders(origins: Iterable[Any]) -> dict[str, str]:
    """Layer -> the one folder its files are in, for layers whose files among ``origins`` (each an
    :class:`~kfdefaults.merge.origins.Origin` or ``None``) are all in one folder: the legend a narrow layout
    prints once, so that each line names a file by its name (:func:`origin_text`)."""
    import os

    found: dict[str, set[str]] = {}
    for origin in origins:
        if origin is not None and origin.location.line:
            found.setdefault(origin.layer, set()).add(os.path.dirname(origin.location.file))
    return {layer: next(iter(dirs)) for layer, dirs in found.items() if len(dirs) == 1}


def origin_text(origin: Any, folders: dict[str, str]) -> str:
    """``LAYER FILE:LINE``, the file relative to the layer's folder when the legend names it."""
    import os

    where = origin.where
    folder = folders.get(origin.layer)
    if folder and origin.location.line and os.path.dirname(origin.location.file) == folder:
        where = f"{os.path.basename(origin.location.file)}:{origin.location.line}"
    return f"{origin.layer} {where}"


def removal_text(entry: Entry, folders: dict[str, str]) -> str:
    verb = "replaced whole by" if entry.items is not None else "removed by"
    return f"{verb} {origin_text(entry.removed_by, folders)}" if entry.removed_by is not None else ""


_LAYER_STYLE = {"default": "dim", "builtin": "cyan", "platform": "magenta", "team": "green", "task": "yellow"}


def show_explain(resolved: Any, output: str) -> None:
    """Print the provenance of a resolved profile, and the notes that follow from it (which image the task gets:
    :func:`kfdefaults.show.image.explain_note`).

    Args:
        resolved: A :class:`~kfdefaults.Resolved`.
        output: ``table`` (rich, for a terminal), ``text`` (stable plain text), ``json`` or ``yaml``.
    """
    import sys

    entries = explain(resolved)
    notes = [note for note in (explain_note(resolved),) if note]
    if output == "table":
        print_explain_table(resolved.name, entries)
        from rich.console import Console

        for note in notes:
            Console(highlight=False).print(printable(note, output_encoding()), markup=False, soft_wrap=True)
    elif output in ("json", "yaml"):
        document = explain_document(resolved.name, entries, notes)
        encoding = output_encoding()
        sys.stdout.write(to_json(document, encoding=encoding) if output == "json" else to_yaml(document, encoding=encoding))
    else:
        for line in explain_lines(entries) + notes:
            sys.stdout.write(printable(line) + "\n")
