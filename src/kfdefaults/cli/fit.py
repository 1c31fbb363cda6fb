"""``kfdefaults fit NAME``: which node pools a profile's pods schedule on, why not, and what its job holds."""

from __future__ import annotations

import argparse

from .common import add_cluster_facts, add_cluster_template, add_kubernetes_version, add_layer_options, add_sets
from .common import add_target, discover, is_terminal, parser, task_layer
from .common import run as run_body


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "Show which node pools profile NAME's pods schedule on, as kube-scheduler decides it (taints and\n"
                     "tolerations, nodeSelector and node affinity, requests against allocatable, GPUs included), why\n"
                     "not, how many nodes its job needs and what it holds at worst. Every figure is traced to the\n"
                     "FILE:LINE it comes from.\n\n"
                     "The pools come from --nodes (kubectl get nodes -o json), else from the cluster's facts\n"
                     "(their `nodes` file and `node_pools`).\n\n"
                     "Exit status as diff's: 0 a pool fits, 1 no pool fits, 2 trouble (a bad file, an unknown\n"
                     "profile, no pools known, a usage mistake).")
    p.add_argument("name", metavar="NAME")
    add_layer_options(p)
    add_sets(p)
    add_cluster_facts(p)
    p.add_argument("--topology", metavar="LABEL", default=None,
                   help="A topology level (a node label: cloud.google.com/gce-topology-block): how many nodes of\n"
                        "each of its domains take a pod, and whether one holds the job (default: the level the\n"
                        "profile asks Kueue for, kueue.x-k8s.io/podset-required-topology).")
    p.add_argument("-o", "--output", choices=["table", "text", "json"], default=None,
                   help="table (the default on a terminal), text (the default when piped), or json.")
    add_target(p)
    add_cluster_template(p)
    add_kubernetes_version(p)
    return p


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        from ..errors import KfdefaultsError
        from ..show.fit_view import show_fit

        pipeline = discover(build("kfdefaults fit"), args)
        resolved = pipeline.resolve(args.name, [task_layer(pipeline, args.name, args.sets)], per_pool=True)
        report = pipeline.fit(resolved, args.topology)
        if report is None:
            raise KfdefaultsError("no node pools known: give --nodes FILE (kubectl get nodes -o json), or state them in "
                                  "the cluster's facts (`nodes`, `node_pools`: --facts FILE or a platform folder's "
                                  "_cluster-facts.yaml)")
        return show_fit(report, args.output or ("table" if is_terminal() else "text"))

    return run_body(body, error_code=2)
