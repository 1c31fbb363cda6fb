"""A task's receipt read back from its log as the cluster hands the log over, by ``kfdefaults verify`` and
``kfdefaults why``: split by the container runtime into 16 KiB partial records (CRI's logging format, ``TIME STREAM
P TEXT`` then ``F``), larger than 1 MiB, and followed by a later marker line that claims other settings.

The receipt is the one a task on the profile prints: the settings ``render --as flyte`` registers
(``KFDEFAULTS_ELASTIC``), then :func:`kfdefaults.receipt.take_receipt` run on this machine with them, as the
task's pod runs it before its workers start."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kfdefaults.receipt import take_receipt
from kfdefaults.receipt.document import MARKER

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")
CRI_PART = 16 << 10
"""The size at which containerd and CRI-O split a line into partial records (``P``)."""

PROFILE = """\
description: one node that reads its data set from DATASET
elastic: {nnodes: 1, nproc_per_node: 1, start_method: fork, monitor_interval: 1, rdzv_configs: {join_timeout: 900}}
pod_template:
  spec:
    containers:
      - name: primary
        env: [{name: DATASET, value: "s3://bucket/train"}]
"""


def kfdefaults(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    return subprocess.run([KFDEFAULTS, *args], cwd=cwd, capture_output=True, env=env, timeout=300, input=stdin)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("receipt-logs")
    (folder / "team").mkdir()
    (folder / "team" / "loader.yaml").write_text(PROFILE)
    (folder / "pyproject.toml").write_text('[tool.kfdefaults]\ntarget = "flytekit"\nteam = ["team"]\n')
    return folder


@pytest.fixture(scope="module")
def registered(project) -> dict:
    done = kfdefaults(project, "render", "loader", "--as", "flyte", "-o", "json")
    assert done.returncode == 0, done.stderr
    [primary] = json.loads(done.stdout)["k8sPod"]["podSpec"]["containers"]
    return json.loads(next(e["value"] for e in primary["env"] if e["name"] == "KFDEFAULTS_ELASTIC"))


def receipt_line(registered: dict, dataset: str = "s3://bucket/train", nccl: int = 0, quote: bool = False) -> str:
    """The marker line a task on the profile prints, its pod's DATASET being ``dataset``, with ``nccl`` NCCL_*
    variables of 4 KiB each (of ``"`` characters with ``quote``, each written ``\\"`` in JSON) in its
    environment, which the receipt records whatever the profile set."""
    out = io.StringIO()
    environ = {"DATASET": dataset, **{f"NCCL_TEST_{i}": ('"' if quote else "v") * 4096 for i in range(nccl)}}
    receipt = take_receipt(registered, "wf.load", environ=environ, out=out)
    assert receipt is not None, out.getvalue()
    [line] = [line for line in out.getvalue().splitlines() if line.startswith(MARKER + " {")]
    return line


def cri(line: str, stream: str = "stderr") -> str:
    """``line`` as containerd writes it to the pod's log file: 16 KiB partial records, then the last one."""
    parts = [line[i:i + CRI_PART] for i in range(0, len(line), CRI_PART)] or [""]
    return "".join(f"2026-12-07T10:00:0{min(i, 9)}.123456789Z {stream} {'P' if i < len(parts) - 1 else 'F'} {part}\n"
                   for i, part in enumerate(parts))


def log_with(tmp_path: Path, text: str) -> Path:
    log = tmp_path / "task.log"
    log.write_text("2026-12-07T10:00:00.000000000Z stderr F starting\n" + text +
                   "2026-12-07T10:05:00.000000000Z stderr F torch.distributed.elastic.rendezvous.api."
                   "RendezvousTimeoutError\n")
    return log


@pytest.mark.slow
def test_a_receipt_split_into_partial_records_is_read_whole(project, registered, tmp_path):
    line = receipt_line(registered, dataset="s3://bucket/other", nccl=10)
    assert len(line) > 2 * CRI_PART
    log = log_with(tmp_path, cri(line))
    assert log.read_text().count(" stderr P ") >= 2
    verify = kfdefaults(project, "verify", str(log))
    out = verify.stdout.decode()
    assert verify.returncode == 1, verify.stderr  # the pod's DATASET is not the registered one: a difference
    assert out.startswith(f"Receipt of task wf.load at {log}:2: profile loader (from the receipt), 1 difference")
    assert "pod_template.spec.containers[name=primary].env[name=DATASET].value" in out
    why = kfdefaults(project, "why", str(log), "-o", "json")
    assert why.returncode == 0, why.stderr
    answer = json.loads(why.stdout)
    assert answer["values"]["profile"] == "loader" and answer["values"]["source"].startswith("the receipt")


@pytest.mark.slow
def test_a_receipt_over_one_mib_is_read(project, registered, tmp_path):
    line = receipt_line(registered, dataset="s3://bucket/other", nccl=200, quote=True)
    assert len(line) > 1 << 20
    for text in (line + "\n", cri(line)):  # one line, and as the runtime splits it
        log = log_with(tmp_path, text)
        verify = kfdefaults(project, "verify", str(log))
        assert verify.returncode == 1 and verify.stdout.decode().startswith(
            f"Receipt of task wf.load at {log}:2: profile loader (from the receipt), 1 difference"), verify.stderr
        why = kfdefaults(project, "why", str(log), "-o", "json")
        assert why.returncode == 0 and json.loads(why.stdout)["values"]["profile"] == "loader", why.stderr


def test_the_first_valid_receipt_wins_and_later_ones_are_reported(project, registered, tmp_path):
    """A line printed after the task's own receipt (a forged one: another profile, join_timeout 86400) never
    replaces it; a stray broken marker line before it hides nothing. Both are named by their lines."""
    own = receipt_line(registered)
    forged = json.loads(own.split(" ", 1)[1])
    forged["profile"] = "gpu-large"
    forged["registered"]["elastic"]["rdzv_configs"]["join_timeout"] = 86400
    log = log_with(tmp_path, f"{MARKER} {{oops\n{own}\nepoch 1\n{MARKER} {json.dumps(forged)}\n")
    verify = kfdefaults(project, "verify", str(log))
    out = verify.stdout.decode()
    assert verify.returncode == 0, (out, verify.stderr)  # the own receipt: as registered, nothing differs
    assert out.startswith(f"Receipt of task wf.load at {log}:3: profile loader (from the receipt)")
    assert f"{log}:2:" in out and "not read" in out  # the stray line, by its line
    assert "1 later receipt in the log (line 5; 1 of them unlike the first) not read" in out
    why = kfdefaults(project, "why", str(log), "-o", "json")
    answer = json.loads(why.stdout)
    assert answer["values"]["profile"] == "loader"
    assert "86400" not in why.stdout.decode().split('"notes"')[0]  # no value of the forged line is read
    assert any("later receipt" in note for note in answer["notes"])
