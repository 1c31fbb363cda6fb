"""The JobSet kfdefaults previews for a clustered task, built from the TaskTemplate the real SDK serializes.

Each case restates one of flyteorg/flyte's own plugin tests (flyteplugins/go/tasks/plugins/k8s/clustered/
clustered_test.go at 6fadb90d65af26f4db908ec1c5f5af546a3e4299, named per case) on a task defined with the installed
``flyte.clustered.ClusteredTaskEnvironment`` and serialized with Flyte 2's own ``get_proto_task``.
"""

from __future__ import annotations

import pathlib
import textwrap

import pytest
from test_clustered_target import TWO_NODES as FIXED_TWO_NODES  # the fixed two-node profile the target tests use

flyte = pytest.importorskip("flyte")
clustered = pytest.importorskip("flyte.clustered")
kubernetes = pytest.importorskip("kubernetes")

from kfdefaults.backend.jobset import build_jobset, jobset_pod_template  # noqa: E402


def task_body() -> None:
    """Never run; serialized only."""


def serialized(env_vars=None, **settings):
    from flyte._internal.runtime.task_serde import get_proto_task
    from flyte.models import SerializationContext
    from google.protobuf.json_format import MessageToDict

    k8s = kubernetes.client
    env = [k8s.V1EnvVar(name=name, value=value) for name, value in (env_vars or {}).items()]
    pod = flyte.PodTemplate(primary_container_name="primary",
                            pod_spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="primary", env=env or None)]))
    environment = clustered.ClusteredTaskEnvironment(name="train", image="registry.example/train:1",
                                                     pod_template=pod, **settings)
    context = SerializationContext(version="v1", project="p", domain="development", org="o",
                                   root_dir=pathlib.Path(__file__).parent)
    return MessageToDict(get_proto_task(environment.task(task_body), context))


def primary_env(jobset):
    (primary,) = [c for c in jobset_pod_template(jobset)["spec"]["containers"] if c["name"] == "primary"]
    return {e["name"]: e for e in primary.get("env", [])}


def test_build_resource_happy_path():
    """TestBuildResource_HappyPath: 4 replicas, maxRestarts 3, one replicated job `workers` of one Indexed Job."""
    jobset = build_jobset(serialized(replicas=4, nproc_per_node=8,
                                     failure_policy=clustered.ClusterFailurePolicy(max_restarts=3),
                                     ttl_seconds_after_finished=120))
    assert jobset["apiVersion"] == "jobset.x-k8s.io/v1alpha2" and jobset["kind"] == "JobSet"
    spec = jobset["spec"]
    assert spec["successPolicy"] == {"operator": "All"} and spec["failurePolicy"] == {"maxRestarts": 3}
    assert spec["network"] == {"enableDNSHostnames": True} and spec["ttlSecondsAfterFinished"] == 120
    (workers,) = spec["replicatedJobs"]
    assert workers["name"] == "workers" and workers["replicas"] == 1
    job = workers["template"]["spec"]
    assert (job["parallelism"], job["completions"], job["completionMode"], job["backoffLimit"]) == (4, 4, "Indexed", 0)
    pod = jobset_pod_template(jobset)["spec"]
    assert pod["restartPolicy"] == "Never" and pod["subdomain"] == jobset["metadata"]["name"]


def test_build_resource_primary_container_preserved():
    """TestBuildResource_PrimaryContainerPreserved: the primary container keeps its args, named in the annotation."""
    jobset = build_jobset(serialized(replicas=2, nproc_per_node=1))
    (primary,) = jobset_pod_template(jobset)["spec"]["containers"]
    assert primary["name"] == "primary" and primary["args"][0] == "clustered"
    assert jobset["metadata"]["annotations"]["flyte.org/primary-container"] == "primary"


