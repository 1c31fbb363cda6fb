"""The clocks of a clustered task (Flyte 2's JobSet): torchrun's static rendezvous, JobSet restarts that recreate
every pod, Flyte's max_queued_time; and the static rendezvous as torch 2.13 really behaves.

The real runs start torchrun as Flyte's ``clustered`` launcher does (flyte/_bin/clustered.py, flyte 2.12.1:
``--rdzv-backend=static``, ``--node-rank``, ``--rdzv-endpoint``), one node of two missing; only ``--rdzv-conf
timeout=`` is added, so that torch's 600 s takes seconds here. Times count from the agent's start (torch imported),
as the timeline's count from the pods' start.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest
from cli_runner import invoke as run_cli

from kfdefaults.check.clocks import Clock, Source
from kfdefaults.check.scenarios import READ_RETRIES, STATIC_LATE, static_scenarios
from kfdefaults.check.start import Span

SLACK = 12
"""Seconds allowed past the timeline's latest for a loaded machine (as ``tests/test_torch_runs.py``)."""

TWO_NODES = """\
extends: cpu-small
elastic:
  nnodes: 2
  rdzv_configs: null
  max_restarts: null
  start_method: null
"""


def timeline(tmp_path, *extra) -> dict:
    (tmp_path / "team").mkdir(exist_ok=True)
    (tmp_path / "team" / "pair.yaml").write_text(TWO_NODES, encoding="utf-8")
    result = run_cli(["timeline", "pair", "--team", str(tmp_path / "team"), "--target", "clustered", "--facts",
                      "none", "-o", "json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def scenario(found: dict, key: str) -> dict:
    [one] = [s for s in found["scenarios"] if s["key"] == key]
    return one


def test_the_static_rendezvous_has_one_clock_and_no_join_timeout(tmp_path):
    found = timeline(tmp_path)
    clocks = {c["name"]: c for c in found["clocks"]}
    assert not {"join_timeout", "read_timeout", "last_call_timeout"} & set(clocks)
    static = clocks["static_timeout"]
    assert static["seconds"] == 600 and "static_tcp_rendezvous.py" in static["source"]["default"]
    assert clocks["monitor_interval"]["seconds"] == 0.1  # torchrun's default: the launcher passes none
    assert clocks["max_queued_time"]["known"] is False and "flyte.Timeout(max_queued_time" in \
        clocks["max_queued_time"]["setting"]
    never = scenario(found, "never-worker")
    assert never["first"]["clock"] == "static_timeout" and never["first"]["error"] == "DistStoreError"
    assert never["outcome"] == "fails" and never["worst"] == 600 + STATIC_LATE
    host = scenario(found, "never-host")
    assert host["first"]["error"] == "DistNetworkError" and host["worst"] == READ_RETRIES * 600


def test_jobset_restarts_recreate_every_pod_and_multiply_the_wait(tmp_path):
    found = timeline(tmp_path, "--set", "elastic.cluster_max_restarts=2")
    never = scenario(found, "never-worker")
    assert any("the JobSet recreates every pod" in e["what"] for e in never["events"])
    assert never["worst"] == 3 * (600 + STATIC_LATE)
    lost = scenario(found, "lost-peer")
    assert lost["outcome"] == "runs" and any("recreates every pod" in e["what"] for e in lost["events"])
    # without restarts the lost pod's Job failure ends the task at once: no collective waits for the peer
    lost = scenario(timeline(tmp_path), "lost-peer")
    assert lost["outcome"] == "fails" and lost["worst"] == 0
    hung = scenario(found, "hung-collective")
    assert any("cluster_max_restarts 2" in n for n in hung["notes"])


def test_a_c10d_clustered_task_keeps_the_c10d_clocks_at_torchs_defaults(tmp_path):
    clocks = {c["name"]: c for c in timeline(tmp_path, "--set", "elastic.rdzv_backend=c10d")["clocks"]}
    assert clocks["join_timeout"]["seconds"] == 600 and "static_timeout" not in clocks


AGENT = """\
import sys, time
import torch.distributed.run as run
print("STARTED", time.time(), flush=True)
sys.argv = ["torchrun"] + sys.argv[1:]
run.main()
"""

WORKER = "import torch.distributed as dist\ndist.init_process_group('gloo')\ndist.destroy_process_group()\n"


def start_agent(tmp_path, rank: int, port: int, timeout: int) -> subprocess.Popen:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "worker.py").write_text(WORKER, encoding="utf-8")
    return subprocess.Popen([sys.executable, str(tmp_path / "agent.py"), "--nnodes=2", "--nproc-per-node=1",
                             f"--node-rank={rank}", "--rdzv-backend=static", "--rdzv-id=pair-0",
                             f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-conf", f"timeout={timeout}",
                             str(tmp_path / "worker.py")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finished(agent: subprocess.Popen) -> tuple[float, str]:
    """Seconds from the agent's start to its end, and what it wrote."""
    started = None
    lines = []
    for line in agent.stdout:  # type: ignore[union-attr]
        lines.append(line)
        if line.startswith("STARTED ") and started is None:
            started = float(line.split()[1])
    agent.wait(timeout=120)
    assert started is not None, "".join(lines)
    return time.time() - started, "".join(lines)


@pytest.mark.slow
@pytest.mark.torch_runs
def test_the_static_rendezvous_fails_as_the_timeline_says_when_a_node_never_starts(tmp_path):
    pytest.importorskip("torch")
    from torch_runs import free_port

    t = 4
    clock = {"static_timeout": Clock("static_timeout", t, True, Source(default="test"), "", ""),
             "kueue_wait": Clock("kueue_wait", None, False, Source(), "", ""),
             "active_deadline_seconds": Clock("active_deadline_seconds", None, True, Source(), "", ""),
             "task_timeout": Clock("task_timeout", None, False, Source(), "", "")}
    predicted = {s.key: s for s in static_scenarios(clock, Span([], ["node_start"]), "worst", 2, 0)}
    (tmp_path / "host").mkdir()
    (tmp_path / "worker").mkdir()
    host = start_agent(tmp_path / "host", 0, free_port(), t)  # its worker never starts
    worker = start_agent(tmp_path / "worker", 1, free_port(), t)  # its node 0 never starts
    (host_end, host_log), (worker_end, worker_log) = finished(host), finished(worker)
    assert host.returncode != 0 and worker.returncode != 0
    first = predicted["never-worker"].first
    assert first.who.startswith("node 0") and f"{first.error}: {first.message}" in host_log, host_log[-2000:]
    assert first.at[0] <= host_end <= first.at[1] + SLACK, host_end
    first = predicted["never-host"].first
    assert first.error in worker_log and "while trying to connect to" in worker_log, worker_log[-2000:]
    assert first.at[0] <= worker_end <= first.at[1] + SLACK, worker_end


def test_fit_counts_the_jobsets_replicas(tmp_path):
    nodes = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"pool": "cpu"}},
         "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}} for i in range(2)]}
    (tmp_path / "nodes.json").write_text(json.dumps(nodes), encoding="utf-8")
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "many.yaml").write_text(textwrap.dedent("""\
        extends: cpu-small
        elastic:
          nnodes: 12
          rdzv_configs: null
          max_restarts: null
          start_method: null
        """), encoding="utf-8")
    result = run_cli(["fit", "many", "--team", str(tmp_path / "team"), "--target", "clustered", "--nodes",
                      str(tmp_path / "nodes.json"), "-o", "json"])
    report = json.loads(result.stdout)
    assert report["pods_created"] == 12, report
