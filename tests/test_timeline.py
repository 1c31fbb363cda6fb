"""``kfdefaults timeline`` and the clock lints: each reported failure where two clocks disagree is a warning (an
error where the job cannot start) at one side's line, naming the other side's line; the timeline traces every figure
to the line or the named default that set it, fits 80 columns, and says unknown for what the facts do not state.

The torch runs that hold the timeline's first clock to what torch raises are ``tests/test_timeline_torch_runs.py``.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_runner import invoke

FACTS = """\
node_start: {typical: 90, worst: 600}
image_pull: {typical: 40, worst: 420}
"""
"""A cluster whose cold node starts 130 s (typical) to 1020 s (worst) after a hot one."""


@pytest.fixture
def platform(tmp_path: Path) -> Path:
    folder = tmp_path / "platform"
    folder.mkdir()
    (folder / "_cluster-facts.yaml").write_text(FACTS)
    return folder


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def facts(platform: Path, more: str) -> Path:
    return write(platform, "_cluster-facts.yaml", FACTS + textwrap.dedent(more))


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def render(platform: Path, name: str, *args: str):
    return invoke(["render", name, "--only-platform", str(platform), "--target", "flytekit", *args])


def warnings_of(result) -> list[str]:
    return [line for line in result.unfolded.splitlines() if ": warning: " in line]


def timeline(platform: Path, name: str, *args: str) -> dict:
    result = invoke(["timeline", name, "--only-platform", str(platform), "--target", "flytekit", "-o", "json", *args])
    assert result.exit_code == 0, result.unfolded
    return json.loads(result.stdout)


def scenario(document: dict, key: str) -> dict:
    [found] = [s for s in document["scenarios"] if s["key"] == key]
    return found


# --- one lint per reported failure, naming both lines -----------------------------------------------------------------


def test_kueue_evicting_a_job_whose_image_is_still_pulling(platform):
    """Kueue's waitForPodsReady (5 minutes by default) evicts the pods while a cold node still pulls the image."""
    path = facts(platform, "kueue:\n  wait_for_pods_ready: {enable: true}\n")
    write(platform, "two.yaml", "extends: cpu-small\nelastic:\n  nnodes: 2\n"
                                "  rdzv_configs: {join_timeout: 1800, read_timeout: 1800}\n")
    [warning] = [w for w in warnings_of(render(platform, "two")) if "Kueue" in w]
    kueue = line_of(path, "wait_for_pods_ready")
    assert warning.startswith(f"{path}:{kueue}:33: [facts] kueue.wait_for_pods_ready.timeout: warning: Kueue's "
                              f"waitForPodsReady timeout is 300 s")
    assert "Kueue's default waitForPodsReady.timeout, 5 minutes" not in warning  # the location says it, once
    assert f"node_start worst 600 s at {path}:1:13; image_pull worst 420 s at {path}:2:13" in warning
    first = scenario(timeline(platform, "two"), "start-cold-host")["first"]
    assert (first["clock"], first["at"]["earliest"], first["error"]) == ("kueue_wait", 300, "Evicted (PodsReadyTimeout)")
    # a Kueue that waits long enough (the worst start plus join_timeout): no warning
    facts(platform, "kueue:\n  wait_for_pods_ready: {enable: true, timeout: 3000}\n")
    assert not [w for w in warnings_of(render(platform, "two")) if "Kueue" in w]


