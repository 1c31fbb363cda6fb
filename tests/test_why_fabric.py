"""``kfdefaults why`` on the fabric lines NCCL and aws-ofi-nccl print, read from public logs (``tests/fabric_logs``:
each file's first line names the issue it was taken from): each mapped to the fabric fragment's keys, the socket
fallback claimed only where the profile asks for a fabric or a pool of the cluster offers one, nothing claimed on a
healthy log nor on the captured torch logs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_runner import invoke

HERE = Path(__file__).resolve().parent
FABRIC_LOGS = HERE / "fabric_logs"
TORCH_LOGS = HERE / "torch_logs"

FACTS = """\
node_pools:
  p4d:
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
    allocatable: {cpu: "96", memory: 1100Gi, nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 4}
    nodes: 4
  p5:
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
    allocatable: {cpu: "192", memory: 2000Gi, nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 32}
    nodes: 4
"""

CONTAINER = "pod_template.spec.containers[name=primary]"
EFA = f'{CONTAINER}.resources.limits."vpc.amazonaws.com/efa"'
RDMA_IB = f"{CONTAINER}.resources.limits.rdma/ib"
CAPABILITIES = f"{CONTAINER}.securityContext.capabilities.add"
IB_DISABLE = f"{CONTAINER}.env[name=NCCL_IB_DISABLE].value"
FI_PROVIDER = f"{CONTAINER}.env[name=FI_PROVIDER].value"

CASES = {  # log -> (the profile it is judged with, failures, keys each failure names, what its change says)
    "nccl-226-no-ib-device-socket.log": ("efa", ["fabric-sockets", "fabric-no-ib-device"],
                                         [{EFA, IB_DISABLE}, {EFA, CAPABILITIES}], ["fabric-efa", "fabric-efa"]),
    "nccl-tests-188-ib-disabled-socket.log": ("ib", ["fabric-sockets"], [{RDMA_IB, IB_DISABLE}],
                                              ["NCCL_IB_DISABLE=1 turned NCCL's InfiniBand transport off"]),
    "lmdeploy-3286-no-verbs-socket.log": ("plain", ["fabric-sockets"], [{EFA, IB_DISABLE}],
                                          ["pool p5 offers 32 vpc.amazonaws.com/efa per node"]),
    "pytorch-111424-no-ib-device.log": ("ib", ["fabric-no-ib-device"], [{RDMA_IB, CAPABILITIES, IB_DISABLE}],
                                        ["fabric-ib sets rdma/ib: auto"]),
    "dlc-2675-ofi-only-efa.log": ("efa", ["fabric-ofi-init"], [{EFA, FI_PROVIDER, CAPABILITIES}],
                                  ["run on a pool whose nodes offer vpc.amazonaws.com/efa"]),
    "aws-ofi-nccl-889-efa-empty-list.log": ("plain", ["fabric-ofi-init"], [{EFA, FI_PROVIDER, CAPABILITIES}],
                                            ["fabric-efa: auto, the pool's count"]),
    "nccl-563-ofi-register-memory.log": ("plain", ["fabric-memory-registration"], [{CAPABILITIES}],
                                         ["add IPC_LOCK"]),
    "nccl-tests-206-ibv-reg-mr.log": ("efa", ["fabric-memory-registration"], [{CAPABILITIES}],
                                      ["IPC_LOCK is added"]),
}

PROFILES = {
    "efa": "extends: [gpu-large, fabric-efa]\nelastic: {nnodes: 2}\n",
    "ib": "extends: [gpu-large, fabric-ib]\nelastic: {nnodes: 2}\n",
    "plain": "extends: gpu-large\nelastic: {nnodes: 2}\n",
}


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    team = tmp_path / "team"
    team.mkdir()
    for name, text in PROFILES.items():
        (team / f"{name}.yaml").write_text(text)
    (tmp_path / "facts.yaml").write_text(FACTS)
    return tmp_path


def why(log: Path, *args: str) -> tuple[dict, int]:
    result = invoke(["why", str(log), *args, "-o", "json"])
    assert result.exit_code in (0, 1) and result.stderr == "", result.stderr
    return json.loads(result.stdout), result.exit_code


def judged(project: Path, log: Path, profile: str | None = "plain", facts: bool = True) -> tuple[dict, int]:
    args = ["--team", str(project / "team"), "--facts", str(project / "facts.yaml") if facts else "none"]
    return why(log, *(["--profile", profile] if profile else []), *args)


def test_every_fabric_log_is_a_public_excerpt_with_its_source():
    logs = sorted(FABRIC_LOGS.glob("*.log"))
    assert len(logs) >= 8
    for log in logs:
        first = log.read_text(encoding="utf-8").splitlines()[0]
        assert re.match(r"# source: https://github\.com/[\w.-]+/[\w.-]+/issues/\d+ ", first), log.name
    assert set(CASES) | {p.name for p in logs if p.name.startswith("healthy-")} == {p.name for p in logs}


@pytest.mark.parametrize("name", list(CASES))
def test_each_fabric_log_is_mapped_to_the_fragment_s_keys(project: Path, name: str):
    profile, names, keys, change = CASES[name]
    document, code = judged(project, FABRIC_LOGS / name, profile)
    assert code == 0 and [f["name"] for f in document["failures"]] == names
    for failure, wanted, said in zip(document["failures"], keys, change):
        assert wanted <= {s["key"] for s in failure["settings"]}, failure["settings"]
        assert any(said in c for c in failure["change"]), failure["change"]
    if profile == "efa":  # the value and the fragment's line that sets it
        settings = {s["key"]: s for f in document["failures"] for s in f["settings"]}
        fragment = Path(HERE.parent, "profiles", "fabric-efa.yaml")
        if EFA in settings:
            assert settings[EFA]["value"] == "auto" and str(fragment) in settings[EFA]["set_by"]
        assert settings[CAPABILITIES]["value"] == "IPC_LOCK"


def test_without_a_fabric_asked_or_offered_the_socket_lines_are_noted_not_claimed(project: Path):
    log = FABRIC_LOGS / "nccl-226-no-ib-device-socket.log"
    document, code = judged(project, log, "plain", facts=False)
    assert code == 1 and document["failures"] == []
    assert any(n.startswith("line 3: NCCL uses TCP sockets between the nodes") and "not claimed" in n
               for n in document["notes"])
    # the same log with the cluster's pools, which offer EFA: claimed, naming the pools' lines
    document, code = judged(project, log, "plain")
    sockets = document["failures"][0]
    facts = project / "facts.yaml"
    assert code == 0 and sockets["name"] == "fabric-sockets"
    assert f"pool p5 offers 32 vpc.amazonaws.com/efa per node ({facts}:8:" in " ".join(sockets["change"])
    # a fabric failure that is one whatever the cluster (an OFI WARN) is claimed without a profile or facts
    document, code = why(FABRIC_LOGS / "dlc-2675-ofi-only-efa.log", "--facts", "none")
    assert code == 0 and [f["name"] for f in document["failures"]] == ["fabric-ofi-init"]


@pytest.mark.parametrize("name, used", [
    ("healthy-nccl-997-using-network-ib.log", "Using network IB"),
    ("healthy-aws-ofi-nccl-161-libfabric.log", "Using network AWS Libfabric"),
    ("healthy-nv-peer-memory-56-bootstrap-socket.log", "NET/IB : Using [0]mlx5_0:1/IB"),  # and a NET/Socket line
])
def test_a_healthy_log_claims_nothing_and_says_it_is_healthy(project: Path, name: str, used: str):
    for profile in ("efa", "ib", "plain"):  # a fabric asked for, and offered by the pools
        document, code = judged(project, FABRIC_LOGS / name, profile)
        assert code == 1 and document["failures"] == []
        assert [n for n in document["notes"] if "healthy" in n] == [
            next(f"line {i}: NCCL uses the fabric (`{used}`): healthy"
                 for i, t in enumerate((FABRIC_LOGS / name).read_text().splitlines(), 1) if used in t)]


def test_the_captured_torch_logs_show_no_fabric_failure(project: Path):
    logs = sorted(p for p in TORCH_LOGS.iterdir() if p.suffix in (".stderr", ".stdout"))
    assert len(logs) > 20
    for log in logs:
        document, _ = judged(project, log, "efa")  # a fabric asked for and offered: the strictest reading
        assert not [f["name"] for f in document["failures"] if f["name"].startswith("fabric-")], log.name
        # the one note of the profile, which render refuses on these pools (p4d 4, p5 32), is not a reading of the log
        assert not [n for n in document["notes"] if ("fabric" in n or "TCP sockets" in n)
                    and not n.startswith("profile efa does not render here: ")], log.name


def test_a_receipt_s_fabric_is_what_the_memory_registration_answer_reads(tmp_path: Path):
    """A real receipt of a task on fabric-ib whose process runs without CAP_IPC_LOCK and a 64 KiB RLIMIT_MEMLOCK
    (test_receipt_fabric's child process), then NCCL's line of a failed registration: the answer names the
    fragment's line, what the pod had, and the receipt's difference first."""
    import os

    from test_receipt_fabric import fabric_task, fragment_line, run_child

    if os.geteuid() != 0:
        pytest.skip("not root: dropping a capability one has needs it")
    registered, env = fabric_task(tmp_path, "fabric-ib")
    done = run_child(tmp_path, "receipt", str(tmp_path / "registered.json"), env=env, ipc_lock=False, memlock=65536)
    assert done.returncode == 0, done.stderr
    failed = (FABRIC_LOGS / "nccl-tests-206-ibv-reg-mr.log").read_text().splitlines()[1]
    (tmp_path / "task.log").write_text(done.stderr + failed + "\n", encoding="utf-8")
    document, code = why(tmp_path / "task.log", "--facts", "none")
    [failure] = document["failures"]
    assert code == 0 and failure["name"] == "fabric-memory-registration"
    assert document["values"]["source"].startswith("the receipt in the log")
    [setting] = failure["settings"]
    assert setting == {"key": CAPABILITIES, "value": "IPC_LOCK",
                       "set_by": f"builtin fabric-ib.yaml:{fragment_line('fabric-ib', 'add: [IPC_LOCK]')}",
                       "default": "the container runtime's default capabilities, without IPC_LOCK",
                       "observed": "IPC_LOCK not effective, RLIMIT_MEMLOCK 64Ki"}
    assert failure["change"][0].startswith(f"this pod had null, not the IPC_LOCK registered at {CAPABILITIES}")
    assert failure["change"][1].startswith("IPC_LOCK is added, yet the receipt found it not effective in the pod")


def test_a_forged_receipt_s_fabric_names_are_read_only_as_resource_names(tmp_path: Path):
    from kfdefaults.why.values import Values

    huge = "rdma/" + "x" * 100_000
    values = Values({"pod": {"fabric": {"devices": {huge: {"value": "1", "set_by": None}, "rdma/ib": {
        "value": "8", "set_by": "builtin fabric-ib.yaml:17"}, "nvidia.com/gpu": {"value": "8", "set_by": None}}}}},
        {}, "the receipt in the log (line 1)", "train")
    assert values.fabric_devices() == ["rdma/ib"]


def test_a_profile_render_refuses_is_said_so_in_one_note_with_render_s_message(project: Path):
    """`auto` on pools that differ: render stops at the fragment's line; why says so, once, and answers as written."""
    log = FABRIC_LOGS / "nccl-226-no-ib-device-socket.log"
    rendered = invoke(["render", "efa", "--team", str(project / "team"), "--facts", str(project / "facts.yaml")])
    assert rendered.exit_code == 1
    message = rendered.stderr.strip().splitlines()[0]
    assert message.startswith(str(Path(HERE.parent, "profiles", "fabric-efa.yaml")) + ":")
    document, code = judged(project, log, "efa")
    assert code == 0 and [f["name"] for f in document["failures"]] == ["fabric-sockets", "fabric-no-ib-device"]
    [note] = [n for n in document["notes"] if "does not render here" in n]
    assert note == f"profile efa does not render here: {message}; the answer shows its values as written"
    # a profile that renders gets no such note
    document, _ = judged(project, log, "plain")
    assert not any("does not render here" in n for n in document["notes"])
