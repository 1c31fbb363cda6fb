"""``kfdefaults why`` on the logs of the real failures this machine ran (``tests/torch_logs``, captured by
``python tests/torch_runs.py --capture tests/torch_logs``: each agent's standard error as a pod's log shows it), the
real CLI in a subprocess. Every agent that failed is recognised, as its failure; every agent that ran clean is not.
The values of a captured run are its scenario's own settings (``--profile cpu-small`` and the scenario's task layer
as ``--set``). Then bad input: binary, huge, control characters, a broken receipt line; and hand-written lines for
what this machine cannot run (NCCL, OOMKilled, Kueue), each in the words of the program that writes it.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from torch_runs import SCENARIOS

HERE = Path(__file__).resolve().parent
LOGS = HERE / "torch_logs"
KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")
RUNS = json.loads((LOGS / "runs.json").read_text(encoding="utf-8"))

EXPECTED = {
    ("join-timeout-missing-node", 0): ["rendezvous-timeout"],
    ("read-timeout-late-store-host", 0): ["rendezvous-timeout"],
    ("read-timeout-late-store-host", 1): ["store-unreachable"],
    ("join-timeout-late-node", 0): ["rendezvous-timeout"],
    ("join-timeout-late-node", 1): ["store-unreachable"],
    ("last-call-late-node-admitted", 0): ["admitting-round"],
    ("last-call-late-node-admitted", 1): ["admitting-round"],
    ("last-call-late-node-admitted-max-restarts-1", 0): ["admitting-round"],
    ("last-call-late-node-admitted-max-restarts-1", 1): ["admitting-round"],
    ("closed-rendezvous-restarted-pod", 1): ["worker-failed"],
    ("closed-rendezvous-restarted-pod", 2): ["rendezvous-closed"],
    ("spare-node-then-closed", 1): ["worker-failed"],
    ("spare-node-then-closed", 2): ["spare-node-closed"],
    ("worker-sigkill", 0): ["peer-gone"],
    ("worker-sigkill", 1): ["worker-failed"],
    # with max_restarts 1 the run recovered, and its log still shows the first failure
    ("worker-sigkill-max-restarts-1", 0): ["peer-gone"],
    ("worker-sigkill-max-restarts-1", 1): ["worker-failed"],
    ("worker-sigkill-max-restarts-1-unshared-store", 0): ["peer-gone"],
    ("worker-sigkill-max-restarts-1-unshared-store", 1): ["worker-failed"],
    ("gloo-collective-timeout", 0): ["gloo-timeout"],
    ("gloo-collective-timeout", 1): ["store-host-gone"],
    ("dataloader-shm-enospc", 0): ["shm-no-space"],
    ("dataloader-shm-sigbus", 0): ["shm-bus-error"],
}
"""What each captured agent's log is recognised as; every other agent's log shows no failure."""

AGENTS = [(name, i) for name, run in RUNS["scenarios"].items() for i, a in enumerate(run["agents"]) if a["started"]]


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}


def why(*args: Any, stdin: bytes | None = None, cwd: Path = HERE) -> subprocess.CompletedProcess:
    return subprocess.run([KFDEFAULTS, "why", *map(str, args)], cwd=cwd, env=env(), capture_output=True,
                          input=stdin, timeout=300)


def answer(*args: Any, **kwargs: Any) -> dict:
    done = why(*args, "-o", "json", **kwargs)
    assert done.returncode in (0, 1) and not done.stderr, done.stderr
    return json.loads(done.stdout)


def scenario_sets(name: str) -> list[str]:
    """The scenario's task layer as ``--set`` arguments (``torch_runs.Scenario.settings``)."""
    base = {"nproc_per_node": 1, "start_method": "fork", "monitor_interval": 1, "max_restarts": 0}
    elastic = {**base, **SCENARIOS[name].elastic}
    out = []
    for key, value in elastic.items():
        if isinstance(value, dict):
            out += [f"elastic.{key}.{k}={v}" for k, v in value.items()]
        else:
            out.append(f"elastic.{key}={value}")
    return [a for s in out for a in ("--set", s)]


