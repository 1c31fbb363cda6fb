"""In-process time to merge a realistic three-layer pod template with kfdefaults.strategic_merge_patch.

The layers are the pod templates of the builtin gpu-large profile (with its parent elastic-gpu-default), the
platform fixture and the team fixture: four strategic merge patches applied in order onto an empty
PodTemplateSpec, as `kfdefaults render gpu-large --platform tests/fixtures/platform --team tests/fixtures/team`
does. The schema is loaded once before timing (it is cached per process).

Usage: python benchmarks/smp_merge.py [--runs N]
Target: median under 1 ms.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def layers() -> list[dict]:
    sys.path.insert(0, os.path.join(ROOT, "src"))
    import kfdefaults

    resolved = kfdefaults.resolve(
        "gpu-large",
        platform=[os.path.join(ROOT, "tests", "fixtures", "platform")],
        team=[os.path.join(ROOT, "tests", "fixtures", "team")],
    )
    return [f.pod_template for f in resolved.fragments if f.pod_template]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()

    from kfdefaults import strategic_merge_patch

    patches = layers()
    strategic_merge_patch({}, patches[0])  # load the schema outside the timing
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        merged: dict = {}
        for patch in patches:
            merged = strategic_merge_patch(merged, patch)
        times.append(time.perf_counter() - start)
    median_ms = statistics.median(times) * 1000
    p95_ms = sorted(times)[int(len(times) * 0.95)] * 1000
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"layers: {len(patches)} patches; runs: {args.runs}")
    print(f"median: {median_ms:.3f} ms; p95: {p95_ms:.3f} ms; target: < 1 ms -> {'met' if median_ms < 1 else 'NOT met'}")
    return 0 if median_ms < 1 else 1


if __name__ == "__main__":
    sys.exit(main())
