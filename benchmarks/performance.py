"""kfdefaults' speed and memory against `kubectl kustomize`, and its import, Elastic and scale costs.

One run measures everything, side by side, on this machine, and prints each target with "met" or "NOT met":

1. Render: the same three-layer PodTemplate built two ways, checked equal first:
   * kfdefaults: a builtin profile (elastic-gpu-default), a platform folder and a team folder, each adding a
     pod-template fragment; `kfdefaults render bench --as podtemplate`;
   * kustomize: a base PodTemplate holding the builtin fragment and two overlays patching it with the same
     platform and team fragments; `kubectl kustomize overlays/team`.
   Whole-process median wall time and peak memory (the child's maximum resident set, from wait4) over
   repeated runs, A and B alternating: kfdefaults cold (its cache folder emptied before every run) and
   cached (unchanged files since the previous run). Targets: cold <= 2.5x kustomize's time, cached <= 1.0x,
   peak memory <= 0.6x in both.
2. Import: `import kfdefaults` at most 50 ms over a bare interpreter (median of whole processes).
3. Elastic: after flytekit is imported, the first `Elastic(profile=...)` at most 20 ms, repeated ones for the
   same profile at most 1 ms (in-process, median over processes / calls).
4. Scale: with 1,000 profile files in each of the platform and team folders, `render` of one profile at most
   1.5x its time with 10 files (cached, median); `kfdefaults validate` of 1,000 files under 5 s.

Python writes bytecode caches on the warm-up run (PYTHONDONTWRITEBYTECODE is unset for the children), as it
does for any user; kubectl is the reference and needs none.

Usage: python benchmarks/performance.py [--runs N] [--skip-scale] [--skip-elastic]
Exit status: 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON = sys.executable
KFDEFAULTS = [PYTHON, "-m", "kfdefaults.cli"]
KUBECTL = shutil.which("kubectl") or "kubectl"

PLATFORM_FRAGMENT = """\
description: benchmark profile, platform layer
extends: elastic-gpu-default
elastic:
  nnodes: "2:4"
  nproc_per_node: 8
pod_template:
  labels:
    platform.example.com/pool: a100
  spec:
    nodeSelector:
      cloud.example.com/gpu: a100
    containers:
      - name: primary
        resources:
          limits:
            nvidia.com/gpu: "8"
            memory: 320Gi
    tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
    volumes:
      - name: dshm
        emptyDir:
          medium: Memory
          sizeLimit: 64Gi
"""

TEAM_FRAGMENT = """\
pod_template:
  labels:
    team: vision
  spec:
    containers:
      - name: primary
        image: registry.example.com/vision/train:2.1
        env:
          - name: WANDB_PROJECT
            value: detection
      - name: log-shipper
        image: registry.example.com/infra/log-shipper:1.4
"""


def child_env(cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["KFDEFAULTS_CACHE_DIR"] = cache
    return env


def run_measured(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, float, str]:
    """Run ``cmd`` once; return (wall seconds, peak resident MiB of the process, stdout)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out.decode()


def median(values: list[float]) -> float:
    return statistics.median(values)


def check(label: str, value: float, limit: float, unit: str, results: list[bool]) -> None:
    ok = value <= limit
    results.append(ok)
    print(f"  {label:<58} {value:8.3f} {unit:<3} (target <= {limit:g}{unit}) {'met' if ok else 'NOT met'}")


