"""``kfdefaults fit``: which node pools a profile's pods schedule on, why not, and what its job holds; the
warning of ``validate`` and ``render`` for a profile that fits no pool; ``diff``'s line per pool whose fit a
change flips; the ``/dev/shm`` headroom.

The cluster is a node list as ``kubectl get nodes -o json`` prints it, built with the kubernetes client's models
(tests/node_lists.py): an A100 pool and a T4 pool, both tainted for GPUs, a CPU pool, a tainted spot pool and a
cordoned node, saved in a platform folder beside its ``_cluster-facts.yaml``. Each rule of the scheduler has a test
here through the command line (the rules themselves are tested case by case against the scheduler's Go tables in
tests/test_scheduling.py); each test states where every figure comes from, by line of the files it wrote.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from cli_runner import invoke
from node_lists import GPU_TAINT, line_of, node, pool_nodes, write_node_list

from kfdefaults.layers.builtin import builtin_folder

A100 = {"cpu": "95", "memory": "1300Gi", "nvidia.com/gpu": "8", "pods": "110", "ephemeral-storage": "3000Gi"}
T4 = {"cpu": "47", "memory": "340Gi", "nvidia.com/gpu": "4", "pods": "110", "ephemeral-storage": "300Gi"}
CPU = {"cpu": "31850m", "memory": "120Gi", "pods": "110", "ephemeral-storage": "100Gi"}
GPU_LABELS = {"nvidia.com/gpu.present": "true"}

FACTS = """\
description: the training cluster
nodes: _nodes.json
flyte:
  task_timeout: 86400
node_pools:
  a100:
    nodes: {min: 0, max: 16}
    price_per_node_hour: 32.77
