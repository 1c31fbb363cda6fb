"""One benchmark per command, each a whole process of the command line, against its anchor where it has one.

1. `render` of the three-layer case of `benchmarks/performance.py` (`kfdefaults render bench --as podtemplate`,
   the builtin profile, a platform folder and a team folder) against `kubectl kustomize` of the same layers as a
   base and two overlays, A and B in turn, the ratio the median of A/B pairs:
   * warm: files unchanged since the previous run of the same command (the replay);
   * after an edit: the team file rewritten before each run (a comment changed), the other files answered by
     the cache;
   * cold: `KFDEFAULTS_NO_CACHE=1`, every file parsed, validated and merged.
   Each with Python's bytecode caches written (as any installation), and again from a fresh clone with
   `PYTHONDONTWRITEBYTECODE=1` (as many container images run): every module of kfdefaults compiled at each run,
   the libraries compiled once at install (pip's default).
2. `validate` of that case's folders (cold), `fit` of its profile on a node list of two pools, `timeline` of
   `gpu-large` on a cluster's facts, `why` on the recorded torch logs of `tests/torch_logs/`: medians, no anchor.
3. The first `Elastic(profile=...)` after flytekit is imported (in process, import included), as
   `benchmarks/performance.py` measures it, on this interpreter (which has the SDKs).
4. With --importtime: the modules a cold render imports (`python -X importtime`), by package, with and without
   bytecode.

Targets: render warm <= 0.3x kustomize (peak memory <= 0.2x), after an edit <= 1x, cold <= 1x with bytecode and
<= 1.5x without, the first Elastic <= 25 ms. Each is printed with "met" or "NOT met"; the other commands have no
target here. --record writes the results into docs/performance.md, between `<!-- recorded:commands:begin -->`
and `:end -->`, with the host, its load and this command.

Usage: python benchmarks/commands.py [--runs N] [--importtime] [--skip-elastic] [--record]
Exit status: 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

from cases import child_env, kfdefaults_command, settle  # noqa: E402
from performance import (  # noqa: E402
    KUBECTL,
    Results,
    bench_elastic,
    build_case,
    core_python,
    machine_line,
    median,
    record,
    run_measured,
    same_template,
    spread,
)

FACTS = textwrap.dedent("""\
    description: an example GPU cluster (docs/timeline.md)
    node_start: {typical: 120, worst: 480}
    image_pull: {typical: 60, worst: 300}
    kueue:
      wait_for_pods_ready: {enable: true, timeout: 900}
    flyte:
      task_timeout: 86400
    torch:
      version: "2.5.1"
    max_hang: 3600
    """)

WHY_LOG = os.path.join(ROOT, "tests", "torch_logs", "closed-rendezvous-restarted-pod.agent0.stderr")
"""A worker's log of a real torch run (recorded by the tests), for ``why``."""


def node_list() -> str:
    """``kubectl get nodes -o json`` of two pools: four 8-GPU nodes and two CPU nodes."""
    def node(name: str, pool: str, allocatable: dict[str, str], taints: list[dict] | None = None) -> dict:
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "cloud.example.com/gpu": pool,
                                                      "node.kubernetes.io/instance-type": pool}},
                "spec": {"taints": taints} if taints else {}, "status": {"allocatable": allocatable}}

    gpu = {"cpu": "94", "memory": "1800Gi", "nvidia.com/gpu": "8", "pods": "110"}
    taint = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    items = [node(f"gpu-{i}", "a100", gpu, taint) for i in range(4)]
    items += [node(f"cpu-{i}", "cpu", {"cpu": "16", "memory": "64Gi", "pods": "110"}) for i in range(2)]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=4)


def fresh_clone(tmp: str) -> str:
    """An interpreter whose kfdefaults is a fresh clone of this repository's HEAD (no bytecode of its own), its
    libraries installed with their bytecode compiled, as pip installs them."""
    clone = os.path.join(tmp, "clone")
    subprocess.run(["git", "clone", "-q", ROOT, clone], check=True)
    venv = os.path.join(tmp, "clone-venv")
    uv = [shutil.which("uv")] if shutil.which("uv") else ["python3", "-m", "uv"]
    subprocess.run([*uv, "venv", "-q", venv], check=True, capture_output=True)
    subprocess.run([*uv, "pip", "install", "-q", "--compile-bytecode", "--python", venv, "-e", clone], check=True,
                   capture_output=True)
    return os.path.join(venv, "bin", "python")


