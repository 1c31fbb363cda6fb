"""What torch 2.13 really does when elastic agents start late, never, or lose a worker: the catalogue of
``torch_runs.SCENARIOS`` run for real (agents launched as flytekit's kfpytorch plugin launches them), checked
scenario by scenario: which clock fires first, on which agent, with which error, roughly when.

Times are seconds from an agent's own start (``elapsed``) or from the run's start (``end``). The lower bounds are
the clocks themselves; the upper bounds leave room for a loaded two-core machine (``SLACK``). Select these tests
with ``-m torch_runs``; ``docs/clocks-measured.md`` has the measured times and the error lines.

Each scenario is a shared run (``shared_runs.py``): the session runs them all at once, in the background, from its
start; each test names the runs it reads in its ``torch_runs`` marker and reads them with ``torch_run``.
"""

from __future__ import annotations

import os
import re

import pytest
from shared_runs import shared_run, torch_python
from torch_runs import SCENARIOS, AgentRun, run_agents

pytestmark = pytest.mark.torch_runs

SLACK = 12
"""Seconds allowed past a clock for what follows it (a 1 s sync, the 5 s rollback of a rendezvous round, the
monitor interval, flytekit's error handling) on a loaded machine."""


def run(torch_run, name: str) -> list[AgentRun]:
    scenario = SCENARIOS[name]
    try:
        return torch_run(name)
    except RuntimeError as e:
        if scenario.shm_size and ("unshare" in str(e) or "mount" in str(e)):
            pytest.skip(f"a private /dev/shm needs root: {e}")
        raise


def rdzv(name: str, key: str) -> int:
    return SCENARIOS[name].settings()["rdzv_configs"][key]


def worker_lines(agent: AgentRun) -> list[str]:
    """The ``KFD_WORKER rank=R world=W restart=N`` lines of the agent's training processes."""
    return [line for line in agent.stdout.splitlines() if line.startswith("KFD_WORKER ")]


# --- the rendezvous clocks --------------------------------------------------------------------------------------------


@pytest.mark.torch_runs("join-timeout-missing-node")
def test_a_node_that_never_starts_fails_the_other_at_join_timeout(torch_run):
    name = "join-timeout-missing-node"
    host, missing = run(torch_run, name)
    join = rdzv(name, "join_timeout")
    assert not missing.started
    assert host.exception == "RendezvousTimeoutError" and host.raised["message"] == ""
    assert host.reported == "RendezvousTimeoutError:"  # what Flyte shows: the class, no message
    assert join <= host.elapsed <= join + SLACK
    # torch received the profile's settings through the plugin (and the store-host decision of its pod)
    settings = SCENARIOS[name].settings()
    assert host.launch["rdzv_backend"] == "c10d" and (host.launch["min_nodes"], host.launch["max_nodes"]) == (2, 2)
    assert host.launch["rdzv_configs"] == {**settings["rdzv_configs"], "is_host": True}
    assert host.launch["monitor_interval"] == settings["monitor_interval"] == 1


@pytest.mark.torch_runs("read-timeout-late-store-host")
def test_a_late_store_host_fails_the_others_at_read_timeout_long_before_join_timeout(torch_run):
    name = "read-timeout-late-store-host"
    host, early = run(torch_run, name)
    read, join = rdzv(name, "read_timeout"), rdzv(name, "join_timeout")
    assert early.exception == "RendezvousConnectionError"
    assert early.reported == ("RendezvousConnectionError: The connection to the C10d store has failed. "
                              "See inner exception for details.")
    # the inner exception: the TCPStore client gave up connecting, after at least one read_timeout
    assert f"The client socket has timed out after {read * 1000}ms while trying to connect to (localhost, " \
        in early.stderr
    assert read <= early.elapsed <= 3 * read + SLACK
    assert early.end < host.start  # read_timeout fired first, before the host was even there
    # the host then waits for a node that is gone: join_timeout
    assert host.exception == "RendezvousTimeoutError" and join <= host.elapsed <= join + SLACK


@pytest.mark.torch_runs("read-timeout-store-host-in-time")
def test_a_store_host_within_read_timeout_is_waited_for(torch_run):
    name = "read-timeout-store-host-in-time"
    host, early = run(torch_run, name)
    assert not host.failed and not early.failed
    assert [r.outputs for r in (host, early)].count(True) == 1  # global rank 0 returned the result
    assert early.elapsed >= host.start  # the early node waited for the store, then joined
    assert [line.split()[2] for line in worker_lines(host) + worker_lines(early)] == ["world=2", "world=2"]


@pytest.mark.torch_runs("join-timeout-late-node")
def test_a_node_later_than_join_timeout_finds_no_store(torch_run):
    name = "join-timeout-late-node"
    host, late = run(torch_run, name)
    join, read = rdzv(name, "join_timeout"), rdzv(name, "read_timeout")
    assert host.exception == "RendezvousTimeoutError" and join <= host.elapsed <= join + SLACK
    assert host.end < late.start  # the store went with its host's agent
    assert late.exception == "RendezvousConnectionError" and read <= late.elapsed <= 3 * read + SLACK