"""

GPU_LARGE = Path(builtin_folder(), "gpu-large.yaml")
GPU_REQUEST_LINE = line_of(GPU_LARGE.read_text(), "nvidia.com/gpu: 8")  # under requests: the request the scheduler reads


def cluster_nodes() -> list[dict]:
    return [*pool_nodes("a100", 2, A100, taints=[GPU_TAINT], labels={**GPU_LABELS, "gpu-type": "a100"}),
            *pool_nodes("t4", 3, T4, taints=[GPU_TAINT], labels={**GPU_LABELS, "gpu-type": "t4"}),
            *pool_nodes("default", 3, CPU),
            *pool_nodes("spot", 2, CPU, taints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}]),
            *pool_nodes("maint", 1, CPU, unschedulable=True)]


@pytest.fixture
def cluster(tmp_path: Path) -> dict:
    """A platform folder holding the cluster's facts and node list; a team folder; the texts written."""
    platform, team = tmp_path / "platform", tmp_path / "team"
    platform.mkdir()
    team.mkdir()
    (platform / "_cluster-facts.yaml").write_text(FACTS)
    nodes = write_node_list(platform / "_nodes.json", *cluster_nodes())
    return {"platform": platform, "team": team, "nodes": nodes, "nodes_file": platform / "_nodes.json",
            "facts_file": platform / "_cluster-facts.yaml"}


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def fit(cluster: dict, *args: str) -> tuple[dict, int]:
    """``kfdefaults fit ARGS -o json`` with the cluster's platform and team folders: (the document, exit status)."""
    result = invoke(["fit", *args, "--platform", str(cluster["platform"]), "--team", str(cluster["team"]), "-o", "json"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout), result.exit_code


def pools(document: dict) -> dict[str, dict]:
    return {p["name"]: p for p in document["pools"]}


def at(location: dict | None) -> tuple[str, int]:
    """(file name, line) of a location of the JSON output."""
    assert location is not None
    return os.path.basename(location["file"]), location["line"]


def reasons(pool: dict) -> list[str]:
    return [r["reason"] for r in pool["reasons"]]


# --- the scheduler's rules, through the command ---------------------------------------------------------------


def test_a_gpu_profile_fits_the_a100_pool_and_each_other_pool_says_why_not(cluster):
    document, code = fit(cluster, "gpu-large")
    assert code == 0 and document["fits"] is True
    found = pools(document)
    assert list(found) == ["a100", "t4", "default", "spot", "maint"]
    assert {name: p["fits"] for name, p in found.items()} == {"a100": True, "t4": False, "default": False,
                                                              "spot": False, "maint": False}
    # NodeResourcesFit, on an extended resource: 8 GPUs where a T4 node has 4, each side at its line
    [gpus] = found["t4"]["reasons"]
    assert (gpus["plugin"], gpus["reason"]) == ("NodeResourcesFit", "Insufficient nvidia.com/gpu")
    assert gpus["detail"] == "the pod requests 8 nvidia.com/gpu, a node offers 4"
    assert (gpus["profile"]["layer"], at(gpus["profile"])) == ("builtin", ("gpu-large.yaml", GPU_REQUEST_LINE))
    t4_gpus = line_of(cluster["nodes"], '"nvidia.com/gpu": "4"', after='"name": "t4-0"')
    assert at(gpus["pool"]) == ("_nodes.json", t4_gpus) and gpus["rule"].endswith("noderesources/fit.go fitsRequest")
    # TaintToleration on the spot pool, whose taint gpu-large's toleration does not cover
    assert reasons(found["spot"])[0] == "node(s) had untolerated taint {spot: true}"
    spot_taint = line_of(cluster["nodes"], '"taints": [', after='"name": "spot-0"') + 1  # the taint, at its {
    assert at(found["spot"]["reasons"][0]["pool"]) == ("_nodes.json", spot_taint)
    # NodeUnschedulable: the cordoned node, at its spec.unschedulable
    assert reasons(found["maint"])[0] == "node(s) were unschedulable"
    assert at(found["maint"]["reasons"][0]["pool"]) == ("_nodes.json", line_of(cluster["nodes"], '"unschedulable": true'))


def test_a_cpu_profile_fits_the_cpu_pool_and_the_gpu_taints_keep_it_off_the_gpu_pools(cluster):
    document, code = fit(cluster, "cpu-small")
    found = pools(document)
    assert code == 0 and [n for n, p in found.items() if p["fits"]] == ["default"]
    for name in ("a100", "t4"):
        [taint] = found[name]["reasons"]
        assert taint["reason"] == "node(s) had untolerated taint {nvidia.com/gpu: present}"
        assert taint["profile"] is None  # no layer of cpu-small tolerates anything
        assert "`nvidia.com/gpu=present:NoSchedule`" in taint["detail"]


def test_node_affinity_a_node_selector_that_no_pool_matches(cluster):
    write(cluster["team"], "gpu-large.yaml", """\
        pod_template:
          spec:
            nodeSelector: {gpu-type: h100}
        """)
    document, code = fit(cluster, "gpu-large")
    assert code == 1 and document["fits"] is False
    a100 = pools(document)["a100"]
    [affinity] = a100["reasons"]
    assert affinity["reason"] == "node(s) didn't match Pod's node affinity/selector"
    assert affinity["detail"] == "nodeSelector `gpu-type: h100`: the pool's nodes have `gpu-type: a100`"
    assert (affinity["profile"]["layer"], at(affinity["profile"])) == ("team", ("gpu-large.yaml", 3))
    assert at(affinity["pool"]) == ("_nodes.json", line_of(cluster["nodes"], '"gpu-type": "a100"'))


def test_resources_count_the_larger_of_the_init_containers_and_the_containers_and_the_overhead(cluster):
    """300Gi of containers fit a T4 node's 340Gi; an init container of 350Gi, or 50Gi of overhead, do not."""
    base = """\
        elastic: {nproc_per_node: 4}
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  limits: {nvidia.com/gpu: 4, memory: 150Gi}
                  requests: {nvidia.com/gpu: 4}
              - name: sidecar
                image: registry.example.com/sidecar:1
                resources: {limits: {memory: 150Gi}}
        """
    base = base.rstrip(" ")  # the closing quotes' indentation
    write(cluster["team"], "gpu-large.yaml", base)
    assert pools(fit(cluster, "gpu-large")[0])["t4"]["fits"] is True
    write(cluster["team"], "gpu-large.yaml", base + """\
            initContainers:
              - name: warm-cache
                image: registry.example.com/warm:1
                resources: {limits: {memory: 350Gi}}
        """)
    [memory] = pools(fit(cluster, "gpu-large")[0])["t4"]["reasons"]
    assert memory["detail"] == "the pod requests 350Gi memory, a node offers 340Gi"
    assert at(memory["profile"]) == ("gpu-large.yaml", 15)  # the init container's limit: the larger need
    write(cluster["team"], "gpu-large.yaml", base + """\
            overhead: {memory: 50Gi}
        """)
    [memory] = pools(fit(cluster, "gpu-large")[0])["t4"]["reasons"]
    assert memory["detail"] == "the pod requests 350Gi memory, a node offers 340Gi"


def test_a_per_node_label_is_decided_node_by_node(cluster):
    write(cluster["team"], "gpu-large.yaml", """\
        pod_template:
          spec:
            nodeSelector: {kubernetes.io/hostname: a100-1}
        """)
    a100 = pools(fit(cluster, "gpu-large")[0])["a100"]
    assert a100["fits"] is True and a100["usable_nodes"] == 1 and a100["nodes_max"]["value"] == 1
    assert a100["nodes_needed"] == {"min": 1, "max": 4}


# --- how layers combine into a misfit -------------------------------------------------------------------------


def test_the_platforms_node_selector_with_the_teams_affinity_fit_no_pool(cluster):
    """The platform pins gpu-large to the T4 pool, the team requires the A100 pool: each alone fits a pool."""
    write(cluster["platform"], "gpu-large.yaml", """\
        pod_template:
          spec:
            nodeSelector: {gpu-type: t4}
            containers:
              - name: primary
                resources: {limits: {nvidia.com/gpu: 4}, requests: {nvidia.com/gpu: 4}}
        elastic: {nproc_per_node: 4}
        """)
    assert pools(fit(cluster, "gpu-large")[0])["t4"]["fits"] is True
    write(cluster["team"], "gpu-large.yaml", """\
        pod_template:
          spec:
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                    - matchExpressions:
                        - {key: cloud.google.com/gke-nodepool, operator: In, values: [a100]}
        """)
    document, code = fit(cluster, "gpu-large")
    found = pools(document)
    assert code == 1 and not any(p["fits"] for p in found.values())
    [t4] = found["t4"]["reasons"]
    assert (t4["profile"]["layer"], at(t4["profile"])) == ("team", ("gpu-large.yaml", 6))  # where its terms start
    assert "`cloud.google.com/gke-nodepool In [a100]`" in t4["detail"]
    assert f"its nodeSelector does (`gpu-type: t4` at [platform] {cluster['platform']}/gpu-large.yaml:3:" in t4["detail"]
    [a100] = found["a100"]["reasons"]
    assert (a100["profile"]["layer"], at(a100["profile"])) == ("platform", ("gpu-large.yaml", 3))
    assert "though its required node affinity (`cloud.google.com/gke-nodepool In [a100]`) matches them (at [team] " \
        in a100["detail"]


def test_the_builtin_toleration_replaced_whole_by_a_platform_list(cluster):
    """tolerations have no merge key: the platform's list replaces the builtin one, GPU toleration and all."""
    write(cluster["platform"], "gpu-large.yaml", """\
        pod_template:
          spec:
            tolerations:
              - {key: dedicated, value: ml, effect: NoSchedule}
        """)
    document, code = fit(cluster, "gpu-large")
    assert code == 1
    [taint] = pools(document)["a100"]["reasons"]
    assert taint["reason"] == "node(s) had untolerated taint {nvidia.com/gpu: present}"
    assert (taint["profile"]["layer"], at(taint["profile"])) == ("platform", ("gpu-large.yaml", 4))
    builtin_tolerations = line_of(GPU_LARGE.read_text(), "- key: nvidia.com/gpu")
    assert (f"the builtin layer's tolerations ({GPU_LARGE}:{builtin_tolerations}:" in taint["detail"]
            and "the platform layer's list replaces them whole" in taint["detail"])


# --- nodes, deadlines, what the job holds ---------------------------------------------------------------------


def test_nodes_needed_pods_per_node_and_what_the_job_holds_at_worst(cluster):
    """Four GPUs a pod on eight-GPU nodes: two pods a node, so nnodes 2:6 needs 1 to 3 nodes; at worst 3 nodes for
    the Flyte timeout of a day, priced from the facts."""
    write(cluster["team"], "gpu-large.yaml", """\
        elastic:
          nnodes: "2:6"
          nproc_per_node: 4
        pod_template:
          spec:
            containers:
              - name: primary
                resources: {limits: {nvidia.com/gpu: 4}, requests: {nvidia.com/gpu: 4}}
        """)
    document, _ = fit(cluster, "gpu-large")
    a100, t4 = pools(document)["a100"], pools(document)["t4"]
    assert (a100["pods_per_node"], a100["nodes_needed"], a100["nodes_max"]["value"]) == (2, {"min": 1, "max": 3}, 16)
    assert at(a100["nodes_max"]["at"]) == ("_cluster-facts.yaml", 7)
    assert a100["reserves"] == {"pods": 6, "nodes": 3, "gpus": 24.0, "node_hours": 72.0, "gpu_hours": 576.0,
                                "price_per_node_hour": a100["reserves"]["price_per_node_hour"], "cost": 2359.44}
    assert at(a100["reserves"]["price_per_node_hour"]["at"]) == ("_cluster-facts.yaml", 8)
    assert document["deadline"]["value"] == 86400 and at(document["deadline"]["at"]) == ("_cluster-facts.yaml", 4)
    assert document["nnodes"] == {"min": 2, "max": 6, "set_at": document["nnodes"]["set_at"]}
    assert at(document["nnodes"]["set_at"]["at"]) == ("gpu-large.yaml", 2)
    # the T4 pool lists three nodes and the facts say no more: six one-pod nodes are more than it has, but two start
    assert (t4["pods_per_node"], t4["nodes_needed"], t4["nodes_max"]["value"], t4["fits"]) == (1, {"min": 2, "max": 6}, 3, True)
    assert t4["reserves"]["pods"] == 3 and t4["reserves"]["cost"] is None
    assert at(t4["nodes_max"]["at"]) == ("_nodes.json", line_of(cluster["nodes"], '"items"'))


def test_a_pool_with_too_few_nodes_for_the_smallest_job_is_no_fit(cluster):
    write(cluster["team"], "gpu-large.yaml", """\
        elastic: {nnodes: 4, nproc_per_node: 4}
        pod_template:
          spec:
            containers:
              - name: primary
                resources: {limits: {nvidia.com/gpu: 4}, requests: {nvidia.com/gpu: 4}}
        """)
    t4 = pools(fit(cluster, "gpu-large")[0])["t4"]
    assert t4["schedulable"] is True and t4["fits"] is False
    [short] = t4["reasons"]
    assert (short["plugin"], short["reason"]) == ("nodes", "4 nodes needed, 3 at most")
    assert at(short["profile"]) == ("gpu-large.yaml", 1)


def test_the_run_policys_deadline_wins_when_shorter_than_the_flyte_timeout(cluster):
    write(cluster["team"], "gpu-large.yaml", """\
        elastic:
          run_policy:
            active_deadline_seconds: 7200
        """)
    document, _ = fit(cluster, "gpu-large")
    assert document["deadline"]["value"] == 7200 and document["deadline"]["layer"] == "team"
    assert document["deadline"]["from"] == "elastic.run_policy.active_deadline_seconds"
    assert at(document["deadline"]["at"]) == ("gpu-large.yaml", 3)
    assert pools(document)["a100"]["reserves"]["node_hours"] == 8.0  # 4 nodes x 2 h


def test_a_pool_only_the_facts_describe_is_judged_on_what_they_state(cluster):
    cluster["facts_file"].write_text(FACTS + "  h100:\n"
                                     "    labels: {gpu-type: h100}\n"
                                     "    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]\n"
                                     "    allocatable: {nvidia.com/gpu: 8}\n"
                                     "    nodes: 2\n")
    write(cluster["team"], "gpu-large.yaml", """\
        pod_template:
          spec:
            nodeSelector: {gpu-type: h100}
            containers:
              - name: primary
                resources: {requests: {cpu: "90"}}
        """)
    document, code = fit(cluster, "gpu-large")
    h100 = pools(document)["h100"]
    assert code == 0 and h100["fits"] is True and h100["source"] == "facts"
    assert h100["unchecked"] == ["cpu", "memory", "ephemeral-storage"] and h100["nodes_max"]["value"] == 2
    assert at(h100["at"]) == ("_cluster-facts.yaml", 9)  # its name


def test_a_pool_whose_nodes_allow_no_pods_says_so_in_words(cluster):
    """A node list whose nodes state no `pods` (or 0) allows none: the reason says which, in a sentence."""
    no_pods = {k: v for k, v in CPU.items() if k != "pods"}
    write_node_list(cluster["nodes_file"], *pool_nodes("nopods", 1, no_pods), *pool_nodes("zero", 1, {**CPU, "pods": "0"}))
    document, _ = fit(cluster, "cpu-small")
    found = pools(document)
    assert [(r["reason"], r["detail"]) for r in found["nopods"]["reasons"]] == [
        ("Too many pods", "the pool's nodes allow no pods: their status.allocatable has no `pods`")]
    assert [(r["reason"], r["detail"]) for r in found["zero"]["reasons"]] == [
        ("Too many pods", "the pool's nodes allow no pods: their status.allocatable.pods is 0")]


def test_with_the_clusters_template_the_pod_judged_is_the_backends(cluster, tmp_path):
    """Flyte's backend lays the cluster's PodTemplate under the task's pod: its nodeSelector is the pod's too."""
    template = tmp_path / "template.yaml"
    template.write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: PodTemplate
        metadata: {name: flyte-template}
        template:
          spec:
            nodeSelector: {gpu-type: t4}
            containers:
              - name: default
                image: docker.io/rwgrim/docker-noop
        """))
    document, code = fit(cluster, "gpu-large", "--cluster-template", str(template))
    assert code == 1 and document["pod"]["source"] == "backend" and document["pod"]["template"] == str(template)
    [affinity] = pools(document)["a100"]["reasons"]
    assert (affinity["profile"]["layer"], at(affinity["profile"])) == ("cluster", ("template.yaml", 6))


# --- the command: exit status, output ------------------------------------------------------------------------


def test_exit_status_0_a_pool_fits_1_none_2_trouble(cluster, tmp_path):
    base = ["fit", "--platform", str(cluster["platform"])]
    assert invoke([*base, "gpu-large"]).exit_code == 0
    assert invoke([*base, "gpu-large", "--set", "pod_template.spec.nodeSelector.gpu-type=h100"]).exit_code == 1
    unknown = invoke([*base, "gpu-larg"])
    assert unknown.exit_code == 2 and "did you mean 'gpu-large'" in unknown.stderr
    nothing = invoke(["fit", "gpu-large", "--facts", "none"])
    assert nothing.exit_code == 2 and "no node pools known: give --nodes FILE" in nothing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "x"},\n'
                   ' "status": {"allocatable": {"cpu": "lots"}}}]}\n')
    broken = invoke([*base, "gpu-large", "--nodes", str(bad)])
    assert broken.exit_code == 2 and broken.stdout == ""
    assert broken.stderr.startswith(f"{bad}:2:36: items[0].status.allocatable.cpu: `lots` is not a Kubernetes quantity")
    assert "Traceback" not in broken.output


def test_the_facts_naming_a_node_list_that_is_not_there_is_an_error_at_their_line(cluster):
    cluster["nodes_file"].unlink()
    result = invoke(["fit", "gpu-large", "--platform", str(cluster["platform"])])
    assert result.exit_code == 2
    assert result.unfolded.startswith(f"{cluster['facts_file']}:2:8: nodes: no node list at ")
    assert all(len(line) <= 160 for line in result.stderr.splitlines() if str(cluster["platform"]) not in line[20:])


@pytest.mark.parametrize("named", ["/etc/passwd", "../nodes.json", "sub/../../nodes.json"])
def test_the_facts_node_list_is_read_only_from_inside_their_folder(cluster, named):
    facts = cluster["facts_file"]
    facts.write_text(facts.read_text().replace("_nodes.json", named, 1))
    result = invoke(["fit", "gpu-large", "--platform", str(cluster["platform"])])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.unfolded.startswith(f"{facts}:2:8: nodes: `{named}` is not a path inside the facts file's folder")


def test_the_text_output_traces_every_figure(cluster):
    result = invoke(["fit", "gpu-large", "--platform", str(cluster["platform"]), "-o", "text"])
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["pool", "fits", "nodes", "pods/node", "at", "worst"]
    assert lines[1].split() == ["a100", "yes", "1-4", "of", "16", "1", "96", "node-h,", "768", "GPU-h,", "3145.92"]
    assert lines[2].split() == ["t4", "no", "-", "of", "3", "-", "-"]
    assert all(len(line) <= 80 for line in lines[:6])
    text = result.stdout
    assert f"nvidia.com/gpu 8 (builtin {GPU_LARGE}:{GPU_REQUEST_LINE}:" in text
    assert f"deadline: 86400 s (flyte.task_timeout, {cluster['facts_file']}:4:17)" in text
    t4, t4_gpus = text[text.index("\nt4 ("):], line_of(cluster["nodes"], '"nvidia.com/gpu": "4"')
    assert t4.splitlines()[2:5] == [
        "  Insufficient nvidia.com/gpu: the pod requests 8 nvidia.com/gpu, a node offers 4",
        f"    profile: builtin {GPU_LARGE}:{GPU_REQUEST_LINE}:29; pool: {cluster['nodes_file']}:{t4_gpus}:39",
        "    rule: pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest"]
    assert (f"4 nodes x 24 h = 96 node-hours, 32 GPUs x 24 h = 768 GPU-hours; 96 x 32.77 per node-hour "
            f"({cluster['facts_file']}:8:26) = 3145.92") in text


# --- the warning in validate and render; diff ----------------------------------------------------------------


MISFIT = """\
    elastic: {nproc_per_node: 16}
    pod_template:
      spec:
        containers:
          - name: primary
            resources: {limits: {nvidia.com/gpu: 16}, requests: {nvidia.com/gpu: 16}}
    """


def test_validate_warns_about_a_profile_that_fits_no_pool_at_the_line_that_stops_it(cluster):
    path = write(cluster["team"], "gpu-large.yaml", MISFIT)
    column = path.read_text().splitlines()[5].rindex("16") + 1  # the request, which the scheduler reads
    result = invoke(["validate", str(path), "--platform", str(cluster["platform"])])
    assert result.exit_code == 0
    [warning] = [line for line in result.unfolded.splitlines() if "fits none" in line]
    assert warning.startswith(f"{path}:6:{column}: [team] pod_template.spec.containers[name=primary].resources."
                              'requests."nvidia.com/gpu": warning: fits none of the 5 node pools: the task would stay '
                              "Pending")
    assert f"the task would stay Pending the closest, `a100` ({cluster['nodes_file']}:" in warning  # a detail below
    a100_gpus = line_of(cluster["nodes"], '"nvidia.com/gpu": "8"')
    assert f"the pod requests 16 nvidia.com/gpu, a node offers 8 (set at [team] {path}:6:{column}; the pool's at " \
           f"{cluster['nodes_file']}:{a100_gpus}:" in warning
    # one sentence on the one line of `-o json` and of a Python warning too, not `is stopped by:; Insufficient`
    one_line = invoke(["validate", str(path), "--platform", str(cluster["platform"]), "-o", "json"]).stdout
    assert "), is stopped by: Insufficient nvidia.com/gpu: " in one_line and "by:;" not in one_line, one_line
    # the command it suggests needs the folders this one was given: without them no pool is known (exit 2)
    assert warning.endswith("`kfdefaults fit gpu-large`, given the same folders and facts, shows every pool")
    assert invoke(["fit", "gpu-large", "--platform", str(cluster["platform"]), "--team",
                   str(cluster["team"])]).exit_code == 1
    assert invoke(["validate", str(path), "--platform", str(cluster["platform"]), "--strict"]).exit_code == 1
    write(cluster["team"], "gpu-large.yaml", MISFIT.replace("16", "8"))
    assert "fits none" not in invoke(["validate", str(path), "--platform", str(cluster["platform"])]).stderr


def test_render_warns_too_and_reads_the_pools_only_where_they_are_stated(cluster):
    write(cluster["team"], "gpu-large.yaml", MISFIT)
    args = ["render", "gpu-large", "--platform", str(cluster["platform"]), "--team", str(cluster["team"])]
    assert "fits none of the 5 node pools" in invoke(args).stderr
    assert "fits none" not in invoke(args + ["--facts", "none"]).stderr


def test_validate_reports_a_broken_node_list_and_checks_the_profiles_all_the_same(cluster):
    cluster["nodes_file"].write_text(cluster["nodes"].replace('"NoSchedule"', '"NoSchedul"', 1))
    first = write(cluster["team"], "a-first.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources: {limits: {memory: 1Gi}}
                volumeMounts: [{name: dshm, mountPath: /dev/shm}]
            volumes:
              - {name: dshm, emptyDir: {medium: Memory, sizeLimit: 2Gi}}
        """)
    result = invoke(["validate", "--platform", str(cluster["platform"]), "--team", str(cluster["team"])])
    assert result.exit_code == 1
    line = line_of(cluster["nodes"], '"NoSchedule"')
    assert result.stderr.count(f"{cluster['nodes_file']}:{line}:") == 1 and "a taint's effect is one of" in result.stderr
    assert f"{first}:8:60: [team] pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit: warning: /dev/shm " \
           "sizeLimit 2Gi" in result.stderr  # the first profile checked keeps its own warnings
    assert "9 profiles: 1 error, 1 warning" in result.stderr  # the builtin ones with the fabric-* and kueue-topology fragments


