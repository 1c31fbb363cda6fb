"""The ``kfdefaults`` command line: a thin layer over the :class:`~kfdefaults.pipeline.Pipeline`.

Exit status: 0 success; 1 bad input (each problem printed as ``FILE:LINE:COLUMN: message`` on standard
error, never a traceback); 2 a usage mistake (click's own).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Sequence

import click

from .errors import KfdefaultsError, ProfileError

_FOLDER = click.Path(path_type=str, readable=False)  # checked by kfdefaults itself: a bad folder is bad input (exit 1), as in a variable


def _report(findings: Sequence[Any]) -> None:
    for finding in findings:
        click.echo(str(finding), err=True)


def _run(fn: Callable[[], int | None], error_code: int = 1) -> None:
    """Run a command body; turn kfdefaults errors into messages and exit ``error_code`` (1; 2 for ``diff``)."""
    try:
        code = fn()
    except ProfileError as e:
        _report(e.findings)
        sys.exit(error_code)
    except KfdefaultsError as e:
        click.echo(f"kfdefaults: {e}", err=True)
        sys.exit(error_code)
    except (click.exceptions.Exit, click.ClickException, KeyboardInterrupt, BrokenPipeError):
        raise
    except OSError as e:  # the output cannot be written (a full disk, a closed pipe)
        click.echo(f"kfdefaults: {e.strerror or e}", err=True)
        sys.exit(error_code)
    except Exception as e:  # a bug: say so plainly, keep the traceback for whoever asks
        from .settings import DEBUG_ENV, flag

        if flag(DEBUG_ENV):
            raise
        click.echo(f"kfdefaults: internal error: {type(e).__name__}: {e} (KFDEFAULTS_DEBUG=1 shows the traceback)", err=True)
        sys.exit(error_code)
    sys.exit(code or 0)


def _kubernetes_version(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from .smp.schema import normalize_version

    try:
        return normalize_version(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def _layer_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--team", "team", multiple=True, type=_FOLDER, metavar="DIR",
                      help="A team-layer folder (repeatable); adds to KFDEFAULTS_TEAM_PATH and pyproject.toml.")(fn)
    fn = click.option("--platform", "platform", multiple=True, type=_FOLDER, metavar="DIR",
                      help="A platform-layer folder (repeatable); adds to KFDEFAULTS_PLATFORM_PATH and entry points.")(fn)
    return fn


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="kfdefaults")
@click.option("--no-entry-points", is_flag=True,
              help="Ignore the platform folders of installed packages (kfdefaults.platform entry points), as "
                   "KFDEFAULTS_NO_ENTRY_POINTS=1 does; to test a package's own folder with --platform.")
def main(no_entry_points: bool) -> None:
    """Layered defaults for Flyte's torch elastic (kfpytorch) tasks: pod templates and Elastic settings."""
    if no_entry_points:
        from .settings import NO_ENTRY_POINTS_ENV

        os.environ[NO_ENTRY_POINTS_ENV] = "1"


@main.command()
@click.argument("name")
@_layer_options
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Task-layer value (repeatable): elastic.nnodes=2, 'pod_template.spec.containers[name=primary].image=img:1'.")
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
@click.option("--as", "as_", type=click.Choice(["profile", "podtemplate", "flyte"]), default="profile", show_default=True,
              help="profile: the merged profile; podtemplate: a Kubernetes v1 PodTemplate manifest; "
                   "flyte: the TaskTemplate flytekit registers for a task on the profile (imports flytekit).")
@click.option("--kubernetes-version", default=None, metavar="X.Y", callback=_kubernetes_version, help="Schema version for merging (default 1.32).")
@click.option("--explain", is_flag=True,
              help="For every leaf: the value, the layer and FILE:LINE that set it, and values a layer removed "
                   "(a table on a terminal, plain text when piped, -o json / -o yaml for scripts).")
