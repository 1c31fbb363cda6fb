"""``kfdefaults verify``: live objects built from what kfdefaults really produces, then changed as a cluster changes
them, compared with profiles changed after registration.

The PyTorchJob is ``kfdefaults render NAME --as pytorchjob``: a real task defined and serialized by flytekit, turned
into the job by the backend model. The cluster's edits are the ones the API server, the training operator and
Flyte make to every pod: defaults, environment variables, a service account volume, tolerations appended,
quantities in their canonical form. The provenance annotations are added here, with the digest the pipeline
computes, as a registered pod template will carry them.
"""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from cli_runner import invoke

from kfdefaults.backend.elastic_config import job_fields, registered_custom
from kfdefaults.k8s.provenance import LOCK_ANNOTATION, provenance_annotations
from kfdefaults.layers.builtin import builtin_folder
from kfdefaults.lock import read_lock
from kfdefaults.pipeline import Pipeline

PROFILE = """\
elastic:
  nnodes: "2:4"
pod_template:
  labels:
    team: vision
  spec:
    containers:
      - name: primary
        image: registry.example.com/vision/train:2.1
        env:
          - name: NCCL_DEBUG
            value: WARN
        resources:
          limits:
            cpu: 7000m
            memory: 65536Mi
      - name: log-shipper
        image: registry.example.com/infra/log-shipper:1.4
"""
"""The team's ``gpu-large`` as it was when the task was registered (on top of the builtin one)."""

_RENDERED: dict[tuple, str] = {}


def render_job(team: str, *extra: str) -> dict:
    """``kfdefaults render gpu-large --team TEAM --as pytorchjob``, parsed; each distinct call run once."""
    key = (team, *extra)
    if key not in _RENDERED:
        result = invoke(["render", "gpu-large", "--team", team, "--as", "pytorchjob", "--target", "flytekit", *extra])
        assert result.exit_code == 0, result.output
        _RENDERED[key] = result.stdout
    return yaml.safe_load(_RENDERED[key])


@pytest.fixture
def registered(tmp_path_factory):
    """The team folder the task was registered from (one per session: it is rendered once)."""
    folder = tmp_path_factory.getbasetemp() / "registered-team"
    if not folder.exists():
        folder.mkdir()
        (folder / "gpu-large.yaml").write_text(PROFILE, encoding="utf-8")
    return str(folder)


@pytest.fixture
def team(registered, tmp_path):
    """The team folder now: a copy of the registered one, for the test to change."""
    folder = tmp_path / "team"
    shutil.copytree(registered, folder)
    return folder


def digest_of(team: str, name: str = "gpu-large", cluster_template: str = "none") -> str:
    pipeline = Pipeline.discover(team=[team], target="flytekit", cluster_template=cluster_template)
    return pipeline.resolve(name).digest()


def annotate(template: dict, team: str, cluster_template: str = "none") -> None:
    """The provenance annotations of a registered pod template."""
    metadata = template.setdefault("metadata", {})
    metadata.setdefault("annotations", {}).update(provenance_annotations("gpu-large", digest_of(team, "gpu-large",
                                                                                                cluster_template)))


def as_the_cluster_keeps_the_pod_spec(spec: dict) -> dict:
    """What the API server and Flyte add to a pod spec, and the quantities as the API server writes them back."""
    spec = copy.deepcopy(spec)
    spec.update(dnsPolicy="ClusterFirst", schedulerName="default-scheduler", securityContext={}, priority=0,
                serviceAccountName="default", enableServiceLinks=True, terminationGracePeriodSeconds=30,
                preemptionPolicy="PreemptLowerPriority", nodeName="gpu-node-7")
    for container in spec["containers"]:
        container.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log",
                         terminationMessagePolicy="File")
        container.setdefault("volumeMounts", []).append(
            {"name": "kube-api-access-x7k2p", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
             "readOnly": True})
        container.setdefault("env", [])[:0] = [{"name": "PET_NNODES", "value": "2:4"}]
        for part in ("limits", "requests"):
            quantities = (container.get("resources") or {}).get(part) or {}
            for name, value in quantities.items():
                quantities[name] = {"7000m": "7", "65536Mi": "64Gi"}.get(str(value), str(value))
    spec["volumes"].append({"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": []}})
    spec["tolerations"] += [{"key": f"node.kubernetes.io/{t}", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300} for t in ("not-ready", "unreachable")]
    return spec