def test_every_failed_agent_of_the_catalogue_is_expected_to_be_recognised():
    failed = {(name, i) for name, i in AGENTS if RUNS["scenarios"][name]["agents"][i]["exception"]}
    assert failed <= set(EXPECTED), failed - set(EXPECTED)


@pytest.mark.slow
@pytest.mark.parametrize("name, index", AGENTS, ids=[f"{n}.agent{i}" for n, i in AGENTS])
def test_each_captured_log_is_recognised_as_what_failed(name, index):
    done = why(LOGS / f"{name}.agent{index}.stderr", "-o", "json")
    found = [f["name"] for f in json.loads(done.stdout)["failures"]]
    assert found == EXPECTED.get((name, index), [])
    assert done.returncode == (0 if found else 1)


@pytest.mark.slow
@pytest.mark.parametrize("name, index, key", [
    ("join-timeout-missing-node", 0, "elastic.rdzv_configs.join_timeout"),
    ("read-timeout-late-store-host", 1, "elastic.rdzv_configs.read_timeout"),
    ("closed-rendezvous-restarted-pod", 2, "elastic.max_restarts"),
    ("worker-sigkill", 1, "elastic.max_restarts"),
])
def test_the_values_of_a_captured_run_are_its_settings(name, index, key):
    """With the run's profile and task layer, the answer names the value it ran with, set by its --set."""
    [failure] = answer(LOGS / f"{name}.agent{index}.stderr", "--profile", "cpu-small", *scenario_sets(name))["failures"]
    settings = {s["key"]: s for s in failure["settings"]}
    value = SCENARIOS[name].settings()
    for part in key.split(".")[1:]:
        value = value[part]
    assert settings[key]["value"] == value
    assert settings[key]["set_by"] == f"task --set {key}={value}"


@pytest.mark.slow
def test_a_store_never_reached_is_answered_with_read_timeout_and_the_log_s_own_numbers():
    log = LOGS / "read-timeout-late-store-host.agent1.stderr"
    [failure] = answer(log, "--profile", "cpu-small", *scenario_sets("read-timeout-late-store-host"))["failures"]
    assert failure["change"] == ["raise read_timeout (2 s now) to join_timeout's 3 s: the store is served by the job's "
                                 "first pod, which may be the slowest to start"]
    # with the profile alone, the log's 2000 ms says the run had another read_timeout than the profile now
    [failure] = answer(log, "--profile", "cpu-small")["failures"]
    assert failure["change"][0] == ("the log's store client gave up each try after 2000 ms: read_timeout was 2 s in that "
                                    "run, not the 60 s here")


@pytest.mark.slow
def test_a_read_timeout_already_at_join_timeout_is_not_to_be_raised_to_it():
    """Raising read_timeout to join_timeout's value is no advice when it is there already: the answer says where to
    look instead, and which, by whether the log's run had the profile's read_timeout."""
    log = LOGS / "read-timeout-late-store-host.agent1.stderr"
    sets = [*scenario_sets("read-timeout-late-store-host"), "--set", "elastic.rdzv_configs.join_timeout=2"]
    [failure] = answer(log, "--profile", "cpu-small", *sets)["failures"]
    assert failure["change"] == ["read_timeout (2 s now) already reaches join_timeout's 2 s: the job's first pod, which "
                                 "serves the store, started later than that or never; its events say why (kubectl "
                                 "describe pod)"]
    [failure] = answer(log, "--profile", "gpu-large")["failures"]  # 900 s each: not the log's 2 s
    assert failure["change"][-1] == ("read_timeout (900 s now) already reaches join_timeout's 900 s: the run had another "
                                     "read_timeout than the profile's now: check that the pod ran on this profile "
                                     "(kfdefaults verify)")
    assert not any(c.startswith("raise read_timeout") for c in failure["change"])


@pytest.mark.slow
def test_a_killed_worker_is_answered_with_its_exit_code_and_the_memory_limit():
    [failure] = answer(LOGS / "worker-sigkill.agent1.stderr", "--profile", "cpu-small")["failures"]
    assert failure["name"] == "worker-failed"
    assert [s["key"] for s in failure["settings"]] == ["elastic.max_restarts",
                                                       "pod_template.spec.containers[name=primary].resources.limits.memory"]
    assert failure["change"][0].startswith("exit code -9: SIGKILL: the kernel's OOM killer at the memory limit")