def test_diff_markdown_says_which_pools_a_change_makes_the_profile_fit_or_stop_fitting(cluster, tmp_path):
    after = tmp_path / "after"
    after.mkdir()
    write(after, "gpu-large.yaml", MISFIT.replace("16", "4"))
    result = invoke(["diff", "gpu-large", "--platform", str(cluster["platform"]), "--team", str(cluster["team"]),
                     "--team-against", str(after), "-o", "markdown"])
    assert result.exit_code == 1
    assert result.stdout.endswith("Node pools whose fit changes:\n\n"
                                  "- pool `t4`: does not fit (`Insufficient nvidia.com/gpu`) → fits\n")
    same = invoke(["diff", "gpu-large", "--platform", str(cluster["platform"]), "--team", str(cluster["team"]),
                   "--team-against", str(cluster["team"]), "-o", "markdown"])
    assert same.exit_code == 0 and "Node pools" not in same.stdout


# --- /dev/shm headroom --------------------------------------------------------------------------------------


SHM = """\
    pod_template:
      spec:
        containers:
          - name: primary
            resources: {requests: {memory: 64Gi}, limits: {memory: 64Gi}}
    """


@pytest.mark.parametrize("headroom, size, warned", [
    (None, "auto", False),      # no headroom stated: a /dev/shm the size of the limit is not warned about
    ("8Gi", "auto", True),      # auto: the memory request, 64Gi: nothing left
    ("8Gi", "56Gi", False),     # 8Gi left
    ("8Gi", "57Gi", True),
    ('"25%"', "48Gi", False),   # a quarter of 64Gi: 16Gi
    ('"25%"', "49Gi", True),
])
def test_a_shm_size_that_leaves_less_than_the_stated_headroom_is_a_warning(cluster, headroom, size, warned):
    if headroom is not None:
        cluster["facts_file"].write_text(FACTS + f"shm_headroom: {headroom}\n")
    path = write(cluster["team"], "gpu-large.yaml", SHM.rstrip(" ") + textwrap.indent(textwrap.dedent(f"""\
        volumes:
          - name: dshm
            emptyDir: {{sizeLimit: {size}}}
        """), "        "))
    result = invoke(["validate", str(path), "--platform", str(cluster["platform"])])
    found = [line for line in result.unfolded.splitlines() if "shm_headroom" in line]
    assert bool(found) is warned, result.stderr
    if warned:
        left = "0" if size == "auto" else f"{64 - int(size[:-2])}Gi"
        most = "56Gi" if headroom == "8Gi" else "48Gi"
        assert found[0].startswith(f"{path}:") and f"leaves container `primary` {left} of its memory limit 64Gi" \
            in found[0]
        assert f"less than the cluster's shm_headroom {headroom.strip(chr(34))} ({cluster['facts_file']}:" in found[0]
        assert f"set sizeLimit to at most {most}" in found[0]