def live_job(registered: str, *extra: str, cluster_template: str = "none") -> dict:
    """The PyTorchJob as ``kubectl get pytorchjob -o yaml`` prints it."""
    job = copy.deepcopy(render_job(registered, "--cluster-template", cluster_template, *extra))
    job["metadata"].update(name="train-a1b2", namespace="vision", uid="0b6f5a86", generation=1)
    job["spec"]["runPolicy"]["suspend"] = False  # the training operator's default
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    annotate(worker, registered, cluster_template)
    worker["spec"] = as_the_cluster_keeps_the_pod_spec(worker["spec"])
    job["status"] = {"conditions": [{"type": "Running", "status": "True"}]}
    return job


def live_pod(registered: str) -> dict:
    """A worker pod of that job, as ``kubectl get pod -o yaml`` prints it."""
    job = live_job(registered)
    template = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    metadata = copy.deepcopy(template["metadata"])
    metadata.update(name="train-a1b2-worker-0", namespace="vision",
                    ownerReferences=[{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "train-a1b2"}])
    metadata.setdefault("labels", {})["training.kubeflow.org/replica-type"] = "worker"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"],
            "status": {"phase": "Running"}}


def write(tmp_path, data, name: str = "live.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False) if not isinstance(data, str) else data, encoding="utf-8")
    return str(path)


def line_of(path, text: str, nth: int = 1) -> int:
    """The line number of the ``nth`` line of a file that holds ``text``."""
    hits = [i for i, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1) if text in line]
    return hits[nth - 1]


