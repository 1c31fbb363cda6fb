"""The cluster's facts and node list, as a pull request's author writes them: whatever they hold or name, ``fit``,
``timeline``, ``validate`` and ``render`` answer within bounds, at the line of the problem, without a traceback, and
show every text they quote as an escape. Each case runs the command line in a process of its own, as a CI job does.

The node lists are built with the kubernetes client's models (tests/node_lists.py), as kubectl prints them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from node_lists import GPU_TAINT, line_of, pool_nodes, write_node_list

from kfdefaults.validate.facts import MAX_PRICE

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")

A100 = {"cpu": "95", "memory": "1300Gi", "nvidia.com/gpu": "8", "pods": "110", "ephemeral-storage": "3000Gi"}


@pytest.fixture
def platform(tmp_path: Path) -> Path:
    """A platform folder whose facts name a node list beside them, and an empty team folder beside it."""
    folder = tmp_path / "platform"
    folder.mkdir()
    (tmp_path / "team").mkdir()
    write_node_list(folder / "_nodes.json", *pool_nodes("a100", 2, A100, taints=[GPU_TAINT]))
    (folder / "_cluster-facts.yaml").write_text("nodes: _nodes.json\n")
    return folder


def facts(platform: Path, text: str) -> Path:
    path = platform / "_cluster-facts.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def kfdefaults(platform: Path, *args: str, stdin: int | None = subprocess.DEVNULL,
               timeout: float = 120) -> subprocess.CompletedProcess:
    """``kfdefaults ARGS --platform PLATFORM --team TEAM`` from the folder above them; no traceback, whatever it
    answers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env.update(KFDEFAULTS_CACHE_DIR=os.environ["KFDEFAULTS_CACHE_DIR"], KFDEFAULTS_NO_ENTRY_POINTS="1")
    proc = subprocess.run([KFDEFAULTS, *args, "--platform", "platform", "--team", "team"], cwd=platform.parent,
                          env=env, stdin=stdin, capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-3000:]
    return proc


# --- what the facts' `nodes` may name -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["a pipe", "a device", "standard input", "a folder"])
def test_the_facts_node_list_is_a_regular_file_never_a_pipe_or_a_device(platform, kind):
    """`nodes:` names a file of the repository: a FIFO in its place (which no writer ever opens), a link to
    `/dev/zero` or to `/dev/stdin` (a pipe the CI step never closes) is refused at once, at the node list's first
    line, as a profile in such a place is; only `--nodes` on the command line reads a pipe (`<(kubectl ...)`). A
    folder in its place is refused the same way, at its name."""
    target = platform / "_nodes.json"
    target.unlink()
    if kind == "a pipe":
        os.mkfifo(target)
    elif kind == "a folder":
        target.mkdir()
    else:
        target.symlink_to("/dev/zero" if kind == "a device" else "/dev/stdin")
    for command, status in ((["fit", "gpu-large"], 2), (["timeline", "gpu-large"], 1), (["validate"], 1),
                            (["render", "gpu-large"], 1)):
        proc = kfdefaults(platform, *command, stdin=subprocess.PIPE, timeout=60)  # a pipe left open
        assert proc.returncode == status, (command, proc.stderr)
        [line] = [line for line in proc.stderr.splitlines() if "_nodes.json" in line]
        assert line.startswith("platform/_nodes.json:1:1: ") and "not a regular file" in line, line
        assert proc.stdout == "" or command == ["validate"], proc.stdout


# --- how much a node list may hold ----------------------------------------------------------------------------------


def copies(count: int, pools: int) -> list[dict]:
    """``count`` nodes as kubectl prints them, named ``n0``, ``n1``..., spread over ``pools`` pools (a label of their
    own: nodes with other labels are other pools); without the images they hold, so that 20,000 fit in 64 MiB."""
    [model] = pool_nodes("a100", 1, A100, taints=[GPU_TAINT])
    del model["status"]["images"]
    nodes = []
    for i in range(count):
        node = json.loads(json.dumps(model))
        node["metadata"]["name"] = f"n{i}"
        node["metadata"]["labels"] = {"cloud.google.com/gke-nodepool": f"p{i % pools}", "kubernetes.io/hostname": f"n{i}"}
        nodes.append(node)
    return nodes