def test_an_elastic_range_whose_last_call_is_below_the_start_spread(platform):
    """nnodes MIN:MAX: the round closes last_call_timeout (30 s) after MIN nodes are in; the late node then fails
    the restart that admits it with DistStoreError (measured; not RendezvousClosedError)."""
    profile = write(platform, "range.yaml", """\
        extends: cpu-small
        elastic:
          nnodes: "2:4"
        """)
    [warning] = [w for w in warnings_of(render(platform, "range")) if "last_call_timeout" in w]
    facts_file = platform / "_cluster-facts.yaml"
    # the default has no line: the finding is at nnodes', and names the facts' lines
    # the facts state no torch.version: the default is the local torch's, said to be assumed
    local = importlib.metadata.version("torch")
    assert warning.startswith(f"{profile}:3:11: [platform] elastic.rdzv_configs.last_call_timeout: warning: nnodes "
                              "2:4 with last_call_timeout 30 s (torch default (dynamic_rendezvous.py RendezvousTimeout); "
                              f"the local torch {local} assumed (the facts state no torch.version))")
    assert f"{facts_file}:1:13" in warning and f"{facts_file}:2:13" in warning and "DistStoreError" in warning
    # set in the profile: at its own line
    write(platform, "range.yaml", 'extends: cpu-small\nelastic:\n  nnodes: "2:4"\n  rdzv_configs: {last_call_timeout: 60}\n')
    [warning] = [w for w in warnings_of(render(platform, "range")) if "last_call_timeout" in w]
    assert warning.startswith(f"{profile}:4:37: [platform] elastic.rdzv_configs.last_call_timeout: warning: nnodes "
                              f"2:4 with last_call_timeout 60 s ([platform] {profile}:4:37)")
    # the late node admitted instead: no warning
    render_args = ("--set", "pod_template.spec.containers[name=primary].env[name=TORCH_DISABLE_SHARE_RDZV_TCP_STORE]"
                            ".value=1")
    assert not [w for w in warnings_of(render(platform, "range", *render_args)) if "last_call_timeout" in w]


def test_a_read_timeout_below_the_spread_when_the_store_host_starts_last(platform):
    """flytekit#3419: the c10d store's read_timeout (60 s) bites first when the pod hosting the store starts last."""
    profile = write(platform, "host.yaml", """\
        extends: cpu-small
        elastic:
          nnodes: 2
          rdzv_configs: {join_timeout: 1800, read_timeout: 60}
        """)
    [warning] = [w for w in warnings_of(render(platform, "host")) if "read_timeout is" in w]
    facts_file = platform / "_cluster-facts.yaml"
    assert warning.startswith(f"{profile}:4:52: [platform] elastic.rdzv_configs.read_timeout: warning: read_timeout "
                              f"is 60 s ([platform] {profile}:4:52), shorter than the worst start spread, 1020 s "
                              f"(node_start worst 600 s at {facts_file}:1:13; image_pull worst 420 s at {facts_file}:2:13)")
    assert "flytekit#3419" in warning
    assert not [w for w in warnings_of(render(platform, "host")) if "join_timeout is" in w]  # 1800 s covers the spread
    first = scenario(timeline(platform, "host"), "start-cold-host")["first"]
    assert (first["clock"], first["who"], first["error"]) == ("read_timeout", "the other nodes",
                                                              "RendezvousConnectionError")
    assert (first["at"]["earliest"], first["at"]["latest"]) == (60, 240)


def test_a_deadline_and_a_task_timeout_that_count_the_wait_for_nodes_and_images(platform):
    path = facts(platform, "flyte: {task_timeout: 1200}\n")
    profile = write(platform, "deadline.yaml", """\
        extends: cpu-small
        elastic:
          nnodes: 2
          rdzv_configs: {join_timeout: 900, read_timeout: 1800}
          run_policy: {active_deadline_seconds: 1500}
        """)
    found = [w for w in warnings_of(render(platform, "deadline")) if "below the worst start" in w]
    assert [w.split(": warning: ")[0] for w in found] == [
        f"{path}:3:23: [facts] flyte.task_timeout", f"{profile}:5:41: [platform] elastic.run_policy.active_deadline_seconds"]
    for warning in found:  # each names the start's facts and the join_timeout's line
        assert f"{path}:1:13" in warning and f"join_timeout 900 s ([platform] {profile}:4:32) = 1920 s" in warning
    # shorter than even a typical cold start: the job cannot start; an error, and nothing is printed
    result = render(platform, "deadline", "--set", "elastic.run_policy.active_deadline_seconds=120")
    assert result.exit_code == 1 and result.stdout == ""
    assert (f"--set elastic.run_policy.active_deadline_seconds=120: [task] elastic.run_policy.active_deadline_seconds: "
            f"active_deadline_seconds is 120 s ([task] --set elastic.run_policy.active_deadline_seconds=120), no longer "
            f"than a cold node's typical start, 130 s (node_start typical 90 s at {path}:1:13; image_pull typical 40 s "
            f"at {path}:2:13)") in result.unfolded
    assert render(platform, "deadline", "--facts", "none").exit_code == 0  # no facts, no judgement


