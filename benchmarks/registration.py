"""Registration at scale and ``render --as flyte``: what kfdefaults adds to ``pyflyte package`` and to a preview.

1. ``pyflyte package`` of a module of 500 tasks, two ways, side by side:
   * kfdefaults: each ``@task(task_config=kfdefaults.Elastic(profile=..., ...))``, five profiles (three builtin,
     two of the project's team folder: tolerations, an image, labels, ``/dev/shm``) crossed with five sets of
     keyword arguments (``nnodes``, ``nproc_per_node``, ``max_restarts``), in a project with a ``pyproject.toml``
     and a ``kfdefaults.lock``;
   * the plugin: the same module with ``flytekitplugins.kfpytorch.Elastic`` carrying the same values and the
     same pod templates written out as ``flytekit.PodTemplate`` (``kubernetes.client`` models), one module-level
     template per distinct one, as a hand-written module would share them. It is generated from what the
     kfdefaults module registers, and both packages are checked to hold the same TaskTemplates (protobufs
     compared whole) before anything is timed.
   Whole-process wall time, A and B alternating; the figure is the median of the pair ratios. Target: <= 1.05x.
2. ``kfdefaults render gpu-large --as flyte`` warm (the cache filled by a run before, files unchanged): median
   wall time. Target: <= 2 s.

Python writes bytecode caches on the warm-up runs (PYTHONDONTWRITEBYTECODE is unset for the children), as it does
for any user. The console scripts are the ones beside this interpreter (``pyflyte``, ``kfdefaults``).

Usage: python benchmarks/registration.py [--runs N] [--tasks N]
Exit status: 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time

BIN = os.path.dirname(sys.executable)
PYFLYTE = os.path.join(BIN, "pyflyte")
KFDEFAULTS = os.path.join(BIN, "kfdefaults")
MODULE = "wf_tasks"
TASKS = 500

PROFILES = ["gpu-large", "cpu-small", "elastic-gpu-default", "vision-train", "vision-eval"]
OVERRIDES = [{}, {"nnodes": 2}, {"nproc_per_node": 4}, {"nnodes": "2:4", "nproc_per_node": 8}, {"max_restarts": 1}]

TEAM_PROFILES = {
    "vision-train.yaml": """\
description: the vision team's training jobs
extends: [gpu-large, nccl-fail-fast]
pod_template:
  labels:
    team: vision
  spec:
    containers:
      - name: primary
        image: registry.example.com/vision/train:3
        resources:
          requests:
            memory: 200Gi
          limits:
            memory: 200Gi
    tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
      - key: example.com/spot
        operator: Equal
        value: "true"
        effect: NoSchedule
    nodeSelector:
      cloud.example.com/gpu: a100
""",
    "vision-eval.yaml": """\
description: the vision team's evaluation jobs, one node
extends: cpu-small
elastic:
  max_restarts: 2
pod_template:
  labels:
    team: vision
    stage: eval
  annotations:
    example.com/owner: vision@example.com
  spec:
    containers:
      - name: primary
        env:
          - name: EVAL_SPLIT
            value: test
    volumes:
      - name: dshm
        emptyDir:
          medium: Memory
          sizeLimit: 2Gi
""",
}


def child_env(cache: str) -> dict[str, str]:
    """The environment of every timed process: no KFDEFAULTS_* of the caller's, bytecode written, the cache in
    ``cache``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["KFDEFAULTS_CACHE_DIR"] = cache
    env["KFDEFAULTS_TARGET"] = "flytekit"
    return env


