"""kfdefaults' speed and memory against `kubectl kustomize`, and its import, Elastic, scale and registration costs.

One run measures everything, side by side, on this machine, and prints each target with "met" or "NOT met":

1. Render, on two cases built two ways and checked equal first:
   * three layers: a builtin profile (elastic-gpu-default), a platform folder and a team folder, each adding a
     pod-template fragment (`kfdefaults render bench --as podtemplate`), against a kustomize base PodTemplate
     holding the builtin fragment and two overlays patching it with the same fragments
     (`kubectl kustomize overlays/team`);
   * ten layers: the builtin profile, seven platform profiles each extending the one before, the platform's
     `bench` extending the last and the team's `bench`, against a base and nine overlays.
   Whole-process wall time and peak memory (the child's maximum resident set, from wait4) over repeated runs,
   A and B alternating: kfdefaults with files unchanged since the previous run (warm: the replay of the same
   command) and with `KFDEFAULTS_NO_CACHE=1` (cold: every file parsed, validated and merged). Targets: warm
   <= 0.3x kustomize's time, cold <= 1.0x, warm peak memory <= 0.2x. Ratios are medians of A/B pairs run back
   to back; the spread is their 10th to 90th percentile.
2. Import: `import kfdefaults` at most 50 ms over a bare interpreter (median of whole processes).
3. Elastic: after flytekit is imported, the first `Elastic(profile=...)` at most 25 ms, repeated ones for the
   same profile at most 1 ms (in-process, median over processes / calls).
4. Scale (benchmarks/scale.py): `validate` of 1,000 files, render with 10,000 files per layer.
5. Registration (benchmarks/registration.py): `pyflyte package` of 500 tasks on kfdefaults' Elastic against
   the plugin's own; `render --as flyte` warm.
6. With --test-command: the README's test command from a fresh clone, install included (<= 150 s).

The command line runs from a virtual environment holding kfdefaults alone (built in the temporary folder with
uv, as a pre-commit hook or a CI job installs it), unless --python names an interpreter; Elastic and the
registration run on this interpreter, which has the SDKs. Python writes bytecode caches on the warm-up run
(PYTHONDONTWRITEBYTECODE is unset for the children), as it does for any user; kubectl is the reference.

--load N runs N copies of the test suite (`pytest -n 0`, restarted as they end) beside the measurements, for the
loaded-host figures. --record writes the results into docs/performance.md, between its
`<!-- recorded:quiet:begin -->` and `:end -->` lines (`recorded:loaded` with --load), with the host, its load
and this command.

Usage: python benchmarks/performance.py [--runs N] [--load N] [--skip-scale] [--skip-elastic]
       [--skip-registration] [--test-command] [--python PATH] [--record]
Exit status: 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KUBECTL = shutil.which("kubectl") or "kubectl"
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

from cases import PLATFORM_FRAGMENT, TEAM_FRAGMENT, child_env, kfdefaults_command, settle  # noqa: E402

class Results:
    """Every target checked in a run: printed as it is checked, kept for --record."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, bool]] = []

    def check(self, label: str, value: float, limit: float, unit: str, detail: str = "") -> None:
        met = value <= limit
        shown = f"{value:.3f}{unit}" if unit != "ms" else f"{value:.1f} ms"  # a ratio at its limit shows which side
        self.rows.append((label, shown + (f" ({detail})" if detail else ""), f"<= {limit:g}{' ' if unit == 'ms' else ''}{unit}", met))
        print(f"  {label:<66} {shown:>9} (target <= {limit:g}{unit}) {'met' if met else 'NOT met'}"
              + (f"  [{detail}]" if detail else ""))

    def add(self, rows: list[tuple[str, float, float, str]]) -> None:
        for label, value, limit, unit in rows:
            self.check(label, value, limit, unit)

    def all_met(self) -> bool:
        return all(met for *_, met in self.rows)


TIME = shutil.which("time") or "/usr/bin/time"