@pytest.mark.parametrize("torch,heartbeat", [("2.5.1", 480), ("2.3.1", 600)])
def test_a_hung_collective_past_the_platforms_bound_with_the_images_torch_defaults(platform, torch, heartbeat):
    """A hung collective ends after (max_restarts + 1) x (collective timeout + heartbeat timeout + monitor interval),
    with NCCL's defaults of the torch in the image."""
    path = facts(platform, f'torch: {{version: "{torch}"}}\nmax_hang: 3600\n')
    [warning] = [w for w in warnings_of(render(platform, "gpu-large")) if "hung collective" in w]
    gpu_large = Path(__file__).parent.parent / "profiles" / "gpu-large.yaml"
    attempt = 600 + heartbeat + 5
    assert warning.startswith(f"{gpu_large.resolve()}:6:17: [builtin] elastic.max_restarts: warning: a hung collective "
                              f"ends after {4 * attempt} s at worst")
    assert f"above the cluster's max_hang of 3600 s ({path}:4:11)" in warning
    assert f"nccl_heartbeat {heartbeat} s (torch {torch} default" in warning
    hung = scenario(timeline(platform, "gpu-large"), "hung-collective")
    assert hung["worst"] == 4 * attempt and hung["outcome"] == "fails"
    # the profile's own collective timeout bounds it (kfdefaults applies it under flytekit too)
    found = warnings_of(render(platform, "gpu-large", "--set", "elastic.nccl_collective_timeout_sec=60",
                               "--set", "elastic.max_restarts=1"))
    assert not [w for w in found if "hung collective" in w]


def test_an_nccl_setting_the_images_torch_does_not_read(platform):
    path = facts(platform, 'torch: {version: "2.1.2"}\n')
    profile = write(platform, "old.yaml", """\
        extends: [gpu-large, nccl-fail-fast]
        """)
    found = [w for w in warnings_of(render(platform, "old")) if "does not read it" in w]
    fail_fast = (Path(__file__).parent.parent / "profiles" / "nccl-fail-fast.yaml").resolve()
    names = [w.split("env[name=")[1].split("]")[0] for w in found]
    assert names == ["TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_ENABLE_MONITORING", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"]
    assert found[0].startswith(f"{fail_fast}:")
    assert f"torch 2.1.2 of this profile's image ([facts] {path}:3:18)" in found[0] and \
        "it reads NCCL_ASYNC_ERROR_HANDLING" in found[0]
    assert profile.exists()
    facts(platform, 'torch: {version: "2.2.0"}\n')
    assert not [w for w in warnings_of(render(platform, "old")) if "does not read it" in w]


# --- the command --------------------------------------------------------------------------------------------------------


def test_the_timeline_text_fits_80_columns_and_traces_every_figure(platform):
    facts(platform, "kueue:\n  wait_for_pods_ready: {enable: true}\nflyte: {task_timeout: 86400}\n"
                    'torch: {version: "2.5.1"}\n')
    result = invoke(["timeline", "gpu-large", "--only-platform", str(platform), "--target", "flytekit"])
    assert result.exit_code == 0, result.unfolded
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines if str(platform) not in line)
    text = " ".join(result.stdout.split())
    elastic_default = (Path(__file__).parent.parent / "profiles" / "elastic-gpu-default.yaml").resolve()
    assert f"read_timeout 900 s builtin {elastic_default}:7:19" in text or \
           "read_timeout 900 s builtin profiles/elastic-gpu-default.yaml:7:19" in text
    # the default of the facts' torch, named with it
    assert "last_call_timeout 30 s torch 2.5.1 default (dynamic_rendezvous.py RendezvousTimeout)" in text
    assert "monitor_interval 5 s flytekitplugins.kfpytorch.Elastic default (monitor_interval)" in text
    assert "nccl_heartbeat 480 s torch 2.5.1 default (ProcessGroupNCCL heartbeat monitor; pytorch#133028)" in text
    assert "kueue_wait 300 s facts " in text and \
        "(Kueue default, apis/config/v1beta1/defaults.go defaultPodsReadyTimeout)" in text
    for key in ("start-cold-worker", "start-cold-host", "never-worker", "never-host", "lost-peer", "hung-collective"):
        assert f"[{key}]" in text
    assert "first: kueue_wait at 300 s, on the job (Evicted (PodsReadyTimeout))" in text
    assert "per attempt: pg_timeout_nccl 600 + nccl_heartbeat 480 + monitor_interval 5 = 1085 s; x (max_restarts 3 + 1)" \
        in text