def run(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[float, str, float]:
    """Run ``cmd``; return (wall seconds, stdout, CPU seconds of the process and its children: user + system).
    A failure ends the benchmark with its standard error."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}) in {cwd}:\n{stderr[-3000:]}")
    return wall, stdout, usage.ru_utime + usage.ru_stime


def task_calls(count: int) -> list[tuple[str, dict]]:
    """(profile, keyword arguments) of each task: every profile with every set of arguments, round robin."""
    return [(PROFILES[i % len(PROFILES)], OVERRIDES[(i // len(PROFILES)) % len(OVERRIDES)]) for i in range(count)]


def kfdefaults_module(count: int) -> str:
    """The module of ``count`` tasks on ``kfdefaults.Elastic``."""
    lines = ["from flytekit import task", "", "from kfdefaults import Elastic", ""]
    for i, (profile, overrides) in enumerate(task_calls(count)):
        arguments = "".join(f", {k}={v!r}" for k, v in overrides.items())
        lines += ["", f"@task(task_config=Elastic(profile={profile!r}{arguments}))",
                  f"def t{i}(x: int) -> int:", "    return x + 1", ""]
    return "\n".join(lines)


def write_project(root: str, module: str) -> None:
    """A project: ``pyproject.toml`` naming the team folder, the team's profiles, and the module."""
    os.makedirs(os.path.join(root, "profiles"), exist_ok=True)
    with open(os.path.join(root, "pyproject.toml"), "w") as f:
        f.write('[project]\nname = "vision"\nversion = "0.1"\n\n[tool.kfdefaults]\nteam = ["profiles"]\n')
    for name, text in TEAM_PROFILES.items():
        with open(os.path.join(root, "profiles", name), "w") as f:
            f.write(text)
    with open(os.path.join(root, f"{MODULE}.py"), "w") as f:
        f.write(module)


# Run inside the kfdefaults project by the venv's interpreter: imports the kfdefaults module and writes the
# plugin's module from what each task registers.
EMIT = r'''
import sys, dataclasses, enum
import kubernetes.client as k8s
sys.path.insert(0, ".")
import importlib
from flytekitplugins.kfpytorch.task import Elastic as PluginElastic

mod = importlib.import_module(sys.argv[1])

def code(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return repr(v)
    if isinstance(v, enum.Enum):
        return f"{type(v).__name__}.{v.name}"
    if isinstance(v, list):
        return "[" + ", ".join(code(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{code(a)}: {code(b)}" for a, b in v.items()) + "}"
    if hasattr(v, "openapi_types"):
        cls = next(c for c in type(v).__mro__ if getattr(k8s, c.__name__, None) is c)
        args = ", ".join(f"{a}={code(getattr(v, a))}" for a in v.openapi_types if getattr(v, a) is not None)
        return f"k8s.{cls.__name__}({args})"
    if dataclasses.is_dataclass(v):
        args = ", ".join(f"{f.name}={code(getattr(v, f.name))}" for f in dataclasses.fields(v))
        return f"{type(v).__name__}({args})"
    raise TypeError(type(v))

templates, lines = {}, []
tasks = sorted((int(n[1:]), t) for n, t in vars(mod).items() if n.startswith("t") and n[1:].isdigit())
for i, t in tasks:
    p = t.pod_template
    text = (f"PodTemplate(pod_spec={code(p.pod_spec)}, primary_container_name={p.primary_container_name!r}, "
            f"labels={code(p.labels)}, annotations={code(p.annotations)})")
    name = templates.setdefault(text, f"TEMPLATE_{len(templates)}")
    c = t.task_config
    elastic = ", ".join(f"{f.name}={code(getattr(c, f.name))}" for f in dataclasses.fields(PluginElastic))
    lines += ["", f"@task(task_config=Elastic({elastic}), pod_template={name})",
              f"def t{i}(x: int) -> int:", "    return x + 1", ""]
head = ["import kubernetes.client as k8s", "from flytekit import PodTemplate, task",
        "from flytekitplugins.kfpytorch import Elastic", "from flytekitplugins.kfpytorch.task import CleanPodPolicy, RunPolicy", ""]
head += [f"{name} = {text}" for text, name in templates.items()]
print("\n".join(head + lines))
'''


def build(tmp: str, count: int, env: dict[str, str]) -> tuple[str, str]:
    """Write both projects under ``tmp`` and lock the kfdefaults one; return (kfdefaults folder, plugin folder)."""
    a, b = os.path.join(tmp, "kfdefaults"), os.path.join(tmp, "plugin")
    write_project(a, kfdefaults_module(count))
    run([KFDEFAULTS, "lock"], env, a)
    _, plugin, _ = run([sys.executable, "-c", EMIT, MODULE], env, a)
    os.makedirs(b, exist_ok=True)
    with open(os.path.join(b, f"{MODULE}.py"), "w") as f:
        f.write(plugin)
    return a, b


def package(folder: str, env: dict[str, str]) -> tuple[float, float]:
    """``pyflyte --pkgs wf_tasks package`` in ``folder``; return its (wall, CPU) seconds."""
    wall, _, cpu = run([PYFLYTE, "--pkgs", MODULE, "package", "--image", "registry.example.com/vision/base:1",
                        "-o", "flyte-package.tgz", "--force"], env, folder)
    return wall, cpu


def task_templates(tgz: str) -> dict[str, bytes]:
    """The serialized TaskTemplates of a package, by task name, each in the protobuf's deterministic encoding."""
    from flyteidl.admin.task_pb2 import TaskSpec

    out: dict[str, bytes] = {}
    with tarfile.open(tgz) as tar:
        for member in tar.getmembers():
            if not member.name.endswith(".pb"):
                continue
            spec = TaskSpec()
            spec.ParseFromString(tar.extractfile(member).read())
            out[spec.template.id.name] = spec.template.SerializeToString(deterministic=True)
    return out


def same_packages(a: str, b: str) -> int:
    """The number of tasks, after checking both packages hold the same TaskTemplates (their ids are those of the
    same module name in either folder)."""
    first, second = task_templates(os.path.join(a, "flyte-package.tgz")), task_templates(os.path.join(b, "flyte-package.tgz"))
    if first.keys() != second.keys():
        raise SystemExit(f"the packages hold other tasks: {sorted(first.keys() ^ second.keys())[:5]}")
    differ = [name for name in first if first[name] != second[name]]
    if differ:
        raise SystemExit(f"{len(differ)} task(s) serialize differently, e.g. {differ[0]}")
    return len(first)


def kfdefaults_share(folder: str, env: dict[str, str]) -> None:
    """Print what of one ``pyflyte package`` (under cProfile) is kfdefaults' own: ``Elastic(...)``, and
    ``ProfileElasticTask.__init__`` and ``get_k8s_pod`` less the plugin's and flytekit's methods they extend."""
    import pstats

    out = os.path.join(folder, "package.prof")
    run([sys.executable, "-m", "cProfile", "-o", out, PYFLYTE, "--pkgs", MODULE, "package", "--image",
         "registry.example.com/vision/base:1", "-o", "flyte-package.tgz", "--force"], env, folder)
    stats = pstats.Stats(out).stats  # (file, line, name) -> (calls, primitive calls, own time, cumulative, callers)

    def cumulative(path_end: str, name: str) -> float:
        return sum(v[3] for (file, _, fn), v in stats.items() if file.endswith(path_end) and fn == name)

    parts = {
        "Elastic(...)": cumulative("kfdefaults/flytekit/elastic.py", "__init__"),
        "task definition": cumulative("kfdefaults/flytekit/task.py", "__init__")
        - cumulative("flytekitplugins/kfpytorch/task.py", "__init__"),
        "get_k8s_pod": cumulative("kfdefaults/flytekit/task.py", "get_k8s_pod")
        - cumulative("flytekit/core/python_auto_container.py", "get_k8s_pod"),
    }
    total = max(v[3] for v in stats.values())
    print(f"  kfdefaults' share of one profiled run ({total:.2f} s under cProfile): "
          + ", ".join(f"{k} {v:.3f} s" for k, v in parts.items())
          + f"; {sum(parts.values()) / total:.1%} in all")


def bench_package(tmp: str, runs: int, count: int) -> float:
    env = child_env(os.path.join(tmp, "cache"))
    a, b = build(tmp, count, env)
    for folder in (a, b):  # warm-up: bytecode and kfdefaults' cache written, output checked
        package(folder, env)
    tasks = same_packages(a, b)
    print(f"  {tasks} tasks, {len(PROFILES)} profiles x {len(OVERRIDES)} argument sets; both packages hold the same "
          "TaskTemplates")
    kfdefaults_share(a, env)
    ratios, cpu_ratios, times_a, times_b = [], [], [], []
    for i in range(runs):
        order = [(a, times_a), (b, times_b)] if i % 2 == 0 else [(b, times_b), (a, times_a)]
        for folder, times in order:
            times.append(package(folder, env))
        ratios.append(times_a[-1][0] / times_b[-1][0])
        cpu_ratios.append(times_a[-1][1] / times_b[-1][1])
        print(f"  run {i + 1}: kfdefaults {times_a[-1][0]:.2f} s (CPU {times_a[-1][1]:.2f} s), plugin "
              f"{times_b[-1][0]:.2f} s (CPU {times_b[-1][1]:.2f} s), ratio {ratios[-1]:.3f} (CPU {cpu_ratios[-1]:.3f})")
    print(f"  median: kfdefaults {statistics.median(t[0] for t in times_a):.2f} s, plugin "
          f"{statistics.median(t[0] for t in times_b):.2f} s; wall pair ratios {min(ratios):.3f}-{max(ratios):.3f}, "
          f"CPU pair ratios {min(cpu_ratios):.3f}-{max(cpu_ratios):.3f} (median {statistics.median(cpu_ratios):.3f})")
    return statistics.median(ratios)


def bench_render_flyte(tmp: str, runs: int) -> float:
    env = child_env(os.path.join(tmp, "cache"))
    cwd = os.path.join(tmp, "kfdefaults")
    cmd = [KFDEFAULTS, "render", "gpu-large", "--as", "flyte"]
    cold, first, _ = run(cmd, env, cwd)
    times = [run(cmd, env, cwd)[0] for _ in range(runs)]
    if run(cmd, env, cwd)[1] != first:
        raise SystemExit("render --as flyte printed another template warm than cold")
    print(f"  first run {cold:.2f} s; warm median {statistics.median(times):.3f} s "
          f"(runs {min(times):.3f}-{max(times):.3f} s)")
    return statistics.median(times)


def measure(tmp: str, runs: int, tasks: int = TASKS) -> list[tuple[str, float, float, str]]:
    """Both figures, each ``(label, value, limit, unit)``; prints the details as it goes.

    Args:
        tmp: An empty folder to write the projects, packages and cache in.
        runs: Timed runs of each side.
        tasks: Tasks in the module.
    """
    print(f"pyflyte package, {tasks} tasks (A/B alternating, {runs} runs each)")
    ratio = bench_package(tmp, runs, tasks)
    print("kfdefaults render gpu-large --as flyte")
    seconds = bench_render_flyte(tmp, runs)
    return [(f"pyflyte package, {tasks} tasks: kfdefaults / plugin Elastic", ratio, 1.05, "x"),
            ("render --as flyte, warm", seconds, 2.0, "s")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=TASKS)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"host: {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    with tempfile.TemporaryDirectory(prefix="kfdefaults-registration-") as tmp:
        results = measure(tmp, args.runs, args.tasks)
    failed = 0
    for label, value, limit, unit in results:
        ok = value <= limit
        failed += not ok
        print(f"  {label:<58} {value:8.3f} {unit:<2} (target <= {limit:g}{unit}) {'met' if ok else 'NOT met'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