def test_inject_torchrun_env_static_replaces_the_containers_own_entries():
    """TestInjectTorchRunEnv_Static: the eight variables, each replacing an entry of its name (upsertEnv)."""
    jobset = build_jobset(serialized(env_vars={"NNODES": "99", "MASTER_PORT": "1"}, replicas=4, nproc_per_node=8))
    env = primary_env(jobset)
    assert {n: env[n]["value"] for n in ("NNODES", "NPROC_PER_NODE", "MASTER_PORT", "RDZV_BACKEND",
                                         "JOBSET_MAX_RESTARTS")} == \
        {"NNODES": "4", "NPROC_PER_NODE": "8", "MASTER_PORT": "29500", "RDZV_BACKEND": "static",
         "JOBSET_MAX_RESTARTS": "0"}
    assert env["JOBSET_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.labels['jobset.sigs.k8s.io/jobset-name']"
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    names = [c["name"] for c in jobset_pod_template(jobset)["spec"]["containers"][0]["env"]]
    assert names.count("NNODES") == 1 and names.count("MASTER_PORT") == 1


def test_inject_torchrun_env_max_restarts_and_c10d():
    """TestInjectTorchRunEnv_MaxRestarts and TestInjectTorchRunEnv_C10D."""
    env = primary_env(build_jobset(serialized(replicas=2, nproc_per_node=1,
                                              runtime=clustered.TorchRun(rdzv_backend="c10d"),
                                              failure_policy=clustered.ClusterFailurePolicy(max_restarts=3))))
    assert env["JOBSET_MAX_RESTARTS"]["value"] == "3" and env["RDZV_BACKEND"]["value"] == "c10d"


def test_build_failure_policy_zero_is_none():
    """TestBuildFailurePolicy_Zero: no failurePolicy for 0 restarts; no TTL when the task sets none."""
    spec = build_jobset(serialized(replicas=2, nproc_per_node=1))["spec"]
    assert "failurePolicy" not in spec and "ttlSecondsAfterFinished" not in spec


# --- render --as jobset: the JobSet of a task defined on the profile, as the backend builds it ---------------


TWO_NODES = textwrap.dedent(FIXED_TWO_NODES) + """\
pod_template:
  spec:
    containers:
      - name: primary
        env:
          - name: TEAM_ONLY
            value: "1"
"""

CLUSTER = """\
apiVersion: v1
kind: PodTemplate
metadata: {name: flyte-default, namespace: flyte}
template:
  spec:
    containers:
      - name: default
        env:
          - {name: CLUSTER_ONLY, value: "1"}
    tolerations:
      - {key: cluster, operator: Exists}
"""


def rendered_jobset(tmp_path, *extra):
    import yaml
    from cli_runner import invoke as run_cli

    (tmp_path / "team").mkdir(exist_ok=True)
    (tmp_path / "team" / "two-node.yaml").write_text(TWO_NODES, encoding="utf-8")
    (tmp_path / "cluster.yaml").write_text(CLUSTER, encoding="utf-8")
    result = run_cli(["render", "two-node", "--team", str(tmp_path / "team"), "--target", "clustered", "--as",
                      "jobset", "--cluster-template", str(tmp_path / "cluster.yaml"), *extra])
    assert result.exit_code == 0, result.output
    return yaml.safe_load(result.stdout)


def test_render_as_jobset_holds_every_field_the_backend_builds(tmp_path):
    """The fields of BuildResource (build.go, failure.go, runtime_torch.go at 6fadb90d), of a task on a fixed
    two-node profile with JobSet restarts and a TTL, the cluster's PodTemplate merged into its pods."""
    jobset = rendered_jobset(tmp_path, "--set", "elastic.cluster_max_restarts=2",
                             "--set", "elastic.run_policy.ttl_seconds_after_finished=600")
    assert (jobset["apiVersion"], jobset["kind"]) == ("jobset.x-k8s.io/v1alpha2", "JobSet")
    assert jobset["metadata"]["annotations"]["flyte.org/task-type"] == "clustered-task"
    spec = jobset["spec"]
    assert spec["network"] == {"enableDNSHostnames": True} and spec["successPolicy"] == {"operator": "All"}
    assert spec["failurePolicy"] == {"maxRestarts": 2} and spec["ttlSecondsAfterFinished"] == 600
    (workers,) = spec["replicatedJobs"]
    assert (workers["name"], workers["replicas"]) == ("workers", 1)
    job = workers["template"]["spec"]
    assert (job["parallelism"], job["completions"], job["completionMode"], job["backoffLimit"]) == (2, 2, "Indexed", 0)
    pod = jobset_pod_template(jobset)
    assert pod["metadata"]["annotations"]["kfdefaults.io/profile"] == "two-node"
    assert pod["spec"]["restartPolicy"] == "Never" and pod["spec"]["subdomain"] == jobset["metadata"]["name"]
    assert {"key": "cluster", "operator": "Exists"} in pod["spec"]["tolerations"]  # the cluster's template
    env = primary_env(jobset)
    assert {n: env[n].get("value") for n in ("NNODES", "NPROC_PER_NODE", "MASTER_PORT", "RDZV_BACKEND",
                                             "JOBSET_MAX_RESTARTS")} == \
        {"NNODES": "2", "NPROC_PER_NODE": "8", "MASTER_PORT": "29500", "RDZV_BACKEND": "static",
         "JOBSET_MAX_RESTARTS": "2"}
    assert {"JOBSET_NAME", "JOBSET_RESTART_ATTEMPT", "POD_NAMESPACE", "TEAM_ONLY", "CLUSTER_ONLY"} <= set(env)
    names = [e["name"] for e in jobset_pod_template(jobset)["spec"]["containers"][0]["env"]]
    assert names.index("TEAM_ONLY") < names.index("NNODES")  # the plugin's eight come after the task's own


def test_render_as_jobset_without_restarts_or_ttl_leaves_both_out(tmp_path):
    """TestBuildFailurePolicy_Zero through render: no failurePolicy for 0 restarts, no TTL unset."""
    spec = rendered_jobset(tmp_path, "-o", "json")["spec"]
    assert "failurePolicy" not in spec and "ttlSecondsAfterFinished" not in spec


def test_render_as_jobset_is_for_the_clustered_target_and_its_errors_are_the_targets():
    from cli_runner import invoke as run_cli

    other = run_cli(["render", "gpu-large", "--target", "flyte2", "--as", "jobset"])
    assert other.exit_code == 1 and "use --target clustered" in other.stderr and other.stdout == ""
    ranged = run_cli(["render", "gpu-large", "--target", "clustered", "--as", "jobset"])
    assert ranged.exit_code == 1 and "Traceback" not in ranged.stderr and ranged.stdout == ""
    assert "gpu-large.yaml:4:11: [builtin] elastic.nnodes" in ranged.stderr


@pytest.mark.parametrize("case, sets, expected", [
    ("TestBuildResource_HappyPath", ["elastic.nnodes=4", "elastic.cluster_max_restarts=3",
                                     "elastic.run_policy.ttl_seconds_after_finished=120"],
     {"parallelism": 4, "failurePolicy": {"maxRestarts": 3}, "ttl": 120, "RDZV_BACKEND": "static",
      "JOBSET_MAX_RESTARTS": "3", "NNODES": "4"}),
    ("TestInjectTorchRunEnv_MaxRestarts and _C10D", ["elastic.rdzv_backend=c10d", "elastic.cluster_max_restarts=3"],
     {"parallelism": 2, "failurePolicy": {"maxRestarts": 3}, "ttl": None, "RDZV_BACKEND": "c10d",
      "JOBSET_MAX_RESTARTS": "3", "NNODES": "2"}),
])
def test_render_as_jobset_meets_the_plugins_own_cases(tmp_path, case, sets, expected):
    """clustered_test.go (6fadb90d), each case as a profile and --set values, through `render --as jobset`."""
    jobset = rendered_jobset(tmp_path, *[arg for value in sets for arg in ("--set", value)])
    spec = jobset["spec"]
    job = spec["replicatedJobs"][0]["template"]["spec"]
    assert job["parallelism"] == job["completions"] == expected["parallelism"], case
    assert spec.get("failurePolicy") == expected["failurePolicy"] and spec.get("ttlSecondsAfterFinished") == \
        expected["ttl"], case
    env = primary_env(jobset)
    assert {n: env[n]["value"] for n in ("RDZV_BACKEND", "JOBSET_MAX_RESTARTS", "NNODES")} == \
        {n: expected[n] for n in ("RDZV_BACKEND", "JOBSET_MAX_RESTARTS", "NNODES")}, case
    assert env["MASTER_PORT"]["value"] == "29500"
