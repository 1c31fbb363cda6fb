"""The route of a value through the package: which rooms a cold run enters, and how often it changes room.

A *room* is a subpackage of kfdefaults (``read``, ``merge``, ...) or a top-level module (``pipeline``,
``cache``, ...); a *file* is one module. The tracer records, with :func:`sys.setprofile`, every call of a function
defined in kfdefaults' own code during one cold run (no cache: ``KFDEFAULTS_NO_CACHE=1``, a fresh interpreter),
in order, and counts:

* ``rooms``: the rooms entered; ``files``: the modules whose functions ran;
* ``changes``: how many times two successive calls are in different rooms (a value that travels down the flow
  once changes room about once per step; one that climbs back up to an earlier step and down again, many times);
* ``entries``: for each room, how many separate stays the run had in it (a room entered once per definition
  on the way down is entered a handful of times, not dozens).

Each run is counted twice: over every room (``all``), and over the flow's steps alone (``flow``: read, layers,
validate, merge, backend, check, lock, show, pipeline, runtime, the SDK adapters, api, cli), where a call into
the shared vocabulary every step uses (:data:`SHARED`: errors, paths, the engine, the cache, the manifest...)
stays in its caller's room: the route of a value down the flow, without the words it is said in.

What runs while a module is imported (its module-level code, class bodies, decorators) is not counted: the
figures follow the route of the work, not the order in which modules are imported.

    python benchmarks/rooms.py            # both runs, a table
    python benchmarks/rooms.py --json     # the figures as JSON

The two runs: ``kfdefaults render elastic-gpu-default`` and ``Elastic(profile="elastic-gpu-default")``, each
in a fresh interpreter of this environment with the cache off. Figures are recorded in docs/architecture.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, sys
package = os.path.dirname(__import__("importlib.util").util.find_spec("kfdefaults").origin)
calls = []
code, out = sys.argv[1], sys.argv[2]

def room_of(filename):
    if not filename.startswith(package + os.sep):
        return None
    relative = os.path.relpath(filename, package)
    parts = relative.split(os.sep)
    return (parts[0] if len(parts) > 1 else parts[0][:-3]), relative

importing = [0]

def profile(frame, event, arg):
    if frame.f_code.co_name == "<module>" and frame.f_code.co_filename != "<run>":  # an import running: its class bodies and decorators are not the route
        importing[0] += 1 if event == "call" else -1 if event == "return" else 0
        return
    if event == "call" and not importing[0]:
        where = room_of(frame.f_code.co_filename)
        if where is not None:
            calls.append(where)

sys.setprofile(profile)
try:
    exec(compile(code, "<run>", "exec"), {"__name__": "__run__"})
except SystemExit:
    pass
finally:
    sys.setprofile(None)
    with open(out, "w") as f:
        json.dump(calls, f)
"""

RUNS = {
    "render": "import sys; from kfdefaults.cli import main; sys.argv = ['kfdefaults', 'render', "
              "'elastic-gpu-default']; main()",
    "Elastic": "from kfdefaults import Elastic; Elastic(profile='elastic-gpu-default')",
}


def trace(code: str) -> list[tuple[str, str]]:
    """``(room, file)`` of every call of kfdefaults' code, in order, for one cold run of ``code``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "calls.json")
        env = dict(os.environ, KFDEFAULTS_NO_CACHE="1", KFDEFAULTS_NO_ENTRY_POINTS="1")
        env.pop("KFDEFAULTS_PLATFORM_PATH", None)
        env.pop("KFDEFAULTS_TEAM_PATH", None)
        subprocess.run([sys.executable, "-c", CHILD, code, out], cwd=tmp, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        with open(out) as f:
            return [tuple(c) for c in json.load(f)]


SHARED = frozenset({"version", "escape", "errors", "paths", "settings", "targets", "smp", "k8s", "cache", "inputs",
                    "__init__"})
"""The shared vocabulary every step uses (how text is shown, errors, paths, settings, the SDK targets as data, the
merge engine, Kubernetes' rules, the cache and the input manifest, the facade): a call into one is counted in the
room of its caller by the ``flow`` figures."""


def figures(calls: list[tuple[str, str]], flow: bool = False) -> dict:
    """The counts of the module docstring for one run's calls; with ``flow``, of the flow's steps alone (a call into
    :data:`SHARED` stays in its caller's room)."""
    if flow:
        calls = [c for c in calls if c[0] not in SHARED]
    entries: dict[str, int] = {}
    changes, previous = 0, None
    for room, _ in calls:
        if room != previous:
            entries[room] = entries.get(room, 0) + 1
            changes += previous is not None
            previous = room
    return {"rooms": len(entries), "files": len({file for _, file in calls}), "changes": changes,
            "calls": len(calls), "entries": dict(sorted(entries.items(), key=lambda kv: -kv[1]))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args()
    traces = {name: trace(code) for name, code in RUNS.items()}
    results = {name: {"all": figures(calls), "flow": figures(calls, flow=True)} for name, calls in traces.items()}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for name, both in results.items():
        for kind, r in both.items():
            print(f"{name} ({kind}): {r['rooms']} rooms, {r['files']} files, {r['changes']} changes of room, "
                  f"{r['calls']} calls")
            print("  stays per room: " + ", ".join(f"{room} {n}" for room, n in r["entries"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
