"""The builtin fabric fragments (fabric-efa, fabric-ib, fabric-roce) beside gpu-large: what each puts in the pod of every
target (flytekit's PyTorchJob, Flyte 2's PyTorch task, a clustered JobSet), valid against the PodSpec schema,
the device count `auto` worked out from the cluster's pools, and the error naming the fact when no pool gives it."""

from __future__ import annotations

import json
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


def _checklist(fragment: str, spec: dict, primary: dict, count: int) -> dict[str, bool]:
    """Each item of the fragment's vendor checklist in a pod spec, ``count`` the fabric device count expected (the
    pool's; written as flytekit and Flyte 2 write quantities, a number or its text)."""
    env, resources = _env(primary), primary.get("resources") or {}
    shm = any(m["mountPath"] == "/dev/shm" for m in primary.get("volumeMounts") or []) and any(
        (v.get("emptyDir") or {}).get("medium") == "Memory" for v in spec.get("volumes") or [])
    ipc_lock = "IPC_LOCK" in (((primary.get("securityContext") or {}).get("capabilities") or {}).get("add") or [])

    def devices(name: str) -> bool:
        return str(resources.get("requests", {}).get(name)) == str(count) == str(resources.get("limits", {}).get(name))

    if fragment == "fabric-efa":
        return {"device count": devices("vpc.amazonaws.com/efa"), "IPC_LOCK": ipc_lock,
                "FI_PROVIDER": env.get("FI_PROVIDER") == "efa", "FI_EFA_FORK_SAFE": env.get("FI_EFA_FORK_SAFE") == "1",
                "socket interface": bool(env.get("NCCL_SOCKET_IFNAME")), "/dev/shm": shm}
    if fragment == "fabric-ib":
        return {"device": devices("rdma/ib"), "NCCL_IB_DISABLE=0": env.get("NCCL_IB_DISABLE") == "0",
                "NCCL_NET_PLUGIN": env.get("NCCL_NET_PLUGIN") == "none", "IPC_LOCK": ipc_lock, "/dev/shm": shm}
    return {"hostNetwork": spec.get("hostNetwork") is True,
            "dnsPolicy": spec.get("dnsPolicy") == "ClusterFirstWithHostNet",
            "NCCL_IB_GID_INDEX": env.get("NCCL_IB_GID_INDEX") == "3", "IPC_LOCK": ipc_lock, "/dev/shm": shm}


FRAGMENTS = ["fabric-efa", "fabric-ib", "fabric-roce"]
COUNTS = {"fabric-efa": 4, "fabric-ib": 8, "fabric-roce": None}  # the one pool's (p4d's) offer


@pytest.mark.parametrize("fragment", FRAGMENTS)
def test_each_fragment_beside_gpu_large_sets_its_vendor_checklist(tmp_path: Path, fragment: str) -> None:
    one_pool = POOLS.split("  p5:")[0]  # one pool: `auto` is its count
    team, facts = _setup(tmp_path, fragment, one_pool.replace("efa: 4", "efa: 32"))
    result = invoke(["render", "train", "--team", str(team), "--facts", str(facts)])
    assert result.exit_code == 0, result.stderr
    spec, primary = _primary(result.stdout)
    checklist = _checklist(fragment, spec, primary, 32 if fragment == "fabric-efa" else 8)
    assert all(checklist.values()), checklist
    assert primary["resources"]["limits"]["nvidia.com/gpu"] == 8  # gpu-large's, kept beside the fragment's


def _platform(tmp_path: Path) -> Path:
    """A platform folder holding the one pool's facts, where a task finds them as a registered one does."""
    platform = tmp_path / "platform"
    platform.mkdir()
    (platform / "_cluster-facts.yaml").write_text(POOLS.split("  p5:")[0])
    return platform


def _assert_valid_podspec(tmp_path: Path, spec: dict, primary: str, written: frozenset = frozenset()) -> None:
    """A target's pod spec against the strict Kubernetes PodSpec schema the project validates profiles with (``kubectl
    apply --dry-run=client`` needs an API server's discovery even with --validate=false: none runs here). The
    variables the backend writes (``written``, Flyte's own) are left out: a profile may not write them."""
    spec = json.loads(json.dumps(spec))
    for container in spec["containers"]:  # the backend's and kfdefaults' own variables, which a profile may not write
        container["env"] = [e for e in container.get("env") or []
                            if not e["name"].startswith(("FLYTE_INTERNAL_", "KFDEFAULTS_", "_F_"))
                            and e["name"] not in written]
    checked = tmp_path / "checked"
    checked.mkdir()
    (checked / "pod.yaml").write_text(yaml.safe_dump({"pod_template": {"primary_container_name": primary, "spec": spec}}))
    validated = invoke(["validate", str(checked), "--facts", "none"])
    assert validated.exit_code == 0, validated.stderr


