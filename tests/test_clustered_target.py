"""The clustered target (Flyte 2's ClusteredTaskEnvironment, a JobSet): what it cannot run is an error at its line.

The names and values cited are flyteorg/flyte's clustered plugin at 6fadb90d65af26f4db908ec1c5f5af546a3e4299
(flyteplugins/go/tasks/plugins/k8s/clustered: runtime_torch.go's upsertEnv, util.go's maxReplicasForNaming).
"""

from __future__ import annotations

import json

import pytest
from test_targets import invoke, write  # the same command runner and layer-file writer


def test_the_builtin_elastic_range_is_an_error_at_the_nnodes_line():
    result = invoke("render", "gpu-large", "--target", "clustered")
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert "profiles/gpu-large.yaml:4:11: [builtin] elastic.nnodes: `nnodes: \"1:4\"` cannot run on Flyte 2 " \
           "clustered tasks" in result.stderr
    assert "write `nnodes: 4`" in result.stderr


TWO_NODES = """\
    extends: gpu-large
    elastic:
      nnodes: 2
      max_restarts: null
      rdzv_configs: null
      run_policy: null
    """


def test_a_fixed_two_node_profile_renders_with_the_clustered_defaults(tmp_path):
    write(tmp_path / "team", "two-node.yaml", TWO_NODES)
    result = invoke("render", "two-node", "--team", str(tmp_path / "team"), "--target", "clustered", "-o", "json")
    assert result.exit_code == 0, result.stderr
    elastic = json.loads(result.stdout)["elastic"]
    assert elastic["nnodes"] == 2 and elastic["rdzv_backend"] == "static" and elastic["cluster_max_restarts"] == 0


@pytest.mark.parametrize("setting, line, message", [
    ("nnodes: 100001", "2:11", "100000"),
    ("rdzv_configs:\n    join_timeout: 60", "4:19", "no field for rendezvous settings"),
    ("start_method: fork", "3:17", "the clustered launcher runs torchrun without --start-method"),
    ("rdzv_backend: etcd", "3:17", "static"),
])
def test_what_a_clustered_task_cannot_run_is_an_error_at_its_line(tmp_path, setting, line, message):
    path = write(tmp_path / "team", "bad.yaml", "elastic:\n  nnodes: 2\n" if "nnodes" not in setting else "elastic:\n")
    with open(path, "a", encoding="utf-8") as out:
        out.write(f"  {setting}\n")
    result = invoke("validate", path, "--target", "clustered")
    assert result.exit_code == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"{path}:{line}: [team] elastic." in result.stderr and message in result.stderr, result.stderr


OVERWRITTEN = {"NNODES": "1", "NPROC_PER_NODE": "1", "MASTER_PORT": "29500", "RDZV_BACKEND": "static",
               "JOBSET_MAX_RESTARTS": "0", "JOBSET_NAME": "jobset-name",
               "JOBSET_RESTART_ATTEMPT": "restart-attempt", "POD_NAMESPACE": "metadata.namespace"}


@pytest.mark.parametrize("name", sorted(OVERWRITTEN))
def test_each_variable_the_plugin_writes_is_an_error_naming_the_plugin_and_its_value(tmp_path, name):
    path = write(tmp_path / "team", "env.yaml", f"""\
        pod_template:
          spec:
            containers:
              - name: primary
                env:
                  - name: {name}
                    value: "1234"
        """)
    result = invoke("validate", path, "--target", "clustered")
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert f"{path}:6:" in result.stderr or f"{path}:7:" in result.stderr, result.stderr
    assert f"env[name={name}]" in result.stderr and "clustered plugin sets" in result.stderr, result.stderr
    assert OVERWRITTEN[name] in result.stderr and "runtime_torch.go" in result.stderr