@pytest.mark.slow
def test_a_node_list_of_more_nodes_than_any_cluster_has_is_refused_at_the_first_one_past_the_bound(platform):
    """20,000 nodes are read (Kubernetes supports clusters of 5,000; GKE of 15,000); the node past them is an
    error at its line, before a pool is formed: 64 MiB of tiny nodes took two minutes and 1.4 GB for one pool."""
    text = write_node_list(platform / "_nodes.json", *copies(20_001, 1))
    before, name = line_of(text, '"name": "n19999"'), line_of(text, '"name": "n20000"')
    for command, status in ((["fit", "gpu-large"], 2), (["validate"], 1)):
        proc = kfdefaults(platform, *command)
        [error] = [e for e in proc.stderr.splitlines() if e.startswith("platform/_nodes.json:")]
        assert "more than 20,000 nodes" in error, error
        assert before < int(error.split(":")[1]) < name  # the item of node n20000
        assert proc.returncode == status


@pytest.mark.slow
def test_a_node_list_of_more_pools_than_any_cluster_has_is_refused_at_the_first_one_past_the_bound(platform):
    """1,000 pools are judged (every profile against every pool: 10,000 single-node pools took a minute and a
    half of `validate` with the builtin profiles alone); the pool past them is an error at its first node's name,
    and the facts' own pools count too."""
    text = write_node_list(platform / "_nodes.json", *copies(1_001, 1_001))
    line = line_of(text, '"name": "n1000"')
    for command, status in ((["fit", "gpu-large"], 2), (["validate"], 1), (["render", "gpu-large"], 1)):
        proc = kfdefaults(platform, *command)
        [error] = [e for e in proc.stderr.splitlines() if "more than 1,000 node pools" in e]
        assert error.startswith(f"platform/_nodes.json:{line}:"), error
        assert proc.returncode == status
    write_node_list(platform / "_nodes.json", *copies(1_000, 1_000))
    assert kfdefaults(platform, "fit", "gpu-large", "-o", "json").returncode == 0
    facts(platform, """\
        nodes: _nodes.json
        node_pools:
          scaled-to-zero: {allocatable: {nvidia.com/gpu: 8}}
        """)
    proc = kfdefaults(platform, "fit", "gpu-large")
    assert proc.returncode == 2 and proc.stderr.startswith("platform/_cluster-facts.yaml:3:3: "), proc.stderr


@pytest.mark.slow
def test_pools_of_many_taints_against_a_pod_of_many_tolerations_are_judged_in_seconds(platform):
    """1,000 pools of 200 taints each, and a profile of 1,000 tolerations that tolerate all but each node's last
    taint: tried pair by pair, one ``fit`` took minutes (pools x taints x tolerations); the tolerations are
    indexed, and the answer is the scheduler's, at the last taint."""
    nodes = copies(1_000, 1_000)
    taints = [{"key": f"t{j}.example.com/x", "value": "v", "effect": "NoSchedule"} for j in range(200)]
    for node in nodes:
        node["spec"]["taints"] = taints
    text = write_node_list(platform / "_nodes.json", *nodes)
    tolerations = [f"{{key: other{j}.example.com/x, value: v}}" for j in range(801)] + [
        f"{{key: t{j}.example.com/x, operator: Equal, value: v, effect: NoSchedule}}" for j in range(199)]
    (platform.parent / "team" / "tolerant.yaml").write_text(
        "pod_template:\n  spec:\n    tolerations:\n" + "".join(f"      - {t}\n" for t in tolerations))
    proc = kfdefaults(platform, "fit", "tolerant", "-o", "json", timeout=90)
    assert proc.returncode == 1, proc.stderr
    pools = json.loads(proc.stdout)["pools"]
    assert len(pools) == 1_000 and not any(p["fits"] for p in pools)
    [reason] = [r for r in pools[0]["reasons"] if r["plugin"] == "TaintToleration"]
    assert reason["reason"] == "node(s) had untolerated taint {t199.example.com/x: v}"
    assert reason["pool"]["line"] == line_of(text, '"t199.example.com/x"') - 1  # the taint's opening brace


# --- what a node list may say, and how it is quoted ------------------------------------------------------------------

ESCAPES = "a\x1b]52;c;SGVsbG8=\x07\u202e<img src=x onerror=alert(1)>@security-team\n::error::pwned"