def test_a_shm_headroom_that_is_not_one_is_an_error_at_its_line(cluster):
    cluster["facts_file"].write_text(FACTS + "shm_headroom: 8GB\n")
    result = invoke(["fit", "gpu-large", "--platform", str(cluster["platform"])])
    assert result.exit_code == 2 and result.stderr.startswith(f"{cluster['facts_file']}:9:15: shm_headroom: `8GB`")


# --- the terminal, JSON for scripts ----------------------------------------------------------------------------


@pytest.mark.slow
def test_on_an_80_column_terminal_the_table_fits_and_every_figure_is_there(cluster):
    """A pool named as clouds name them is long: the last column wraps to keep the table in 80 columns, and nothing
    is cut."""
    from test_explain_terminal import on_terminal

    long = "a100-ultragpu-8g-on-demand-reserved"
    write_node_list(cluster["nodes_file"], *(n for n in cluster_nodes() if not n["metadata"]["name"].startswith("a100")),
                    *pool_nodes(long, 2, A100, taints=[GPU_TAINT], labels=GPU_LABELS))
    cluster["facts_file"].write_text(FACTS.replace("  a100:", f"  {long}:"))
    screen = on_terminal(80, "fit", "gpu-large", "--platform", str(cluster["platform"]), "--set", "elastic.nnodes=2:6")
    lines = screen.splitlines()
    table = [line for line in lines if line and line[0] in "┏┃┡│└"]
    assert table and all(len(line) <= 80 for line in table) and "…" not in screen
    rows: dict[str, list[str]] = {}
    for cells in ([c.strip() for c in line.split("│")[1:-1]] for line in table if line.startswith("│")):
        if cells[0]:
            rows[cells[0]] = cells[1:]
        else:  # a wrapped row goes on
            rows[list(rows)[-1]] = [" ".join(filter(None, pair)) for pair in zip(rows[list(rows)[-1]], cells[1:])]
    assert rows[long] == ["yes", "2-6 of 16", "1", "144 node-h, 1152 GPU-h, 4718.88"]
    assert rows["t4"] == ["no", "- of 3", "-", "-"]
    words = " ".join(screen.split())  # the details wrap at the terminal's width: read them as one text
    assert f"6 nodes x 24 h = 144 node-hours, 48 GPUs x 24 h = 1152 GPU-hours; 144 x 32.77 per node-hour " \
           f"({cluster['facts_file']}:8:26) = 4718.88" in words
    assert f"the pool has at most 16 ({cluster['facts_file']}:7:12) that take one" in words
    assert all(len(line) <= 80 for line in lines if cluster["facts_file"].parent.name not in line)