@pytest.mark.slow
def test_without_values_the_keys_are_named_and_the_values_asked_for():
    done = why(LOGS / "join-timeout-missing-node.agent0.stderr")
    assert done.returncode == 0
    text = done.stdout.decode()
    assert text.startswith("kfdefaults why: ")
    assert "1 known failure; no values: give --profile NAME\n" in text
    assert "  elastic.rdzv_configs.join_timeout: value unknown (no receipt in the log: give --profile NAME)\n" in text


@pytest.mark.slow
def test_the_text_answer_of_a_dataloader_out_of_shared_memory():
    done = why(LOGS / "dataloader-shm-enospc.agent0.stderr", "--profile", "cpu-small")
    lines = done.stdout.decode().splitlines()
    assert lines[0] == ("kfdefaults why: " + str(LOGS / "dataloader-shm-enospc.agent0.stderr") + ": 1 known failure; "
                        "values from profile cpu-small as it renders now (from --profile)")
    assert lines[1] == "no space left in /dev/shm"
    assert lines[2].startswith("  line 64: E") and lines[2].endswith("No space left on device (28)")
    assert lines[5].startswith("  pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit = 1Gi  (builtin ")
    assert lines[5].endswith("cpu-small.yaml:30)")


def test_an_unknown_log_says_so_and_guesses_nothing(tmp_path):
    log = tmp_path / "fine.log"
    log.write_text((LOGS / "read-timeout-store-host-in-time.agent1.stderr").read_text() + "Epoch 3: loss 0.12\n")
    done = why(log)
    assert done.returncode == 1 and done.stderr == b""
    assert done.stdout.decode().startswith(f"kfdefaults why: {log}: no known failure of distributed training in this log")


@pytest.mark.slow
def test_a_binary_file_is_refused_at_its_first_line(tmp_path):
    archive = tmp_path / "task.log.gz"
    archive.write_bytes(gzip.compress((LOGS / "dataloader-shm-enospc.agent0.stderr").read_bytes()))
    done = why(archive)
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.decode().startswith(f"{archive}:1:1: not a text log: ")
    assert "Traceback" not in done.stderr.decode()


@pytest.mark.slow
def test_control_characters_in_a_log_reach_no_terminal(tmp_path):
    log = tmp_path / "hostile.log"
    log.write_bytes(b"\x1b[2J\x1b]52;c;ZWNobw==\x07 torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"
                    b" \xe2\x80\xae evil\r\n")
    done = why(log)
    assert done.returncode == 0
    out = done.stdout.decode()
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out and "\r" not in out
    assert "\\x1b[2J\\x1b]52;c;ZWNobw==\\x07 torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError \\u202e evil" in out


@pytest.mark.slow
def test_a_huge_log_is_read_at_both_ends_with_its_line_numbers(tmp_path):
    """A 40 MB log: the start and the end are read, the middle only counted, and each line keeps its number."""
    log = tmp_path / "huge.log"
    noise = b"".join(b"step %07d loss 0.%06d\n" % (i, i) for i in range(1_800_000))
    failure = (LOGS / "dataloader-shm-enospc.agent0.stderr").read_bytes()
    log.write_bytes(noise + failure)
    assert log.stat().st_size > 40 << 20
    began = time.monotonic()
    done = why(log, "-o", "json")
    assert time.monotonic() - began < 60
    result = json.loads(done.stdout)
    [found] = result["failures"]
    assert found["name"] == "shm-no-space" and found["evidence"][0]["line"] == 1_800_000 + 64
    assert result["notes"] == [f"read the first {2 << 20} and the last {16 << 20} of {log.stat().st_size} bytes"]


@pytest.mark.slow
def test_standard_input_is_read_as_a_file():
    done = why("-", stdin=(LOGS / "dataloader-shm-sigbus.agent0.stderr").read_bytes())
    assert done.returncode == 0 and "a DataLoader worker died of a bus error: /dev/shm is full" in done.stdout.decode()


