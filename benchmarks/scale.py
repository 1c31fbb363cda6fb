"""kfdefaults at scale: `validate` of 1,000 profile files, and `render` among 10,000 profiles per layer.

Each figure is a whole process of the command line, run as users run it (the `kfdefaults` console script of the
interpreter's environment, else `python -m kfdefaults.cli`), on this machine:

1. `kfdefaults validate FOLDER` of a team folder of 1,000 profile files, cold: with an empty cache folder (every
   file parsed, validated, merged and its entry written) and with `KFDEFAULTS_NO_CACHE=1` (nothing written).
   Median wall time over the runs. Target: <= 1.5 s each.
2. `kfdefaults render bench --platform P --team T` where P and T each hold 10,000 profile files, against the
   same with 10 files each; the cache warm (files unchanged since the previous run). Runs alternate between
   the two cases; the figure is the median of the ratios of each pair. Target: <= 1.5x.

Python writes bytecode caches on the warm-up runs (PYTHONDONTWRITEBYTECODE is unset for the children), as it
does for any user.

Usage: python benchmarks/scale.py [--runs N]
Exit status: 0 when every target is met, 1 otherwise.

`measure(tmp, runs)` returns the figures as `(label, value, limit, unit)` for `benchmarks/performance.py`.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import PLATFORM_FRAGMENT, TEAM_FRAGMENT, child_env, kfdefaults_command, settle  # noqa: E402

VALIDATE_FILES = 1_000
RENDER_FILES = 10_000
SMALL_FILES = 10

VALIDATE_LIMIT = 1.5
"""Seconds, whole process, cold."""

RENDER_RATIO_LIMIT = 1.5
"""render among RENDER_FILES profiles per layer / among SMALL_FILES."""

def run(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    """Run ``cmd`` once; its wall time in seconds. A failure stops the benchmark."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return wall


def profile_folder(path: str, count: int, fragment: str) -> str:
    """A folder of ``count`` profile files: ``bench.yaml`` (``fragment``) and generated small profiles."""
    os.makedirs(path)
    for i in range(count - 1):
        with open(os.path.join(path, f"profile-{i:05d}.yaml"), "w", encoding="utf-8") as f:
            f.write(f"description: generated profile {i}\nelastic:\n  nproc_per_node: {1 + i % 8}\n"
                    f"pod_template:\n  labels:\n    index: \"{i}\"\n")
    with open(os.path.join(path, "bench.yaml"), "w", encoding="utf-8") as f:
        f.write(fragment)
    return path


def measure_validate(tmp: str, runs: int) -> list[tuple[str, float, float, str]]:
    kfdefaults = kfdefaults_command()
    folder = profile_folder(os.path.join(tmp, "validate-team"), VALIDATE_FILES, TEAM_FRAGMENT)
    cache = os.path.join(tmp, "validate-cache")
    cmd = kfdefaults + ["validate", folder]
    run(cmd, child_env(cache), tmp)  # warm-up: bytecode caches, the page cache
    figures: dict[str, list[float]] = {"empty cache folder": [], "KFDEFAULTS_NO_CACHE=1": []}
    for _ in range(runs):
        shutil.rmtree(cache, ignore_errors=True)
        figures["empty cache folder"].append(run(cmd, child_env(cache), tmp))
        figures["KFDEFAULTS_NO_CACHE=1"].append(run(cmd, child_env(cache, KFDEFAULTS_NO_CACHE="1"), tmp))
    results = []
    for mode, walls in figures.items():
        print(f"  validate of {VALIDATE_FILES:,} files, {mode}: median {statistics.median(walls):.3f} s, "
              f"min {min(walls):.3f} s, max {max(walls):.3f} s ({runs} run{'s' * (runs != 1)})")
        results.append((f"validate of {VALIDATE_FILES:,} files, cold ({mode})", statistics.median(walls),
                         VALIDATE_LIMIT, "s"))
    return results


def measure_render(tmp: str, runs: int) -> list[tuple[str, float, float, str]]:
    kfdefaults = kfdefaults_command()
    env = child_env(os.path.join(tmp, "render-cache"))
    commands = {}
    for count in (SMALL_FILES, RENDER_FILES):
        plat = profile_folder(os.path.join(tmp, f"platform-{count}"), count, PLATFORM_FRAGMENT)
        team = profile_folder(os.path.join(tmp, f"team-{count}"), count, TEAM_FRAGMENT)
        commands[count] = kfdefaults + ["render", "bench", "--platform", plat, "--team", team]
    settle()
    for count in (SMALL_FILES, RENDER_FILES):
        for _ in range(2):  # warm-up: the cache, bytecode caches, the page cache
            run(commands[count], env, tmp)
    walls: dict[int, list[float]] = {SMALL_FILES: [], RENDER_FILES: []}
    for i in range(runs):
        for count in (SMALL_FILES, RENDER_FILES) if i % 2 == 0 else (RENDER_FILES, SMALL_FILES):
            walls[count].append(run(commands[count], env, tmp))
    for count, values in walls.items():
        print(f"  render with {count:,} files per layer folder (cache warm): median {statistics.median(values) * 1000:.1f}"
              f" ms, min {min(values) * 1000:.1f} ms, max {max(values) * 1000:.1f} ms ({runs} run{'s' * (runs != 1)})")
    ratios = [big / small for big, small in zip(walls[RENDER_FILES], walls[SMALL_FILES])]
    print(f"  pair ratios: min {min(ratios):.2f}x, max {max(ratios):.2f}x")
    return [(f"render with {RENDER_FILES:,} files per layer / with {SMALL_FILES}", statistics.median(ratios),
             RENDER_RATIO_LIMIT, "x")]


def measure(tmp: str, runs: int) -> list[tuple[str, float, float, str]]:
    """Every figure of this benchmark, measured in a new folder inside ``tmp`` (which must exist) with ``runs`` runs
    each.

    Returns:
        ``(label, value, limit, unit)`` for each target: validate of 1,000 files cold (seconds, both ways), and the
        render ratio (``x``). A figure meets its target when ``value <= limit``.
    """
    tmp = tempfile.mkdtemp(prefix="scale-", dir=tmp)  # its own folder: the caller's may hold folders of these names
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"scale: {VALIDATE_FILES:,} files validated; {RENDER_FILES:,} files per layer rendered among "
          f"({' '.join(kfdefaults_command())})" + (f"; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
                                                   if load else ""))
    return measure_validate(tmp, runs) + measure_render(tmp, runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
          f"Python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="kfdefaults-scale-") as tmp:
        results = measure(tmp, args.runs)
    met = 0
    for label, value, limit, unit in results:
        ok = value <= limit
        met += ok
        print(f"  {label:<66} {value:8.3f} {unit:<2} (target <= {limit:g}{unit}) {'met' if ok else 'NOT met'}")
    print(f"{met} of {len(results)} targets met")
    return 0 if met == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