def test_the_job_as_the_cluster_keeps_it_verifies(registered, team, tmp_path):
    manifest = write(tmp_path, live_job(registered))
    result = invoke(["verify", manifest, "--team", str(team)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("PyTorchJob train-a1b2: profile gpu-large (from its kfdefaults.io/profile "
                                    "annotation), sha256:")
    assert result.stdout.rstrip().endswith(": no differences")


def change_the_profile(team) -> str:
    """The profile edited after registration; returns its path."""
    path = team / "gpu-large.yaml"
    text = path.read_text(encoding="utf-8")
    text = text.replace('nnodes: "2:4"', 'nnodes: "2:4"\n  max_restarts: 1')
    text = text.replace("train:2.1", "train:2.2").replace("value: WARN", "value: INFO")
    text = text.replace("memory: 65536Mi", "memory: 64Gi")  # the same quantity, written otherwise
    text += "    tolerations:\n" \
            "      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n" \
            "      - {key: pool, operator: Equal, value: a100, effect: NoSchedule}\n"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_profile_changed_after_registration_lists_every_difference(registered, team, tmp_path):
    profile = change_the_profile(team)
    manifest = write(tmp_path, live_job(registered))
    result = invoke(["verify", manifest, "--team", str(team)])
    assert result.exit_code == 1, result.output
    old, new = digest_of(registered), digest_of(str(team))
    assert old != new
    at = f"team {profile}"
    assert result.stdout.splitlines() == [
        "PyTorchJob train-a1b2: profile gpu-large (from its kfdefaults.io/profile annotation), 5 differences (live -> now)",
        f"  the job was made from gpu-large {old[:19]}…; it renders {new[:19]}… now",
        f"  elastic.max_restarts (spec.elasticPolicy.maxRestarts): 3 -> 1  {at}:{line_of(profile, 'max_restarts')}",
        "  Worker: pod_template.spec.containers[name=primary].image: registry.example.com/vision/train:2.1 -> "
        f"registry.example.com/vision/train:2.2  {at}:{line_of(profile, 'train:2.2')}",
        "  Worker: pod_template.spec.containers[name=primary].env[name=NCCL_DEBUG].value: WARN -> INFO  "
        f"{at}:{line_of(profile, 'value: INFO')}",
        '  Worker: pod_template.spec.tolerations[1]: (absent) -> {"effect": "NoSchedule", "key": "pool", '
        f'"operator": "Equal", "value": "a100"}}  {at}:{line_of(profile, "key: pool")}',
        f"  Worker: elastic.max_restarts (KFDEFAULTS_ELASTIC): 3 -> 1  {at}:{line_of(profile, 'max_restarts')}",
    ]


def test_a_pod_of_the_job(registered, team, tmp_path):
    manifest = write(tmp_path, live_pod(registered))
    unchanged = invoke(["verify", manifest, "--team", str(team)])
    assert unchanged.exit_code == 0, unchanged.output
    assert unchanged.stdout.startswith("Pod train-a1b2-worker-0: profile gpu-large")
    profile = change_the_profile(team)
    changed = invoke(["verify", manifest, "--team", str(team)])
    assert changed.exit_code == 1
    lines = changed.stdout.splitlines()
    assert lines[1].startswith("  the pod was made from gpu-large sha256:")
    assert lines[2:] == [
        "  pod_template.spec.containers[name=primary].image: registry.example.com/vision/train:2.1 -> "
        f"registry.example.com/vision/train:2.2  team {profile}:{line_of(profile, 'train:2.2')}",
        "  pod_template.spec.containers[name=primary].env[name=NCCL_DEBUG].value: WARN -> INFO  "
        f"team {profile}:{line_of(profile, 'value: INFO')}",
        '  pod_template.spec.tolerations[1]: (absent) -> {"effect": "NoSchedule", "key": "pool", '
        f'"operator": "Equal", "value": "a100"}}  team {profile}:{line_of(profile, "key: pool")}',
        f"  elastic.max_restarts (KFDEFAULTS_ELASTIC): 3 -> 1  team {profile}:{line_of(profile, 'max_restarts')}",
    ]


def test_what_the_cluster_changed_in_the_pod(registered, team, tmp_path):
    """Edits made after the pod was created (or a mutating webhook) are differences even when the profile is the same."""
    pod = live_pod(registered)
    primary = pod["spec"]["containers"][0]
    primary["resources"]["limits"]["memory"] = "32Gi"
    primary["env"] = [e for e in primary["env"] if e["name"] != "NCCL_DEBUG"]
    del pod["metadata"]["labels"]["team"]
    pod["spec"]["volumes"] = [v for v in pod["spec"]["volumes"] if v["name"] != "dshm"]
    sidecar = pod["spec"]["containers"][1]
    sidecar["image"] = "registry.example.com/infra/log-shipper:1.5"
    result = invoke(["verify", write(tmp_path, pod), "--team", str(team)])
    assert result.exit_code == 1
    profile = team / "gpu-large.yaml"
    builtin = os.path.join(builtin_folder(), "elastic-gpu-default.yaml")
    lines = result.stdout.splitlines()
    assert lines[0].endswith("5 differences (live -> now)")
    assert lines[1] == f"  pod_template.labels.team: (absent) -> vision  team {profile}:{line_of(profile, 'team: vision')}"
    assert lines[2] == ('  pod_template.spec.containers[name=primary].resources.limits.memory: 32Gi -> 65536Mi  '
                        f'team {profile}:{line_of(profile, "memory:")}')
    assert lines[3] == ('  pod_template.spec.containers[name=primary].env[name=NCCL_DEBUG]: (absent) -> {"name": '
                        f'"NCCL_DEBUG", "value": "WARN"}}  team {profile}:{line_of(profile, "NCCL_DEBUG")}')
    assert lines[4] == ("  pod_template.spec.containers[name=log-shipper].image: registry.example.com/infra/log-shipper:1.5"
                        f" -> registry.example.com/infra/log-shipper:1.4  team {profile}:{line_of(profile, 'log-shipper:1.4')}")
    # elastic-gpu-default sizes /dev/shm `auto`: the memory request of the primary container
    assert lines[5] == ('  pod_template.spec.volumes[name=dshm]: (absent) -> {"emptyDir": {"medium": "Memory", '
                        f'"sizeLimit": "65536Mi"}}, "name": "dshm"}}  builtin {builtin}:{line_of(builtin, "- name: dshm", 2)}')


def test_the_recorded_task_layer_is_no_drift(registered, team, tmp_path):
    """A task that set ``Elastic(max_restarts=1)`` registered it, and its ``KFDEFAULTS_ELASTIC`` records it: verify
    compares with the profile under that task layer, so the job as registered agrees; ``--set`` still overrides it."""
    manifest = write(tmp_path, live_job(registered, "--set", "elastic.max_restarts=1"))
    recorded = invoke(["verify", manifest, "--team", str(team)])
    assert recorded.exit_code == 0, recorded.output
    assert recorded.stdout.splitlines()[1:] == ["  with the task layer its KFDEFAULTS_ELASTIC records: "
                                                "elastic.max_restarts=1"]
    overridden = invoke(["verify", manifest, "--team", str(team), "--set", "elastic.max_restarts=2"])
    assert overridden.exit_code == 1
    assert overridden.stdout.splitlines()[2:] == [  # the digest leaves the task layer out: no headline
        "  elastic.max_restarts (spec.elasticPolicy.maxRestarts): 1 -> 2  task --set elastic.max_restarts=2",
        "  Worker: elastic.max_restarts (KFDEFAULTS_ELASTIC): 1 -> 2  task --set elastic.max_restarts=2",
    ]


def test_a_list_several_documents_and_standard_input(registered, team, tmp_path, monkeypatch):
    job, pod = live_job(registered), live_pod(registered)
    change_the_profile(team)
    listed = write(tmp_path, {"apiVersion": "v1", "kind": "List", "items": [job, pod]}, "list.yaml")
    documents = yaml.safe_dump(job, sort_keys=False) + "---\n" + yaml.safe_dump(pod, sort_keys=False) + "---\n"
    streamed = write(tmp_path, documents, "stream.yaml")
    outputs = []
    for args in (["verify", listed], ["verify", streamed], ["verify", "-"]):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(documents.encode())))
        result = invoke(args + ["--team", str(team), "-o", "json"])
        assert result.exit_code == 1, result.output
        outputs.append(json.loads(result.stdout))
    for document in outputs:
        assert document["equal"] is False
        assert [(o["kind"], o["name"], o["replicas"]) for o in document["objects"]] == [
            ("PyTorchJob", "train-a1b2", ["Worker"]), ("Pod", "train-a1b2-worker-0", [])]
    differences = [[(d["path"], d.get("replica"), d.get("live_path")) for d in o["differences"]]
                   for o in outputs[0]["objects"]]
    assert ("pod_template.spec.containers[name=primary].image", "Worker", None) in differences[0]
    assert ("pod_template.spec.containers[name=primary].image", None, None) in differences[1]
    assert outputs[1]["objects"][0]["differences"] == outputs[0]["objects"][0]["differences"]
    assert outputs[2]["objects"][1]["source"] == {"file": "-", "line": outputs[1]["objects"][1]["source"]["line"]}