def test_the_json_output_is_the_same_shape_for_every_pool(cluster):
    document, _ = fit(cluster, "gpu-large")
    assert set(document) == {"profile", "target", "fits", "pod", "nnodes", "pods_created", "deadline", "topology",
                             "pools"}
    assert document["pod"] == {"source": "profile", "template": None, "requests": {"nvidia.com/gpu": "8"},
                               "requested_at": {"nvidia.com/gpu": document["pod"]["requested_at"]["nvidia.com/gpu"]}}
    assert set(document["pod"]["requested_at"]["nvidia.com/gpu"]) == {"layer", "path", "file", "line", "column"}
    for pool in document["pools"]:
        assert set(pool) == {"name", "at", "source", "fits", "schedulable", "requests", "reasons", "preferences",
                             "pods_per_node",
                             "nodes_needed", "nodes_max", "usable_nodes", "nodes_taking_none", "pending", "reserves",
                             "unchecked", "notes", "warnings"}
        assert set(pool["at"]) == {"file", "line", "column"}
        for reason in pool["reasons"]:
            assert set(reason) == {"plugin", "reason", "detail", "profile", "pool", "rule"}
    a100 = pools(document)["a100"]
    assert a100["source"] == "nodes+facts" and pools(document)["t4"]["source"] == "nodes"
    assert set(a100["reserves"]) == {"pods", "nodes", "gpus", "node_hours", "gpu_hours", "price_per_node_hour", "cost"}
    assert set(a100["nodes_max"]) == {"value", "from", "layer", "at"}


