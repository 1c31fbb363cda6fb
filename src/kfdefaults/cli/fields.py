"""``kfdefaults fields [PATH]``: what a profile key is, its type, and how a higher layer merges onto it."""

from __future__ import annotations

from ..errors import FieldError
import argparse
import textwrap

from .common import WIDTH, add_kubernetes_version, err, out, out_lines, parser
from .common import run as run_body


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "Show what a profile key is: its type, its description, and how a higher layer's value merges\n"
                     "with it (from the Kubernetes schema for pod_template.spec), as kubectl explain does.\n\n"
                     "  kfdefaults fields elastic.rdzv_configs.join_timeout\n"
                     "  kfdefaults fields pod_template.spec.tolerations\n"
                     "  kfdefaults fields 'pod_template.spec.containers[name=primary].resources.limits'")
    p.add_argument("path", metavar="PATH", nargs="?", default="", help="A dotted path, as --set writes it; none "
                                                                       "for the top of a profile.")
    p.add_argument("-o", "--output", choices=["text", "json"], default="text", help="text (the default) or json.")
    add_kubernetes_version(p, "Kubernetes version of the PodSpec schema")
    return p


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        from ..show.fields import describe_field
        from ..show.output import output_encoding, to_json

        try:
            field = describe_field(args.path, args.kubernetes_version)
        except FieldError as e:
            err(f"kfdefaults fields: {e}")
            return 1
        if args.output == "json":
            out(to_json(field, encoding=output_encoding()))
            return 0
        lines = [field["path"] or "(a profile file)", f"  type: {field['type']}"]
        lines += textwrap.wrap(field["merge"], WIDTH - 2, initial_indent="  merge: ", subsequent_indent="         ")
        if field["description"]:
            lines += textwrap.wrap(field["description"], WIDTH - 2, initial_indent="  ", subsequent_indent="  ")
        if field.get("fields"):
            lines += textwrap.wrap(", ".join(field["fields"]), WIDTH - 2, initial_indent="  fields: ",
                                   subsequent_indent="          ")
        out_lines(lines)
        return 0

    return run_body(body)