@pytest.mark.slow
def test_a_broken_receipt_line_is_noted_at_its_line_and_the_log_still_answered(tmp_path):
    log = tmp_path / "task.log"
    log.write_text("starting\nKFDEFAULTS_RECEIPT {\"kind\": \"Receipt\", \"registered\": 3}\nRendezvousTimeoutError\n")
    done = why(log)
    assert done.returncode == 0 and done.stderr == b""
    lines = done.stdout.decode().splitlines()
    assert lines[0].endswith(": 1 known failure; no values: give --profile NAME")
    assert f"note: {log}:2:20: a receipt without the registered elastic settings (registered.elastic); not read" in lines


# --- hand-written lines: what this machine cannot run, in the words of the program that writes it -----------


def registered_cpu_small() -> str:
    """The KFDEFAULTS_ELASTIC that flytekit registers for a task on cpu-small (``render --as flyte``)."""
    done = subprocess.run([KFDEFAULTS, "render", "cpu-small", "--as", "flyte", "-o", "json"], env=env(),
                          capture_output=True, text=True, timeout=300, cwd=HERE)
    [primary] = json.loads(done.stdout)["k8sPod"]["podSpec"]["containers"]
    return next(e["value"] for e in primary["env"] if e["name"] == "KFDEFAULTS_ELASTIC")


@pytest.mark.slow
def test_kubectl_describe_of_an_oom_killed_pod_is_answered_from_its_registered_settings(tmp_path):
    log = tmp_path / "describe.txt"
    log.write_text(f"""\
Name:             f3a9c1e0b2d4-n0-0
Namespace:        flytesnacks-development
Annotations:      kfdefaults.io/digest: sha256:c95a6bf93891b6447bff839f3245cb90c473524c28ef152c2af0bc63889a18a7
                  kfdefaults.io/profile: cpu-small
Containers:
  primary:
    State:          Terminated
      Reason:       Error
      Exit Code:    1
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
    Limits:
      memory:  2Gi
    Environment:
      OMP_NUM_THREADS:     1
      KFDEFAULTS_ELASTIC:  {registered_cpu_small()}
""")
    result = answer(log, cwd=tmp_path)
    assert result["values"]["source"] == "the settings registered with the pod (KFDEFAULTS_ELASTIC, line 17)"
    [failure] = result["failures"]
    assert failure["name"] == "oom-killed" and failure["evidence"] == [{"line": 11, "text": "      Reason:       OOMKilled"}]
    settings = {s["key"]: (s["value"], s["set_by"]) for s in failure["settings"]}
    assert settings["pod_template.spec.containers[name=primary].resources.limits.memory"][0] == "2Gi"
    assert settings["pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit"][0] == "1Gi"
    assert settings["pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit"][1].endswith(" cpu-small.yaml:30")


@pytest.mark.slow
def test_nccl_s_watchdog_and_heartbeat_monitor(tmp_path):
    log = tmp_path / "nccl.log"
    log.write_text(  # ProcessGroupNCCL.cpp's messages, as torch 2.x writes them
        "[rank1]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=131072000, NumelOut=131072000, Timeout(ms)=600000) ran "
        "for 600081 milliseconds before timing out.\n"
        "[rank1]:[E1218 20:35:21.433063423 ProcessGroupNCCL.cpp:1423] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
        "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
        "collectives.\n")
    result = answer(log, "--profile", "gpu-large", cwd=tmp_path)
    assert [f["name"] for f in result["failures"]] == ["nccl-watchdog", "nccl-heartbeat"]
    watchdog, heartbeat = result["failures"]
    assert "(600000 ms)" in watchdog["change"][0]
    assert heartbeat["settings"][0]["key"] == "pod_template.spec.containers[name=primary].env[name=TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC].value"
    assert "was stuck 480 s" in heartbeat["change"][0]