def run_measured(cmd: list[str], env: dict[str, str], cwd: str, check: bool = True) -> tuple[float, float, str]:
    """Run ``cmd`` once; return (wall seconds, peak resident MiB of the process, stdout). A failure stops the
    benchmark, unless ``check`` is false (a command whose findings set its exit status: ``why``, ``fit``).

    The peak is measured by GNU time, a small process that starts ``cmd``: a process started by this one
    directly would count this interpreter's memory as its own (Linux keeps the largest resident set of the
    process across exec, and Python starts children with vfork)."""
    with tempfile.NamedTemporaryFile("r") as peak:
        start = time.perf_counter()
        proc = subprocess.run([TIME, "-f", "%M", "-o", peak.name, *cmd], env=env, cwd=cwd, capture_output=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0 and (check or proc.returncode != 1):
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
        kib = int(peak.read().split()[-1])
    return wall, kib / 1024, proc.stdout.decode()


def median(values: list[float]) -> float:
    return statistics.median(values)


def spread(values: list[float]) -> str:
    """The 10th to 90th percentile of ``values``, as ``a-b``."""
    if len(values) < 3:
        return f"{min(values):.2f}-{max(values):.2f}"
    deciles = statistics.quantiles(values, n=10)
    return f"{deciles[0]:.2f}-{deciles[-1]:.2f}"


def core_python(tmp: str, given: str | None) -> str:
    """An interpreter whose environment holds kfdefaults alone (what a pre-commit hook or CI job installs):
    ``given``, else a virtual environment made with uv in ``tmp``, else this interpreter."""
    if given:
        return given
    venv = os.path.join(tmp, "core-venv")
    uv = [shutil.which("uv")] if shutil.which("uv") else ["python3", "-m", "uv"]
    try:
        subprocess.run([*uv, "venv", "-q", venv], check=True, capture_output=True)
        subprocess.run([*uv, "pip", "install", "-q", "--python", venv, "-e", ROOT], check=True, capture_output=True)
    except (subprocess.CalledProcessError, OSError) as e:
        print(f"  (no core-only environment: {e}; measuring with {sys.executable})")
        return sys.executable
    return os.path.join(venv, "bin", "python")


def pod_template_patch(path: str) -> dict:
    """A profile file's pod_template section as a PodTemplate's ``template`` patch (metadata and spec)."""
    import yaml  # PyYAML writes the kustomize files; the fragments use no YAML 1.1-ambiguous scalars

    with open(path) as f:
        section = yaml.safe_load(f).get("pod_template") or {}
    patch: dict = {}
    metadata = {k: section[k] for k in ("labels", "annotations") if k in section}
    if metadata:
        patch["metadata"] = metadata
    if "spec" in section:
        patch["spec"] = section["spec"]
    return patch


def write_kustomize(folder: str, templates: list[dict]) -> str:
    """A kustomize base PodTemplate holding ``templates[0]`` and one overlay per further template, each patching
    the one before; return the last overlay's folder."""
    import yaml

    parent = None
    for i, template in enumerate(templates):
        layer = os.path.join(folder, f"layer-{i:02d}")
        os.makedirs(layer)
        manifest = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "bench"}, "template": template}
        with open(os.path.join(layer, "podtemplate.yaml" if parent is None else "patch.yaml"), "w") as f:
            yaml.safe_dump(manifest, f, sort_keys=False)
        with open(os.path.join(layer, "kustomization.yaml"), "w") as f:
            f.write("resources:\n  - podtemplate.yaml\n" if parent is None else
                    f"resources:\n  - ../{os.path.basename(parent)}\npatches:\n  - path: patch.yaml\n")
        parent = layer
    return parent


def build_case(tmp: str) -> dict[str, str]:
    """The three-layer case both ways; return its folders."""
    from kfdefaults.layers import builtin_folder

    case = os.path.join(tmp, "three")
    platform_dir, team_dir = os.path.join(case, "platform"), os.path.join(case, "team")
    os.makedirs(platform_dir)
    os.makedirs(team_dir)
    with open(os.path.join(platform_dir, "bench.yaml"), "w") as f:
        f.write(PLATFORM_FRAGMENT)
    with open(os.path.join(team_dir, "bench.yaml"), "w") as f:
        f.write(TEAM_FRAGMENT)
    files = [os.path.join(builtin_folder(), "elastic-gpu-default.yaml"), os.path.join(platform_dir, "bench.yaml"),
             os.path.join(team_dir, "bench.yaml")]
    kustomize = write_kustomize(os.path.join(case, "kustomize"), [pod_template_patch(f) for f in files])
    return {"folder": case, "platform": platform_dir, "team": team_dir, "kustomize": kustomize}


