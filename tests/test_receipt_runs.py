"""The receipt of real runs: a task on a profile registered by flytekit in a fresh process (as ``pyflyte register``),
then run as ``pyflyte-execute`` runs it (two gloo workers, ``flyte_apps/pod_runner.py``) in a pod this machine makes
as the kubelet would (``receipt_pods``): ``/dev/shm`` a tmpfs of the registered volume's size in a mount namespace
of its own, the memory and CPU limits in cgroups of its own. Then the same run in a pod that the cluster changed: a
smaller ``/dev/shm``, another memory limit. The receipt the task prints says exactly that, at the profile's lines.

Flyte 2's run is ``tests/test_flyte2.py``'s (:func:`test_flyte2.run_in_a_flyte2_pod`).
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from receipt_pods import AS_KUBELET, kubelet_cgroups, receipt_lines, receipts, why_not_kubelet

APPS = Path(__file__).resolve().parent / "flyte_apps"
KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")

pytestmark = pytest.mark.skipif(why_not_kubelet() is not None, reason=str(why_not_kubelet()))

PROFILE = """\
    description: two forked CPU workers, a 512Mi /dev/shm, memory and CPU limits
    elastic: {nnodes: 1, nproc_per_node: 2, start_method: fork, monitor_interval: 1}
    pod_template:
      spec:
        containers:
          - name: primary
            env: [{name: FROM_PROFILE, value: "yes"}]
            resources:
              limits: {memory: 3Gi, cpu: "2"}
            volumeMounts: [{name: dshm, mountPath: /dev/shm}]
        volumes:
          - name: dshm
            emptyDir: {medium: Memory, sizeLimit: 512Mi}
    """
MEMORY_LINE, SHM_LINE = 9, 13  # the lines of PROFILE that set the memory limit and the sizeLimit

APP = """\
    import os

    from flytekit import task

    from kfdefaults import Elastic

    TEAM = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")]


    @task(task_config=Elastic(profile="shm-pair", team=TEAM), enable_deck=True)
    def reduce(x: int) -> int:
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo")
        value = torch.tensor([x + dist.get_rank()])
        dist.all_reduce(value)
        dist.destroy_process_group()
        return int(value.item())
    """


def registered(python, tmp_path: Path, profile: str = PROFILE) -> tuple[Path, dict]:
    """The image's folder (the code, no profile files) and the primary container's environment flytekit registered."""
    laptop, image = tmp_path / "laptop", tmp_path / "image"
    (laptop / "team").mkdir(parents=True)
    image.mkdir()
    (laptop / "kfd_receipt_app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    (image / "kfd_receipt_app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    (laptop / "team" / "shm-pair.yaml").write_text(textwrap.dedent(profile), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    proc = python.run([APPS / "register_app.py", laptop, "kfd_receipt_app", "reduce"], cwd=laptop, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    template = json.loads(proc.stdout)
    [primary] = template["k8sPod"]["podSpec"]["containers"]
    REGISTERED_METADATA.update(template["k8sPod"]["metadata"])
    return image, {e["name"]: e["value"] for e in primary["env"]}


REGISTERED_METADATA: dict = {}
"""The pod metadata (labels, annotations) of the last task :func:`registered` registered."""


def run_pod(python, image: Path, container_env: dict, tmp_path: Path, *, shm: str, memory: int, cpu_millis: int,
            record_only: bool = False, podinfo: dict | None = None):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("KFDEFAULTS_", "PET_", "FLYTE_"))},
           **container_env, "FLYTE_INTERNAL_EXECUTION_ID": "kfd-receipt"}
    if podinfo is not None:
        env["KFDEFAULTS_PODINFO"] = podinfo["path"]
    with kubelet_cgroups(memory=memory, cpu_millis=cpu_millis) as cgroups:
        pod = json.dumps({"shm_size": shm, "cgroups": cgroups, "podinfo": podinfo})
        return python.run([AS_KUBELET, pod, APPS / "pod_runner.py", tmp_path / "launch.jsonl", work, "kfd_receipt_app",
                           "reduce", "10", *(["--record-only"] if record_only else [])], cwd=image, env=env, timeout=600)


def verify(tmp_path: Path, log: str) -> subprocess.CompletedProcess:
    """``kfdefaults verify`` on a task's log, in the folder the task was registered from."""
    (tmp_path / "task.log").write_text(log, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    return subprocess.run([KFDEFAULTS, "verify", str(tmp_path / "task.log"), "--team", "team"], cwd=tmp_path / "laptop",
                          env=env, capture_output=True, text=True, timeout=300)


def test_a_pod_as_registered_has_a_receipt_without_differences(tmp_path, flytekit_python):
    image, env = registered(flytekit_python, tmp_path)
    proc = run_pod(flytekit_python, image, env, tmp_path, shm=str(512 << 20), memory=3 << 30, cpu_millis=2000)
    assert proc.returncode == 0 and "RESULT 21" in proc.stdout, proc.stderr[-3000:]
    [receipt] = receipts(proc.stderr)
    assert receipt["differences"] == [], receipt["differences"]
    assert receipt["observed"]["shm"] == {"path": "/dev/shm", "mount": True, "fstype": "tmpfs", "size": 512 << 20}
    assert receipt["observed"]["memory"]["limit"] == 3 << 30 and receipt["observed"]["cpu"]["limit_millis"] == 2000
    assert receipt["profile"] == "shm-pair" and receipt["registered"]["pod"]["shm"]["size_limit"] == "512Mi"
    assert receipt["launch"]["nproc_per_node"] == 2 and receipt["launch"]["start_method"] == "fork"
    assert receipt_lines(proc.stderr)[0] == ("kfdefaults receipt: task kfd_receipt_app.reduce on profile shm-pair "
                                             f"(flytekit, {receipt['digest'][:19]}…): no differences from what was "
                                             "registered")
    deck = (tmp_path / "work" / "out" / "deck.html").read_text(encoding="utf-8")  # the task keeps it: a Flyte Deck
    assert "kfdefaults receipt" in deck and html.escape(receipt_lines(proc.stderr)[0]) in deck
    done = verify(tmp_path, proc.stderr)  # the receipt against the profile as it renders now: the same
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Receipt of task kfd_receipt_app.reduce at ")
    assert ": profile shm-pair (from the receipt), sha256:" in done.stdout.splitlines()[0]


def test_a_pod_with_a_smaller_dev_shm_and_another_memory_limit_says_exactly_that(tmp_path, flytekit_python):
    image, env = registered(flytekit_python, tmp_path)
    proc = run_pod(flytekit_python, image, env, tmp_path, shm=str(64 << 20), memory=5 << 30, cpu_millis=2000)
    assert proc.returncode == 0 and "RESULT 21" in proc.stdout, proc.stderr[-3000:]  # never fatal by default
    [receipt] = receipts(proc.stderr)
    by_what = {d["what"]: d for d in receipt["differences"]}
    assert sorted(by_what) == ["/dev/shm size", "memory limit"]
    shm, memory = by_what["/dev/shm size"], by_what["memory limit"]
    assert (shm["observed"], shm["registered"]) == ("64Mi", "512Mi")
    assert shm["path"] == "pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit"
    assert shm["set_by"] == f"team shm-pair.yaml:{SHM_LINE}"
    assert shm["cause"].startswith("64Mi is the container runtime's own /dev/shm")
    assert (memory["observed"], memory["registered"]) == ("5Gi", "3Gi")
    assert memory["path"] == "pod_template.spec.containers[name=primary].resources.limits.memory"
    assert memory["set_by"] == f"team shm-pair.yaml:{MEMORY_LINE}"
    assert memory["cause"].startswith("a resource override at run time")
    lines = receipt_lines(proc.stderr)
    assert lines[0].endswith(": 2 differences from what was registered")
    assert ("kfdefaults receipt:   /dev/shm size: 64Mi in the pod, 512Mi registered (pod_template.spec.volumes"
            f"[name=dshm].emptyDir.sizeLimit, team shm-pair.yaml:{SHM_LINE}); likely: 64Mi is the container runtime's "
            "own /dev/shm") in "\n".join(lines)
    done = verify(tmp_path, proc.stderr)
    assert done.returncode == 1
    assert done.stdout.splitlines()[1:3] == [
        f"  pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit (receipt: /dev/shm size): 64Mi -> 512Mi  "
        f"team team/shm-pair.yaml:{SHM_LINE}",
        f"  pod_template.spec.containers[name=primary].resources.limits.memory (receipt: memory limit): 5Gi -> 3Gi  "
        f"team team/shm-pair.yaml:{MEMORY_LINE}"]


def test_labels_and_annotations_where_a_downward_api_volume_shows_them(tmp_path, flytekit_python):
    """The pod's labels and annotations as the kubelet writes them in a downward API volume: the registered ones,
    then a label Kueue's admission changed (its workload annotation says Kueue admitted the pod)."""
    labelled = PROFILE.replace("    pod_template:\n", "    pod_template:\n      labels: {team: vision}\n")
    image, env = registered(flytekit_python, tmp_path, labelled)
    labels, annotations = REGISTERED_METADATA["labels"], REGISTERED_METADATA["annotations"]
    assert labels == {"team": "vision"} and annotations["kfdefaults.io/profile"] == "shm-pair"
    folder = tmp_path / "podinfo"
    folder.mkdir()
    podinfo = {"path": str(folder), "labels": {**labels, "pod-template-hash": "7c1e2"}, "annotations": annotations}
    proc = run_pod(flytekit_python, image, env, tmp_path, shm=str(512 << 20), memory=3 << 30, cpu_millis=2000,
                   record_only=True, podinfo=podinfo)
    [receipt] = receipts(proc.stderr)
    assert receipt["differences"] == [] and receipt["observed"]["podinfo"]["labels"] == podinfo["labels"]
    assert not [n for n in receipt["notes"] if "not compared" in n]

    podinfo["labels"] = {"team": "speech"}
    podinfo["annotations"] = {**annotations, "kueue.x-k8s.io/workload": "pytorchjob-f3a9c1e0b2d4-7c1e2"}
    proc = run_pod(flytekit_python, image, env, tmp_path, shm=str(512 << 20), memory=3 << 30, cpu_millis=2000,
                   record_only=True, podinfo=podinfo)
    [receipt] = receipts(proc.stderr)
    [difference] = receipt["differences"]
    assert difference == {"what": "label team", "path": "pod_template.labels.team", "registered": "vision",
                          "observed": "speech", "set_by": "team shm-pair.yaml:4", "source": f"{folder}/labels",
                          "cause": "Kueue's admission (a ResourceFlavor's or an admission check's pod set updates)"}


def test_a_strict_profile_stops_a_changed_pod_before_its_workers_start(tmp_path, flytekit_python):
    strict = PROFILE.replace("    pod_template:\n", "    pod_template:\n      annotations: {kfdefaults.io/receipt: strict}\n")
    image, env = registered(flytekit_python, tmp_path, strict)
    proc = run_pod(flytekit_python, image, env, tmp_path, shm=str(64 << 20), memory=3 << 30, cpu_millis=2000, record_only=True)
    assert "RESULT" not in proc.stdout
    assert not (tmp_path / "launch.jsonl").exists()  # torch was never launched
    assert ("1 difference between this pod and what task kfd_receipt_app.reduce registered (profile 'shm-pair' asks "
            "for kfdefaults.io/receipt: strict): the task stops before its workers start") in proc.stderr
    [receipt] = receipts(proc.stderr)
    assert receipt["policy"] == "strict" and [d["what"] for d in receipt["differences"]] == ["/dev/shm size"]
    # the same pod as registered runs
    proc = run_pod(flytekit_python, image, env, tmp_path, shm=str(512 << 20), memory=3 << 30, cpu_millis=2000, record_only=True)
    assert proc.returncode == 0 and (tmp_path / "launch.jsonl").exists(), proc.stderr[-3000:]


FLYTE2_PAIR = """\
    description: two CPU workers, a 512Mi /dev/shm, memory and CPU limits
    elastic:
      nnodes: 1
      nproc_per_node: 2
      monitor_interval: 1
      rdzv_configs: {join_timeout: 123, timeout: 124, read_timeout: 125}
    pod_template:
      spec:
        containers:
          - name: primary
            env: [{name: FROM_PROFILE, value: "yes"}]
            resources:
              limits: {memory: 3Gi, cpu: "2"}
            volumeMounts: [{name: dshm, mountPath: /dev/shm}]
        volumes:
          - name: dshm
            emptyDir: {medium: Memory, sizeLimit: 512Mi}
    """


@pytest.mark.slow
def test_a_flyte2_pod_as_registered_then_changed(tmp_path):
    """Flyte 2's ``a0`` runs the task in the pod this machine makes as the kubelet would: no differences; then with a
    smaller ``/dev/shm`` and another memory limit: exactly those two."""
    from test_flyte2 import APP, APP_PROFILES, run_in_a_flyte2_pod

    profiles = {**APP_PROFILES, "pair.yaml": FLYTE2_PAIR}
    reported = APP.replace("@env.task\ndef allreduce", "@env.task(report=True)\ndef allreduce")
    assert reported != APP
    with kubelet_cgroups(memory=3 << 30, cpu_millis=2000) as cgroups:
        pod = run_in_a_flyte2_pod(tmp_path / "as-registered", profiles, {"shm_size": str(512 << 20), "cgroups": cgroups},
                                  app=reported)
    assert pod.proc.returncode == 0 and pod.seen is not None, pod.proc.stderr[-4000:]
    [receipt] = receipts(pod.proc.stderr)
    assert receipt["target"] == "flyte2" and receipt["differences"] == [], receipt["differences"]
    assert receipt["observed"]["shm"]["size"] == 512 << 20 and receipt["observed"]["memory"]["limit"] == 3 << 30
    report = (tmp_path / "as-registered" / "work" / "outputs" / "report.html").read_text(encoding="utf-8")
    assert html.escape(receipt_lines(pod.proc.stderr)[0]) in report  # the task keeps it: its report's tab

    with kubelet_cgroups(memory=4 << 30, cpu_millis=2000) as cgroups:
        pod = run_in_a_flyte2_pod(tmp_path / "changed", profiles, {"shm_size": str(128 << 20), "cgroups": cgroups})
    assert pod.proc.returncode == 0 and pod.seen is not None, pod.proc.stderr[-4000:]
    [receipt] = receipts(pod.proc.stderr)
    found = {d["what"]: (d["observed"], d["registered"], d["set_by"]) for d in receipt["differences"]}
    assert found == {"/dev/shm size": ("128Mi", "512Mi", "team pair.yaml:17"),
                     "memory limit": ("4Gi", "3Gi", "team pair.yaml:13")}
    shm = next(d for d in receipt["differences"] if d["what"] == "/dev/shm size")
    assert shm["cause"].startswith("the volume's sizeLimit was changed after registration")
