"""``kfdefaults list``: every visible profile, the layers that define it, its description."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ProfileError, sorted_findings
from ..escape import printable
from .common import add_layer_options, is_terminal, layer_arguments, out, out_lines, parser, report
from .common import run as run_body


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "List every visible profile: name, the layers that define it, its description.\n\n"
                     "Exits 1, after the list, when a profile cannot be used (a broken file or `extends`, a name\n"
                     "defined twice in one layer): its description says so, the problems are printed on standard\n"
                     "error, and with `-o json` its row carries them as `errors`. A deprecated profile says so after\n"
                     "its description (`deprecated` in its JSON row), with a warning on standard error.")
    add_layer_options(p)
    p.add_argument("-o", "--output", choices=["table", "json"], default=None,
                   help="table (the default on a terminal) or json; plain text when piped.")
    return p


def run(args: argparse.Namespace) -> int:
    return run_body(lambda: _list(args))


def _list(args: argparse.Namespace) -> int:
    from ..pipeline import Pipeline
    from ..check.folders import empty_folder_warnings

    pipeline = Pipeline.discover(**layer_arguments(build("kfdefaults list"), args))
    report(empty_folder_warnings(pipeline.catalog))
    rows, problems, warnings = profile_rows(pipeline)
    report(sorted_findings(warnings))
    if args.output == "json":
        from ..show.output import output_encoding, to_json

        out(to_json(rows, encoding=output_encoding()))
    elif args.output == "table" or (args.output is None and is_terminal()):
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        from ..show.output import output_encoding

        encoding = output_encoding()
        table = Table("name", "layers", "description")
        for row in rows:  # Text: a description is printed as written, never read as rich markup
            table.add_row(*(Text(printable(cell, encoding)) for cell in (row["name"], ", ".join(row["layers"]),
                                                                         _shown(row))))
        Console().print(table)
    else:
        names = [printable(r["name"]) for r in rows]
        width = max((len(name) for name in names), default=4)
        lwidth = max((len(",".join(r["layers"])) for r in rows), default=6)
        out_lines(f"{name:<{width}}  {','.join(row['layers']):<{lwidth}}  {printable(_shown(row))}".rstrip()
                  for name, row in zip(names, rows))
    report(sorted_findings(problems))
    return 1 if problems else 0


def profile_rows(pipeline: Any) -> tuple[list[dict[str, Any]], list[Any], list[Any]]:
    """One row per visible profile (name, layers, the description ``render`` shows, ``deprecated`` when its file
    says so), every problem, once, and a warning per deprecated profile."""
    from ..check.deprecation import deprecations

    rows = []
    warnings: list[Any] = []
    problems: dict[str, Any] = {}  # str(finding) -> finding: each problem once
    for name in pipeline.catalog.names():
        row: dict[str, Any] = {"name": name, "layers": pipeline.catalog.layers_defining(name), "description": ""}
        try:  # the description render shows: the highest fragment's, parents (``extends``) included
            fragments = pipeline.fragments(name)
        except ProfileError as e:  # a broken file, ``extends`` or a name defined twice: no guess at a description
            problems.update((str(f), f) for f in e.findings)
            row["errors"] = [str(f) for f in e.findings]
            fragments = []
        for fragment in reversed(fragments):
            if fragment.description:
                row["description"] = fragment.description
                break
        deprecated = [f for f in fragments if f.deprecated and f.profile == name]
        if deprecated:
            row["deprecated"] = deprecated[-1].deprecated
            warnings.extend(deprecations(_Named(name, deprecated)))
        rows.append(row)
    return rows, list(problems.values()), warnings


class _Named:
    """A profile's name and some of its fragments, as :func:`~kfdefaults.check.deprecation.deprecations` reads
    a merged profile (``list`` merges nothing)."""

    def __init__(self, name: str, fragments: list[Any]) -> None:
        self.name, self.fragments = name, fragments


def _shown(row: dict[str, Any]) -> str:
    if "errors" in row:
        return "(cannot be used: see the errors below)"
    if "deprecated" in row:
        return f"{row['description']} (deprecated: {row['deprecated']})".lstrip()
    return row["description"]
