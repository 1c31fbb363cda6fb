"""Kueue as the cluster runs it: its own Configuration document read through the facts (``kueue: {config: FILE}``),
each unstated field defaulted as that release's ``defaults.go`` does, and the clocks ``timeline`` and the lints
take from it: the PodsReady timeout, ``recoveryTimeout``, the requeue backoff, and whether Kueue queues the job at
all.

The configurations under ``tests/kueue_configs`` are the fields and values of Kueue's chart
(``charts/kueue/values.yaml``) at v0.19.2 and v0.14.8 (the latter with its ``waitForPodsReady`` block turned on).
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from cli_runner import invoke

from kfdefaults.check import kueue_defaults as kd
from kfdefaults.validate.kueue_config import go_duration

FIXTURES = Path(__file__).parent / "kueue_configs"

# --- the defaults table against the Go source ------------------------------------------------------------------------

_B1, _B2 = "apis/config/v1beta1/defaults.go", "apis/config/v1beta2/defaults.go"
_T = kd.TIMEOUT
GO_VALUES = [
    # (tag, file, line, what is there, API version, field, release, the value it gives)
    ("v0.13.0", _B1, 97, "WaitForPodsReady{Enable: false}", "v1beta1", "waitForPodsReady", "0.13", False),
    ("v0.14.8", _B1, 95, "WaitForPodsReady{Enable: false}", "v1beta1", "waitForPodsReady", "0.14", False),
    ("v0.19.2", _B1, 97, "WaitForPodsReady{Enable: false}", "v1beta1", "waitForPodsReady", "0.19", False),
    ("v0.13.0", _B1, 46, "defaultPodsReadyTimeout, 5 minutes", "v1beta1", "waitForPodsReady.timeout", "0.13", 300),
    ("v0.14.8", _B1, 46, "defaultPodsReadyTimeout, 5 minutes", "v1beta1", "waitForPodsReady.timeout", "0.14", 300),
    ("v0.19.2", _B1, 46, "defaultPodsReadyTimeout, 5 minutes", "v1beta1", "waitForPodsReady.timeout", "0.19", 300),
    ("v0.14.8", _B1, None, "no RecoveryTimeout default", "v1beta1", "waitForPodsReady.recoveryTimeout", "0.14", None),
    ("v0.15.0", _B1, None, "no RecoveryTimeout default", "v1beta1", "waitForPodsReady.recoveryTimeout", "0.15", None),
    ("v0.16.0", _B1, 98, "RecoveryTimeout = Timeout", "v1beta1", "waitForPodsReady.recoveryTimeout", "0.16", _T),
    ("v0.19.2", _B1, 100, "RecoveryTimeout = Timeout", "v1beta1", "waitForPodsReady.recoveryTimeout", "0.19", _T),
    ("v0.13.0", _B1, 100, "BlockAdmission = Enable", "v1beta1", "waitForPodsReady.blockAdmission", "0.13", True),
    ("v0.14.8", _B1, 98, "BlockAdmission = Enable", "v1beta1", "waitForPodsReady.blockAdmission", "0.14", True),
    ("v0.19.2", _B1, 101, "BlockAdmission = Enable", "v1beta1", "waitForPodsReady.blockAdmission", "0.19", True),
    ("v0.15.0", _B2, 94, "no WaitForPodsReady default", "v1beta2", "waitForPodsReady", "0.15", False),
    ("v0.18.6", _B2, 97, "no WaitForPodsReady default", "v1beta2", "waitForPodsReady", "0.18", False),
    ("v0.19.0", _B2, 99, "WaitForPodsReady = cmp.Or(..., &WaitForPodsReady{})", "v1beta2", "waitForPodsReady", "0.19",
     True),
    ("v0.19.2", _B2, 99, "WaitForPodsReady = cmp.Or(..., &WaitForPodsReady{})", "v1beta2", "waitForPodsReady", "0.19",
     True),
    ("v0.18.6", _B2, None, "no timeout default", "v1beta2", "waitForPodsReady.timeout", "0.18", None),
    ("v0.19.0", _B2, 48, "DefaultWaitForPodsReadyTimeout, 30 minutes", "v1beta2", "waitForPodsReady.timeout", "0.19",
     1800),
    ("v0.19.2", _B2, 48, "DefaultWaitForPodsReadyTimeout, 30 minutes", "v1beta2", "waitForPodsReady.timeout", "0.19",
     1800),
    ("v0.15.0", _B2, None, "no RecoveryTimeout default", "v1beta2", "waitForPodsReady.recoveryTimeout", "0.15", None),
    ("v0.16.0", _B2, 96, "RecoveryTimeout = Timeout", "v1beta2", "waitForPodsReady.recoveryTimeout", "0.16", _T),
    ("v0.18.6", _B2, 99, "RecoveryTimeout = Timeout", "v1beta2", "waitForPodsReady.recoveryTimeout", "0.18", _T),
    ("v0.19.2", _B2, 112, "RecoveryTimeout = Timeout", "v1beta2", "waitForPodsReady.recoveryTimeout", "0.19", _T),
    ("v0.15.0", _B2, 95, "BlockAdmission false", "v1beta2", "waitForPodsReady.blockAdmission", "0.15", False),
    ("v0.18.6", _B2, 98, "BlockAdmission false", "v1beta2", "waitForPodsReady.blockAdmission", "0.18", False),
    ("v0.19.2", _B2, 111, "BlockAdmission false", "v1beta2", "waitForPodsReady.blockAdmission", "0.19", False),
    *((tag, f, line, name, api, "waitForPodsReady.requeuingStrategy.backoffBaseSeconds", rel, 60)
      for tag, f, line, name, api, rel in (
          ("v0.13.0", _B1, 53, "DefaultRequeuingBackoffBaseSeconds", "v1beta1", "0.13"),
          ("v0.14.8", _B1, 51, "DefaultRequeuingBackoffBaseSeconds", "v1beta1", "0.14"),
          ("v0.15.0", _B2, 50, "DefaultRequeuingBackoffBaseSeconds", "v1beta2", "0.15"),
          ("v0.19.2", _B2, 51, "DefaultRequeuingBackoffBaseSeconds", "v1beta2", "0.19"))),
    *((tag, f, line, name, api, "waitForPodsReady.requeuingStrategy.backoffMaxSeconds", rel, 3600)
      for tag, f, line, name, api, rel in (
          ("v0.13.0", _B1, 54, "DefaultRequeuingBackoffMaxSeconds", "v1beta1", "0.13"),
          ("v0.14.8", _B1, 52, "DefaultRequeuingBackoffMaxSeconds", "v1beta1", "0.14"),
          ("v0.15.0", _B2, 51, "DefaultRequeuingBackoffMaxSeconds", "v1beta2", "0.15"),
          ("v0.19.2", _B2, 52, "DefaultRequeuingBackoffMaxSeconds", "v1beta2", "0.19"))),
    *((tag, f, None, "no BackoffLimitCount default", api, "waitForPodsReady.requeuingStrategy.backoffLimitCount", rel,
       None) for tag, f, api, rel in (("v0.13.0", _B1, "v1beta1", "0.13"), ("v0.15.0", _B2, "v1beta2", "0.15"),
                                      ("v0.19.2", _B2, "v1beta2", "0.19"))),
    ("v0.13.0", _B1, 49, "defaultJobFrameworkName", "v1beta1", "integrations.frameworks", "0.13", ["batch/job"]),
    ("v0.15.0", _B2, 46, "defaultJobFrameworkName", "v1beta2", "integrations.frameworks", "0.15", ["batch/job"]),
    ("v0.19.2", _B2, 46, "defaultJobFrameworkName", "v1beta2", "integrations.frameworks", "0.19", ["batch/job"]),
    ("v0.19.2", "apis/config/v1beta1/configuration_types.go", None, "ManageJobsWithoutQueueName bool", "v1beta1",
     "manageJobsWithoutQueueName", "0.13", False),
    ("v0.19.2", "apis/config/v1beta2/configuration_types.go", 53, "ManageJobsWithoutQueueName bool", "v1beta2",
     "manageJobsWithoutQueueName", "0.19", False),
]
"""What each tag of kubernetes-sigs/kueue sets, read in its source (file and line; ``None`` where the absence of a
default was read): the values the table must give."""


@pytest.mark.parametrize("tag, file, line, what, api, field, release, value", GO_VALUES)
def test_each_default_is_the_value_of_that_tag_s_defaults_go(tag, file, line, what, api, field, release, value):
    row = kd.default(api, field, release)
    assert row is not None and row.value == value, (tag, file, line, what, row)
    assert row.source.startswith(file.rsplit("/", 1)[0] + "/")


def test_every_row_of_the_table_is_read_at_the_tag_it_names():
    cited = {(api, field, tag) for tag, _, _, _, api, field, _, _ in GO_VALUES}
    for (api, field), rows in kd.TABLE.items():
        for row in rows:
            assert (api, field, row.tag) in cited, (api, field, row)


def test_go_durations_read_as_go_reads_them():
    assert [go_duration(t) for t in ("5m", "30m", "0s", "0", "1h30m", "1.5h", "90s", "300ms")] == \
        [300, 1800, 0, 0, 5400, 5400, 90, 0.3]
    for bad in ("5", "5 minutes", "", "m", "1h 2m", "5x"):
        with pytest.raises(ValueError):
            go_duration(bad)


# --- the facts and the timeline --------------------------------------------------------------------------------------


START = "node_start: {typical: 120, worst: 480}\nimage_pull: {typical: 60, worst: 300}\n"


def cluster(tmp_path: Path, kueue: str, config: str | None = None, name: str = "kueue-config.yaml") -> Path:
    folder = tmp_path / "platform"
    folder.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (folder / name).write_text(textwrap.dedent(config))
    facts = folder / "_cluster-facts.yaml"
    facts.write_text(START + textwrap.dedent(kueue))
    return folder


def chart(tmp_path: Path, fixture: str, version: str) -> Path:
    folder = cluster(tmp_path, f'kueue:\n  config: kueue-config.yaml\n  version: "{version}"\n')
    shutil.copy(FIXTURES / fixture, folder / "kueue-config.yaml")
    return folder


def timeline(folder: Path, name: str = "gpu-large", *args: str) -> dict:
    result = invoke(["timeline", name, "--only-platform", str(folder), "--target", "flytekit", "-o", "json",
                     "--facts", str(folder / "_cluster-facts.yaml"), *args])
    assert result.exit_code == 0, result.unfolded
    return json.loads(result.stdout)


def clock(document: dict, name: str) -> dict:
    [found] = [c for c in document["clocks"] if c["name"] == name]
    return found


def test_the_chart_s_configuration_of_0_19_loads_and_does_not_queue_a_pytorchjob(tmp_path):
    document = timeline(chart(tmp_path, "chart-0.19.yaml", "0.19"))
    k = document["kueue"]
    assert (k["release"], k["api_version"], k["managed"]) == ("0.19", "v1beta2", False)
    assert k["why"].startswith("Kueue 0.19's configuration does not integrate kubeflow.org/pytorchjob (kueue config ")
    assert k["why"].endswith("): this job is not queued; its queue-name label has no effect")
    assert clock(document, "kueue_wait")["seconds"] is None and clock(document, "kueue_wait")["known"] is True
    assert not [e for s in document["scenarios"] for e in s["events"] if (e["clock"] or "").startswith("kueue")]


def test_the_chart_s_configuration_of_0_19_queues_a_jobset_under_its_30_minute_default(tmp_path):
    folder = chart(tmp_path, "chart-0.19.yaml", "0.19")
    (folder / "two.yaml").write_text("extends: cpu-small\nelastic:\n  nnodes: 2\n  rdzv_configs: null\n")
    document = timeline(folder, "two", "--target", "clustered")
    assert document["kueue"]["managed"] is None  # integrated; queued once the JobSet carries a queue-name label
    wait = clock(document, "kueue_wait")
    assert (wait["seconds"], wait["source"]["default"]) == (1800, "Kueue 0.19 default, apis/config/v1beta2/defaults.go "
                                                                  "DefaultWaitForPodsReadyTimeout")
    assert clock(document, "kueue_recovery")["seconds"] == 1800
    assert document["kueue"]["requeue"]["forever"] is True


def test_a_v1beta1_configuration_of_0_14_with_enable_waits_5_minutes_and_blocks_admission(tmp_path):
    document = timeline(chart(tmp_path, "chart-0.14-pods-ready.yaml", "0.14"))
    wait = clock(document, "kueue_wait")
    assert (wait["seconds"], wait["source"]["file"].endswith("kueue-config.yaml")) == (300, True)
    assert wait["source"]["default"] == "Kueue 0.14 default, apis/config/v1beta1/defaults.go defaultPodsReadyTimeout"
    assert document["kueue"]["block_admission"]["value"] is True
    # no recoveryTimeout before 0.16, unless written
    assert (clock(document, "kueue_recovery")["seconds"], clock(document, "kueue_recovery")["known"]) == (None, True)
    assert document["kueue"]["managed"] is None and "integrates kubeflow.org/pytorchjob" in document["kueue"]["why"]


V1BETA2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
INTEGRATED = "integrations:\n  frameworks: [batch/job, kubeflow.org/pytorchjob]\n"


@pytest.mark.parametrize("version, block, seconds", [
    ("0.18", "", None),                                   # no block: off on 0.18
    ("0.19", "", 1800),                                   # no block: on, 30 minutes, on 0.19
    ("0.18", "waitForPodsReady:\n  timeout: 5m\n", 300),  # the block: as written
    ("0.19", "waitForPodsReady:\n  timeout: 5m\n", 300),
    ("0.19", "featureGates: {DisableWaitForPodsReady: true}\n", None),  # the one way 0.19 turns it off
])
def test_the_same_document_means_off_on_0_18_and_30_minutes_on_0_19(tmp_path, version, block, seconds):
    folder = cluster(tmp_path, f'kueue:\n  config: kueue-config.yaml\n  version: "{version}"\n',
                     V1BETA2 + INTEGRATED + block)
    wait = clock(timeline(folder), "kueue_wait")
    assert (wait["seconds"], wait["known"]) == (seconds, True)


def test_the_version_alone_is_the_chart_as_installed(tmp_path):
    on = timeline(cluster(tmp_path, 'kueue:\n  version: "0.19"\n'))
    assert clock(on, "kueue_wait")["seconds"] == 1800 and on["kueue"]["managed"] is None
    assert "Kueue 0.19's chart leaves kubeflow.org/pytorchjob out" in on["kueue"]["why"]
    off = timeline(cluster(tmp_path / "b", 'kueue:\n  version: "v0.18.6"\n'))
    assert (clock(off, "kueue_wait")["seconds"], clock(off, "kueue_wait")["known"]) == (None, True)


def test_recovery_timeout_is_its_own_clock_and_a_null_limit_requeues_forever(tmp_path):
    folder = cluster(tmp_path, 'kueue:\n  config: kueue-config.yaml\n  version: "0.19"\n', V1BETA2 + INTEGRATED + textwrap.dedent("""\
        waitForPodsReady:
          timeout: 20m
          recoveryTimeout: 3m
          requeuingStrategy: {backoffLimitCount: null, backoffBaseSeconds: 30}
        """))
    document = timeline(folder)
    recovery = clock(document, "kueue_recovery")
    assert (recovery["seconds"], recovery["source"]["line"]) == (180, 7)
    backoff = clock(document, "kueue_backoff")
    assert (backoff["seconds"], backoff["source"]["line"]) == (30, 8)
    assert "doubling per eviction to 3600 s" in backoff["note"] and "requeued forever: backoffLimitCount null" in \
        backoff["note"]
    assert document["kueue"]["requeue"]["forever"] is True
    # gpu-large restarts (max_restarts 3): the lost node's replacement waits for a cold node, 780 s > 180 s
    [lost] = [s for s in document["scenarios"] if s["key"] == "lost-peer"]
    [evicted] = [e for e in lost["events"] if e["clock"] == "kueue_recovery"]
    assert (evicted["at"]["earliest"], evicted["error"]) == (180, "Evicted (PodsReadyTimeout)")
    folder = cluster(tmp_path / "b", 'kueue:\n  config: kueue-config.yaml\n  version: "0.19"\n',
                     V1BETA2 + INTEGRATED + "waitForPodsReady:\n  recoveryTimeout: 0s\n"
                     "  requeuingStrategy: {backoffLimitCount: 3}\n")
    document = timeline(folder)
    assert clock(document, "kueue_recovery")["seconds"] is None  # 0s: no recovery clock
    assert document["kueue"]["requeue"]["forever"] is False
    assert "deactivated after 3 requeues" in clock(document, "kueue_backoff")["note"]


def test_the_short_form_keeps_working_with_a_deprecation_note(tmp_path):
    folder = cluster(tmp_path, "kueue:\n  wait_for_pods_ready: {timeout: 1800}\n")
    assert clock(timeline(folder), "kueue_wait")["seconds"] == 1800  # no `enable`: the block stated is on
    result = invoke(["validate", "--only-platform", str(folder), "--facts", str(folder / "_cluster-facts.yaml")])
    assert result.exit_code == 0, result.unfolded
    assert ("_cluster-facts.yaml:4:24: [facts] kueue.wait_for_pods_ready: note: the short form "
            "kueue.wait_for_pods_ready is deprecated: state Kueue's own configuration, `kueue: {config: FILE}`") \
        in result.unfolded
    folder = cluster(tmp_path / "b", "kueue:\n  wait_for_pods_ready: {enable: true}\n")
    wait = clock(timeline(folder), "kueue_wait")
    assert (wait["seconds"], wait["source"]["line"]) == (300, 4)


# --- bad configurations ----------------------------------------------------------------------------------------------


def errors_of(folder: Path) -> list[str]:
    result = invoke(["timeline", "gpu-large", "--only-platform", str(folder), "--target", "flytekit",
                     "--facts", str(folder / "_cluster-facts.yaml")])
    assert result.exit_code == 1 and "Traceback" not in result.unfolded, result.unfolded
    return [line for line in result.unfolded.splitlines() if ": error: " in line or ":" in line.split(" ")[0]]


@pytest.mark.parametrize("body, line, message", [
    ("waitForPodsReady:\n  timeOut: 5m\n", 4, "unknown field `timeOut`; did you mean `timeout`?"),
    ("integration:\n  frameworks: [pod]\n", 3, "unknown field `integration`; did you mean `integrations`?"),
    ("waitForPodsReady:\n  enable: true\n", 4, "unknown field `enable`"),  # v1beta2 has none
    ("waitForPodsReady:\n  timeout: 300\n", 4, "waitForPodsReady.timeout"),  # a number is no Go duration
    ("waitForPodsReady:\n  timeout: 5 minutes\n", 4, "is not a Go duration"),
    ("waitForPodsReady:\n  timeout: -5m\n", 4, "is negative"),
])
def test_a_bad_field_is_an_error_at_its_line(tmp_path, body, line, message):
    folder = cluster(tmp_path, "kueue:\n  config: kueue-config.yaml\n", V1BETA2 + body)
    [error] = [e for e in errors_of(folder) if "kueue-config.yaml" in e]
    assert f"kueue-config.yaml:{line}:" in error and message in error, error


def test_0_18_refuses_a_block_without_timeout_as_its_manager_does(tmp_path):
    folder = cluster(tmp_path, 'kueue:\n  config: kueue-config.yaml\n  version: "0.18"\n',
                     V1BETA2 + "waitForPodsReady:\n  blockAdmission: true\n")
    [error] = [e for e in errors_of(folder) if "kueue-config.yaml" in e]
    assert "kueue-config.yaml:4:" in error and "Kueue 0.18 requires waitForPodsReady.timeout" in error
    folder = cluster(tmp_path / "b", 'kueue:\n  config: kueue-config.yaml\n  version: "0.19"\n',
                     V1BETA2 + INTEGRATED + "waitForPodsReady:\n  blockAdmission: true\n")
    assert clock(timeline(folder), "kueue_wait")["seconds"] == 1800


@pytest.mark.parametrize("named", ["../kueue-config.yaml", "/etc/kueue-config.yaml", "-rf.yaml"])
def test_the_config_is_a_file_inside_the_facts_folder(tmp_path, named):
    folder = cluster(tmp_path, f'kueue:\n  config: "{named}"\n')
    (tmp_path / "kueue-config.yaml").write_text(V1BETA2)
    [error] = [e for e in errors_of(folder) if "_cluster-facts.yaml:4:" in e]
    assert "kueue.config" in error and ("not a path inside" in error or "no Kueue configuration at" in error), error


@pytest.mark.parametrize("kueue, message", [
    ('kueue:\n  version: "1.2"\n', "is not a Kueue release"),
    ('kueue:\n  version: "0.12"\n', "is not a Kueue release from 0.13 on"),
    ("kueue:\n  version: 0.19\n", 'quote it: "0.19"'),
    ("kueue:\n  config: c.yaml\n  wait_for_pods_ready: {enable: true}\n", "not both"),
])
def test_bad_kueue_facts_are_errors_at_their_line(tmp_path, kueue, message):
    folder = cluster(tmp_path, kueue, V1BETA2, name="c.yaml")
    assert any(message in e and "_cluster-facts.yaml:" in e for e in errors_of(folder)), errors_of(folder)


# --- the lint --------------------------------------------------------------------------------------------------------


def test_join_timeout_plus_the_worst_start_above_the_pods_ready_timeout_names_both_lines(tmp_path):
    folder = cluster(tmp_path, 'kueue:\n  config: kueue-config.yaml\n  version: "0.19"\n',
                     V1BETA2 + INTEGRATED + "waitForPodsReady:\n  timeout: 20m\n")
    (folder / "two.yaml").write_text("extends: cpu-small\nelastic:\n  nnodes: 2\n"
                                     "  rdzv_configs: {join_timeout: 1800, read_timeout: 1800}\n")
    result = invoke(["render", "two", "--only-platform", str(folder), "--target", "flytekit",
                     "--facts", str(folder / "_cluster-facts.yaml")])
    [warning] = [w for w in result.unfolded.splitlines() if "above Kueue's PodsReady timeout" in w]
    assert "two.yaml:4:32: [platform] elastic.rdzv_configs.join_timeout: warning: join_timeout 1800 s" in warning
    assert "is 2580 s, above Kueue's PodsReady timeout 1200 s ([kueue config] " in warning
    assert "kueue-config.yaml:6:12)" in warning
    (folder / "two.yaml").write_text("extends: cpu-small\nelastic:\n  nnodes: 2\n"
                                     "  rdzv_configs: {join_timeout: 400, read_timeout: 1800}\n")
    result = invoke(["render", "two", "--only-platform", str(folder), "--target", "flytekit",
                     "--facts", str(folder / "_cluster-facts.yaml")])
    assert "above Kueue's PodsReady timeout" not in result.unfolded


def test_a_job_that_never_fits_under_a_forever_requeue_is_a_loop_that_holds_quota(tmp_path):
    pools = "node_pools:\n  cpu:\n    allocatable: {cpu: \"16\", memory: 64Gi}\n    nodes: 4\n"
    folder = cluster(tmp_path, 'kueue:\n  config: kueue-config.yaml\n  version: "0.19"\n' + pools,
                     V1BETA2 + INTEGRATED + "waitForPodsReady:\n  timeout: 15m\n"
                     "  requeuingStrategy: {backoffLimitCount: null}\n")

    def loops() -> list[str]:
        result = invoke(["render", "gpu-large", "--only-platform", str(folder), "--target", "flytekit",
                         "--facts", str(folder / "_cluster-facts.yaml")])
        return [w for w in result.unfolded.splitlines() if "a loop of admissions" in w]

    [warning] = loops()
    assert "gpu-large.yaml:16:29: [builtin] pod_template.spec.containers[name=primary].resources.requests." in warning
    assert "fits none of the 1 node pool" in warning
    assert "PodsReady timeout of 900 s (kueue config " in warning and "kueue-config.yaml:6:12)" in warning
    assert "requeued forever: backoffLimitCount null (kueue config " in warning and "kueue-config.yaml:7:42)" in warning
    (folder / "kueue-config.yaml").write_text(V1BETA2 + INTEGRATED + "waitForPodsReady:\n  timeout: 15m\n"
                                              "  requeuingStrategy: {backoffLimitCount: 3}\n")
    assert loops() == []  # deactivated after 3 requeues: no endless loop


# --- topology-aware placement ----------------------------------------------------------------------------------------

BLOCK = "cloud.google.com/gce-topology-block"


def blocks(folder: Path) -> None:
    """Six A100 nodes of one GKE pool in two blocks of three, each node its own rack."""
    from node_lists import pool_nodes, write_node_list

    gpu = {"cpu": "95", "memory": "1100Gi", "nvidia.com/gpu": "8", "ephemeral-storage": "800Gi", "pods": "110"}
    nodes = pool_nodes("a100", 6, gpu)
    for i, n in enumerate(nodes):
        n["metadata"]["labels"].update({BLOCK: f"block-{i // 3}", "example.com/rack": f"rack-{i}"})
    write_node_list(folder / "_nodes.json", *nodes)


def topology_profile(folder: Path, nnodes: int, level: str = BLOCK) -> None:
    (folder / "topo.yaml").write_text(f"extends: gpu-large\nelastic:\n  nnodes: {nnodes}\npod_template:\n"
                                      f"  annotations:\n    kueue.x-k8s.io/podset-required-topology: {level}\n")


def topology_warnings_of(folder: Path) -> list[str]:
    result = invoke(["render", "topo", "--only-platform", str(folder), "--target", "flytekit",
                     "--facts", str(folder / "_cluster-facts.yaml")])
    assert result.exit_code == 0, result.unfolded
    return [w for w in result.unfolded.splitlines() if "podset-" in w and ": warning: " in w]


def test_a_required_block_that_no_block_holds_is_never_admitted(tmp_path):
    folder = cluster(tmp_path, "nodes: _nodes.json\n")
    blocks(folder)
    topology_profile(folder, 4)
    [warning] = topology_warnings_of(folder)
    assert "topo.yaml:6:46: [platform] pod_template.annotations.kueue.x-k8s.io/podset-required-topology: warning:" \
        in warning
    assert "needs 4 nodes in one block; the largest has 3 (2 blocks: block-0 3, block-1 3)" in warning
    topology_profile(folder, 3)  # fits one block: no warning
    assert topology_warnings_of(folder) == []
    # six nodes in one pool, not four "pools" split by block and rack labels
    result = invoke(["fit", "topo", "--only-platform", str(folder), "--target", "flytekit",
                     "--facts", str(folder / "_cluster-facts.yaml"), "-o", "json"])
    assert [p["pool"]["name"] if isinstance(p.get("pool"), dict) else p.get("name")
            for p in json.loads(result.stdout)["pools"]] == ["a100"], result.stdout
    topology_profile(folder, 4)
    result = invoke(["fit", "topo", "--only-platform", str(folder), "--target", "flytekit",
                     "--facts", str(folder / "_cluster-facts.yaml")])
    assert result.exit_code == 1  # no block holds the job: Kueue never admits it
    assert ("topology: cloud.google.com/gce-topology-block (required, kueue.x-k8s.io/podset-required-topology at "
            in result.stdout and "needs 4 nodes in one block; the largest has 3" in result.stdout)
    assert "block-0: 3 nodes take a pod, 3 pods (a100-0, a100-1, a100-2)" in result.stdout
    result = invoke(["fit", "topo", "--only-platform", str(folder), "--target", "flytekit", "-o", "json",
                     "--facts", str(folder / "_cluster-facts.yaml"), "--topology", "example.com/rack"])
    topology = json.loads(result.stdout)["topology"]
    assert (topology["domains"][0]["nodes"], topology["holds_job"], len(topology["domains"])) == (1, False, 6)
    topology_profile(folder, 3, "example.com/no-such-level")
    [warning] = topology_warnings_of(folder)
    assert "no node of the node list carries the topology level `example.com/no-such-level`" in warning


@pytest.mark.parametrize("target, kind, path", [
    ("flytekit", "pytorchjob", ("spec", "pytorchReplicaSpecs", "Worker", "template", "metadata", "annotations")),
    ("clustered", "jobset", ("spec", "replicatedJobs", 0, "template", "spec", "template", "metadata", "annotations")),
])
def test_the_topology_annotation_reaches_the_pod_template_kueue_reads(tmp_path, target, kind, path):
    import yaml

    folder = tmp_path / "platform"
    folder.mkdir()
    (folder / "topo.yaml").write_text("extends: cpu-small\nelastic:\n  nnodes: 2\n  rdzv_configs: null\npod_template:\n"
                                      f"  annotations:\n    kueue.x-k8s.io/podset-required-topology: {BLOCK}\n")
    result = invoke(["render", "topo", "--platform", str(folder), "--target", target, "--as", kind,
                     "--facts", "none"])
    assert result.exit_code == 0, result.unfolded
    node = yaml.safe_load(result.stdout)
    for part in path:
        node = node[part]
    assert node["kueue.x-k8s.io/podset-required-topology"] == BLOCK


def test_a_slice_size_that_does_not_divide_the_workers(tmp_path):
    folder = cluster(tmp_path, "nodes: _nodes.json\n")
    blocks(folder)
    (folder / "topo.yaml").write_text(f"extends: gpu-large\nelastic:\n  nnodes: 4\npod_template:\n  annotations:\n"
                                      f"    kueue.x-k8s.io/podset-slice-required-topology: {BLOCK}\n"
                                      '    kueue.x-k8s.io/podset-slice-size: "3"\n')
    [warning] = topology_warnings_of(folder)
    assert "topo.yaml:7:39: [platform] pod_template.annotations.kueue.x-k8s.io/podset-slice-size: warning:" in warning
    assert "does not divide the job's 4 pods" in warning
    (folder / "topo.yaml").write_text((folder / "topo.yaml").read_text().replace('"3"', '"2"'))
    assert topology_warnings_of(folder) == []  # slices of 2, each in a block of 3
