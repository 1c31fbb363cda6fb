"""The ``kfdefaults`` command line: a thin layer over :mod:`kfdefaults._api` and friends.

Exit status: 0 success; 1 bad input (each problem printed as ``FILE:LINE:COLUMN: message`` on standard
error, never a traceback); 2 a usage mistake (click's own).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Sequence

import click

from ._errors import KfdefaultsError, ProfileError

_FOLDER = click.Path(file_okay=False, dir_okay=True, path_type=str)


def _report(findings: Sequence[Any]) -> None:
    for finding in findings:
        click.echo(str(finding), err=True)


def _run(fn: Callable[[], int | None]) -> None:
    """Run a command body; turn kfdefaults errors into messages and exit 1."""
    try:
        code = fn()
    except ProfileError as e:
        _report(e.findings)
        sys.exit(1)
    except KfdefaultsError as e:
        click.echo(f"kfdefaults: {e}", err=True)
        sys.exit(1)
    except (click.exceptions.Exit, click.ClickException, KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as e:  # a bug: say so plainly, keep the traceback for whoever asks
        if os.environ.get("KFDEFAULTS_DEBUG"):
            raise
        click.echo(f"kfdefaults: internal error: {type(e).__name__}: {e} (KFDEFAULTS_DEBUG=1 shows the traceback)", err=True)
        sys.exit(1)
    sys.exit(code or 0)


def _layer_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--team", "team", multiple=True, type=_FOLDER, metavar="DIR",
                      help="A team-layer folder (repeatable); adds to KFDEFAULTS_TEAM_PATH and pyproject.toml.")(fn)
    fn = click.option("--platform", "platform", multiple=True, type=_FOLDER, metavar="DIR",
                      help="A platform-layer folder (repeatable); adds to KFDEFAULTS_PLATFORM_PATH and entry points.")(fn)
    return fn


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="kfdefaults")
def main() -> None:
    """Layered defaults for Flyte's torch elastic (kfpytorch) tasks: pod templates and Elastic settings."""


@main.command()
@click.argument("name")
@_layer_options
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Task-layer value (repeatable): elastic.nnodes=2, 'pod_template.spec.containers[name=primary].image=img:1'.")
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
@click.option("--as", "as_", type=click.Choice(["profile", "podtemplate"]), default="profile", show_default=True,
              help="profile: the merged profile; podtemplate: a Kubernetes v1 PodTemplate manifest.")
@click.option("--kubernetes-version", default=None, metavar="X.Y", help="Schema version for merging (default 1.32).")
def render(name: str, platform: tuple[str, ...], team: tuple[str, ...], sets: tuple[str, ...], output: str,
           as_: str, kubernetes_version: str | None) -> None:
    """Print profile NAME merged across its layers (builtin, platform, team, --set)."""

    def body() -> None:
        from ._api import Resolved, task_fragment
        from ._output import order_k8s, order_profile, to_json, to_yaml
        from ._overrides import parse_sets
        from ._resolve import Catalog, expand, merge_fragments

        tree, labels = parse_sets(sets)
        catalog = Catalog.discover(platform, team)
        task = task_fragment(name, tree, source="--set", labels=labels)
        resolved = Resolved(merge_fragments(name, expand(catalog, name, task), kubernetes_version=kubernetes_version))
        if as_ == "podtemplate":
            from ._k8s_schema import schema_type

            data = order_k8s(resolved.pod_template_manifest(), schema_type("PodTemplate"))
        else:
            data = order_profile(resolved.to_dict())
        click.echo(to_json(data) if output == "json" else to_yaml(data), nl=False)

    _run(body)


@main.command("list")
@_layer_options
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default=None,
              help="table (the default on a terminal) or json; plain text when piped.")
def list_(platform: tuple[str, ...], team: tuple[str, ...], output: str | None) -> None:
    """List every visible profile: name, the layers that define it, its description."""

    def body() -> None:
        from ._resolve import Catalog

        catalog = Catalog.discover(platform, team)
        rows = []
        for name in catalog.names():
            layers = catalog.layers_defining(name)
            description = ""
            for layer in reversed(layers):
                files = catalog.files(name, layer)
                if len(files) == 1:
                    d = catalog.load(files[0], layer).fragment.description
                    if d:
                        description = d
                        break
            rows.append({"name": name, "layers": layers, "description": description})
        if output == "json":
            from ._output import to_json

            click.echo(to_json(rows), nl=False)
        elif output == "table" or (output is None and sys.stdout.isatty()):
            from rich.console import Console
            from rich.table import Table

            table = Table("name", "layers", "description")
            for row in rows:
                table.add_row(row["name"], ", ".join(row["layers"]), row["description"])
            Console().print(table)
        else:
            width = max((len(r["name"]) for r in rows), default=4)
            lwidth = max((len(",".join(r["layers"])) for r in rows), default=6)
            for row in rows:
                click.echo(f"{row['name']:<{width}}  {','.join(row['layers']):<{lwidth}}  {row['description']}".rstrip())

    _run(body)


if __name__ == "__main__":  # pragma: no cover
    main()