def test_a_fact_not_stated_is_unknown_never_guessed(platform):
    write(platform, "_cluster-facts.yaml", "image_pull: {typical: 40, worst: 420}\n")
    document = timeline(platform, "gpu-large")
    clocks = {c["name"]: c for c in document["clocks"]}
    assert (clocks["kueue_wait"]["seconds"], clocks["kueue_wait"]["known"]) == (None, False)
    assert (clocks["task_timeout"]["seconds"], clocks["task_timeout"]["known"]) == (None, False)
    assert clocks["nccl_heartbeat"]["known"] is False and "480 s from 2.5" in clocks["nccl_heartbeat"]["note"]
    assert document["torch"] is None and document["start"]["missing"] == ["node_start"]
    assert document["start"]["worst"] == 420 and document["start"]["complete"] is False
    assert scenario(document, "hung-collective")["outcome"] == "unknown"
    result = invoke(["timeline", "gpu-large", "--only-platform", str(platform), "--target", "flytekit"])
    assert "a cold node starts at least 40 s (typical), at least 420 s (worst)" in " ".join(result.stdout.split())
    assert "node_start: unknown (not in the facts)" in result.stdout


def test_a_cold_start_the_facts_do_not_state_never_reads_as_the_job_runs(platform):
    """Whether a late node is waited for depends on how late it is: unstated, the outcome is unknown, not "runs"."""
    write(platform, "_cluster-facts.yaml", "flyte: {task_timeout: 86400}\n")  # facts, but no start times
    gpu, cpu = timeline(platform, "gpu-large"), timeline(platform, "cpu-small")
    assert [scenario(gpu, k)["outcome"] for k in ("start-cold-worker", "start-cold-host")] == ["unknown", "unknown"]
    assert scenario(cpu, "start-cold-pod")["outcome"] == "unknown"
    result = invoke(["timeline", "gpu-large", "--only-platform", str(platform), "--target", "flytekit"])
    assert "the job runs" not in result.stdout.split("[start-cold-host]")[1].split("[never-worker]")[0]
    # one part stated: the store's host at least 420 s late may still come within read_timeout (900 s), or not
    write(platform, "_cluster-facts.yaml", "image_pull: {typical: 40, worst: 420}\n")
    host = scenario(timeline(platform, "gpu-large"), "start-cold-host")
    assert (host["outcome"], host["title"]) == \
        ("unknown", "the store's host starts cold, at least 420 s after the others (worst)")
    # both parts stated: a host 780 s late is waited for (read_timeout 900 s), and the timeline says so
    write(platform, "_cluster-facts.yaml", "node_start: {typical: 120, worst: 480}\nimage_pull: {typical: 60, worst: 300}\n")
    host = scenario(timeline(platform, "gpu-large"), "start-cold-host")
    assert (host["outcome"], host["title"]) == ("runs", "the store's host starts cold, 780 s after the others (worst)")


