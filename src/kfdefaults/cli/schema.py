"""``kfdefaults schema``: the JSON Schema of a profile file, for editors."""

from __future__ import annotations

import argparse

from .common import add_kubernetes_version, out, parser
from .common import run as run_body


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "Print the JSON Schema of a profile file, for editors.\n\n"
                     "  kfdefaults schema > .kfdefaults.schema.json\n"
                     "  # yaml-language-server: $schema=./.kfdefaults.schema.json     (first line of a profile)")
    add_kubernetes_version(p, "Kubernetes version of the bundled PodSpec schema")
    p.add_argument("--facts", action="store_true",
                   help="The schema of a file of the cluster's facts (_cluster-facts.yaml) instead.")
    return p


def run(args: argparse.Namespace) -> int:
    def body() -> None:
        from ..show.jsonschema import facts_schema, profile_schema
        from ..show.output import output_encoding, to_json

        schema = facts_schema() if args.facts else profile_schema(args.kubernetes_version)
        out(to_json(schema, encoding=output_encoding()))

    return run_body(body)