@pytest.mark.torch_runs("elastic-max-nodes-in")
def test_an_elastic_round_completes_at_once_when_max_nodes_are_in(torch_run):
    name = "elastic-max-nodes-in"
    runs = run(torch_run, name)
    assert not any(r.failed for r in runs)
    assert all(r.elapsed < rdzv(name, "last_call_timeout") for r in runs)  # last_call_timeout was not waited
    assert all(line.split()[2] == "world=2" for r in runs for line in worker_lines(r))


@pytest.mark.torch_runs("last-call-alone")
def test_an_elastic_round_waits_last_call_timeout_then_runs_with_min_nodes(torch_run):
    name = "last-call-alone"
    host, _ = run(torch_run, name)
    assert not host.failed and host.outputs
    assert rdzv(name, "last_call_timeout") <= host.elapsed < rdzv(name, "join_timeout")
    assert [line.split()[2] for line in worker_lines(host)] == ["world=1"]


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.torch_runs(name)) for name in
                                  ["last-call-late-node-admitted", "last-call-late-node-admitted-max-restarts-1"]])
def test_a_node_after_last_call_is_admitted_by_a_restart_whose_round_fails_at_read_timeout(torch_run, name):
    """Not a RendezvousClosedError: the running agent sees the late node waiting and restarts its workers to admit
    it (a membership change, whatever max_restarts says). With the agent's store shared (torch's default), the
    admission round then fails on both nodes after read_timeout: the new node waits for MASTER_ADDR under the new
    round's prefix, which rank 0 (the same node as before) never writes, and rank 0 waits for the new node's
    role_info. Both wait from about the same time; when rank 0's wait ends first, its agent, which hosts the store,
    ends, and the new node's wait ends with the lost connection instead."""
    host, late = run(torch_run, name)
    read = rdzv(name, "read_timeout")
    assert [line.split()[2] for line in worker_lines(host)] == ["world=1"]  # ran alone, restarted, never ran again
    assert not worker_lines(late)
    assert host.exception == "DistStoreError"
    assert host.raised["message"].startswith(f"wait timeout after {read * 1000}ms, keys: /torch.rendezvous.")
    assert host.raised["message"].endswith("/torchelastic/role_info/1")
    if late.exception == "DistStoreError":
        assert re.fullmatch(rf"wait timeout after {read * 1000}ms, keys: /torch\.rendezvous\.\w+\.\d+/MASTER_ADDR",
                            late.raised["message"])
    else:
        assert late.exception == "DistNetworkError" and "Connection was likely closed" in late.raised["message"]
        assert late.end >= host.end - 1
    assert late.elapsed >= read and abs(late.end - host.end) <= SLACK


@pytest.mark.torch_runs("last-call-late-node-admitted-unshared-store")
def test_with_an_unshared_store_the_late_node_is_admitted(torch_run):
    name = "last-call-late-node-admitted-unshared-store"
    host, late = run(torch_run, name)
    assert not host.failed and not late.failed
    assert [line.split()[2:] for line in worker_lines(host)] == [["world=1", "restart=0"], ["world=2", "restart=0"]]
    assert [line.split()[2:] for line in worker_lines(late)] == [["world=2", "restart=0"]]


@pytest.mark.torch_runs("closed-rendezvous-restarted-pod")
def test_a_restarted_pod_joining_a_closed_rendezvous(torch_run):
    name = "closed-rendezvous-restarted-pod"
    holding, failed, restarted = run(torch_run, name)
    assert failed.exception == "ChildFailedError"
    [failure] = failed.raised["failures"].values()
    assert failure["exitcode"] == 1 and failure["message"]["message"] == "ValueError: rank 1 fails on purpose"
    assert failed.end < restarted.start
    assert restarted.exception == "RendezvousClosedError" and restarted.elapsed <= SLACK
    assert holding.killed and not holding.reported  # nothing tells the other node; its workers run on


@pytest.mark.torch_runs("spare-node-then-closed")
def test_a_spare_node_beyond_max_nodes_crashes_when_the_rendezvous_closes(torch_run):
    """torch 2.13: the spare waits without a timeout; the close raises RendezvousGracefulExitError, which
    SimpleElasticAgent.run swallows and returns None, and launch_agent then fails on ``result.is_failed()``."""
    name = "spare-node-then-closed"
    holding, failed, spare = run(torch_run, name)
    assert failed.exception == "ChildFailedError" and not worker_lines(spare)
    assert spare.exception == "AttributeError"
    assert spare.raised["message"] == "'NoneType' object has no attribute 'is_failed'"
    assert spare.end >= failed.end - 1 and holding.killed


# --- workers that fail ------------------------------------------------------------------------------------------------