def build_case(tmp: str) -> dict[str, str]:
    """Write the three-layer case both ways; return the paths."""
    platform_dir = os.path.join(tmp, "platform")
    team_dir = os.path.join(tmp, "team")
    os.makedirs(platform_dir)
    os.makedirs(team_dir)
    with open(os.path.join(platform_dir, "bench.yaml"), "w") as f:
        f.write(PLATFORM_FRAGMENT)
    with open(os.path.join(team_dir, "bench.yaml"), "w") as f:
        f.write(TEAM_FRAGMENT)

    sys.path.insert(0, os.path.join(ROOT, "src"))
    import yaml  # PyYAML writes the kustomize files; the fragments use no YAML 1.1-ambiguous scalars

    from kfdefaults.layers import builtin_folder

    def pod_template_patch(path: str) -> dict:
        with open(path) as f:
            section = yaml.safe_load(f).get("pod_template") or {}
        patch: dict = {}
        metadata = {k: section[k] for k in ("labels", "annotations") if k in section}
        if metadata:
            patch["metadata"] = metadata
        if "spec" in section:
            patch["spec"] = section["spec"]
        return patch

    def manifest(template: dict) -> dict:
        return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "bench"}, "template": template}

    kz = os.path.join(tmp, "kustomize")
    layers = [
        ("base", pod_template_patch(os.path.join(builtin_folder(), "elastic-gpu-default.yaml")), None),
        ("platform", pod_template_patch(os.path.join(platform_dir, "bench.yaml")), "base"),
        ("team", pod_template_patch(os.path.join(team_dir, "bench.yaml")), "platform"),
    ]
    for name, template, parent in layers:
        folder = os.path.join(kz, name)
        os.makedirs(folder)
        with open(os.path.join(folder, "podtemplate.yaml" if parent is None else "patch.yaml"), "w") as f:
            yaml.safe_dump(manifest(template), f, sort_keys=False)
        with open(os.path.join(folder, "kustomization.yaml"), "w") as f:
            if parent is None:
                f.write("resources:\n  - podtemplate.yaml\n")
            else:
                f.write(f"resources:\n  - ../{parent}\npatches:\n  - path: patch.yaml\n")
    return {"platform": platform_dir, "team": team_dir, "kustomize": os.path.join(kz, "team")}


def same_template(kfd_yaml: str, kz_yaml: str) -> bool:
    import yaml

    a, b = yaml.safe_load(kfd_yaml), yaml.safe_load(kz_yaml)
    return a["template"] == b["template"]


def bench_render(case: dict[str, str], tmp: str, runs: int, results: list[bool]) -> None:
    cache = os.path.join(tmp, "cache")
    env = child_env(cache)
    render = KFDEFAULTS + ["render", "bench", "--as", "podtemplate", "--platform", case["platform"], "--team", case["team"]]
    kustomize = [KUBECTL, "kustomize", case["kustomize"]]

    # warm-up: bytecode caches, page cache; then check both give the same pod template
    for _ in range(2):
        _, _, ours = run_measured(render, env, tmp)
        _, _, theirs = run_measured(kustomize, env, tmp)
    if not same_template(ours, theirs):
        raise SystemExit(f"the two pod templates differ:\n--- kfdefaults\n{ours}\n--- kustomize\n{theirs}")
    print("  kfdefaults and kubectl kustomize give the same pod template")

    figures: dict[str, dict[str, list[float]]] = {k: {"wall": [], "rss": []} for k in ("cold", "cached", "kustomize")}
    for _ in range(runs):
        shutil.rmtree(cache, ignore_errors=True)
        wall, rss, _ = run_measured(render, env, tmp)
        figures["cold"]["wall"].append(wall)
        figures["cold"]["rss"].append(rss)
        wall, rss, _ = run_measured(kustomize, env, tmp)
        figures["kustomize"]["wall"].append(wall)
        figures["kustomize"]["rss"].append(rss)
        wall, rss, _ = run_measured(render, env, tmp)  # the cache is now warm
        figures["cached"]["wall"].append(wall)
        figures["cached"]["rss"].append(rss)
    kz_wall, kz_rss = median(figures["kustomize"]["wall"]), median(figures["kustomize"]["rss"])
    for name in ("kustomize", "cold", "cached"):
        print(f"  {name:<10} median wall {median(figures[name]['wall']) * 1000:7.1f} ms   "
              f"median peak memory {median(figures[name]['rss']):6.1f} MiB   ({runs} runs)")
    for name, limit in (("cold", 2.5), ("cached", 1.0)):
        ratios = [a / b for a, b in zip(figures[name]["wall"], figures["kustomize"]["wall"])]
        check(f"render {name} / kustomize wall time (median of pair ratios)", median(ratios), limit, "x", results)
        check(f"render {name} / kustomize peak memory", median(figures[name]["rss"]) / kz_rss, 0.6, "x", results)
    del kz_wall


