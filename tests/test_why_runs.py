"""``kfdefaults why`` and ``kfdefaults verify`` on the logs of real failures of tasks on a profile, run on this
machine as ``pyflyte-execute`` runs them in a pod (``flyte_apps/pod_runner.py``): each log starts with the task's
receipt, which both commands read back.

* A rendezvous that times out: a PyTorchJob's pod (``PET_NNODES`` and ``PET_RDZV_ENDPOINT`` set as the training
  operator sets them) whose other node never comes.
* A DataLoader whose worker processes exhaust ``/dev/shm``: the profile registers a 1Gi memory-backed ``/dev/shm``,
  and the pod gets 1Mi (a tmpfs in a mount namespace of its own, as a cluster that changed the volume would give).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from receipt_pods import AS_KUBELET, kubelet_cgroups, receipts, why_not_kubelet

APPS = Path(__file__).resolve().parent / "flyte_apps"
KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")

APP = """\
    import os

    from flytekit import task

    from kfdefaults import Elastic

    TEAM = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")]


    @task(task_config=Elastic(profile="lonely-pair", team=TEAM))
    def join(x: int) -> int:
        return x


    @task(task_config=Elastic(profile="loader", team=TEAM))
    def load(x: int) -> int:
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Samples(Dataset):
            def __len__(self) -> int:
                return 16

            def __getitem__(self, item: int):
                return torch.full((1 << 18,), float(item))  # 1 MiB: batches of 4 MiB through /dev/shm

        return sum(int(b.sum().item() > 0) for b in DataLoader(Samples(), batch_size=4, num_workers=2))
    """

PROFILES = {
    "lonely-pair.yaml": """\
        description: two nodes, a short join_timeout
        elastic:
          nnodes: 2
          nproc_per_node: 1
          start_method: fork
          monitor_interval: 1
          rdzv_configs:
            join_timeout: 3
            read_timeout: 10
        """,
    "loader.yaml": """\
        description: one node, a 1Gi /dev/shm in a 3Gi container
        elastic: {nnodes: 1, nproc_per_node: 1, start_method: fork, monitor_interval: 1}
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  limits: {memory: 3Gi}
                volumeMounts: [{name: dshm, mountPath: /dev/shm}]
            volumes:
              - name: dshm
                emptyDir: {medium: Memory, sizeLimit: 1Gi}
        """,
}
JOIN_LINE, SHM_LINE, MEMORY_LINE = 8, 12, 8  # lonely-pair's join_timeout, loader's sizeLimit and memory limit


def shell_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("KFDEFAULTS_", "PET_", "FLYTE_"))
            or k == "KFDEFAULTS_CACHE_DIR"}


@pytest.fixture(scope="module")
def project(tmp_path_factory, flytekit_python) -> tuple[Path, Path, dict[str, dict]]:
    """The laptop's project (code and team profiles), the image (code only), and each task's registered container
    environment."""
    root = tmp_path_factory.mktemp("why-runs")
    laptop, image = root / "laptop", root / "image"
    (laptop / "team").mkdir(parents=True)
    image.mkdir()
    for folder in (laptop, image):
        (folder / "kfd_fail_app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    for name, text in PROFILES.items():
        (laptop / "team" / name).write_text(textwrap.dedent(text), encoding="utf-8")
    registered = {}
    for task in ("join", "load"):
        proc = flytekit_python.run([APPS / "register_app.py", laptop, "kfd_fail_app", task], cwd=laptop, env=shell_env())
        assert proc.returncode == 0, proc.stderr[-3000:]
        [primary] = json.loads(proc.stdout)["k8sPod"]["podSpec"]["containers"]
        registered[task] = {e["name"]: e["value"] for e in primary["env"]}
    return laptop, image, registered


def run(python, image: Path, task: str, container_env: dict, tmp_path: Path, extra_env: dict | None = None,
        kubelet: dict | None = None) -> subprocess.CompletedProcess:
    work = tmp_path / "work"
    work.mkdir()
    env = {**shell_env(), **container_env, "FLYTE_INTERNAL_EXECUTION_ID": "kfd-why", **(extra_env or {})}
    argv = [APPS / "pod_runner.py", tmp_path / "launch.jsonl", work, "kfd_fail_app", task, "1"]
    if kubelet is not None:
        argv = [AS_KUBELET, json.dumps(kubelet), *argv]
    return python.run(argv, cwd=image, env=env, timeout=600)


def kfdefaults(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([KFDEFAULTS, *args], cwd=cwd, env=shell_env(), capture_output=True, text=True, timeout=300)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def test_why_answers_a_real_rendezvous_timeout_from_the_receipt_in_its_log(project, flytekit_python, tmp_path):
    laptop, image, registered = project
    pet = {"PET_NNODES": "2:2", "PET_RDZV_ENDPOINT": f"localhost:{free_port()}", "PET_NPROC_PER_NODE": "1",
           "PET_MAX_RESTARTS": "0", "PET_RDZV_BACKEND": "c10d"}  # what the training operator sets
    proc = run(flytekit_python, image, "join", registered["join"], tmp_path, pet)
    assert "RendezvousTimeoutError" in proc.stderr, proc.stderr[-3000:]
    [receipt] = receipts(proc.stderr)
    assert receipt["differences"] == []  # the pod had what was registered: the timeout is the profile's
    log = tmp_path / "task.log"
    log.write_text(proc.stderr, encoding="utf-8")

    # elsewhere than the project: the values come from the receipt, not from files
    done = kfdefaults("why", str(log), "-o", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    marker = next(i for i, line in enumerate(proc.stderr.splitlines(), 1) if line.startswith("KFDEFAULTS_RECEIPT "))
    assert answer["values"]["source"] == (f"the receipt in the log (line {marker}): profile lonely-pair (flytekit), "
                                          f"registered {receipt['digest']}")
    [failure] = answer["failures"]
    assert failure["name"] == "rendezvous-timeout"
    assert any("RendezvousTimeoutError" in e["text"] for e in failure["evidence"])
    settings = {s["key"]: s for s in failure["settings"]}
    assert (settings["elastic.rdzv_configs.join_timeout"]["value"], settings["elastic.rdzv_configs.join_timeout"]["set_by"]) \
        == (3, f"team lonely-pair.yaml:{JOIN_LINE}")
    assert settings["elastic.nnodes"]["value"] == 2
    assert failure["change"][0].startswith("raise join_timeout (3 s now) above the longest gap")

    text = kfdefaults("why", str(log), cwd=tmp_path).stdout
    assert f"  elastic.rdzv_configs.join_timeout = 3  (team lonely-pair.yaml:{JOIN_LINE})\n" in text


@pytest.mark.skipif(why_not_kubelet() is not None, reason=str(why_not_kubelet()))
def test_why_and_verify_answer_a_real_dataloader_that_exhausts_a_changed_dev_shm(project, flytekit_python, tmp_path):
    laptop, image, registered = project
    with kubelet_cgroups(memory=3 << 30) as cgroups:
        proc = run(flytekit_python, image, "load", registered["load"], tmp_path,
                   kubelet={"shm_size": str(1 << 20), "cgroups": cgroups})
    assert "No space left on device" in proc.stderr and "RESULT" not in proc.stdout, proc.stderr[-3000:]
    [receipt] = receipts(proc.stderr)
    [difference] = receipt["differences"]
    assert (difference["what"], difference["observed"], difference["registered"]) == ("/dev/shm size", "1Mi", "1Gi")
    log = tmp_path / "task.log"
    log.write_text(proc.stderr, encoding="utf-8")

    done = kfdefaults("why", str(log), "-o", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [failure] = json.loads(done.stdout)["failures"]
    assert failure["name"] == "shm-no-space"
    settings = {s["key"]: s for s in failure["settings"]}
    shm = settings["pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit"]
    assert (shm["value"], shm["set_by"], shm["observed"]) == ("1Gi", f"team loader.yaml:{SHM_LINE}", "1Mi (tmpfs)")
    memory = settings["pod_template.spec.containers[name=primary].resources.limits.memory"]
    assert (memory["value"], memory["set_by"], memory["observed"]) == ("3Gi", f"team loader.yaml:{MEMORY_LINE}", "3Gi")
    # the pod did not have what the profile set: that comes first
    assert failure["change"][0] == ("this pod had 1Mi, not the 1Gi registered at pod_template.spec.volumes[name=dshm]."
                                    "emptyDir.sizeLimit: likely the volume's sizeLimit was changed after registration: "
                                    "the cluster's PodTemplate, an admission policy, or Flyte's shared memory; restore "
                                    "it first")

    # verify reads the receipt in the log, against the profile as it renders now in the project
    done = kfdefaults("verify", str(log), "--team", "team", cwd=laptop)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    marker = next(i for i, line in enumerate(proc.stderr.splitlines(), 1) if line.startswith("KFDEFAULTS_RECEIPT "))
    assert lines[0] == (f"Receipt of task kfd_fail_app.load at {log}:{marker}: profile loader (from the receipt), 1 "
                        "difference (live -> now)")
    assert lines[1] == ("  pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit (receipt: /dev/shm size): 1Mi -> 1Gi  "
                        f"team team/loader.yaml:{SHM_LINE}")
