"""The builtin fabric fragments (fabric-efa, fabric-ib, fabric-roce) beside gpu-large: what each puts in the pod,
the device count `auto` worked out from the cluster's pools, and the error naming the fact when no pool gives it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from cli_runner import invoke

from kfdefaults.layers.builtin import builtin_folder

POOLS = """\
node_pools:
  p4d:
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
    allocatable: {cpu: "96", memory: 1100Gi, nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 4, rdma/ib: 8}
    nodes: 4
  p5:
    taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
    allocatable: {cpu: "192", memory: 2000Gi, nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 32, rdma/ib: 8}
    nodes: 4
"""


def _setup(tmp_path: Path, fragment: str, pools: str = POOLS) -> tuple[Path, Path]:
    team = tmp_path / "team"
    team.mkdir()
    (team / "train.yaml").write_text(f"extends: [gpu-large, {fragment}]\nelastic: {{nnodes: 2}}\n")
    facts = tmp_path / "facts.yaml"
    facts.write_text(pools)
    return team, facts


def _primary(rendered: str) -> tuple[dict, dict]:
    spec = yaml.safe_load(rendered)["pod_template"]["spec"]
    return spec, next(c for c in spec["containers"] if c["name"] == "primary")


def _env(container: dict) -> dict:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def _checklist(fragment: str, spec: dict, primary: dict) -> dict[str, bool]:
    env, resources = _env(primary), primary.get("resources") or {}
    shm = any(m["mountPath"] == "/dev/shm" for m in primary.get("volumeMounts") or []) and any(
        (v.get("emptyDir") or {}).get("medium") == "Memory" for v in spec.get("volumes") or [])
    ipc_lock = "IPC_LOCK" in (((primary.get("securityContext") or {}).get("capabilities") or {}).get("add") or [])
    if fragment == "fabric-efa":
        return {"device count": resources["requests"].get("vpc.amazonaws.com/efa") == 32
                == resources["limits"].get("vpc.amazonaws.com/efa"),
                "IPC_LOCK": ipc_lock, "FI_EFA_FORK_SAFE": env.get("FI_EFA_FORK_SAFE") == "1",
                "socket interface": bool(env.get("NCCL_SOCKET_IFNAME")), "/dev/shm": shm}
    if fragment == "fabric-ib":
        return {"device": resources["requests"].get("rdma/ib") == 8 == resources["limits"].get("rdma/ib"),
                "NCCL_IB_DISABLE=0": env.get("NCCL_IB_DISABLE") == "0",
                "NCCL_NET_PLUGIN": env.get("NCCL_NET_PLUGIN") == "none", "IPC_LOCK": ipc_lock, "/dev/shm": shm}
    return {"hostNetwork": spec.get("hostNetwork") is True,
            "dnsPolicy": spec.get("dnsPolicy") == "ClusterFirstWithHostNet",
            "NCCL_IB_GID_INDEX": env.get("NCCL_IB_GID_INDEX") == "3", "IPC_LOCK": ipc_lock, "/dev/shm": shm}


@pytest.mark.parametrize("fragment", ["fabric-efa", "fabric-ib", "fabric-roce"])
def test_each_fragment_beside_gpu_large_sets_its_vendor_checklist(tmp_path: Path, fragment: str) -> None:
    one_pool = POOLS.split("  p5:")[0]  # one pool: `auto` is its count
    team, facts = _setup(tmp_path, fragment, one_pool.replace("efa: 4", "efa: 32"))
    result = invoke(["render", "train", "--team", str(team), "--facts", str(facts)])
    assert result.exit_code == 0, result.stderr
    spec, primary = _primary(result.stdout)
    checklist = _checklist(fragment, spec, primary)
    assert all(checklist.values()), checklist
    assert primary["resources"]["limits"]["nvidia.com/gpu"] == 8  # gpu-large's, kept beside the fragment's


@pytest.mark.parametrize("fragment", ["fabric-efa", "fabric-ib", "fabric-roce"])
def test_the_rendered_pytorchjob_pod_is_a_valid_podspec(tmp_path: Path, fragment: str) -> None:
    team, _ = _setup(tmp_path, fragment)
    platform = tmp_path / "platform"  # the task finds the facts as a registered one does: in the platform folder
    platform.mkdir()
    (platform / "_cluster-facts.yaml").write_text(POOLS.split("  p5:")[0])
    result = invoke(["render", "train", "--platform", str(platform), "--team", str(team), "--as", "pytorchjob"])
    assert result.exit_code == 0, result.stderr
    job = yaml.safe_load(result.stdout)
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert ": auto" not in yaml.safe_dump([c.get("resources") for c in worker["containers"]])
    # the worker's PodSpec against the strict Kubernetes schema the project validates profiles with
    for container in worker["containers"]:  # the backend's and kfdefaults' own variables, which a profile may not write
        container["env"] = [e for e in container.get("env") or [] if not e["name"].startswith(("FLYTE_INTERNAL_", "KFDEFAULTS_"))]
    checked = tmp_path / "checked"
    checked.mkdir()
    (checked / "worker.yaml").write_text(yaml.safe_dump({"pod_template": {"primary_container_name": "pytorch",
                                                                          "spec": worker}}))
    validated = invoke(["validate", str(checked), "--facts", "none"])
    assert validated.exit_code == 0, validated.stderr
    efa = worker["containers"][0]["resources"]["limits"].get("vpc.amazonaws.com/efa")
    assert efa == ("4" if fragment == "fabric-efa" else None)  # the pool's count, as flytekit writes quantities


def test_auto_with_no_pool_known_is_an_error_at_the_fragment_line_naming_the_fact(tmp_path: Path) -> None:
    team, _ = _setup(tmp_path, "fabric-efa")
    result = invoke(["render", "train", "--team", str(team), "--facts", "none"])
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    efa = Path(builtin_folder(), "fabric-efa.yaml")
    line = next(i for i, text in enumerate(efa.read_text().splitlines(), 1) if "vpc.amazonaws.com/efa: auto" in text)
    assert f"{efa}:{line}:" in result.stderr
    assert 'node_pools.NAME.allocatable."vpc.amazonaws.com/efa"' in result.stderr


def test_auto_on_pools_that_differ_names_them_and_render_writes_nothing(tmp_path: Path) -> None:
    team, facts = _setup(tmp_path, "fabric-efa")
    result = invoke(["render", "train", "--team", str(team), "--facts", str(facts)])
    assert result.exit_code == 1 and result.stdout == ""
    assert "the pools offer different counts (p4d 4, p5 32)" in result.stderr


def test_fit_judges_each_pool_with_its_own_device_count(tmp_path: Path) -> None:
    # two pods of 8 GPUs fit a 16-GPU node unless each takes all of its 4 EFA devices: `auto` is the pool's 4
    wide = POOLS.replace("nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 4", "nvidia.com/gpu: 16, vpc.amazonaws.com/efa: 4")
    team, facts = _setup(tmp_path, "fabric-efa", wide)
    result = invoke(["fit", "train", "--team", str(team), "--facts", str(facts), "-o", "json"])
    assert result.exit_code == 0, result.stderr
    import json
    pools = {p["name"]: p for p in json.loads(result.stdout)["pools"]}
    assert pools["p4d"]["pods_per_node"] == 1 and pools["p5"]["pods_per_node"] == 1
    assert pools["p4d"]["fits"] and pools["p5"]["fits"]


def test_a_count_written_above_what_the_pool_offers_stays_an_error(tmp_path: Path) -> None:
    team, facts = _setup(tmp_path, "fabric-efa")
    (team / "train.yaml").write_text(textwrap.dedent("""\
        extends: [gpu-large, fabric-efa]
        elastic: {nnodes: 2}
        pod_template:
          spec:
            containers:
              - name: primary
                resources: {requests: {vpc.amazonaws.com/efa: 8}, limits: {vpc.amazonaws.com/efa: 8}}
        """))
    result = invoke(["fit", "train", "--team", str(team), "--facts", str(facts)])
    assert "Insufficient vpc.amazonaws.com/efa" in result.stdout + result.stderr


def test_auto_is_a_quantity_only_for_a_fabric_device(tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "bad.yaml").write_text(textwrap.dedent("""\
        pod_template:
          spec:
            containers:
              - name: primary
                resources: {limits: {nvidia.com/gpu: auto}}
        """))
    result = invoke(["validate", str(team)])
    assert result.exit_code == 1 and "`auto` is not a Kubernetes quantity" in result.stderr


def test_broken_facts_are_reported_at_their_line_not_as_missing(tmp_path: Path) -> None:
    team, facts = _setup(tmp_path, "fabric-efa", POOLS.split("  p5:")[0].replace("efa: 4", "efa: 9Ei"))
    result = invoke(["render", "train", "--team", str(team), "--facts", str(facts)])
    assert result.exit_code == 1 and f"{facts}:4:" in result.stderr and "largest quantity" in result.stderr
    assert "no cluster facts" not in result.stderr