def bench_import(tmp: str, runs: int, results: list[bool]) -> None:
    env = child_env(os.path.join(tmp, "cache"))
    bare, kfd = [], []
    for _ in range(2):
        run_measured([PYTHON, "-c", "import kfdefaults"], env, tmp)
    for _ in range(runs):
        bare.append(run_measured([PYTHON, "-c", "pass"], env, tmp)[0])
        kfd.append(run_measured([PYTHON, "-c", "import kfdefaults"], env, tmp)[0])
    print(f"  bare interpreter {median(bare) * 1000:.1f} ms; with import kfdefaults {median(kfd) * 1000:.1f} ms")
    check("import kfdefaults over a bare interpreter", (median(kfd) - median(bare)) * 1000, 50, "ms", results)


ELASTIC_PROBE = textwrap.dedent("""\
    import json, time
    import flytekit, flytekitplugins.kfpytorch
    start = time.perf_counter()
    from kfdefaults import Elastic
    Elastic(profile="gpu-large")
    first = time.perf_counter() - start
    repeated = []
    for _ in range(50):
        t = time.perf_counter()
        Elastic(profile="gpu-large")
        repeated.append(time.perf_counter() - t)
    repeated.sort()
    print(json.dumps({"first": first, "repeated": repeated[len(repeated) // 2]}))
""")


def bench_elastic(tmp: str, runs: int, results: list[bool]) -> None:
    env = child_env(os.path.join(tmp, "cache"))
    firsts, repeats = [], []
    for i in range(runs + 1):
        out = json.loads(run_measured([PYTHON, "-c", ELASTIC_PROBE], env, tmp)[2])
        if i:  # the first process fills bytecode and profile caches
            firsts.append(out["first"])
            repeats.append(out["repeated"])
    check("first Elastic(profile=...) after flytekit (import included)", median(firsts) * 1000, 20, "ms", results)
    check("repeated Elastic(profile=...) for the same profile", median(repeats) * 1000, 1, "ms", results)


def bench_scale(tmp: str, runs: int, results: list[bool]) -> None:
    def folder(name: str, count: int) -> str:
        path = os.path.join(tmp, name)
        os.makedirs(path)
        for i in range(count):
            with open(os.path.join(path, f"profile-{i:04d}.yaml"), "w") as f:
                f.write(f"description: generated profile {i}\nelastic:\n  nproc_per_node: {1 + i % 8}\n"
                        f"pod_template:\n  labels:\n    index: \"{i}\"\n")
        with open(os.path.join(path, "bench.yaml"), "w") as f:
            f.write(PLATFORM_FRAGMENT if name.startswith("platform") else TEAM_FRAGMENT)
        return path

    env = child_env(os.path.join(tmp, "cache"))
    timings = {}
    for count in (10, 1000):
        plat, team = folder(f"platform-{count}", count), folder(f"team-{count}", count)
        cmd = KFDEFAULTS + ["render", "bench", "--platform", plat, "--team", team]
        for _ in range(2):
            run_measured(cmd, env, tmp)
        timings[count] = median([run_measured(cmd, env, tmp)[0] for _ in range(runs)])
        print(f"  render with {count} files per folder: median {timings[count] * 1000:.1f} ms (cached)")
    check("render with 1,000 files / with 10 files", timings[1000] / timings[10], 1.5, "x", results)
    cold_env = child_env(os.path.join(tmp, "validate-cache"))
    wall, _, _ = run_measured(KFDEFAULTS + ["validate", os.path.join(tmp, "team-1000")], cold_env, tmp)
    check("validate of 1,000 files (cold cache)", wall, 5, "s", results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--skip-elastic", action="store_true")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
          f"Python {platform.python_version()}")
    kubectl_version = subprocess.run([KUBECTL, "version", "--client"], capture_output=True, text=True).stdout.split("\n")[0]
    print(f"kubectl: {kubectl_version}")
    results: list[bool] = []
    with tempfile.TemporaryDirectory(prefix="kfdefaults-bench-") as tmp:
        case = build_case(tmp)
        print("render, three layers:")
        bench_render(case, tmp, args.runs, results)
        print("import:")
        bench_import(tmp, args.runs, results)
        if not args.skip_elastic:
            print("Elastic(profile=...):")
            bench_elastic(tmp, max(3, args.runs // 3), results)
        if not args.skip_scale:
            print("scale:")
            bench_scale(tmp, max(3, args.runs // 3), results)
    print(f"{sum(results)} of {len(results)} targets met")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
