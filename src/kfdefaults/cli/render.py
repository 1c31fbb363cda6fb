"""``kfdefaults render NAME``: a profile merged across its layers, as the task will get it."""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from ..errors import KfdefaultsError
from .common import (
    add_kubernetes_version,
    add_layer_options,
    is_terminal,
    layer_arguments,
    out,
    parser,
    report,
)
from .common import run as run_body


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "Print profile NAME merged across its layers (builtin, platform, team, --set).")
    p.add_argument("name", metavar="NAME")
    add_layer_options(p)
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="Task-layer value (repeatable): elastic.nnodes=2, "
                        "'pod_template.spec.containers[name=primary].image=img:1'.")
    p.add_argument("-o", "--output", choices=["yaml", "json"], default=None,
                   help="yaml (the default) or json; with --explain, the explanation as data.")
    p.add_argument("--as", dest="as_", choices=["profile", "podtemplate", "flyte"], default="profile",
                   help="profile (the default): the merged profile; podtemplate: a Kubernetes v1 PodTemplate "
                        "manifest; flyte: the TaskTemplate flytekit registers for a task on the profile (imports "
                        "flytekit).")
    p.add_argument("--image", metavar="IMAGE", default=None,
                   help="With --as flyte: the task's container image (default: flytekit's default image).")
    add_kubernetes_version(p)
    p.add_argument("--explain", action="store_true",
                   help="For every leaf: the value, the layer and FILE:LINE that set it, and values a layer removed "
                        "(a table on a terminal, plain text when piped, -o json / -o yaml for scripts).")
    return p


def run(args: argparse.Namespace) -> int:
    if args.explain and args.as_ != "profile":
        build("kfdefaults render").error(f"--explain shows the merged profile; it does not combine with --as {args.as_}")
    if args.image is not None and args.as_ != "flyte":
        build("kfdefaults render").error("--image is the image of the task that --as flyte serializes")
    return run_body(lambda: _render(args))


def _render(args: argparse.Namespace) -> None:
    from ..pipeline import Pipeline
    from ..show.output import order_k8s, order_profile, output_encoding, to_json, to_yaml
    from ..validate.sets import parse_sets

    output = args.output or "yaml"
    layers = layer_arguments(build("kfdefaults render"), args)
    if args.as_ == "flyte" and layers["only"]:
        build("kfdefaults render").error("--as flyte shows what registering the task gives, which reads every source "
                                         "of each layer: --only-platform / --only-team do not combine with it")
    pipeline = Pipeline.discover(**layers, kubernetes_version=args.kubernetes_version)
    tree, labels = parse_sets(args.sets, pipeline.kubernetes_version)
    task = pipeline.task_layer(args.name, tree, source="--set", labels=labels)
    resolved = pipeline.resolve(args.name, [task])
    report(pipeline.warnings(resolved))  # on standard error; the output stays clean
    if args.as_ == "flyte":
        _render_flyte(args.name, args.platform, args.team, tree, output, args.image)
        return
    if args.explain:
        from ..show.explain_view import show_explain

        show_explain(resolved, args.output or ("table" if is_terminal() else "text"),
                     kubernetes_version=pipeline.kubernetes_version)
        return
    if args.as_ == "podtemplate":
        from ..smp.schema import schema_type

        data = order_k8s(resolved.pod_template_manifest(), schema_type("PodTemplate", pipeline.kubernetes_version))
    else:
        data = order_profile(resolved.to_dict(), pipeline.kubernetes_version)
    encoding = output_encoding()
    out(to_json(data, encoding=encoding) if output == "json" else to_yaml(data, encoding=encoding))


def _render_flyte(name: str, platform: Sequence[str], team: Sequence[str], tree: dict[str, Any], output: str,
                  image: str | None) -> None:
    """``render --as flyte``: define a real task on the profile and print the TaskTemplate flytekit registers.

    Importing flytekit takes a second or more: on a terminal, a line on standard error says so meanwhile."""
    import sys

    from ..show.output import output_encoding, to_json, to_yaml

    progress = sys.stderr.isatty()
    if progress:
        sys.stderr.write("kfdefaults: loading flytekit to serialize the task...")
        sys.stderr.flush()
    try:
        from ..flytekit.preview import flyte_task_template

        data = flyte_task_template(name, platform=platform, team=team, overrides=tree, image=image)
    except ImportError as e:
        raise KfdefaultsError(f"render --as flyte defines a task, which needs {e.name or 'a package'}: {e}") from None
    finally:
        if progress:
            sys.stderr.write("\r\033[K")  # the line is taken away again
    encoding = output_encoding()
    out(to_json(data, encoding=encoding) if output == "json" else to_yaml(data, encoding=encoding))