def test_without_facts_the_timeline_says_where_facts_come_from(platform, tmp_path):
    """A first `kfdefaults timeline NAME` finds no facts: every figure is unknown, and standard error says why."""
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke(["timeline", "gpu-large", "--only-platform", str(empty), "--target", "flytekit", "-o", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["start"]["missing"] == ["node_start", "image_pull"]
    assert result.unfolded == ("kfdefaults: no cluster facts: every fact is unknown (state them in a platform folder's "
                             "_cluster-facts.yaml, or name a file with --facts FILE, KFDEFAULTS_CLUSTER_FACTS or "
                             "[tool.kfdefaults] cluster_facts)\n")
    result = invoke(["timeline", "gpu-large", "--only-platform", str(platform), "--target", "flytekit"])
    assert result.exit_code == 0 and result.unfolded == ""  # the platform folder's facts: nothing to say
    for args, env in ((["--facts", "none"], {}), ([], {"KFDEFAULTS_CLUSTER_FACTS": "none"})):  # none, as asked
        result = invoke(["timeline", "gpu-large", "--only-platform", str(platform), "--target", "flytekit", *args],
                        env=env)
        assert result.exit_code == 0 and result.unfolded == "" and "torch unknown" in result.stdout


def test_the_start_times_are_those_of_the_pool_the_profile_fits(platform):
    facts(platform, """\
        node_pools:
          a100:
            labels: {gpu: a100}
            taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
            allocatable: {cpu: "95", memory: 1100Gi, nvidia.com/gpu: 8}
            nodes: 16
            node_start: {typical: 240, worst: 900}
          cpu:
            allocatable: {cpu: "32", memory: 128Gi}
            nodes: 10
        """)
    document = timeline(platform, "gpu-large")
    assert document["pool"] == {"name": "a100", "why": "the one pool it fits"}
    assert document["start"]["worst"] == 900 + 420
    assert timeline(platform, "gpu-large", "--pool", "cpu")["start"]["worst"] == 600 + 420
    result = invoke(["timeline", "gpu-large", "--only-platform", str(platform), "--pool", "h100"])
    assert result.exit_code == 1 and result.unfolded == "kfdefaults: no node pool named 'h100' (the pools: a100, cpu)\n"


POOLS = """\
    node_pools:
      a100:
        labels: {gpu: a100}
        taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
        allocatable: {cpu: "95", memory: 1100Gi, nvidia.com/gpu: 8}
        nodes: 16
        %s
      h100:
        labels: {gpu: h100}
        taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
        allocatable: {cpu: "200", memory: 1800Gi, nvidia.com/gpu: 8}
        nodes: 4
    """


def test_of_several_pools_it_fits_one_whose_start_is_unknown_is_never_called_the_slowest(platform):
    """Two pools fit: with start times known for one only, the other may be the slower; none is guessed."""
    write(platform, "_cluster-facts.yaml", textwrap.dedent(POOLS % "node_start: {typical: 240, worst: 900}")
          + "image_pull: {typical: 40, worst: 420}\n")  # a100: 1320 s at worst; h100: at least 420 s
    document = timeline(platform, "gpu-large")
    assert document["pool"] == {"name": "h100", "why": "of the pools it fits, a100, h100, one whose start the facts "
                                                       "do not state, which may be the slowest"}
    assert document["start"]["worst"] == 420 and document["start"]["complete"] is False
    # every start stated (h100's the cluster's, 1020 s at worst): the slowest is chosen
    write(platform, "_cluster-facts.yaml", textwrap.dedent(POOLS % "node_start: {typical: 240, worst: 900}") + FACTS)
    assert timeline(platform, "gpu-large")["pool"] == {
        "name": "a100", "why": "the slowest to start of the pools it fits: a100, h100"}
    write(platform, "_cluster-facts.yaml", textwrap.dedent(POOLS % "node_start: {typical: 60, worst: 120}") + FACTS)
    assert timeline(platform, "gpu-large")["pool"]["name"] == "h100"

def test_flyte2_the_plugins_nccl_settings_are_the_clocks(platform):
    facts(platform, 'torch: {version: "2.5.1"}\n')
    result = invoke(["timeline", "gpu-large", "--only-platform", str(platform), "--target", "flyte2", "-o", "json",
                     "--set", "elastic.nccl_collective_timeout_sec=120"])
    clocks = {c["name"]: c for c in json.loads(result.stdout)["clocks"]}
    assert clocks["nccl_heartbeat"]["seconds"] == 300
    assert clocks["nccl_heartbeat"]["source"]["default"] == "flyteplugins.pytorch.Elastic default (nccl_heartbeat_timeout_sec)"
    assert clocks["pg_timeout_nccl"]["seconds"] == 120 and clocks["pg_timeout_nccl"]["setting"] == \
        "elastic.nccl_collective_timeout_sec"
    assert clocks["pg_timeout_nccl"]["source"]["default"] is None
    assert clocks["monitor_interval"]["seconds"] == 3 and clocks["pg_timeout_other"]["seconds"] == 1800


def test_one_node_has_no_rendezvous_to_wait_for_but_kueue_and_its_workers_collectives(platform):
    facts(platform, "kueue:\n  wait_for_pods_ready: {enable: true}\n")
    document = timeline(platform, "cpu-small")
    assert document["nnodes"] == {"min": 1, "max": 1}
    assert [s["key"] for s in document["scenarios"]] == ["start-cold-pod", "hung-collective"]  # two workers
    first = scenario(document, "start-cold-pod")["first"]
    assert (first["clock"], first["at"]["earliest"]) == ("kueue_wait", 300)
    hung = scenario(document, "hung-collective")  # gloo: 30 minutes, torch's default for every release
    assert hung["worst"] == 1800 + 5 and hung["first"]["error"] == "ChildFailedError"
    assert [s["key"] for s in timeline(platform, "cpu-small", "--set", "elastic.nproc_per_node=1")["scenarios"]] == \
        ["start-cold-pod"]


@pytest.mark.slow
def test_render_without_facts_imports_nothing_of_the_clocks(tmp_path):
    """The clocks, the timeline and their lints are imported only where facts are stated."""
    code = ("import sys; from kfdefaults.cli import run; run(['render', 'gpu-large', '--facts', 'none']); "
            "print(sorted(m for m in sys.modules if 'clock' in m or 'timeline' in m or 'torch_defaults' in m))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"KFDEFAULTS_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.unfolded
    assert done.stdout.splitlines()[-1] == "[]"


def test_a_bad_fact_is_an_error_at_its_line_and_nothing_is_printed(platform):
    path = facts(platform, "max_hang: -5\n")
    result = invoke(["timeline", "gpu-large", "--only-platform", str(platform)])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.unfolded.startswith(f"{path}:3:11: max_hang: ")


def test_the_pool_option_s_help_says_which_pool_of_several_is_taken():
    from kfdefaults.cli.timeline import build

    help_text = " ".join(build("kfdefaults timeline").format_help().split())
    assert "(default: the one the profile fits; of several, the slowest to start)" in help_text
    # and so does the description: the pool it fits, of several the slowest, not only when it fits one
    assert ("The start times are those of --pool, else of the node pool the profile fits (of several, the slowest "
            "to start), else the cluster's.") in help_text
