"""Kueue's topology-aware scheduling: the builtin kueue-topology fragment, where its annotations land on each
target's pod templates, node pools that topology labels do not split, the domains fit reports, and the lints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cli_runner import invoke
from node_lists import GPU_TAINT, node, write_node_list

from kfdefaults.check.topology import REQUIRED, SLICE_REQUIRED, SLICE_SIZE, level_word
from kfdefaults.k8s.nodes import node_pools

BLOCK = "cloud.google.com/gce-topology-block"
ALLOCATABLE = {"cpu": "95", "memory": "1300Gi", "nvidia.com/gpu": "8", "pods": "110"}


def block_nodes(pool_label: bool = False) -> list[dict]:
    """Two blocks of three GPU nodes, each node in its own rack and sub-block, as kubectl prints them."""
    return [node(f"gpu-{b}{i}", {"kubernetes.io/hostname": f"gpu-{b}{i}",
                                 "node.kubernetes.io/instance-type": "a3-highgpu-8g", BLOCK: f"block-{b}",
                                 "cloud.google.com/gce-topology-subblock": f"sb-{b}{i // 2}",
                                 "example.com/rack": f"rack-{b}{i}", "topology.kubernetes.io/zone": "us-c1-a",
                                 **({"cloud.google.com/gke-nodepool": "a3"} if pool_label else {})},
                 [GPU_TAINT], ALLOCATABLE, capacity=ALLOCATABLE, real=True) for b in "ab" for i in range(3)]


def setup(tmp_path: Path, nnodes: int, annotations: dict | None = None) -> list[str]:
    """A platform whose kueue-topology asks for one block (or ``annotations``), a team profile on it, the node
    list; the layer and node options."""
    platform, team = tmp_path / "platform", tmp_path / "team"
    platform.mkdir(exist_ok=True)
    team.mkdir(exist_ok=True)
    asked = annotations if annotations is not None else {REQUIRED: BLOCK}
    (platform / "kueue-topology.yaml").write_text(yaml.safe_dump(
        {"description": "one block", "pod_template": {"annotations": asked}}, sort_keys=False))
    (team / "train.yaml").write_text(f"extends: [gpu-large, kueue-topology]\nelastic:\n  nnodes: {nnodes}\n")
    write_node_list(tmp_path / "nodes.json", *block_nodes())
    return ["--platform", str(platform), "--team", str(team), "--nodes", str(tmp_path / "nodes.json")]


@pytest.mark.parametrize("pool_label", [False, True])
def test_two_blocks_of_three_nodes_each_in_its_rack_are_one_pool(pool_label: bool) -> None:
    pools = node_pools(block_nodes(pool_label))
    assert [(p.name, p.count) for p in pools] == [("a3" if pool_label else "a3-highgpu-8g", 6)]
    assert {k: len(v) for k, v in pools[0].domains(BLOCK).items()} == {"block-a": 3, "block-b": 3}


def test_a_level_is_named_by_its_last_word() -> None:
    assert [level_word(x) for x in (BLOCK, "topology.kubernetes.io/zone", "example.com/rack", "rack")] == [
        "block", "zone", "rack", "rack"]


def test_a_job_larger_than_the_largest_block_is_a_warning_at_the_annotation_and_fit_says_so(tmp_path: Path) -> None:
    options = setup(tmp_path, 4)
    validated = invoke(["validate", str(tmp_path / "team"), *options])
    assert validated.exit_code == 0, validated.stderr
    message = "needs 4 nodes in one block; the largest has 3"
    line = next(w for w in validated.unfolded.splitlines() if message in w)
    assert line.startswith(f"{tmp_path / 'platform' / 'kueue-topology.yaml'}:4:") and "warning" in line
    assert "Kueue never admits the job" in line
    fitted = invoke(["fit", "train", *options, "-o", "text"])
    assert fitted.exit_code == 1  # no block holds the job: never admitted
    assert f"topology: {BLOCK} (required, {REQUIRED} at" in fitted.stdout and message in fitted.stdout
    assert "block-a: 3 nodes take a pod, 3 pods (gpu-a0, gpu-a1, gpu-a2)" in fitted.stdout
    document = json.loads(invoke(["fit", "train", *options, "-o", "json"]).stdout)["topology"]
    assert (document["holds_job"], document["nodes_needed"], [d["nodes"] for d in document["domains"]]) == (
        False, 4, [3, 3])


def test_a_job_that_one_block_holds_has_no_warning(tmp_path: Path) -> None:
    options = setup(tmp_path, 3)
    validated = invoke(["validate", str(tmp_path / "team"), *options])
    assert validated.exit_code == 0 and "kueue" not in validated.unfolded and "block" not in validated.unfolded
    fitted = invoke(["fit", "train", *options, "-o", "text"])
    assert fitted.exit_code == 0 and "one block holds the job (block-a: 3 nodes)" in fitted.stdout


def test_fit_topology_names_another_level_and_its_domains(tmp_path: Path) -> None:
    fitted = invoke(["fit", "train", *setup(tmp_path, 3), "-o", "text", "--topology", "example.com/rack"])
    assert fitted.exit_code == 0  # a level asked with --topology is a question, not the job's requirement
    assert "topology: example.com/rack (given with --topology): needs 3 nodes in one rack; the largest has 1" in fitted.stdout
    assert "rack-b2: 1 node takes a pod, 1 pod (gpu-b2)" in fitted.stdout


def test_a_level_no_node_carries_is_a_warning(tmp_path: Path) -> None:
    options = setup(tmp_path, 2, {REQUIRED: "example.com/superpod"})
    validated = invoke(["validate", str(tmp_path / "team"), *options])
    assert "no node of the node list carries the topology level `example.com/superpod`" in validated.unfolded


@pytest.mark.parametrize(("size", "said"), [("3", "podset-slice-size 3 does not divide the job's 4 pods: Kueue "
                                                   "places 1 whole slice and no slice for the other 1"),
                                            ("8", "podset-slice-size 8 is more than the job's 4 pods"),
                                            ("2", None)])
def test_a_slice_size_must_divide_the_pods(tmp_path: Path, size: str, said: str | None) -> None:
    options = setup(tmp_path, 4, {SLICE_REQUIRED: BLOCK, SLICE_SIZE: size})
    for args in (options, ["--platform", options[1], "--team", options[3], "--facts", "none"]):  # without nodes too
        validated = invoke(["validate", str(tmp_path / "team"), *args])
        assert validated.exit_code == 0, validated.stderr
        if said is None:
            assert "slice" not in validated.unfolded
        else:
            line = next(w for w in validated.unfolded.splitlines() if said in w)
            assert "kueue-topology.yaml:5:" in line  # the slice size's line, below the slice level


def _worker_annotations(job: dict) -> dict:
    return job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"]["annotations"]


def test_the_annotation_reaches_the_pytorchjob_worker_template_of_flytekit(tmp_path: Path) -> None:
    result = invoke(["render", "train", *setup(tmp_path, 3), "--as", "pytorchjob", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    assert _worker_annotations(json.loads(result.stdout))[REQUIRED] == BLOCK


def test_the_annotation_reaches_the_flyte2_pytorch_task_pod(tmp_path: Path) -> None:
    """Flyte 2: the pod metadata of the TaskTemplate its SDK serializes for a task on ``kfdefaults.flyte2.Elastic``,
    which Flyte's backend lays on every replica's pod template as for flytekit."""
    pytest.importorskip("flyteplugins.pytorch")
    result = invoke(["render", "train", *setup(tmp_path, 3), "--as", "flyte", "--target", "flyte2", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    template = json.loads(result.stdout)
    assert template["type"] == "pytorch" and template["k8sPod"]["metadata"]["annotations"][REQUIRED] == BLOCK


def test_the_annotation_reaches_the_jobset_replicated_job(tmp_path: Path) -> None:
    pytest.importorskip("flyte.clustered")
    options = setup(tmp_path, 2)
    (tmp_path / "team" / "train.yaml").write_text("extends: [gpu-large, kueue-topology]\nelastic:\n  nnodes: 2\n"
                                                  "  max_restarts: null\n  rdzv_configs: null\n  run_policy: null\n")
    result = invoke(["render", "train", *options, "--as", "jobset", "--target", "clustered", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    jobset = json.loads(result.stdout)
    metadata = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]
    assert metadata["annotations"][REQUIRED] == BLOCK


def test_the_builtin_fragment_asks_for_one_zone_until_a_platform_names_its_level(tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "train.yaml").write_text("extends: [gpu-large, kueue-topology]\n")
    result = invoke(["render", "train", "--team", str(team), "--as", "pytorchjob", "-o", "json", "--facts", "none"])
    assert result.exit_code == 0, result.stderr
    assert _worker_annotations(json.loads(result.stdout))[REQUIRED] == "topology.kubernetes.io/zone"


@pytest.mark.parametrize(("annotations", "said"), [
    ({REQUIRED: BLOCK, "kueue.x-k8s.io/podset-preferred-topology": BLOCK}, "more than one topology annotation"),
    ({SLICE_REQUIRED: BLOCK}, f"{SLICE_REQUIRED} without {SLICE_SIZE}"),
    ({SLICE_REQUIRED: BLOCK, SLICE_SIZE: "0"}, f"{SLICE_SIZE} is a whole number of pods, at least 1"),
    ({REQUIRED: None, "kueue.x-k8s.io/podset-unconstrained-topology": "yes"}, "is \"true\" or \"false\""),
    ({REQUIRED: None, "kueue.x-k8s.io/podset-unconstrained-topology": "true"}, None),  # null drops the fragment's
    ({"kueue.x-k8s.io/podset-unconstrained-topology": "true"}, "more than one topology annotation"),  # kept: two
])
def test_what_kueue_s_webhook_rejects_is_a_warning_without_a_node_list(tmp_path: Path, annotations: dict,
                                                                       said: str | None) -> None:
    options = setup(tmp_path, 2, annotations)
    validated = invoke(["validate", str(tmp_path / "team"), "--platform", options[1], "--team", options[3],
                        "--facts", "none"])
    assert validated.exit_code == 0, validated.stderr
    rejected = [w for w in validated.unfolded.splitlines() if "webhook rejects the job" in w]
    if said is None:
        assert rejected == []
    else:
        assert len(rejected) == 1 and said in rejected[0] and "kueue-topology.yaml:" in rejected[0]