def layer_fragment(i: int, extends: str) -> str:
    """The platform profile of layer ``i`` of the ten-layer case: a label, an environment variable of the
    primary container, a volume and its mount (lists merged by their merge keys), and a resource."""
    return textwrap.dedent(f"""\
        extends: {extends}
        pod_template:
          labels:
            layer-{i}: "{i}"
          spec:
            containers:
              - name: primary
                env:
                  - name: LAYER_{i}
                    value: "{i}"
                volumeMounts:
                  - name: scratch-{i}
                    mountPath: /scratch/{i}
                resources:
                  requests:
                    cpu: "{i}"
            volumes:
              - name: scratch-{i}
                emptyDir: {{}}
        """)


def build_ten_layer_case(tmp: str) -> dict[str, str]:
    """The ten-layer case both ways: builtin, seven platform profiles each extending the one before, the
    platform's and the team's ``bench``."""
    from kfdefaults.layers import builtin_folder

    case = os.path.join(tmp, "ten")
    platform_dir, team_dir = os.path.join(case, "platform"), os.path.join(case, "team")
    os.makedirs(platform_dir)
    os.makedirs(team_dir)
    files = [os.path.join(builtin_folder(), "elastic-gpu-default.yaml")]
    parent = "elastic-gpu-default"
    for i in range(1, 8):
        path = os.path.join(platform_dir, f"layer-{i}.yaml")
        with open(path, "w") as f:
            f.write(layer_fragment(i, parent))
        files.append(path)
        parent = f"layer-{i}"
    with open(os.path.join(platform_dir, "bench.yaml"), "w") as f:
        f.write(PLATFORM_FRAGMENT.replace("extends: elastic-gpu-default", f"extends: {parent}"))
    with open(os.path.join(team_dir, "bench.yaml"), "w") as f:
        f.write(TEAM_FRAGMENT)
    files += [os.path.join(platform_dir, "bench.yaml"), os.path.join(team_dir, "bench.yaml")]
    kustomize = write_kustomize(os.path.join(case, "kustomize"), [pod_template_patch(f) for f in files])
    return {"folder": case, "platform": platform_dir, "team": team_dir, "kustomize": kustomize}


def same_template(kfd_yaml: str, kz_yaml: str) -> bool:
    """Whether the two PodTemplates hold the same template, lists of named items (volumes, env, containers) in
    any order: where a patch sets an item the base already has, kustomize's merge (kyaml) keeps the base's
    order and ``kubectl patch --type strategic`` (which kfdefaults equals) moves it with the patch's items."""
    import yaml

    def unordered(value: object) -> object:
        if isinstance(value, dict):
            return {k: unordered(v) for k, v in value.items()}
        if isinstance(value, list):
            items = [unordered(v) for v in value]
            if all(isinstance(v, dict) and "name" in v for v in items):
                return sorted(items, key=lambda v: str(v["name"]))
            return items
        return value

    a, b = yaml.safe_load(kfd_yaml), yaml.safe_load(kz_yaml)
    return unordered(a["template"]) == unordered(b["template"])