def test_the_facts_add_to_a_listed_pool_and_what_they_say_otherwise_is_a_note(cluster):
    """The nodes decide what a pool offers; a facts pool of the same name adds its node count and price, and a value
    that disagrees with the nodes is a note, each side at its line."""
    cluster["facts_file"].write_text(FACTS + "    allocatable: {nvidia.com/gpu: 4}\n    labels: {gpu-type: h100}\n")
    document, _ = fit(cluster, "gpu-large")
    a100 = pools(document)["a100"]
    assert a100["fits"] is True and a100["nodes_max"]["value"] == 16  # the nodes' 8 GPUs count, the facts' 16 nodes
    gpus = line_of(cluster["nodes"], '"nvidia.com/gpu": "8"')
    assert a100["notes"] == [
        f"the facts give nvidia.com/gpu 4 ({cluster['facts_file']}:9:35) but the nodes 8 "
        f"({cluster['nodes_file']}:{gpus}:39): the nodes count",
        "the facts give label gpu-type=h100 but the nodes gpu-type=a100: the nodes count"]


H100 = {"cpu": "190", "memory": "183033764Ki", "nvidia.com/gpu": "8", "pods": "110", "ephemeral-storage": "3000Gi"}


@pytest.fixture
def h100_project(tmp_path: Path, monkeypatch) -> Path:
    """A platform `h100` profile extending gpu-large with nnodes 1:8, a team layer, facts stating Kueue, and a node
    list of one cloud pool of 3 nodes, one of them cordoned; the working folder is the project."""
    (tmp_path / "platform").mkdir()
    (tmp_path / "team").mkdir()
    (tmp_path / "platform" / "h100.yaml").write_text('extends: gpu-large\nelastic:\n  nnodes: "1:8"\n')
    (tmp_path / "team" / "h100.yaml").write_text("elastic:\n  rdzv_configs:\n    join_timeout: 2400\n")
    (tmp_path / "platform" / "_cluster-facts.yaml").write_text(
        "nodes: _nodes.json\nkueue:\n  wait_for_pods_ready: {enable: true, timeout: 600}\n")
    nodes = pool_nodes("h100", 3, H100, taints=[GPU_TAINT], labels=GPU_LABELS)
    nodes[2]["spec"]["unschedulable"] = True
    write_node_list(tmp_path / "platform" / "_nodes.json", *nodes)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_validate_warns_only_about_profiles_in_use_once_in_short_lines_relative_to_the_working_folder(h100_project):
    result = invoke(["validate", "--platform", "platform", "--team", "team"])
    assert result.exit_code == 0
    warnings = [line for line in result.stderr.splitlines() if ": warning: " in line]
    # one real problem: 6 of the 8 Worker pods find no node; no builtin profile the project never uses is named
    assert len(warnings) == 1 and warnings[0].startswith(
        "platform/h100.yaml:3:11: [platform] elastic.nnodes: warning: 6 of the 8 pods of nnodes 1:8 stay Pending in "
        "every pool it fits (in `h100`, the fewest)")
    assert "1 warning" in result.stderr and "<profile" not in result.stderr and str(h100_project) not in result.stderr
    assert "waitForPodsReady (600 s, facts platform/_cluster-facts.yaml:3:" in result.unfolded
    assert invoke(["validate", "--platform", "platform", "--team", "team", "--strict"]).exit_code == 1