@pytest.mark.slow
@pytest.mark.parametrize("field, value, rule", [
    (("metadata", "name"), ESCAPES, "a Node's name is a DNS subdomain"),
    (("metadata", "name"), "n" * 254, "a Node's name is a DNS subdomain"),
    (("spec", "taints", 0, "value"), ESCAPES, "a taint's value is a label value"),
    (("spec", "taints", 0, "value"), "v" * (4 << 20), "a taint's value is a label value"),
])
def test_a_node_name_or_taint_value_the_api_server_refuses_is_an_error_at_its_line(platform, field, value, rule):
    """The API server keeps a Node's name as a DNS subdomain and a taint's value as a label value
    (pkg/apis/core/validation ValidateNodeName = NameIsDNSSubdomain, validateNodeTaints IsValidLabelValue): text
    no node holds, which fit, timeline and diff would print as a pool's name or a reason, is an error at its line.
    Before, a 4 MiB taint value was printed whole in every reason, and a name with control characters was a pool."""
    [node] = pool_nodes("a100", 1, A100, taints=[GPU_TAINT])
    target = node
    for key in field[:-1]:
        target = target[key]
    target[field[-1]] = value
    text = write_node_list(platform / "_nodes.json", node)
    line = line_of(text, json.dumps(value)[:40])
    for command, status in ((["fit", "gpu-large"], 2), (["timeline", "gpu-large"], 1), (["validate"], 1)):
        proc = kfdefaults(platform, *command)
        [error] = [e for e in proc.stderr.splitlines() if e.startswith("platform/_nodes.json:")]
        assert error.startswith(f"platform/_nodes.json:{line}:") and rule in error, error
        assert len(proc.stderr) < 2000 and "\x1b" not in proc.stderr and proc.returncode == status


@pytest.mark.slow
@pytest.mark.parametrize("node", [
    {"kind": "K" * (4 << 20)},
    {"kind": "Node", "metadata": {"name": "n1", "labels": {"k" * (4 << 20): "v"}}},
    {"kind": "Node", "metadata": {"name": "n1"}, "spec": {"taints": [{"key": "a", "effect": ["E" * (4 << 20)]}]}},
], ids=["kind", "label key", "taint effect"])
def test_a_huge_value_of_a_node_list_is_quoted_short(platform, node):
    """A message quotes what a node list holds as it quotes a profile's values: its start and its length, never
    4 MiB of it (errors.shown)."""
    (platform / "_nodes.json").write_text(json.dumps({"kind": "List", "items": [node]}))
    proc = kfdefaults(platform, "fit", "gpu-large")
    assert proc.returncode == 2 and proc.stderr.startswith("platform/_nodes.json:1:"), proc.stderr[:500]
    assert len(proc.stderr) < 1000 and "(4,194,3" in proc.stderr, proc.stderr[:1000]


# --- hostile facts: fit and timeline answer within their exit statuses -------------------------------------------------


def strict_json(text: str) -> dict:
    """JSON as RFC 8259 and every other reader than Python's take it: no NaN nor Infinity."""
    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.slow
@pytest.mark.parametrize("price", [".inf", ".nan", "1e308", "1000000001"])
def test_a_price_no_node_costs_is_an_error_at_its_line(platform, price):
    """A price per node-hour is a finite amount of at most 1,000,000,000 (any currency): before, `.inf` made
    `fit -o json` write `Infinity`, which is not JSON, and `1e308` times the hours of a job ended in `internal
    error: OverflowError`."""
    facts(platform, f"""\
        nodes: _nodes.json
        flyte: {{task_timeout: 2592000}}
        node_pools:
          a100:
            nodes: 16
            price_per_node_hour: {price}
        """)
    for command, status in ((["fit", "gpu-large"], 2), (["fit", "gpu-large", "-o", "json"], 2),
                            (["timeline", "gpu-large"], 1), (["validate"], 1)):
        proc = kfdefaults(platform, *command)
        assert proc.returncode == status, (command, proc.stdout[-500:], proc.stderr)
        assert proc.stderr.startswith("platform/_cluster-facts.yaml:6:26: node_pools.a100.price_per_node_hour: ")