def test_json_names_both_digests_and_where_each_value_is_set(registered, team, tmp_path):
    profile = change_the_profile(team)
    result = invoke(["verify", write(tmp_path, live_pod(registered)), "--team", str(team), "-o", "json"])
    assert result.exit_code == 1
    (obj,) = json.loads(result.stdout)["objects"]
    assert obj["digest"] == {"live": digest_of(registered), "now": digest_of(str(team)), "lock": None}
    assert obj["profile"] == "gpu-large" and obj["target"] == "flytekit" and obj["equal"] is False
    image = next(d for d in obj["differences"] if d["path"].endswith(".image"))
    assert image == {"path": "pod_template.spec.containers[name=primary].image",
                     "live": "registry.example.com/vision/train:2.1", "now": "registry.example.com/vision/train:2.2",
                     "set_by": {"layer": "team", "source": profile, "file": profile,
                                "line": line_of(profile, "train:2.2"), "column": 16}}
    toleration = next(d for d in obj["differences"] if "tolerations" in d["path"])
    assert "live" not in toleration and toleration["now"]["key"] == "pool"


def test_the_profile_comes_from_the_flag_the_annotation_or_kfdefaults_elastic(registered, team, tmp_path):
    pod = live_pod(registered)
    del pod["metadata"]["annotations"]["kfdefaults.io/profile"]
    result = invoke(["verify", write(tmp_path, pod), "--team", str(team)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Pod train-a1b2-worker-0: profile gpu-large (from its KFDEFAULTS_ELASTIC variable)")
    flagged = invoke(["verify", write(tmp_path, pod), "--team", str(team), "--profile", "cpu-small"])
    assert flagged.exit_code == 1
    assert flagged.stdout.startswith("Pod train-a1b2-worker-0: profile cpu-small (from --profile)")
    assert "  the pod was made from cpu-small sha256:" in flagged.stdout
    for container in pod["spec"]["containers"]:
        container["env"] = [e for e in container["env"] if e["name"] != "KFDEFAULTS_ELASTIC"]
    path = write(tmp_path, pod)
    nameless = invoke(["verify", path, "--team", str(team)])
    assert nameless.exit_code == 1 and nameless.stdout == ""
    assert nameless.stderr == (f"{path}:{line_of(path, 'metadata:')}:1: metadata: Pod train-a1b2-worker-0 names no "
                               "profile: no kfdefaults.io/profile annotation and no KFDEFAULTS_ELASTIC variable; give "
                               "--profile NAME\n")
    named = invoke(["verify", path, "--team", str(team), "--profile", "gpu-large"])
    assert named.exit_code == 0, named.output
    assert "note: the primary container has no KFDEFAULTS_ELASTIC" in named.stdout


@pytest.mark.parametrize("text, where, message", [
    ("kind: Pod\nspec: {containers: [\n", (3, 1), "invalid YAML"),
    ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n", (2, 7),
     "kind: verify compares Pods, PyTorchJobs and receipts, not 'Deployment'"),
    ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\nspec:\n  runPolicy: {}\n", (4, 1),
     "spec: PyTorchJob without spec.pytorchReplicaSpecs"),
    ("kind: Pod\nmetadata: {name: p}\nspec:\n  containers: {name: pytorch}\n", (4, 15),
     "spec.containers: a pod's spec.containers is a list of containers"),
    ("kind: List\nitems:\n  - kind: Pod\n    metadata: {name: p, annotations: {kfdefaults.io/profile: gpu-large}}\n"
     "    spec:\n      containers:\n        - name: pytorch\n          env:\n            - name: KFDEFAULTS_ELASTIC\n"
     "              value: '{not json'\n", (10, 22), "KFDEFAULTS_ELASTIC is not JSON"),
    ("", (1, 1), "no Pod or PyTorchJob in this file"),
    ("# " + "x" * (1 << 20) + "\n", (1, 1), "file is larger than 1024 KiB"),
])
def test_a_bad_manifest_is_located(tmp_path, text, where, message):
    path = write(tmp_path, text, "bad.yaml")
    result = invoke(["verify", path])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(f"{path}:{where[0]}:{where[1]}: "), result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("elastic", [
    {"nnodes": 2},
    {"nnodes": "2:8", "nproc_per_node": 4, "max_restarts": 0},
    {"nnodes": "1:3", "run_policy": {"clean_pod_policy": "all", "ttl_seconds_after_finished": 600,
                                     "active_deadline_seconds": 7200, "backoff_limit": 0}},
    {"nnodes": 3, "run_policy": {"clean_pod_policy": "none", "backoff_limit": 5}},
    {"nnodes": 4, "run_policy": None},
])
def test_the_job_fields_are_what_a_real_task_registers(tmp_path, elastic):
    """The restatement of the plugin's serialization and the backend's job fields, against real ones."""
    (tmp_path / "gpu-large.yaml").write_text(yaml.safe_dump({"elastic": elastic}), encoding="utf-8")
    resolved = Pipeline.discover(team=[str(tmp_path)], target="flytekit", cluster_template="none").resolve("gpu-large")
    flyte = invoke(["render", "gpu-large", "--team", str(tmp_path), "--as", "flyte", "--target", "flytekit"])
    assert flyte.exit_code == 0, flyte.output
    assert registered_custom(resolved.elastic_settings) == yaml.safe_load(flyte.stdout)["custom"]
    job = render_job(str(tmp_path))
    for path, value in job_fields(resolved.elastic_settings).items():
        node = job
        for part in path:
            node = node[part]
        assert node == value, path
    assert set(job["spec"]["runPolicy"]) <= {"/".join(p[2:]) for p in job_fields(resolved.elastic_settings)
                                               if p[1] == "runPolicy"}


