"""``kfdefaults timeline NAME``: which clock fires first, when, with which error, as the cluster's facts say."""

from __future__ import annotations

import argparse
import os

from .common import add_cluster_facts, add_cluster_template, add_kubernetes_version, add_layer_options, add_sets
from .common import add_target, discover, err, parser, task_layer
from .common import run as run_body


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "Show the clocks of profile NAME's distributed task on the cluster its facts describe (node\n"
                     "start and image pull times, Kueue, Flyte's timeout, the torch in the image), and the timeline\n"
                     "of a multi-node start with a cold node, of a node that never arrives, of a lost peer and of a\n"
                     "hung collective: which clock fires first, when, with which error, and the worst case to a\n"
                     "clean failure. Every figure is traced to the FILE:LINE that set it, or to the named default.\n\n"
                     "The start times are those of --pool, else of the node pool the profile fits (of several, the\n"
                     "slowest to start), else the cluster's. A fact the facts do not state is shown as unknown.")
    p.add_argument("name", metavar="NAME")
    add_layer_options(p)
    add_sets(p)
    add_cluster_facts(p)
    p.add_argument("--pool", default=None, metavar="POOL",
                   help="The node pool whose node_start and image_pull apply (default: the one the profile fits; "
                        "of several, the slowest to start).")
    p.add_argument("-o", "--output", choices=["text", "json"], default="text",
                   help="text (80 columns, the default) or json.")
    add_target(p)
    add_cluster_template(p)
    add_kubernetes_version(p)
    return p


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        from ..check.timeline import timeline
        from ..layers.cluster import CLUSTER_FACTS, NONE
        from ..show.timeline_view import show_timeline

        pipeline = discover(build("kfdefaults timeline"), args)
        said_none = any(str(value).strip().lower() == NONE
                        for value in (args.facts, os.environ.get(CLUSTER_FACTS.variable)) if value)
        if pipeline.facts_file is None and not said_none:  # a first try, most likely: every figure will say unknown
            err("kfdefaults: no cluster facts: every fact is unknown (state them in a platform folder's "
                "_cluster-facts.yaml, or name a file with --facts FILE, KFDEFAULTS_CLUSTER_FACTS or [tool.kfdefaults] "
                "cluster_facts)", wrap=True)
        resolved = pipeline.resolve(args.name, [task_layer(pipeline, args.name, args.sets)])
        return show_timeline(timeline(resolved, pipeline.facts, pipeline.cold_start(resolved, args.pool)), args.output)

    return run_body(body)
