#!/usr/bin/env python3
"""Compare kfdefaults.strategic_merge_patch with ``kubectl patch --local --type strategic`` at scale.

Generates seeded cases (one patch with several originals at a time, see ``tests/smp_strategies.py``),
runs them through kubectl and through the engine, and prints how many cases there were, how many kubectl
accepted, how many diverged, and the time taken. Exits 1 on any divergence.

Examples::

    python scripts/smp_conformance.py                          # 5000 cases, seed 0
    python scripts/smp_conformance.py --cases 20000 --seed 7 --out divergences.json --shrink
    python scripts/smp_conformance.py --kubectl-only            # check the harness without the engine
    python scripts/smp_conformance.py --kubectl-runs 3          # also check that kubectl is deterministic

Exit status: 0 when the engine agrees on every case, 1 on a divergence (or a case where kubectl is not
deterministic), 2 on a usage or setup error.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from smp_oracle import (  # noqa: E402
    Divergence,
    canonical,
    find_divergences,
    kubectl_apply,
    kubectl_available,
    kubectl_binary,
    kubectl_varies,
    shrink,
)
from smp_strategies import SCHEMAS, random_cases  # noqa: E402


def _describe(d: Divergence) -> str:
    if d.engine.error and d.engine.error.startswith("engine crashed:"):
        return "engine crashed"
    if d.kubectl.ok and not d.engine.ok:
        return "kubectl accepts, engine rejects"
    if not d.kubectl.ok and d.engine.ok:
        return "kubectl rejects, engine accepts"
    return "different results"


def _report(d: Divergence, kind: str, shrink_it: bool, workers: int) -> dict:
    """Return a divergence as JSON data, shrunk if asked, with whether kubectl is stable on it.

    A shrunk case on which kubectl is not stable is dropped for the unshrunk one: the shrinker keeps any
    smaller case that still diverges, including one where Go's random map order decides kubectl's outcome.
    """
    varies = kubectl_varies(d.original, d.patch, kind)
    if shrink_it and not varies:
        smaller = shrink(d, kind, workers=workers)
        if not kubectl_varies(smaller.original, smaller.patch, kind):
            d = smaller
    return {"index": d.index, "kind": kind, "kubectl_varies": varies, **d.to_json()}


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=5000, help="number of (original, patch) cases (5000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the case generator (0)")
    parser.add_argument("--kind", choices=sorted(SCHEMAS), default="PodTemplateSpec", help="document kind")
    parser.add_argument("--per-patch", type=int, default=10, help="originals per patch, i.e. per kubectl run (10)")
    parser.add_argument("--workers", type=int, default=2, help="kubectl processes at once (2)")
    parser.add_argument("--out", type=Path, help="write the first divergences here as JSON")
    parser.add_argument(
        "--max-report", type=int, default=5, help="divergences written and printed, one per patch (5)"
    )
    parser.add_argument("--shrink", action="store_true", help="shrink the reported divergences first")
    parser.add_argument(
        "--kubectl-runs", type=int, default=1,
        help="run kubectl this many times and report cases whose outcome changes (1: no check)",
    )
    parser.add_argument("--kubectl-only", action="store_true", help="run kubectl only: accept ratio, throughput")
    parser.add_argument(
        "--kubernetes-version", metavar="X.Y",
        help="merge with this Kubernetes version's schema, against the kubectl of that version, given by --kubectl",
    )
    parser.add_argument("--kubectl", metavar="PATH", help="the kubectl binary (default: $KUBECTL, else kubectl on PATH)")
    args = parser.parse_args(argv)
    if args.kubectl:
        os.environ["KUBECTL"] = args.kubectl
    engine = None
    if args.kubernetes_version:
        from kfdefaults import strategic_merge_patch

        engine = functools.partial(strategic_merge_patch, kubernetes_version=args.kubernetes_version)
    if args.cases < 1 or args.per_patch < 1 or args.kubectl_runs < 1:
        parser.error("--cases, --per-patch and --kubectl-runs must be at least 1")
    if not kubectl_available():
        print("kubectl not found (set KUBECTL or put kubectl on PATH)", file=sys.stderr)
        return 2

    start = time.perf_counter()
    cases = random_cases(args.cases, args.seed, args.kind, args.per_patch)
    generated = time.perf_counter()
    runs = [kubectl_apply(cases, args.kind, workers=args.workers) for _ in range(args.kubectl_runs)]
    kubectl_done = time.perf_counter()
    expected = runs[0]

    def key(outcome):
        return (outcome.ok, canonical(outcome.result) if outcome.ok else None)

    unstable = [i for i in range(len(cases)) if len({key(run[i]) for run in runs}) > 1]
    accepted = sum(o.ok for o in expected)
    print(f"cases:              {len(cases)} ({args.kind}, seed {args.seed}, {args.per_patch} per patch)")
    print(f"kubectl:            {kubectl_binary()}; engine schema: Kubernetes {args.kubernetes_version or 'default'}")
    print(f"kubectl accepted:   {accepted} ({accepted / len(cases):.1%})")
    print(f"time generating:    {generated - start:.1f} s")
    kubectl_time = kubectl_done - generated
    print(
        f"time in kubectl:    {kubectl_time:.1f} s for {args.kubectl_runs} run(s), "
        f"{len(cases) * args.kubectl_runs / kubectl_time:.0f} cases/s"
    )
    if args.kubectl_runs > 1:
        print(f"kubectl unstable:   {len(unstable)} cases change outcome between runs")
        for i in unstable[: args.max_report]:
            original, patch = cases[i]
            print(json.dumps({"index": i, "original": original, "patch": patch,
                              "outcomes": [run[i].__dict__ for run in runs]}, sort_keys=True))
    if args.kubectl_only:
        errors = Counter(o.error.splitlines()[0][:100] for o in expected if not o.ok)
        for message, count in errors.most_common(10):
            print(f"  {count:6d}  {message}")
        print(f"wall time:          {time.perf_counter() - start:.1f} s")
        return 1 if unstable else 0

    try:
        _, divergences = find_divergences(cases, args.kind, kubectl_outcomes=expected, engine=engine)
    except ImportError as exc:
        print(f"cannot import the engine: {exc}", file=sys.stderr)
        return 2
    engine_done = time.perf_counter()
    skipped = set(unstable)
    divergences = [d for d in divergences if d.index not in skipped]
    print(f"time in engine:     {engine_done - kubectl_done:.1f} s")
    print(f"divergences:        {len(divergences)}")
    for kind_of, count in Counter(_describe(d) for d in divergences).most_common():
        print(f"  {count:6d}  {kind_of}")

    # One divergence per patch: a patch applies to several originals in a row, often failing alike.
    firsts = list({canonical(d.patch): d for d in reversed(divergences)}.values())[::-1]
    reported = [_report(d, args.kind, args.shrink, args.workers) for d in firsts[: args.max_report]]
    for entry in reported:
        print(json.dumps(entry, sort_keys=True))
    if args.out and reported:
        args.out.write_text(json.dumps(reported, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {len(reported)} divergences to {args.out}")
    print(f"wall time:          {time.perf_counter() - start:.1f} s")
    return 1 if divergences or unstable else 0


if __name__ == "__main__":
    sys.exit(main())