def pairs(a: list[str], b: list[str], env_a: dict[str, str], env_b: dict[str, str], cwd: str, runs: int,
          before=None) -> tuple[list[float], list[float], list[float], list[float], str]:
    """``runs`` A/B pairs, A then B: (A walls, B walls, A peaks, B peaks, A's last output). ``before()`` runs
    before each A, outside its time."""
    walls_a, walls_b, peaks_a, peaks_b, out = [], [], [], [], ""
    for _ in range(runs):
        if before is not None:
            before()
        wall, peak, out = run_measured(a, env_a, cwd)
        walls_a.append(wall)
        peaks_a.append(peak)
        wall, peak, _ = run_measured(b, env_b, cwd)
        walls_b.append(wall)
        peaks_b.append(peak)
    return walls_a, walls_b, peaks_a, peaks_b, out


def bench_render(case: dict[str, str], python: str, runs: int, results: Results, *, bytecode: bool) -> None:
    """warm, after an edit and cold against kustomize, for one interpreter."""
    folder, cache = case["folder"], os.path.join(case["folder"], f"cache-{bytecode}")
    extra = {} if bytecode else {"PYTHONDONTWRITEBYTECODE": "1"}
    warm_env, cold_env = child_env(cache, **extra), child_env(cache, KFDEFAULTS_NO_CACHE="1", **extra)
    render = kfdefaults_command(python) + ["render", "bench", "--as", "podtemplate", "--platform", case["platform"],
                                           "--team", case["team"]]
    kustomize = [KUBECTL, "kustomize", case["kustomize"]]
    team_file = os.path.join(case["team"], "bench.yaml")
    with open(team_file, encoding="utf-8") as f:
        team = f.read()
    edits = iter(range(10**6))

    def edit() -> None:  # new bytes, so the team file is read and validated again; the others come from the cache
        with open(team_file, "w", encoding="utf-8") as f:
            f.write(f"# edit {next(edits)}\n{team}")

    for _ in range(3):  # warm-up: bytecode (with it), page cache, the cache and the replay
        _, _, ours = run_measured(render, warm_env, folder)
        _, _, theirs = run_measured(kustomize, warm_env, folder)
    if not same_template(ours, theirs):
        raise SystemExit(f"the two pod templates differ:\n--- kfdefaults\n{ours}\n--- kustomize\n{theirs}")
    label = "with bytecode" if bytecode else "no bytecode, fresh clone"
    kinds = [("warm", warm_env, None, 0.3), ("after an edit", warm_env, edit, 1.0),
             ("cold", cold_env, None, 1.0 if bytecode else 1.5)]
    for kind, env, before, limit in kinds:
        if kind == "warm":
            with open(team_file, "w", encoding="utf-8") as f:
                f.write(team)
            settle()  # as old as a checkout's: the replay may be stored
            run_measured(render, warm_env, folder)
        walls, kz, peaks, kz_peaks, out = pairs(render, kustomize, env, warm_env, folder, runs, before)
        if not same_template(out, theirs):
            raise SystemExit(f"render {kind} printed another pod template:\n{out}")
        ratios = [x / y for x, y in zip(walls, kz)]
        print(f"    render {kind} ({label}): {median(walls) * 1000:.0f} ms, {median(peaks):.1f} MiB; kustomize "
              f"{median(kz) * 1000:.0f} ms, {median(kz_peaks):.1f} MiB")
        results.check(f"render three layers {kind} / kustomize, wall ({label})", median(ratios), limit, "x",
                      f"{median(walls) * 1000:.0f} vs {median(kz) * 1000:.0f} ms, spread {spread(ratios)}")
        if kind == "warm" and bytecode:
            results.check("render three layers warm / kustomize, peak memory", median(peaks) / median(kz_peaks), 0.2,
                          "x", f"{median(peaks):.1f} vs {median(kz_peaks):.1f} MiB")
    with open(team_file, "w", encoding="utf-8") as f:
        f.write(team)


def bench_commands(case: dict[str, str], python: str, runs: int) -> list[tuple[str, str]]:
    """validate, fit, timeline and why, cold (``KFDEFAULTS_NO_CACHE=1``): ``(command, median)`` rows."""
    folder = case["folder"]
    facts = os.path.join(folder, "facts")
    os.makedirs(facts, exist_ok=True)
    with open(os.path.join(facts, "_cluster-facts.yaml"), "w", encoding="utf-8") as f:
        f.write(FACTS)
    nodes = os.path.join(folder, "nodes.json")
    with open(nodes, "w", encoding="utf-8") as f:
        f.write(node_list())
    cli = kfdefaults_command(python)
    layers = ["--platform", case["platform"], "--team", case["team"]]
    commands = {
        "validate (the case's two folders)": cli + ["validate", *layers],
        "fit (two pools of nodes)": cli + ["fit", "bench", *layers, "--nodes", nodes],
        "timeline gpu-large (a cluster's facts)": cli + ["timeline", "gpu-large", "--platform", facts],
        "why (a recorded torch log)": cli + ["why", WHY_LOG, "--profile", "cpu-small"],
    }
    env = child_env(os.path.join(folder, "cache-commands"), KFDEFAULTS_NO_CACHE="1")
    rows = []
    for label, cmd in commands.items():
        run_measured(cmd, env, folder, check=False)  # bytecode
        walls, peaks = [], []
        for _ in range(runs):
            wall, peak, _ = run_measured(cmd, env, folder, check=False)
            walls.append(wall)
            peaks.append(peak)
        shown = f"{median(walls) * 1000:.0f} ms, {median(peaks):.1f} MiB"
        print(f"    {label}: {shown}")
        written = shlex.join(["kfdefaults", *cmd[len(cli):]]).replace(folder, "...").replace(ROOT + os.sep, "")
        rows.append((f"`{written}`", shown))
    return rows


