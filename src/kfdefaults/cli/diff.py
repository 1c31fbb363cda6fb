"""``kfdefaults diff``: what differs between two merged profiles, or one profile under two sets of folders."""

from __future__ import annotations

import argparse

from .common import add_cluster_facts, add_kubernetes_version, add_layer_options, is_terminal, layer_arguments, parser
from .common import run as run_body


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "Show what differs between two merged profiles, leaf by leaf.\n\n"
                     "  kfdefaults diff NAME_A NAME_B                               two profiles\n"
                     "  kfdefaults diff NAME --team OLD_DIR --team-against NEW_DIR  one profile, two sets of folders\n\n"
                     "With the cluster's node pools known (--nodes, --facts, or each side's platform facts), a pool the\n"
                     "profile fits on one side only is a difference too.\n\n"
                     "Exit status as diff's: 0 equal, 1 different, 2 trouble (a bad file, an unknown profile, a usage\n"
                     "mistake).")
    p.add_argument("name_a", metavar="NAME_A")
    p.add_argument("name_b", metavar="NAME_B", nargs="?")
    add_layer_options(p, only=False)
    p.add_argument("--platform-against", action="append", default=[], metavar="DIR",
                   help="Platform folders of side B (repeatable), compared with --platform; the platform layer then "
                        "reads only these flags (no KFDEFAULTS_PLATFORM_PATH, no entry points).")
    p.add_argument("--team-against", action="append", default=[], metavar="DIR",
                   help="Team folders of side B (repeatable), compared with --team; the team layer then reads only "
                        "these flags (no KFDEFAULTS_TEAM_PATH, no pyproject.toml).")
    p.add_argument("-o", "--output", "--format", dest="output", choices=["table", "text", "json", "yaml", "markdown"],
                   default=None, help="table (the default on a terminal), text (the default when piped), json, yaml, "
                                      "or markdown (a table for a pull-request comment).")
    add_cluster_facts(p)
    add_kubernetes_version(p)
    return p


def run(args: argparse.Namespace) -> int:
    if args.name_b is None and not (args.platform_against or args.team_against):
        build("kfdefaults diff").error("give NAME_B, or --team-against / --platform-against to compare NAME under "
                                       "two sets of folders")

    def body() -> int:
        from ..api import compare
        from ..show.diff_view import show_diff

        a, b = compare(args.name_a, args.name_b, platform=args.platform, team=args.team,
                       platform_against=args.platform_against or None, team_against=args.team_against or None,
                       kubernetes_version=args.kubernetes_version, facts=args.facts, nodes=args.nodes,
                       project=layer_arguments(build("kfdefaults diff"), args)["project"])
        return show_diff(a, b, args.output or ("table" if is_terminal() else "text"))

    return run_body(body, error_code=2)