def test_verify_imports_neither_flytekit_nor_the_kubernetes_client(registered, tmp_path):
    path = write(tmp_path, live_pod(registered))
    code = (
        f"import sys, runpy; sys.argv = ['kfdefaults', 'verify', {path!r}, '--team', {registered!r}]\n"
        "try:\n    runpy.run_module('kfdefaults.cli', run_name='__main__')\nexcept SystemExit as e:\n"
        "    print('EXIT', e.code, file=sys.stderr)\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('flytekit', 'kubernetes', 'torch', 'flyte'))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ})
    assert "EXIT 0" in proc.stderr and "HEAVY []" in proc.stderr, proc.stderr


CLUSTER_TEMPLATE = """\
apiVersion: v1
kind: PodTemplate
metadata: {name: flyte-default, namespace: flyte}
template:
  spec:
    containers:
      - name: default
        image: docker.io/rwgrim/docker-noop
        volumeMounts: [{name: dshm, mountPath: /dev/shm}]
    volumes: [{name: dshm, emptyDir: {medium: Memory}}]
    tolerations: [{key: cluster.example.com/dedicated, operator: Equal, value: ml, effect: NoSchedule}]
"""


def test_the_cluster_template_is_a_layer_of_the_digest(registered, team, tmp_path_factory, tmp_path):
    """Where the cluster's PodTemplate mounts /dev/shm, the profile's is left out (the cluster layer): verify must
    read the same template to get the digest the pod was registered with."""
    template = tmp_path_factory.getbasetemp() / "cluster-template.yaml"
    template.write_text(CLUSTER_TEMPLATE, encoding="utf-8")
    manifest = write(tmp_path, live_job(registered, cluster_template=str(template)))
    same = invoke(["verify", manifest, "--team", str(team), "--cluster-template", str(template)])
    assert same.exit_code == 0, same.output
    other = invoke(["verify", manifest, "--team", str(team), "--cluster-template", "none"])
    assert other.exit_code == 1
    builtin = os.path.join(builtin_folder(), "elastic-gpu-default.yaml")
    assert other.stdout.splitlines() == [
        "PyTorchJob train-a1b2: profile gpu-large (from its kfdefaults.io/profile annotation), 1 difference (live -> now)",
        f"  the job was made from gpu-large {digest_of(registered, 'gpu-large', str(template))[:19]}…; it renders "
        f"{digest_of(registered)[:19]}… now",
        # without the template the profile's own /dev/shm volume is back, sized `auto` (the memory request)
        "  Worker: pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit: (absent) -> 65536Mi  "
        f"builtin {builtin}:{line_of(builtin, 'sizeLimit')}",
    ]


def test_a_flyte2_pod_is_compared_for_its_own_target(registered, team, tmp_path):
    """The pod of a Flyte 2 task: its KFDEFAULTS_ELASTIC says flyte2, whose plugin defaults lie below the profile."""
    result = invoke(["render", "gpu-large", "--team", registered, "--as", "flyte", "--target", "flyte2"])
    assert result.exit_code == 0, result.output
    task_template = yaml.safe_load(result.stdout)
    digest = Pipeline.discover(team=[registered], target="flyte2").resolve("gpu-large").digest()
    assert registered_custom(Pipeline.discover(team=[registered], target="flyte2").resolve("gpu-large")
                             .elastic_settings) == task_template["custom"]
    spec, metadata = task_template["k8sPod"]["podSpec"], task_template["k8sPod"]["metadata"]
    spec["containers"][0]["name"] = "pytorch"
    metadata.update(name="a1b2-worker-0", annotations=provenance_annotations("gpu-large", digest))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": as_the_cluster_keeps_the_pod_spec(spec)}
    manifest = write(tmp_path, pod)
    same = invoke(["verify", manifest, "--team", str(team)])
    assert same.exit_code == 0, same.output
    assert same.stderr == ""  # the pod records its target: nothing to say about it
    profile = team / "gpu-large.yaml"
    profile.write_text(PROFILE.replace('nnodes: "2:4"', 'nnodes: "2:4"\n  nccl_heartbeat_timeout_sec: 600'),
                       encoding="utf-8")
    changed = invoke(["verify", manifest, "--team", str(team)])
    assert changed.exit_code == 1
    assert changed.stdout.splitlines()[2:] == [
        f"  elastic.nccl_heartbeat_timeout_sec (KFDEFAULTS_ELASTIC): 300 -> 600  team {profile}:3"]
    as_flytekit = invoke(["verify", manifest, "--team", str(registered), "--target", "flytekit"])
    assert "note: the pod was registered for flyte2, compared with the profile resolved for flytekit" in as_flytekit.stdout


def test_a_pod_made_under_another_lock_file_says_so_and_the_lock_never_hides_a_difference(registered, team, tmp_path,
                                                                                          monkeypatch):
    job = live_job(registered)  # rendered before the project's pyproject.toml is in the way
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(f'[project]\nname = "vision"\n\n[tool.kfdefaults]\nteam = ["{team}"]\n',
                                            encoding="utf-8")
    monkeypatch.chdir(project)
    assert invoke(["lock", "gpu-large"]).exit_code == 0
    lock_now = read_lock(str(project / "kfdefaults.lock")).digest
    annotations = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"]["annotations"]
    annotations[LOCK_ANNOTATION] = lock_now
    same = invoke(["verify", write(tmp_path, job)])
    assert same.exit_code == 0 and "note:" not in same.stdout, same.output
    annotations[LOCK_ANNOTATION] = "sha256:" + "0" * 64
    other = invoke(["verify", write(tmp_path, job)])
    assert other.exit_code == 0, other.output
    assert other.stdout.splitlines()[-1] == (f"  note: made under kfdefaults.lock sha256:000000000000…; the project's "
                                             f"kfdefaults.lock is {lock_now[:19]}… now")
    change_the_profile(team)  # the lock no longer holds: verify still lists what differs, as render cannot
    changed = invoke(["verify", write(tmp_path, job)])
    assert changed.exit_code == 1 and "5 differences (live -> now)" in changed.stdout, changed.output


@pytest.mark.slow
def test_a_job_of_thousands_of_list_items_is_verified_against_as_many_in_seconds(tmp_path):
    """Four profiles extending each other, 1,400 environment variables each (every file under the size cap), and a
    live job whose pods hold 10,410 of them, 1,400 of the profile's missing: each of the profile's items was looked
    for among every live one, and each missing item's setter among every leaf (a minute and more). Both are found
    by index now, with the same answers; the bound below is a hang guard for a loaded machine, not a benchmark."""
    team = tmp_path / "team"
    team.mkdir()
    for k in range(4):
        env = "".join(f"          - {{name: V{k}_{i}, value: x}}\n" for i in range(1400))
        (team / f"p{k}.yaml").write_text(("elastic: {nnodes: 2}\n" if not k else f"extends: p{k - 1}\n")
                                         + "pod_template:\n  spec:\n    containers:\n      - name: primary\n"
                                         "        env:\n" + env, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env.update(KFDEFAULTS_CACHE_DIR=str(tmp_path / "cache"), KFDEFAULTS_NO_ENTRY_POINTS="1")
    kfdefaults = [sys.executable, "-m", "kfdefaults.cli"]
    job = subprocess.run([*kfdefaults, "render", "p3", "--team", str(team), "--as", "pytorchjob"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, check=True).stdout
    docs = list(yaml.safe_load_all(job))
    for replica in docs[0]["spec"]["pytorchReplicaSpecs"].values():
        [container] = replica["template"]["spec"]["containers"]
        container["env"] = ([e for e in container["env"] if not e["name"].startswith("V2_")]
                            + [{"name": f"X{i}", "value": "y"} for i in range(6200)])
    (tmp_path / "live.yaml").write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    done = subprocess.run([*kfdefaults, "verify", "live.yaml", "--team", str(team)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=40)
    assert done.returncode == 1, done.stderr
    missing = [line for line in done.stdout.splitlines() if ".env[name=V2_" in line]
    assert len(missing) == 1400 * len(docs[0]["spec"]["pytorchReplicaSpecs"])
    assert ("  Worker: pod_template.spec.containers[name=primary].env[name=V2_1399]: (absent) -> "
            f'{{"name": "V2_1399", "value": "x"}}  team {team}/p2.yaml:1406') in done.stdout