def import_profile(case: dict[str, str], python: str, bytecode: bool) -> str:
    """The modules a cold render imports, by package: ``N modules (kfdefaults K, ...)``, and their own import time."""
    env = child_env(os.path.join(case["folder"], "cache-importtime"), KFDEFAULTS_NO_CACHE="1",
                    **({} if bytecode else {"PYTHONDONTWRITEBYTECODE": "1"}))
    cmd = [python, "-X", "importtime", "-m", "kfdefaults.cli", "render", "bench", "--as", "podtemplate",
           "--platform", case["platform"], "--team", case["team"]]
    best: dict[str, int] = {}
    for _ in range(5):  # the least of five runs per module: a busy host adds, never takes away
        proc = subprocess.run(cmd, env=env, cwd=case["folder"], capture_output=True, text=True, check=True)
        for line in proc.stderr.splitlines():
            if line.startswith("import time:") and "self [us]" not in line:
                own, _, name = line[len("import time:"):].split("|")
                best[name.strip()] = min(best.get(name.strip(), 10**9), int(own))
    groups: collections.Counter = collections.Counter()
    counts: collections.Counter = collections.Counter()
    for name, own in best.items():
        top = name.split(".")[0]
        group = top if top in ("kfdefaults", "yaml", "deepmerge") else (
            "pydantic" if top in PYDANTIC_STACK else "the standard library")
        groups[group] += own
        counts[group] += 1
    parts = [f"{group} {counts[group]} ({groups[group] / 1000:.0f} ms)" for group, _ in groups.most_common()]
    return f"{len(best)} modules: " + ", ".join(parts)


PYDANTIC_STACK = ("pydantic", "pydantic_core", "typing_extensions", "annotated_types", "typing_inspection")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--importtime", action="store_true", help="also profile the imports of a cold render")
    parser.add_argument("--skip-elastic", action="store_true")
    parser.add_argument("--record", action="store_true", help="write the results into docs/performance.md")
    args = parser.parse_args()
    machine = machine_line()
    print(f"machine: {machine}")
    results = Results()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = os.getloadavg()
    extra: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kfdefaults-commands-") as tmp:
        python = core_python(tmp, None)
        clone_python = fresh_clone(tmp)
        case = build_case(tmp)
        settle()
        print("render:")
        bench_render(case, python, args.runs, results, bytecode=True)
        bench_render(case, clone_python, args.runs, results, bytecode=False)
        if not args.skip_elastic:
            print("Elastic(profile=...):")
            bench_elastic(tmp, max(3, args.runs // 3), results, limit=25)
        print("commands (cold):")
        rows = bench_commands(case, python, max(3, args.runs // 2))
        extra += ["", "| command, cold (`KFDEFAULTS_NO_CACHE=1`) | median wall, peak memory |", "|---|---:|"]
        extra += [f"| {command} | {shown} |" for command, shown in rows]
        if args.importtime:
            print("imports of a cold render:")
            for bytecode, name in ((True, "with bytecode"), (False, "no bytecode, fresh clone")):
                line = import_profile(case, python if bytecode else clone_python, bytecode)
                print(f"    {name}: {line}")
                extra.append(f"\nImports of a cold render, {name} (`python -X importtime`, the least of five runs "
                             f"per module): {line}.")
    load_after = os.getloadavg()
    met = sum(1 for *_, ok in results.rows if ok)
    print(f"{met} of {len(results.rows)} targets met")
    if args.record:
        command = "python benchmarks/commands.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        record(results, [
            f"Recorded {started} with `{command}`.",
            f"Machine: {machine}.",
            f"Host load (1-minute load average): {load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end.",
        ], "commands", extra)
    return 0 if results.all_met() else 1


if __name__ == "__main__":
    sys.exit(main())