@pytest.mark.slow
def test_kueue_s_eviction_is_answered_with_the_cluster_s_facts(tmp_path):
    facts = tmp_path / "facts.yaml"
    facts.write_text("node_start: {typical: 90, worst: 600}\nimage_pull: {typical: 40, worst: 420}\n"
                     "kueue:\n  wait_for_pods_ready: {enable: true, timeout: 300}\n")
    log = tmp_path / "events.txt"
    log.write_text(  # kubectl describe workload; Kueue's WorkloadReconciler writes the message
        "  Warning  EvictedDueToPodsReadyTimeout  2m  kueue-admission  Exceeded the PodsReady timeout "
        "flytesnacks-development/pytorchjob-f3a9c1e0b2d4-7c1e2\n")
    [failure] = answer(log, "--profile", "gpu-large", "--facts", facts, cwd=tmp_path)["failures"]
    assert failure["name"] == "kueue-pods-ready"
    assert failure["settings"] == [{"key": "kueue.wait_for_pods_ready.timeout (cluster facts)", "value": 300,
                                    "set_by": f"facts {facts}:4"}]
    assert failure["change"] == ["the pods must be ready within 300 s, and a node may take 1020 s to start and pull "
                                 f"the image, the cluster's worst cold start (node_start worst 600 s at {facts}:1:13; "
                                 f"image_pull worst 420 s at {facts}:2:13): ask the platform to raise Kueue's "
                                 "waitForPodsReady.timeout above that, or run on a pool with warm nodes"]


def test_the_help_names_the_receipt_by_the_line_it_reads():
    """The receipt is read from the log's ``KFDEFAULTS_RECEIPT`` line; ``kfdefaults.io/receipt`` is the pod
    annotation that sets the receipt's policy (report, strict, off), which no log line carries."""
    from kfdefaults.cli.why import _DESCRIPTION
    from kfdefaults.receipt.document import MARKER

    assert f"the receipt the task printed in the log (its {MARKER} line)" in " ".join(_DESCRIPTION.split())
    assert "(kfdefaults.io/receipt)" not in _DESCRIPTION


# --- hostile input: what a pod's log may hold that no task wrote ----------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("inside", "message"), [
    ('"registered": {"elastic": {}, "pod": {"shm": "x"}}', "registered.pod.shm must be an object"),
    ('"registered": {"elastic": {}, "pod": {"shm": {"size_limit": "1Gi"}}}',
     "registered.pod.shm.volume must be a string"),
    ('"registered": {"elastic": {}, "pod": {"limits": {"memory": {"set_by": "x"}}}}',
     "registered.pod.limits.memory.value must be a string"),
    ('"registered": {"elastic": {}}, "observed": {"shm": {"size": "64Mi"}}',
     "observed.shm.size must be an integer from 0 to 2^64 - 1 or null"),
    ('"registered": {"elastic": {}}, "observed": {"memory": {"limit": true}}',
     "observed.memory.limit must be an integer from 0 to 2^64 - 1 or null"),
    ('"registered": {"elastic": {}}, "observed": {"env": {"\\u001b[2J": 3}}', "observed.env.\\x1b[2J must be a string"),
    ('"registered": {"elastic": {}}, "differences": [{"path": ["a"]}]', "differences[0].path must be a string or null"),
    # a count or a size the pod cannot have: before, `why` said "the pod had -5 device files under /dev/infiniband"
    # and printed a number of 400 digits
    ('"registered": {"elastic": {}}, "observed": {"fabric": {"dev_infiniband_count": -5}}',
     "observed.fabric.dev_infiniband_count must be an integer from 0 to 2^64 - 1 or null"),
    ('"registered": {"elastic": {}}, "observed": {"fabric": {"dev_infiniband_count": 1' + "0" * 400 + '}}',
     "observed.fabric.dev_infiniband_count must be an integer from 0 to 2^64 - 1 or null"),
    ('"registered": {"elastic": {}}, "observed": {"fabric": {"memlock": {"soft": -1}}}',
     "observed.fabric.memlock.soft must be an integer from 0 to 2^64 - 1 or null"),
    ('"registered": {"elastic": {}}, "observed": {"shm": {"size": 18446744073709551616}}',
     "observed.shm.size must be an integer from 0 to 2^64 - 1 or null"),
])
def test_a_forged_receipt_of_the_wrong_shape_is_noted_at_its_line_and_not_read(tmp_path, inside, message):
    log = tmp_path / "task.log"
    log.write_text("starting\nKFDEFAULTS_RECEIPT {\"kind\": \"Receipt\", " + inside + "}\nRendezvousTimeoutError\n"
                   "DataLoader worker (pid 7) is killed by signal: Bus error\nOOMKilled\n")
    result = answer(log)
    assert result["values"] is None
    assert [f["name"] for f in result["failures"]] == ["shm-bus-error", "oom-killed", "rendezvous-timeout"]
    assert result["notes"] == [f"{log}:2:20: {message}; not read"]


