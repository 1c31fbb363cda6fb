"""``kfdefaults validate [PATH]...``: check profile files and folders, for CI and pre-commit."""

from __future__ import annotations

import argparse

from .common import (
    add_cluster_facts,
    add_cluster_template,
    add_kubernetes_version,
    add_layer_options,
    add_target,
    err,
    layer_arguments,
    out,
    parser,
    report,
)
from .common import run as run_body


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "Check profile files and folders of them, for CI and pre-commit.\n\n"
                     "Each file is checked on its own (syntax, sections, rendezvous settings, the PodSpec fragment\n"
                     "against the Kubernetes schema), then each profile the files define is merged over the builtin\n"
                     "profiles (and the --platform / --team folders given) and checked again. Without PATH, every\n"
                     "folder that render would read is checked. Every problem of every file is reported; a broken\n"
                     "file does not stop the others. With the cluster's default PodTemplate (--cluster-template),\n"
                     "what Flyte's backend would break in each profile's pod is reported too. With the cluster's\n"
                     "facts or node list (--facts, --nodes, or a platform folder's _cluster-facts.yaml), they are\n"
                     "checked like a profile, and a profile that fits none of the node pools is warned about. A PATH\n"
                     "named _cluster-facts.yaml (.yml, .toml) or _cluster-template.yaml is no profile: it is read as\n"
                     "--facts or --cluster-template would name it.\n\n"
                     "A deprecation (`deprecated:`) declared by a file given is a note, which --strict does not count;\n"
                     "a profile that extends a deprecated one is warned about.\n\n"
                     "Exit status: 0 no errors (warnings are printed), 1 errors (or warnings with --strict), 2 a\n"
                     "usage mistake.")
    p.add_argument("paths", nargs="*", metavar="PATH")
    add_layer_options(p)
    p.add_argument("--layer", choices=["platform", "team"], default="team",
                   help="The layer the PATHs belong to (their profiles are merged on top of the lower layers); "
                        "default: team.")
    p.add_argument("-o", "--output", "--format", dest="format_", choices=["text", "json"], default="text",
                   help="text (the default): FILE:LINE:COLUMN lines on standard error; json: a report on standard "
                        "output.")
    p.add_argument("--strict", action="store_true", help="Warnings fail the run too (exit 1).")
    add_target(p)
    add_cluster_template(p)
    add_cluster_facts(p)
    add_kubernetes_version(p, "Schema version the PodSpec fragments are checked against")
    return p


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        from ..api import validate_paths

        layers = layer_arguments(build("kfdefaults validate"), args)
        result = validate_paths(args.paths, layer=args.layer, kubernetes_version=args.kubernetes_version,
                                target=args.target, cluster_template=args.cluster_template,
                                facts=args.facts, nodes=args.nodes, **layers)
        if args.format_ == "json":
            from ..show.output import output_encoding, to_json

            out(to_json(result.to_dict(), encoding=output_encoding()))
        else:
            report(result.findings)
            counts = ((len(result.files), "file"), (len(result.profiles), "profile"),
                      (len(result.errors), "error"), (len(result.warnings), "warning"))
            files, profiles, errors, warnings = (f"{n} {noun}{'s' * (n != 1)}" for n, noun in counts)
            notes = f", {len(result.notes)} note{'s' * (len(result.notes) != 1)}" if result.notes else ""
            err(f"kfdefaults validate: {files}, {profiles}: {errors}, {warnings}{notes}")
        return 1 if result.errors or (args.strict and result.warnings) else 0

    return run_body(body)