def render(name: str, platform: tuple[str, ...], team: tuple[str, ...], sets: tuple[str, ...], output: str,
           as_: str, kubernetes_version: str | None, explain: bool = False) -> None:
    """Print profile NAME merged across its layers (builtin, platform, team, --set)."""
    if explain and as_ != "profile":
        raise click.UsageError(f"--explain shows the merged profile; it does not combine with --as {as_}")
    explain_format = None
    if explain:
        from click.core import ParameterSource

        explicit = click.get_current_context().get_parameter_source("output") is not ParameterSource.DEFAULT
        explain_format = output if explicit else ("table" if sys.stdout.isatty() else "text")

    def body() -> None:
        from .pipeline import Pipeline
        from .show.output import order_k8s, order_profile, to_json, to_yaml
        from .validate.sets import parse_sets

        pipeline = Pipeline.discover(platform, team, kubernetes_version=kubernetes_version)
        tree, labels = parse_sets(sets, pipeline.kubernetes_version)
        task = pipeline.task_layer(name, tree, source="--set", labels=labels)
        if as_ == "flyte":
            _render_flyte(name, platform, team, tree, output)
            return
        resolved = pipeline.resolve(name, [task])
        _report(pipeline.warnings(resolved))  # on standard error; the output stays clean
        if explain_format is not None:
            from .show.explain_view import show_explain

            show_explain(resolved, explain_format, kubernetes_version=pipeline.kubernetes_version)
            return
        if as_ == "podtemplate":
            from .smp.schema import schema_type

            data = order_k8s(resolved.pod_template_manifest(), schema_type("PodTemplate", pipeline.kubernetes_version))
        else:
            data = order_profile(resolved.to_dict(), pipeline.kubernetes_version)
        click.echo(to_json(data) if output == "json" else to_yaml(data), nl=False)

    _run(body)


def _render_flyte(name: str, platform: Sequence[str], team: Sequence[str], tree: dict[str, Any], output: str) -> None:
    """``render --as flyte``: define a real task on the profile and print the TaskTemplate flytekit registers."""
    from .show.output import to_json, to_yaml

    try:
        from .flytekit.preview import flyte_task_template

        data = flyte_task_template(name, platform=platform, team=team, overrides=tree)
    except ImportError as e:  # the plugin imports torch when a task is defined
        raise KfdefaultsError(f"render --as flyte defines a task, which needs {e.name or 'a package'}: {e}") from None
    click.echo(to_json(data) if output == "json" else to_yaml(data), nl=False)


@main.command("list")
@_layer_options
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default=None,
              help="table (the default on a terminal) or json; plain text when piped.")
def list_(platform: tuple[str, ...], team: tuple[str, ...], output: str | None) -> None:
    """List every visible profile: name, the layers that define it, its description.

    Exits 1, after the list, when a profile cannot be used (a broken file or `extends`, a name defined twice
    in one layer): its description says so, the problems are printed on standard error, and with `-o json`
    its row carries them as `errors`.
    """

    def body() -> int:
        from .pipeline import Pipeline
        from .validate.folders import empty_folder_warnings

        pipeline = Pipeline.discover(platform, team)
        _report(empty_folder_warnings(pipeline.catalog))
        rows, problems = _profile_rows(pipeline)
        if output == "json":
            from .show.output import to_json

            click.echo(to_json(rows), nl=False)
        elif output == "table" or (output is None and sys.stdout.isatty()):
            from rich.console import Console
            from rich.table import Table
            from rich.text import Text

            table = Table("name", "layers", "description")
            for row in rows:  # Text: a description is printed as written, never read as rich markup
                table.add_row(Text(row["name"]), Text(", ".join(row["layers"])), Text(_shown(row)))
            Console().print(table)
        else:
            width = max((len(r["name"]) for r in rows), default=4)
            lwidth = max((len(",".join(r["layers"])) for r in rows), default=6)
            for row in rows:
                click.echo(f"{row['name']:<{width}}  {','.join(row['layers']):<{lwidth}}  {_shown(row)}".rstrip())
        from .errors import sorted_findings

        _report(sorted_findings(problems))
        return 1 if problems else 0

    _run(body)