def test_a_number_longer_than_python_reads_is_no_value(tmp_path):
    log = tmp_path / "task.log"
    log.write_text(f"The client socket has timed out after {'9' * 5000}ms while trying to connect to (h, 1)\n"
                   f"torch.distributed.elastic.multiprocessing.errors.ChildFailedError\n  exitcode  : {'9' * 5000}\n")
    result = answer(log)
    assert [f["name"] for f in result["failures"]] == ["store-unreachable", "worker-failed"]
    assert not any("internal error" in c for f in result["failures"] for c in f["change"])


@pytest.mark.slow
def test_an_infinite_timeout_in_a_receipt_is_shown_not_computed(tmp_path):
    log = tmp_path / "task.log"
    log.write_text('KFDEFAULTS_RECEIPT {"kind": "Receipt", "registered": {"elastic": {"rdzv_configs": '
                   '{"join_timeout": Infinity, "read_timeout": NaN}}}}\nRendezvousTimeoutError\n'
                   "The client socket has timed out after 5ms while trying to connect to (h, 1)\n")
    result = answer(log)
    assert [f["name"] for f in result["failures"]] == ["rendezvous-timeout", "store-unreachable"]


def test_an_endless_binary_stream_is_refused_once_its_start_is_read():
    began = time.monotonic()
    done = subprocess.run([KFDEFAULTS, "why", "/dev/zero"], env=env(), capture_output=True, timeout=60)
    assert time.monotonic() - began < 30
    assert done.returncode == 1 and done.stderr.decode().startswith("/dev/zero:1:1: not a text log: ")


@pytest.mark.slow
def test_a_log_of_empty_lines_keeps_a_bounded_number_of_them_and_their_numbers():
    import io

    from kfdefaults.why.logtext import HEAD_LINES, TAIL_LINES, read_log

    count = HEAD_LINES + TAIL_LINES + 500_000
    log = read_log("task.log", io.BytesIO(b"\n" * count + b"RendezvousTimeoutError\n"))
    assert len(log.lines) <= HEAD_LINES + TAIL_LINES + 1
    assert log.lines[-2] == (count + 1, "RendezvousTimeoutError")
    assert log.lines[HEAD_LINES - 1] == (HEAD_LINES, "") and log.lines[HEAD_LINES][0] == count + 2 - TAIL_LINES
    assert log.notes == [f"read the first {HEAD_LINES} and the last {TAIL_LINES} of its {count + 1} lines"]


@pytest.mark.slow
def test_the_lines_a_log_s_json_lines_unfold_into_are_bounded_too():
    import io

    from kfdefaults.why.logtext import HEAD_LINES, TAIL_LINES, read_log

    message = json.dumps({"message": "a\n" * 600_000 + "b"})  # 1.8 MB: 600,001 lines of a message each
    log = read_log("task.log", io.BytesIO(f"{message}\n{message}\nRendezvousTimeoutError\n".encode()))
    assert len(log.lines) <= HEAD_LINES + TAIL_LINES + 1
    assert log.lines[0] == (1, "a") and log.lines[-2:] == [(3, "RendezvousTimeoutError"), (4, "")]
    assert log.notes == [f"kept the first {HEAD_LINES} and the last {TAIL_LINES} of the 1200004 lines of its JSON "
                         "lines' messages"]


@pytest.mark.slow
@pytest.mark.parametrize("pod", ['"x"', '{"shm": "x"}', '{"limits": {"memory": 3}}', '{"env": {"A": {"value": 1}}}'])
def test_a_kfdefaults_elastic_of_the_wrong_shape_in_a_log_gives_no_values(tmp_path, pod):
    log = tmp_path / "describe.txt"
    log.write_text(f'      KFDEFAULTS_ELASTIC:  {{"elastic": {{}}, "pod": {pod}}}\n      Reason:       OOMKilled\n'
                   "DataLoader worker (pid 3) is killed by signal: Bus error\nexitcode  : -9\n")
    result = answer(log)
    assert result["values"] is None
    assert [f["name"] for f in result["failures"]] == ["shm-bus-error", "oom-killed"]