def _assert_reaches(tmp_path: Path, fragment: str, spec: dict, primary_name: str, written: frozenset = frozenset()) -> None:
    primary = next(c for c in spec["containers"] if c["name"] == primary_name)
    checklist = _checklist(fragment, spec, primary, COUNTS[fragment])
    assert all(checklist.values()), checklist
    _assert_valid_podspec(tmp_path, spec, primary_name, written)


@pytest.mark.parametrize("fragment", FRAGMENTS)
def test_each_fragment_reaches_the_pytorchjob_worker_pod(tmp_path: Path, fragment: str) -> None:
    """flytekit: the PyTorchJob Flyte's backend creates from the task flytekit serializes."""
    team, _ = _setup(tmp_path, fragment)
    result = invoke(["render", "train", "--platform", str(_platform(tmp_path)), "--team", str(team), "--as", "pytorchjob"])
    assert result.exit_code == 0, result.stderr
    job = yaml.safe_load(result.stdout)
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert ": auto" not in yaml.safe_dump([c.get("resources") for c in worker["containers"]])
    _assert_reaches(tmp_path, fragment, worker, "pytorch")  # the plugin's name for the primary container
    efa = worker["containers"][0]["resources"]["limits"].get("vpc.amazonaws.com/efa")
    assert efa == ("4" if fragment == "fabric-efa" else None)  # the pool's count, as flytekit writes quantities


