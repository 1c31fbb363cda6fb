"""The timeline's clock is the one torch raises: for three profiles with clocks of seconds, ``kfdefaults timeline
NAME -o json`` (the real command, in a process of its own) says which clock fires first, on which node, within
which window; the same profile's settings, as ``kfdefaults render NAME -o json`` prints them, then run two torch
elastic agents as flytekit's kfpytorch plugin launches them (``torch_runs.run_agents``), one of them late or
never, as the facts say; torch must raise that clock's error on that agent within that window.

Times are seconds from the run's start (the first pod's start in the timeline). The upper bound of each window is
the timeline's own plus ``SLACK`` for a loaded two-core machine, as in ``tests/test_torch_runs.py``.

Each profile's timeline, render and run are one shared run (``shared_runs.py``), made beside the session's other
runs from its start and read by the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from shared_runs import shared_run, torch_python
from torch_runs import run_agents

pytestmark = pytest.mark.torch_runs

SLACK = 12
"""Seconds allowed past the timeline's latest for a loaded machine (as ``tests/test_torch_runs.py``)."""

KFDEFAULTS = [sys.executable, "-m", "kfdefaults.cli"]


def kfdefaults(*args: str, cwd: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env["KFDEFAULTS_CACHE_DIR"] = str(cwd / "cache")
    done = subprocess.run([*KFDEFAULTS, *args, "-o", "json"], capture_output=True, text=True, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def profile(name: str, elastic: str, late: int) -> tuple[dict, dict]:
    """A platform folder holding profile ``name`` (``cpu-small`` with ``elastic``) and the cluster's facts (a cold
    node ``late`` seconds, at worst); the timeline and the rendered profile."""
    tmp_path = Path(tempfile.mkdtemp(prefix=f"timeline-{name}-", dir=Path.cwd()))  # the scheduler's: a temporary one
    platform = tmp_path / "platform"
    platform.mkdir()
    (platform / f"{name}.yaml").write_text(textwrap.dedent(f"""\
        description: two nodes with clocks of seconds
        extends: cpu-small
        elastic:
          nproc_per_node: 1
          start_method: fork
          monitor_interval: 1
          max_restarts: 0
        """) + textwrap.indent(textwrap.dedent(elastic), "  "))
    (platform / "_cluster-facts.yaml").write_text(
        f"node_start: {{typical: 1, worst: {late}}}\nimage_pull: {{typical: 0, worst: 0}}\n")
    found = kfdefaults("timeline", name, "--only-platform", str(platform), "--target", "flytekit", cwd=tmp_path)
    rendered = kfdefaults("render", name, "--only-platform", str(platform), "--target", "flytekit", cwd=tmp_path)
    return found, rendered


def scenario(timeline: dict, key: str) -> dict:
    [found] = [s for s in timeline["scenarios"] if s["key"] == key]
    return found


def env_of(rendered: dict) -> dict[str, str]:
    """The primary container's variables, as the pod gets them."""
    pod = rendered["pod_template"]
    [primary] = [c for c in pod["spec"]["containers"] if c["name"] == pod["primary_container_name"]]
    return {e["name"]: e["value"] for e in primary.get("env", []) if "value" in e}


def within(agent, event: dict) -> bool:
    return event["at"]["earliest"] <= agent.end <= event["at"]["latest"] + SLACK


@shared_run("timeline-late-host", seconds=22)
def late_host() -> tuple[dict, dict, list]:
    found, rendered = profile("late-host", """\
        nnodes: 2
        rdzv_configs: {join_timeout: 3, read_timeout: 2}
        """, late=12)
    [starting] = [e for e in scenario(found, "start-cold-host")["events"]
                  if e["clock"] is None and e["who"].startswith("the store's host")]
    return found, rendered, run_agents(rendered["elastic"], [starting["at"]["earliest"], 0], env=env_of(rendered),
                                       python=torch_python(), deadline=40)


@pytest.mark.torch_runs("timeline-late-host")
def test_a_late_store_host_the_others_fail_at_read_timeout_as_the_timeline_says(torch_run):
    found, rendered, (host, other) = torch_run("timeline-late-host")
    cold_host = scenario(found, "start-cold-host")
    first = cold_host["first"]
    assert (first["clock"], first["who"]) == ("read_timeout", "the other nodes")
    assert (first["at"]["earliest"], first["at"]["latest"]) == (2, 8)  # one to four read_timeouts
    [starting] = [e for e in cold_host["events"] if e["clock"] is None and e["who"].startswith("the store's host")]
    assert host.start >= starting["at"]["earliest"]  # the host started when the timeline says it starts
    assert other.exception == first["error"] and within(other, first)
    assert other.end < host.start  # it fired before the host was even there
    then = [e for e in cold_host["events"] if e["clock"] == "join_timeout"][0]  # the host, alone, at its join_timeout
    assert host.exception == then["error"] and then["at"]["earliest"] <= host.end <= then["at"]["latest"] + SLACK


@shared_run("timeline-missing-node", seconds=7)
def missing_node() -> tuple[dict, dict, list]:
    found, rendered = profile("missing-node", """\
        nnodes: 2
        rdzv_configs: {join_timeout: 3, read_timeout: 10}
        """, late=5)
    return found, rendered, run_agents(rendered["elastic"], [0, None], env=env_of(rendered), python=torch_python(),
                                       deadline=30)


@pytest.mark.torch_runs("timeline-missing-node")
def test_a_node_that_never_starts_fails_the_host_at_join_timeout_as_the_timeline_says(torch_run):
    found, rendered, (host, missing) = torch_run("timeline-missing-node")
    first = scenario(found, "never-worker")["first"]
    assert first["clock"] == "join_timeout"
    assert first["who"].startswith("the store's host") and (first["at"]["earliest"], first["at"]["latest"]) == (3, 6)
    assert not missing.started
    assert host.exception == first["error"] and within(host, first)


@shared_run("timeline-elastic-late", seconds=18)
def elastic_late() -> tuple[dict, dict, list]:
    found, rendered = profile("elastic-late", """\
        nnodes: "1:2"
        rdzv_configs: {join_timeout: 20, last_call_timeout: 3, read_timeout: 4}
        """, late=8)
    return found, rendered, run_agents(rendered["elastic"], [0, 8], workload={"name": "allreduce", "hold": 14},
                                       env=env_of(rendered), python=torch_python(), deadline=45)


@pytest.mark.torch_runs("timeline-elastic-late")
def test_an_elastic_range_closed_by_last_call_timeout_then_the_late_node_fails_both(torch_run):
    found, rendered, (host, late) = torch_run("timeline-elastic-late")
    cold = scenario(found, "start-cold-worker")
    first = cold["first"]
    assert first["clock"] == "last_call_timeout" and first["error"] is None  # the round closes: no error yet
    assert (first["at"]["earliest"], first["at"]["latest"]) == (3, 4)
    [admission] = [e for e in cold["events"] if e["fails"]]
    assert (admission["clock"], admission["who"]) == ("read_timeout", "every node")
    # the round closed with the first node alone, at last_call_timeout: its worker ran in a world of one
    assert [line.split()[2] for line in host.stdout.splitlines() if line.startswith("KFD_WORKER ")] == ["world=1"]
    assert host.exception == admission["error"] and within(host, admission)
    # the late node: DistStoreError, or the lost connection when the host's agent ended first (measured)
    assert late.exception in (admission["error"], "DistNetworkError") and within(late, admission)