def _profile_rows(pipeline: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    """One row per visible profile (name, layers, the description ``render`` shows) and every problem, once."""
    rows = []
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
        rows.append(row)
    return rows, list(problems.values())


def _shown(row: dict[str, Any]) -> str:
    return "(cannot be used: see the errors below)" if "errors" in row else row["description"]


@main.command()
@click.argument("name_a")
@click.argument("name_b", required=False)
@_layer_options
@click.option("--platform-against", "platform_against", multiple=True, type=_FOLDER, metavar="DIR",
              help="Platform folders of side B (repeatable), compared with --platform; the platform layer then "
                   "reads only these flags (no KFDEFAULTS_PLATFORM_PATH, no entry points).")
@click.option("--team-against", "team_against", multiple=True, type=_FOLDER, metavar="DIR",
              help="Team folders of side B (repeatable), compared with --team; the team layer then reads only "
                   "these flags (no KFDEFAULTS_TEAM_PATH, no pyproject.toml).")
@click.option("-o", "--output", "--format", "output", type=click.Choice(["table", "text", "json", "yaml", "markdown"]),
              default=None, help="table (the default on a terminal), text (the default when piped), json, yaml, "
                                 "or markdown (a table for a pull-request comment).")
@click.option("--kubernetes-version", default=None, metavar="X.Y", callback=_kubernetes_version, help="Schema version for merging (default 1.32).")
def diff(name_a: str, name_b: str | None, platform: tuple[str, ...], team: tuple[str, ...],
         platform_against: tuple[str, ...], team_against: tuple[str, ...], output: str | None,
         kubernetes_version: str | None) -> None:
    """Show what differs between two merged profiles, leaf by leaf.

    \b
    kfdefaults diff NAME_A NAME_B                              two profiles
    kfdefaults diff NAME --team OLD_DIR --team-against NEW_DIR  one profile, two sets of folders

    Exit status as diff's: 0 equal, 1 different, 2 trouble (a bad file, an unknown profile, a usage mistake).
    """
    if name_b is None and not (platform_against or team_against):
        raise click.UsageError("give NAME_B, or --team-against / --platform-against to compare NAME under two sets of folders")

    def body() -> int:
        from .api import compare
        from .show.diff import show_diff

        a, b = compare(name_a, name_b, platform=platform, team=team,
                       platform_against=platform_against or None, team_against=team_against or None,
                       kubernetes_version=kubernetes_version)
        return show_diff(a, b, output or ("table" if sys.stdout.isatty() else "text"))

    _run(body, error_code=2)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str, readable=False), metavar="[PATH]...")
@_layer_options
@click.option("--layer", type=click.Choice(["platform", "team"]), default="team", show_default=True,
              help="The layer the PATHs belong to (their profiles are merged on top of the lower layers).")
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: FILE:LINE:COLUMN lines on standard error; json: a report on standard output.")
@click.option("--strict", is_flag=True, help="Warnings fail the run too (exit 1).")
@click.option("--kubernetes-version", default=None, metavar="X.Y", callback=_kubernetes_version,
              help="Schema version the PodSpec fragments are checked against (default 1.32).")
def validate(paths: tuple[str, ...], platform: tuple[str, ...], team: tuple[str, ...], layer: str, format_: str,
             strict: bool, kubernetes_version: str | None) -> None:
    """Check profile files and folders of them, for CI and pre-commit.

    Each file is checked on its own (syntax, sections, rendezvous settings, the PodSpec fragment against the
    Kubernetes schema), then each profile the files define is merged over the builtin profiles (and the
    --platform / --team folders given) and checked again. Without PATH, every folder that render would read
    is checked. Every problem of every file is reported; a broken file does not stop the others.

    Exit status: 0 no errors (warnings are printed), 1 errors (or warnings with --strict), 2 a usage mistake.
    """

    def body() -> int:
        from .api import validate_paths

        report = validate_paths(paths, layer=layer, platform=platform, team=team, kubernetes_version=kubernetes_version)
        if format_ == "json":
            from .show.output import to_json

            click.echo(to_json(report.to_dict()), nl=False)
        else:
            _report(report.findings)
            counts = ((len(report.files), "file"), (len(report.profiles), "profile"),
                      (len(report.errors), "error"), (len(report.warnings), "warning"))
            files, profiles, errors, warnings = (f"{n} {noun}{'s' * (n != 1)}" for n, noun in counts)
            click.echo(f"kfdefaults validate: {files}, {profiles}: {errors}, {warnings}", err=True)
        return 1 if report.errors or (strict and report.warnings) else 0

    _run(body)


@main.command()
@click.option("--kubernetes-version", default=None, metavar="X.Y", callback=_kubernetes_version,
              help="Kubernetes version of the bundled PodSpec schema (default 1.32).")
def schema(kubernetes_version: str | None) -> None:
    """Print the JSON Schema of a profile file, for editors.

    \b
    kfdefaults schema > .kfdefaults.schema.json
    # yaml-language-server: $schema=./.kfdefaults.schema.json     (first line of a profile)
    """

    def body() -> None:
        from .show.jsonschema import profile_schema
        from .show.output import to_json

        click.echo(to_json(profile_schema(kubernetes_version)), nl=False)

    _run(body)


if __name__ == "__main__":  # pragma: no cover
    main()