def bench_render(name: str, case: dict[str, str], runs: int, python: str, results: Results) -> None:
    folder = case["folder"]
    cache = os.path.join(folder, "cache")
    warm_env, cold_env = child_env(cache), child_env(cache, KFDEFAULTS_NO_CACHE="1")
    render = kfdefaults_command(python) + ["render", "bench", "--as", "podtemplate", "--platform", case["platform"],
                                           "--team", case["team"]]
    kustomize = [KUBECTL, "kustomize", case["kustomize"]]

    # warm-up: bytecode caches, page cache, the replay of the command; then check both give the same template
    for _ in range(3):
        _, _, ours = run_measured(render, warm_env, folder)
        _, _, theirs = run_measured(kustomize, warm_env, folder)
    if not same_template(ours, theirs):
        raise SystemExit(f"the two pod templates differ:\n--- kfdefaults\n{ours}\n--- kustomize\n{theirs}")
    figures: dict[str, dict[str, list[float]]] = {k: {"wall": [], "rss": []} for k in ("cold", "warm", "kustomize")}
    for _ in range(runs):
        for kind, cmd, env in (("cold", render, cold_env), ("kustomize", kustomize, warm_env), ("warm", render, warm_env)):
            wall, rss, out = run_measured(cmd, env, folder)
            if kind != "kustomize" and out != ours:
                raise SystemExit(f"render {kind} printed something else:\n{out}\n--- first\n{ours}")
            figures[kind]["wall"].append(wall)
            figures[kind]["rss"].append(rss)
    print(f"  {name}: kfdefaults and kubectl kustomize give the same pod template")
    for kind in ("kustomize", "cold", "warm"):
        print(f"    {kind:<10} median wall {median(figures[kind]['wall']) * 1000:7.1f} ms   "
              f"median peak memory {median(figures[kind]['rss']):6.1f} MiB   ({runs} runs)")
    kz_rss = median(figures["kustomize"]["rss"])
    for kind, limit in (("warm", 0.3), ("cold", 1.0)):
        ratios = [a / b for a, b in zip(figures[kind]["wall"], figures["kustomize"]["wall"])]
        detail = (f"{median(figures[kind]['wall']) * 1000:.0f} vs {median(figures['kustomize']['wall']) * 1000:.0f} ms, "
                  f"spread {spread(ratios)}")
        results.check(f"render {name}, {kind} / kustomize, wall", median(ratios), limit, "x", detail)
    results.check(f"render {name}, warm / kustomize, peak memory", median(figures["warm"]["rss"]) / kz_rss, 0.2, "x",
                  f"{median(figures['warm']['rss']):.1f} vs {kz_rss:.1f} MiB; cold "
                  f"{median(figures['cold']['rss']) / kz_rss:.2f}x")


def bench_import(tmp: str, runs: int, python: str, results: Results) -> None:
    env = child_env(os.path.join(tmp, "cache"))
    bare, kfd = [], []
    for _ in range(2):
        run_measured([python, "-c", "import kfdefaults"], env, tmp)
    for _ in range(runs):
        bare.append(run_measured([python, "-c", "pass"], env, tmp)[0])
        kfd.append(run_measured([python, "-c", "import kfdefaults"], env, tmp)[0])
    results.check("import kfdefaults over a bare interpreter", (median(kfd) - median(bare)) * 1000, 50, "ms",
                  f"bare {median(bare) * 1000:.1f} ms")
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


def bench_elastic(tmp: str, runs: int, results: Results, limit: float = 25) -> None:
    env = child_env(os.path.join(tmp, "cache"))
    firsts, repeats = [], []
    for i in range(runs + 1):
        out = json.loads(run_measured([sys.executable, "-c", ELASTIC_PROBE], env, tmp)[2])
        if i:  # the first process fills bytecode and profile caches
            firsts.append(out["first"])
            repeats.append(out["repeated"])
    results.check("first Elastic(profile=...) after flytekit (import included)", median(firsts) * 1000, limit, "ms")
    results.check("repeated Elastic(profile=...) for the same profile", median(repeats) * 1000, 1, "ms")