@pytest.mark.slow
def test_the_largest_price_and_times_make_figures_and_json(platform):
    """At every bound at once (a billion per node-hour, 100,000 nodes held for the longest deadline a job takes),
    the cost is a figure and the JSON is JSON."""
    facts(platform, f"""\
        nodes: _nodes.json
        node_start: {{typical: 2592000, worst: 2592000}}
        node_pools:
          a100:
            nodes: 100000
            price_per_node_hour: {MAX_PRICE:.0f}
        """)
    (platform.parent / "team" / "long.yaml").write_text(textwrap.dedent("""\
        extends: gpu-large
        elastic:
          nnodes: "1:100000"
          run_policy: {active_deadline_seconds: 2147483647}
        """))
    proc = kfdefaults(platform, "fit", "long", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    [pool] = strict_json(proc.stdout)["pools"]
    assert pool["reserves"]["cost"] == 100_000 * 2147483647 / 3600 * MAX_PRICE, pool["reserves"]
    assert "per node-hour" in kfdefaults(platform, "fit", "long").stdout
    assert kfdefaults(platform, "timeline", "long", "-o", "json").returncode == 0


@pytest.mark.slow
def test_the_timeline_shows_a_pools_name_as_escapes_even_where_it_wraps(platform):
    """A pool named by the facts, with a line break, a tab and a terminal's escape in its name: the timeline writes
    each as its visible escape, as fit does, where before its wrapping had turned the line break into a space."""
    facts(platform, """\
        node_pools:
          "a100\\n::error::x\\tb\\e[2J":
            allocatable: {cpu: "96", memory: 1000Gi, nvidia.com/gpu: "8"}
            node_start: {typical: 5, worst: 10}
        """)
    (platform / "_nodes.json").unlink()
    text = kfdefaults(platform, "timeline", "gpu-large").stdout
    assert "start times: pool a100\\n::error::x\\tb\\x1b[2J's (the one pool it fits)" in text, text[:600]
    fit = kfdefaults(platform, "fit", "gpu-large").stdout
    assert "a100\\n::error::x\\tb\\x1b[2J" in fit, fit[:600]


@pytest.mark.parametrize("resource, amount, message", [
    ("vpc.amazonaws.com/efa", "-4", "`-4` is negative"),
    ("vpc.amazonaws.com/efa", '"4.5"', "`4.5` is not a whole number"),
    ("vpc.amazonaws.com/efa", '"1m"', "`1m` is not a whole number"),
    ("cpu", '"-1"', "`-1` is negative"),
    ('"rdma/\\e[2J**x**\\n| a |"', "32", "not a resource name"),
])
def test_an_allocatable_amount_or_resource_no_node_reports_is_an_error_at_its_line(platform, resource, amount,
                                                                                  message):
    """A pool's allocatable is what a node's status reports, which the API server keeps non-negative, whole for
    extended resources, under qualified names (ValidateNodeResources). Before, `vpc.amazonaws.com/efa: -4` made
    `fabric-efa`'s `auto` render a pod requesting -4 devices with exit 0, `"1m"` one requesting 0, and a resource
    name of escapes and Markdown was printed in the fabric warning."""
    facts(platform, f"""\
        node_pools:
          p5:
            taints: [{{key: nvidia.com/gpu, value: "true", effect: NoSchedule}}]
            allocatable: {{nvidia.com/gpu: 8, {resource}: {amount}}}
        """)
    (platform.parent / "team" / "train.yaml").write_text("extends: [gpu-large, fabric-efa]\nelastic: {nnodes: 2}\n")
    for command, status in ((["render", "train"], 1), (["fit", "train"], 2), (["validate"], 1)):
        proc = kfdefaults(platform, *command)
        assert proc.returncode == status, (command, proc.stdout[-500:], proc.stderr)
        first = proc.stderr.splitlines()[0]
        assert first.startswith("platform/_cluster-facts.yaml:4:") and message in first, (command, first)


def test_a_node_lists_resource_name_the_api_server_refuses_is_an_error_at_its_line(platform):
    """A node's allocatable is keyed by resource names, qualified names as the API server keeps them
    (ValidateNodeResources): before, a name of escapes, HTML and a workflow command was read as a fabric device
    (`rdma/...`) and printed in the pool's fabric warning."""
    [node] = pool_nodes("a100", 1, A100, taints=[GPU_TAINT])
    node["status"]["allocatable"]["rdma/" + ESCAPES] = "32"
    text = write_node_list(platform / "_nodes.json", node)
    line = line_of(text, json.dumps("rdma/" + ESCAPES)[:40])
    for command, status in ((["fit", "gpu-large"], 2), (["validate"], 1)):
        proc = kfdefaults(platform, *command)
        [error] = [e for e in proc.stderr.splitlines() if e.startswith("platform/_nodes.json:")]
        assert error.startswith(f"platform/_nodes.json:{line}:") and "is not a resource name" in error, error
        assert "\x1b" not in proc.stderr and proc.returncode == status