@pytest.mark.parametrize("fragment", FRAGMENTS)
def test_each_fragment_reaches_the_flyte2_pytorch_task_pod(tmp_path: Path, fragment: str) -> None:
    """Flyte 2: the pod of the TaskTemplate its SDK serializes for a task on ``kfdefaults.flyte2.Elastic``."""
    pytest.importorskip("flyteplugins.pytorch")
    team, _ = _setup(tmp_path, fragment)
    result = invoke(["render", "train", "--platform", str(_platform(tmp_path)), "--team", str(team), "--as", "flyte",
                     "--target", "flyte2", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    template = json.loads(result.stdout)
    assert template["type"] == "pytorch"
    _assert_reaches(tmp_path, fragment, template["k8sPod"]["podSpec"], template["config"]["primary_container_name"])


@pytest.mark.parametrize("fragment", FRAGMENTS)
def test_each_fragment_reaches_the_clustered_jobset_pod(tmp_path: Path, fragment: str) -> None:
    """Flyte 2 clustered: the backend's ``interconnect`` only logs (interconnect.go), so the fabric is the pod's: the
    JobSet the backend builds for a ClusteredTaskEnvironment on the profile (``render --as jobset``)."""
    pytest.importorskip("flyte.clustered")
    from kfdefaults.backend.jobset import jobset_pod_template, torchrun_env

    team, _ = _setup(tmp_path, fragment)
    (team / "train.yaml").write_text(f"extends: [gpu-large, {fragment}]\nelastic:\n  nnodes: 2\n  max_restarts: null\n"
                                     "  rdzv_configs: null\n  run_policy: null\n")  # what a JobSet cannot run
    result = invoke(["render", "train", "--platform", str(_platform(tmp_path)), "--team", str(team), "--as", "jobset",
                     "--target", "clustered", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    jobset = json.loads(result.stdout)
    assert jobset["kind"] == "JobSet"
    plugin_env = frozenset(e["name"] for e in torchrun_env({}))  # the clustered plugin's, which no profile may write
    _assert_reaches(tmp_path, fragment, jobset_pod_template(jobset)["spec"], "primary", plugin_env)


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
    assert "the pools the pod can be scheduled on offer different counts (p4d 4, p5 32)" in result.stderr


def test_auto_is_the_count_of_the_pools_the_pod_can_be_scheduled_on(tmp_path: Path) -> None:
    """A profile that selects one pool (a nodeSelector, a required node affinity; tolerations for its taints)
    takes that pool's count: before, `nodeSelector` on the p5 label still stopped `render` with `the pools offer
    different counts (p4d 4, p5 32)`, which the profile had settled."""
    labelled = (POOLS.replace("  p4d:\n", "  p4d:\n    labels: {node.kubernetes.io/instance-type: p4d.24xlarge}\n")
                .replace("  p5:\n", "  p5:\n    labels: {node.kubernetes.io/instance-type: p5.48xlarge}\n"))
    team, facts = _setup(tmp_path, "fabric-efa", labelled)
    for selects, count in (("nodeSelector: {node.kubernetes.io/instance-type: p5.48xlarge}", 32),
                           ("affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                            "{nodeSelectorTerms: [{matchExpressions: [{key: node.kubernetes.io/instance-type, "
                            "operator: In, values: [p4d.24xlarge]}]}]}}}", 4)):
        (team / "train.yaml").write_text(f"extends: [gpu-large, fabric-efa]\nelastic: {{nnodes: 2}}\n"
                                         f"pod_template:\n  spec:\n    {selects}\n")
        result = invoke(["render", "train", "--team", str(team), "--facts", str(facts)])
        assert result.exit_code == 0, result.stderr
        _, primary = _primary(result.stdout)
        assert primary["resources"]["limits"]["vpc.amazonaws.com/efa"] == count
        assert primary["resources"]["requests"]["vpc.amazonaws.com/efa"] == count
    # a pod no pool takes keeps every pool's count, and the error names them; fit says why it fits none
    (team / "train.yaml").write_text("extends: [gpu-large, fabric-efa]\nelastic: {nnodes: 2}\n"
                                     "pod_template:\n  spec:\n    nodeSelector: {x: y}\n")
    result = invoke(["render", "train", "--team", str(team), "--facts", str(facts)])
    assert result.exit_code == 1
    assert "the pools the pod can be scheduled on offer different counts (p4d 4, p5 32)" in result.stderr


def test_fit_judges_each_pool_with_its_own_device_count(tmp_path: Path) -> None:
    # two pods of 8 GPUs fit a 16-GPU node unless each takes all of its 4 EFA devices: `auto` is the pool's 4
    wide = POOLS.replace("nvidia.com/gpu: 8, vpc.amazonaws.com/efa: 4", "nvidia.com/gpu: 16, vpc.amazonaws.com/efa: 4")
    team, facts = _setup(tmp_path, "fabric-efa", wide)
    result = invoke(["fit", "train", "--team", str(team), "--facts", str(facts), "-o", "json"])
    assert result.exit_code == 0, result.stderr
    pools = {p["name"]: p for p in json.loads(result.stdout)["pools"]}
    assert pools["p4d"]["pods_per_node"] == 1 and pools["p5"]["pods_per_node"] == 1
    assert pools["p4d"]["fits"] and pools["p5"]["fits"]


def test_fit_shows_the_device_count_it_judged_each_pool_with(tmp_path: Path) -> None:
    team, facts = _setup(tmp_path, "fabric-efa")
    efa = Path(builtin_folder(), "fabric-efa.yaml")
    line = next(i for i, text in enumerate(efa.read_text().splitlines(), 1) if "vpc.amazonaws.com/efa: auto" in text)
    result = invoke(["fit", "train", "--team", str(team), "--facts", str(facts), "-o", "json"])
    document = json.loads(result.stdout)
    assert document["pod"]["requests"]["vpc.amazonaws.com/efa"] == "auto"
    at = document["pod"]["requested_at"]["vpc.amazonaws.com/efa"]
    assert (at["file"], at["line"], at["layer"]) == (str(efa), line, "builtin")
    assert {p["name"]: p["requests"] for p in document["pools"]} == {
        "p4d": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4"},
        "p5": {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}}
    text = invoke(["fit", "train", "--team", str(team), "--facts", str(facts), "-o", "text"]).stdout
    [requests] = [t for t in text.splitlines() if t.startswith("  requests: ")]
    assert f"; vpc.amazonaws.com/efa auto: p4d 4, p5 32 (builtin {efa}:{line}:" in requests
    # without `auto`, each pool's requests are the pod's
    (team / "train.yaml").write_text("extends: gpu-large\nelastic: {nnodes: 2}\n")
    plain = json.loads(invoke(["fit", "train", "--team", str(team), "--facts", str(facts), "-o", "json"]).stdout)
    assert [p["requests"] for p in plain["pools"]] == [plain["pod"]["requests"]] * 2 == [{"nvidia.com/gpu": "8"}] * 2


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


# --- fit and validate: a multi-node GPU job that asks for none of its pool's fabric ---------------------------------

EFA_POOLS = POOLS.replace(", rdma/ib: 8", "")
"""p4d (4 EFA devices a node) and p5 (32), and nothing else of a fabric."""

GPU_LARGE = Path(builtin_folder(), "gpu-large.yaml")


def _line(path: Path, needle: str, after: str | None = None) -> int:
    lines = path.read_text().splitlines()
    start = next(i for i, text in enumerate(lines) if after in text) if after else 0
    return next(i for i, text in enumerate(lines[start:], start + 1) if needle in text)


def _fit(*args: str) -> dict:
    import json

    result = invoke(["fit", *args, "-o", "json"])
    assert result.exit_code == 0, result.stderr
    return {p["name"]: p for p in json.loads(result.stdout)["pools"]}


def test_fit_of_gpu_large_warns_once_a_pool_naming_its_devices_at_the_profile_and_pool_lines(tmp_path: Path) -> None:
    facts = tmp_path / "facts.yaml"
    facts.write_text(EFA_POOLS)
    pools = _fit("gpu-large", "--facts", str(facts))
    nnodes = _line(GPU_LARGE, "nnodes:")
    for name, count in (("p4d", 4), ("p5", 32)):
        [warning] = pools[name]["warnings"]
        assert warning["message"] == (f"pool {name} offers {count} vpc.amazonaws.com/efa per node; this job requests "
                                      "none: NCCL will use TCP sockets; extend fabric-efa")
        assert (warning["profile"]["file"], warning["profile"]["line"]) == (str(GPU_LARGE), nnodes)
        assert warning["profile"]["path"] == "elastic.nnodes" and warning["profile"]["layer"] == "builtin"
        assert (warning["pool"]["file"], warning["pool"]["line"]) == (str(facts), _line(facts, "efa", f"{name}:"))
    text = invoke(["fit", "gpu-large", "--facts", str(facts)]).stdout
    assert text.count("  warning: pool ") == 2 and "warning: pool p5 offers 32 vpc.amazonaws.com/efa per node" in text
    assert f"    profile: builtin {GPU_LARGE}:{nnodes}:" in text and f"pool: {facts}:{_line(facts, 'efa', 'p5:')}:" in text


def test_validate_and_render_warn_at_the_nnodes_line_with_the_pools_line(tmp_path: Path) -> None:
    team, facts = _setup(tmp_path, "fabric-efa", EFA_POOLS)
    (team / "train.yaml").write_text("extends: gpu-large\nelastic: {nnodes: 2}\n")
    result = invoke(["validate", str(team), "--facts", str(facts)])
    warnings = [line for line in result.unfolded.splitlines() if "NCCL will use TCP sockets" in line]
    assert len(warnings) == 2, result.stderr
    assert warnings[1].startswith(f"{team / 'train.yaml'}:2:19: [team] elastic.nnodes: warning: pool p5 offers 32 "
                                  "vpc.amazonaws.com/efa per node; this job requests none")
    assert f"the pool's at {facts}:{_line(facts, 'efa', 'p5:')}:" in warnings[1]
    assert invoke(["validate", str(team), "--facts", str(facts), "--strict"]).exit_code == 1
    rendered = invoke(["render", "train", "--team", str(team), "--facts", str(facts)])
    assert rendered.exit_code == 0 and rendered.stderr.count("NCCL will use TCP sockets") == 2


def test_with_fabric_efa_and_auto_each_pool_is_fitted_with_its_count_and_nothing_is_warned(tmp_path: Path) -> None:
    team, facts = _setup(tmp_path, "fabric-efa", EFA_POOLS)
    pools = _fit("train", "--team", str(team), "--facts", str(facts))
    assert all(p["fits"] and p["warnings"] == [] and p["reasons"] == [] for p in pools.values())
    # nodes of 16 GPUs: two pods of 8 fit one unless each takes all its node's EFA devices, 8 on p4d, 32 on p5; one
    # count for both pools would put two pods on a node of one of them, or none
    wide = EFA_POOLS.replace("nvidia.com/gpu: 8", "nvidia.com/gpu: 16").replace("efa: 4", "efa: 8")
    facts.write_text(wide)
    pools = _fit("train", "--team", str(team), "--facts", str(facts))
    assert [(p["pods_per_node"], p["warnings"]) for p in pools.values()] == [(1, []), (1, [])]
    (team / "train.yaml").write_text("extends: [gpu-large, fabric-efa]\nelastic: {nnodes: 2}\npod_template:\n  spec:\n"
                                     "    containers:\n      - name: primary\n        resources: {requests: "
                                     "{vpc.amazonaws.com/efa: 32}, limits: {vpc.amazonaws.com/efa: 32}}\n")
    result = invoke(["fit", "train", "--team", str(team), "--facts", str(facts), "-o", "json"])
    import json
    judged = {p["name"]: p for p in json.loads(result.stdout)["pools"]}
    assert not judged["p4d"]["fits"] and judged["p5"]["fits"]  # 32 written: p4d's 4 are too few, as before


@pytest.mark.parametrize("profile, why", [
    ("extends: gpu-large\nelastic: {nnodes: 1}\n", "one node"),
    ("extends: cpu-small\nelastic: {nnodes: 2}\npod_template:\n  spec:\n    tolerations: [{operator: Exists}]\n",
     "no GPU"),
    ("extends: [gpu-large, fabric-ib]\nelastic: {nnodes: 2}\n", "a fabric device of another kind: no fit, no warning"),
])
def test_no_warning_for_one_node_no_gpu_or_a_pool_that_takes_no_pod(tmp_path: Path, profile: str, why: str) -> None:
    team, facts = _setup(tmp_path, "fabric-efa", EFA_POOLS)
    (team / "train.yaml").write_text(profile)
    result = invoke(["fit", "train", "--team", str(team), "--facts", str(facts), "-o", "json"])
    import json
    assert all(p["warnings"] == [] for p in json.loads(result.stdout)["pools"]), why


def test_two_pods_on_one_node_talk_through_the_node_not_the_fabric(tmp_path: Path) -> None:
    wide = EFA_POOLS.replace("nvidia.com/gpu: 8", "nvidia.com/gpu: 16").replace("nodes: 4", "nodes: 1")
    team, facts = _setup(tmp_path, "fabric-efa", wide)
    (team / "train.yaml").write_text("extends: gpu-large\nelastic: {nnodes: 2}\n")
    pools = _fit("train", "--team", str(team), "--facts", str(facts))
    assert all(p["pods_per_node"] == 2 and p["warnings"] == [] for p in pools.values())


def test_an_rdma_device_of_another_name_is_named_with_fabric_ib(tmp_path: Path) -> None:
    shared = POOLS.split("  p5:")[0].replace("vpc.amazonaws.com/efa: 4, rdma/ib: 8", "rdma/hca_shared_devices_a: 1")
    facts = tmp_path / "facts.yaml"
    facts.write_text(shared)
    [warning] = _fit("gpu-large", "--facts", str(facts))["p4d"]["warnings"]
    assert warning["message"].endswith("offers 1 rdma/hca_shared_devices_a per node; this job requests none: NCCL will "
                                       "use TCP sockets; extend fabric-ib with `rdma/hca_shared_devices_a` in place "
                                       "of its rdma/ib")


def test_a_label_the_facts_name_is_a_fabric_that_the_host_network_asks_for(tmp_path: Path) -> None:
    from node_lists import pool_nodes, write_node_list

    nodes = tmp_path / "nodes.json"
    text = write_node_list(nodes, *pool_nodes("roce", 2, {"cpu": "96", "memory": "1000Gi", "nvidia.com/gpu": "8",
                                                           "pods": "110"}, labels={"example.com/roce": "true"}))
    facts = tmp_path / "facts.yaml"
    facts.write_text("nodes: nodes.json\nfabric_labels:\n  example.com/roce: fabric-roce\n")
    [warning] = _fit("gpu-large", "--facts", str(facts))["roce"]["warnings"]
    assert warning["message"] == ("pool roce offers the fabric of label `example.com/roce` per node; this job requests "
                                  "none: NCCL will use TCP sockets; extend fabric-roce")
    assert warning["pool"]["line"] == next(i for i, t in enumerate(text.splitlines(), 1) if '"example.com/roce"' in t)
    assert (warning["named_by"]["file"], warning["named_by"]["line"]) == (str(facts), 3)
    (tmp_path / "own").mkdir()
    team, _ = _setup(tmp_path / "own", "fabric-roce", "")
    assert _fit("train", "--team", str(team), "--facts", str(facts))["roce"]["warnings"] == []
    facts.write_text("nodes: nodes.json\nfabric_labels:\n  example.com/roce: Fabric_RoCE\n")
    bad = invoke(["fit", "gpu-large", "--facts", str(facts)])
    assert bad.exit_code == 2 and f"{facts}:3:" in bad.stderr and "is not a profile name" in bad.stderr