@pytest.mark.torch_runs("worker-sigkill")
def test_a_worker_killed_by_sigkill_fails_both_nodes(torch_run):
    name = "worker-sigkill"
    other, killed = run(torch_run, name)
    assert killed.exception == other.exception == "ChildFailedError"
    assert [f["exitcode"] for f in killed.raised["failures"].values()] == [-9]
    assert "Signal 9 (SIGKILL) received by PID" in killed.raised["message"]
    assert killed.reported == other.reported == "FlyteUserRuntimeException: USER:RuntimeError: error="
    [failure] = other.raised["failures"].values()
    assert failure["exitcode"] == 1 and "Connection closed by peer" in failure["message"]["message"]
    assert abs(killed.end - other.end) <= SLACK and max(killed.elapsed, other.elapsed) <= 2 * SLACK


@pytest.mark.torch_runs("worker-sigkill-max-restarts-1")
def test_a_killed_worker_with_max_restarts_1_restarts_both_groups(torch_run):
    """Both agents restart their workers (attempt 1). With the shared store the restarted workers may read the
    killed worker's gloo address from attempt 0 (pytorch#135712): the outcome depends on which one starts first,
    so only the restart itself is asserted here."""
    name = "worker-sigkill-max-restarts-1"
    for agent in run(torch_run, name):
        assert "KFD_START restart=1" in agent.stdout.splitlines(), agent.stderr[-3000:]


@pytest.mark.torch_runs("worker-sigkill-max-restarts-1-unshared-store")
def test_a_killed_worker_with_max_restarts_1_and_an_unshared_store_recovers(torch_run):
    name = "worker-sigkill-max-restarts-1-unshared-store"
    runs = run(torch_run, name)
    assert not any(r.failed for r in runs)
    assert sorted(line.split()[3] for r in runs for line in worker_lines(r)) == ["restart=0"] * 2 + ["restart=1"] * 2


@pytest.mark.torch_runs("gloo-collective-timeout")
def test_a_gloo_collective_times_out_at_the_process_group_timeout(torch_run):
    name = "gloo-collective-timeout"
    waiting, sleeping = run(torch_run, name)
    pg_timeout = SCENARIOS[name].workload["pg_timeout"]
    assert waiting.exception == "ChildFailedError"
    [failure] = waiting.raised["failures"].values()
    assert failure["message"]["message"].endswith(
        f"Timed out waiting {pg_timeout * 1000}ms for recv operation to complete")
    assert pg_timeout <= waiting.elapsed <= pg_timeout + 2 * SLACK
    # the sleeping rank's agent does not wait for its own collective timeout: the store went with agent 0
    assert sleeping.exception == "RendezvousConnectionError" and sleeping.end >= waiting.end


@pytest.mark.torch_runs("dataloader-shm-enospc")
@pytest.mark.skipif(os.geteuid() != 0, reason="a private /dev/shm needs root")
def test_a_dataloader_exhausting_dev_shm_fails_with_no_space_left(torch_run):
    [agent] = run(torch_run, "dataloader-shm-enospc")
    assert agent.exception == "ChildFailedError"
    [failure] = agent.raised["failures"].values()
    message = failure["message"]["message"]
    assert message.startswith("RuntimeError: Caught RuntimeError in DataLoader worker process ")
    assert "RuntimeError: unable to allocate shared memory(shm) for file </torch_" in agent.stderr
    assert ">: No space left on device (28)" in agent.stderr
    assert os.statvfs("/dev/shm").f_blocks * os.statvfs("/dev/shm").f_frsize > 1 << 20  # ours was private


@pytest.mark.torch_runs("dataloader-shm-sigbus")
@pytest.mark.skipif(os.geteuid() != 0, reason="a private /dev/shm needs root")
def test_a_dataloader_worker_killed_by_sigbus(torch_run):
    [agent] = run(torch_run, "dataloader-shm-sigbus")
    assert agent.exception == "ChildFailedError"
    assert "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory " \
           "(shm)." in agent.stderr
    assert re.search(r"RuntimeError: DataLoader worker \(pid \d+\) is killed by signal: Bus error\. It is possible "
                     r"that dataloader's workers are out of shared memory\.", agent.stderr)
    [failure] = agent.raised["failures"].values()
    assert re.fullmatch(r"RuntimeError: DataLoader worker \(pid\(s\) \d+(, \d+)*\) exited unexpectedly",
                        failure["message"]["message"])


# --- the harness ------------------------------------------------------------------------------------------------------


DEADLINE = 10
"""Seconds: past the start of the worker of an agent started beside every other run of the session (4 were too few
for two cores starting them all at once)."""


@shared_run("an-agent-past-its-deadline", seconds=12)
def past_its_deadline() -> list[AgentRun]:
    elastic = SCENARIOS["elastic-max-nodes-in"].settings()
    return run_agents({**elastic, "nnodes": 1}, [0], workload={"name": "allreduce", "hold": 600}, deadline=DEADLINE,
                      python=torch_python())


@pytest.mark.torch_runs("an-agent-past-its-deadline")
def test_an_agent_past_the_deadline_is_killed_with_its_workers(torch_run):
    [agent] = torch_run("an-agent-past-its-deadline")
    assert agent.killed and agent.exit_code == -9 and DEADLINE <= agent.end <= DEADLINE + SLACK
    assert worker_lines(agent)  # its worker was running: killed with it (the run's folder lists no survivor)