def test_fit_puts_a_cordoned_node_in_its_pool_and_states_the_pods_left_pending(h100_project):
    result = invoke(["fit", "h100", "--platform", "platform", "--team", "team", "-o", "text"])
    lines = result.stdout.splitlines()
    assert lines[1].split()[:7] == ["h100", "yes", "1-8", "of", "2,", "6", "Pending"]
    assert len(lines[1:3]) == 2 and not lines[2].strip()  # one pool: the cordoned node is not a pool of its own
    assert "  1 of its 3 nodes takes no pod of the job:" in lines
    assert any(line.startswith("    h100-2: node(s) were unschedulable (platform/_nodes.json:") for line in lines)
    assert "  Pending: 6 of the job's 8 pods find no node" in lines
    assert "its ClusterQueue's quota holds 48 nvidia.com/gpu for the 6 that never start" in result.stdout
    document, _ = fit_json(h100_project)
    [pool] = document["pools"]
    assert (document["pods_created"], pool["pending"], pool["usable_nodes"]) == (8, 6, 2)


def fit_json(project: Path) -> tuple[dict, str]:
    result = invoke(["fit", "h100", "--platform", "platform", "--team", "team", "-o", "json"])
    return json.loads(result.stdout), result.stderr


def test_a_node_offer_is_shown_in_the_unit_of_the_request(h100_project):
    (h100_project / "team" / "h100.yaml").write_text(
        "pod_template:\n  spec:\n    containers:\n      - name: primary\n"
        "        resources: {requests: {memory: 1000Gi}}\n")
    result = invoke(["fit", "h100", "--platform", "platform", "--team", "team", "-o", "text"])
    assert result.exit_code == 1
    assert "the pod requests 1000Gi memory, a node offers 174.6Gi" in result.stdout


def test_a_fixed_nnodes_needs_one_number_of_nodes(tmp_path):
    """`nnodes: 2` needs 2 nodes, said once: before, `1 pod per node: 2 to 2 nodes`."""
    (tmp_path / "facts.yaml").write_text("node_pools:\n  cpu:\n    allocatable: {cpu: \"3\", memory: 3Gi}\n"
                                         "    nodes: 4\n")
    for nnodes, said in (("2", "1 pod per node: 2 nodes;"), ("1", "1 pod per node: 1 node;"),
                         ('"1:3"', "1 pod per node: 1 to 3 nodes;")):
        (tmp_path / "two.yaml").write_text(f"extends: cpu-small\nelastic: {{nnodes: {nnodes}}}\n")
        result = invoke(["fit", "two", "--team", str(tmp_path), "--facts", str(tmp_path / "facts.yaml"), "-o", "text"])
        assert result.exit_code == 0 and said in result.stdout, result.stdout