def bench_test_command(tmp: str, limit: float, results: Results) -> None:
    """The README's test command from a fresh clone of this repository's HEAD, install included."""
    clone = os.path.join(tmp, "clone")
    subprocess.run(["git", "clone", "-q", ROOT, clone], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KFDEFAULTS_", "VIRTUAL_ENV"))}
    start = time.perf_counter()
    proc = subprocess.run(["bash", ".ci/run"], cwd=clone, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    print("    " + (proc.stdout.strip().splitlines() or [""])[-1])
    label = "README test command from a fresh clone, install included"
    if proc.returncode != 0:  # a failing suite is no figure: recorded as a miss, the failures printed
        failures = proc.stdout[proc.stdout.find("= FAILURES ="):] if "= FAILURES =" in proc.stdout else proc.stdout
        print(f"the test command failed:\n{failures[:20000]}\n{proc.stderr[-3000:]}")
        results.rows.append((label, f"{wall:.0f}s, tests FAILED", f"<= {limit:g}s", False))
        return
    results.check(label, wall, limit, "s")


class Load:
    """``count`` copies of the test suite running beside the measurements, each restarted when it ends."""

    def __init__(self, count: int) -> None:
        self.procs = []
        loop = (f"while true; do {shlex.quote(sys.executable)} -m pytest -q -x -p no:cacheprovider -n 0 "
                "-o addopts= tests >/dev/null 2>&1; done")
        for _ in range(count):
            self.procs.append(subprocess.Popen(["bash", "-c", loop], cwd=ROOT, start_new_session=True))

    def stop(self) -> None:
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            proc.wait()


def record(results: Results, header: list[str], section: str, extra: list[str] = ()) -> None:
    """Write the results into docs/performance.md between its recorded:SECTION:begin and :end lines, ``extra``
    lines after them."""
    path = os.path.join(ROOT, "docs", "performance.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    begin, end = f"<!-- recorded:{section}:begin -->", f"<!-- recorded:{section}:end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{path}: no {begin} ... {end} section to record into")
    rows = ["| measurement | result | target | |", "|---|---:|---:|---|"]
    rows += [f"| {label} | {value} | {limit} | {'met' if met else '**NOT met**'} |" for label, value, limit, met in results.rows]
    met = sum(1 for *_, ok in results.rows if ok)
    body = "\n".join([begin, *header, "", *rows, "", f"{met} of {len(results.rows)} targets met.", *extra, end])
    text = text[:text.index(begin)] + body + text[text.index(end) + len(end):]
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"recorded in {path}")


def machine_line() -> str:
    """The machine, Python, kubectl and kfdefaults (version and commit) the figures were measured on."""
    from kfdefaults import __version__

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    kubectl_version = subprocess.run([KUBECTL, "version", "--client"], capture_output=True, text=True).stdout.split("\n")[0]
    return (f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, {kubectl_version}, kfdefaults {__version__} ({commit})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--load", type=int, default=0, metavar="N", help="test suites running beside (default 0)")
    parser.add_argument("--python", default=None, help="interpreter of the command line (default: a core-only venv)")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--skip-elastic", action="store_true")
    parser.add_argument("--skip-registration", action="store_true")
    parser.add_argument("--test-command", action="store_true", help="also time the README's test command")
    parser.add_argument("--record", action="store_true", help="write the results into docs/performance.md")
    args = parser.parse_args()
    machine = machine_line()
    print(f"machine: {machine}")
    results = Results()
    load = Load(args.load) if args.load else None
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        if load:
            time.sleep(20)  # let the suites get going
        load_before = os.getloadavg()  # with the suites running, when there are
        with tempfile.TemporaryDirectory(prefix="kfdefaults-bench-") as tmp:
            python = core_python(tmp, args.python)
            print(f"command line: {' '.join(kfdefaults_command(python))}")
            print("render:")
            three, ten = build_case(tmp), build_ten_layer_case(tmp)
            settle()  # the files are as old as a checkout's, as a replay needs
            bench_render("three layers", three, args.runs, python, results)
            bench_render("ten layers", ten, args.runs, python, results)
            print("import:")
            bench_import(tmp, args.runs, python, results)
            if not args.skip_elastic:
                print("Elastic(profile=...):")
                bench_elastic(tmp, max(3, args.runs // 3), results)
            if not args.skip_scale:
                print("scale:")
                import scale

                results.add(scale.measure(tmp, max(3, args.runs // 3)))
            if not args.skip_registration:
                print("registration:")
                import registration

                results.add(registration.measure(tmp, max(3, args.runs // 5)))
            if args.test_command:
                print("test command:")
                bench_test_command(tmp, 150, results)
    finally:
        if load:
            load.stop()
    load_after = os.getloadavg()
    met = sum(1 for *_, ok in results.rows if ok)
    print(f"{met} of {len(results.rows)} targets met")
    if args.record:
        command = "python benchmarks/performance.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        record(results, [
            f"Recorded {started} with `{command}`.",
            f"Machine: {machine}.",
            f"Host load (1-minute load average): {load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end"
            + (f", with {args.load} test suites running beside." if args.load else "."),
        ], "loaded" if args.load else "quiet")
    return 0 if results.all_met() else 1


if __name__ == "__main__":
    sys.exit(main())
