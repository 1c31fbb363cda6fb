"""The receipt's fabric record, read by real processes in the states a pod can be in: ``CAP_IPC_LOCK`` dropped from
the process (``capsh --drop``, else ``setpriv``) or kept, a mount namespace of its own (``unshare -m``) with a fake
``/dev/infiniband`` of character devices (a tmpfs over a private copy of ``/dev``) or without one, an ``/etc/hosts``
bound over as the kubelet writes it for a host-network pod or a pod-network one, and ``RLIMIT_MEMLOCK`` set by
``prlimit``. Nothing is mocked: each case runs ``kfdefaults.receipt`` in a child process that reads its own
``/proc/self/status``, ``/dev`` and limits; then ``kfdefaults verify`` reads the log it printed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from receipt_pods import receipt_lines, receipts

import kfdefaults
from kfdefaults.layers.builtin import builtin_folder
from kfdefaults.receipt.expect import expected_pod

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")

CHILD = textwrap.dedent("""\
    import json, sys
    from kfdefaults.receipt import take_receipt
    from kfdefaults.receipt.probe import observe
    if sys.argv[1] == "observe":
        import os
        print(json.dumps(observe(os.environ)["fabric"]))
    else:
        with open(sys.argv[2], encoding="utf-8") as f:
            take_receipt(json.load(f), "wf.train")
    """)

FACTS = """\
node_pools:
  ib:
    allocatable: {cpu: "96", memory: 1100Gi, nvidia.com/gpu: 8, rdma/ib: 8, vpc.amazonaws.com/efa: 4}
    nodes: 4
"""

K8S_HOSTS = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n10.200.0.4\ttrain-worker-0\n"
HOST_NETWORK_HOSTS = "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n"


def _why_no_namespace() -> str | None:
    if shutil.which("unshare") is None:
        return "no unshare on this machine"
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True, text=True)
    return None if done.returncode == 0 else f"unshare -m is not allowed here: {done.stderr.strip()}"


def _drop_ipc_lock() -> list[str] | None:
    """The command prefix that runs a program without ``CAP_IPC_LOCK`` (bounding, permitted and effective)."""
    if shutil.which("capsh"):
        return ["capsh", "--drop=cap_ipc_lock", "--", "-c", 'exec "$0" "$@"']
    if shutil.which("setpriv"):
        return ["setpriv", "--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock"]
    return None


NO_NAMESPACE = _why_no_namespace()
needs_namespace = pytest.mark.skipif(NO_NAMESPACE is not None, reason=str(NO_NAMESPACE))
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="not root: dropping a capability one has needs it")


def in_pod(tmp_path: Path, argv: list[str], *, ipc_lock: bool = True, infiniband: list[str] | None = None,
           hosts: str | None = None, memlock: int | str | None = None, rdma: list[str] | None = None) -> list[str]:
    """``argv`` as it runs in a container: without ``CAP_IPC_LOCK`` unless ``ipc_lock``; with ``infiniband`` (names
    of device files, plus a FIFO no writer opens), a ``/dev/infiniband`` in a mount namespace of its own; with
    ``hosts``, that text as ``/etc/hosts``; with ``memlock``, that ``RLIMIT_MEMLOCK`` in bytes; with ``rdma``, the
    node's RDMA devices as sysfs links them in ``/sys/class/infiniband``."""
    command = list(argv)
    if memlock is not None:
        command = ["prlimit", f"--memlock={memlock}:{memlock}", *command]
    if not ipc_lock:
        prefix = _drop_ipc_lock()
        if prefix is None:
            pytest.skip("neither capsh nor setpriv: cannot drop a capability for a child")
        command = prefix + command
    steps = []
    if infiniband is not None:
        upper, work = tmp_path / "dev-upper", tmp_path / "dev-work"
        upper.mkdir(exist_ok=True)
        work.mkdir(exist_ok=True)
        # a private copy of /dev first (an overlay), so that mkdir leaves nothing in the machine's own
        steps += [f"mount -t overlay overlay -o lowerdir=/dev,upperdir={upper},workdir={work} /dev",
                  "mkdir -p /dev/infiniband", "mount -t tmpfs tmpfs /dev/infiniband",
                  *[f"mknod /dev/infiniband/{name} c 231 {192 + i}" for i, name in enumerate(infiniband)],
                  "mkfifo /dev/infiniband/not-a-device"]
    if rdma is not None:  # a tmpfs over /sys/class: sysfs takes no mkdir
        steps += ["mount -t tmpfs tmpfs /sys/class", "mkdir /sys/class/infiniband",
                  *[f"ln -s ../../devices/pci0000:00/0000:00:1e.0/infiniband/{name} /sys/class/infiniband/{name}"
                    for name in rdma]]
    if hosts is not None:
        (tmp_path / "hosts").write_text(hosts, encoding="utf-8")
        steps.append(f"mount --bind {tmp_path / 'hosts'} /etc/hosts")
    if steps:
        command = ["unshare", "-m", "--propagation", "private", "sh", "-c", " && ".join(steps) + ' && exec "$0" "$@"',
                   *command]
    return command


def run_child(tmp_path: Path, *args: str, env: dict[str, str] | None = None, **pod) -> subprocess.CompletedProcess:
    (tmp_path / "child.py").write_text(CHILD, encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("KFDEFAULTS_", "NCCL_", "FI_"))}
    return subprocess.run(in_pod(tmp_path, [sys.executable, str(tmp_path / "child.py"), *args], **pod),
                          env={**base, **(env or {})}, capture_output=True, text=True, timeout=60)


def observed(tmp_path: Path, **pod) -> dict:
    done = run_child(tmp_path, "observe", **pod)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_root
def test_ipc_lock_is_read_from_the_process_s_effective_capabilities(tmp_path):
    assert observed(tmp_path)["ipc_lock"] is True
    assert observed(tmp_path, ipc_lock=False)["ipc_lock"] is False


@needs_namespace
def test_device_files_under_dev_infiniband_are_counted_in_a_private_mount_namespace(tmp_path):
    before = os.path.exists("/dev/infiniband")
    without = observed(tmp_path)
    with_devices = observed(tmp_path, infiniband=["uverbs0", "uverbs1", "rdma_cm"])
    assert (without["dev_infiniband"], without["dev_infiniband_count"]) == ([], 0)
    # the FIFO beside them is no device file, and the reading did not wait on it
    assert with_devices["dev_infiniband"] == ["rdma_cm", "uverbs0", "uverbs1"]
    assert with_devices["dev_infiniband_count"] == 3
    assert os.path.exists("/dev/infiniband") == before  # the namespace's /dev was its own


@needs_namespace
def test_the_node_s_rdma_devices_are_the_links_of_sys_class_infiniband(tmp_path):
    machine = sorted(os.listdir("/sys/class/infiniband")) if os.path.isdir("/sys/class/infiniband") else []
    assert observed(tmp_path)["sys_infiniband"] == machine
    assert observed(tmp_path, rdma=["rdmap0s30", "rdmap16s27"])["sys_infiniband"] == ["rdmap0s30", "rdmap16s27"]


@needs_namespace
def test_host_network_is_the_kubelet_s_etc_hosts_header(tmp_path):
    assert observed(tmp_path, hosts=HOST_NETWORK_HOSTS)["host_network"] is True
    assert observed(tmp_path, hosts=K8S_HOSTS)["host_network"] is False
    assert observed(tmp_path, hosts="127.0.0.1 localhost\n")["host_network"] is None  # not a kubelet's file


def test_the_locked_memory_limit_is_the_process_s_rlimit(tmp_path):
    assert observed(tmp_path, memlock=65536)["memlock"] == {"soft": 65536, "hard": 65536}
    assert observed(tmp_path, memlock=1 << 20)["memlock"] == {"soft": 1 << 20, "hard": 1 << 20}
    # (raising it to unlimited, which a pod's runtime may do, is refused on this machine even to root)


@needs_namespace
def test_a_fifo_in_a_file_s_place_is_refused_not_waited_on(tmp_path):
    """A downward API folder whose ``labels`` is a FIFO that no writer opens: the receipt is taken at once."""
    folder = tmp_path / "podinfo"
    folder.mkdir()
    os.mkfifo(folder / "labels")
    resolved = kfdefaults.resolve("cpu-small")
    registered = {"elastic": resolved.elastic_settings, "profile": "cpu-small", "target": "flytekit",
                  "pod": expected_pod(resolved, resolved.pod_spec, resolved.annotations)}
    (tmp_path / "registered.json").write_text(json.dumps(registered), encoding="utf-8")
    done = run_child(tmp_path, "receipt", str(tmp_path / "registered.json"), env={"KFDEFAULTS_PODINFO": str(folder)})
    [receipt] = receipts(done.stderr)
    assert f"{folder}/labels: not a regular file" in receipt["observed"]["problems"]


# --- the receipt of a task on a fabric profile, and verify of it ---------------------------------------------------


def fabric_task(tmp_path: Path, fragment: str) -> tuple[dict, dict[str, str]]:
    """What registration writes for a task on ``extends: [gpu-large, FRAGMENT]`` (the pool's ``rdma/ib`` count from
    the platform's facts), and the primary container's literal environment."""
    platform, team = tmp_path / "platform", tmp_path / "team"
    platform.mkdir()
    team.mkdir()
    (platform / "_cluster-facts.yaml").write_text(FACTS, encoding="utf-8")
    (team / "train.yaml").write_text(f"extends: [gpu-large, {fragment}]\nelastic: {{nnodes: 2}}\n", encoding="utf-8")
    resolved = kfdefaults.resolve("train", platform=[platform], team=[team], target="flytekit")
    pod = expected_pod(resolved, resolved.pod_spec, resolved.annotations)
    registered = {"elastic": resolved.elastic_settings, "profile": "train", "target": "flytekit", "pod": pod}
    (tmp_path / "registered.json").write_text(json.dumps(registered), encoding="utf-8")
    return registered, {k: v["value"] for k, v in pod["env"].items()}


def fragment_line(fragment: str, text: str, nth: int = 1) -> int:
    lines = [i for i, line in enumerate(Path(builtin_folder(), f"{fragment}.yaml").read_text().splitlines(), 1)
             if text in line]
    return lines[nth - 1]


def verify(tmp_path: Path, log: str) -> subprocess.CompletedProcess:
    (tmp_path / "task.log").write_text(log, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    return subprocess.run([KFDEFAULTS, "verify", str(tmp_path / "task.log"), "--platform", str(tmp_path / "platform"),
                           "--team", str(tmp_path / "team")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


def fabric_differences(receipt: dict) -> dict[str, dict]:
    return {d["what"]: d for d in receipt["differences"]
            if d["what"] in ("rdma/ib devices", "vpc.amazonaws.com/efa devices", "capability IPC_LOCK", "host network")
            or d["what"].startswith(("environment NCCL_", "environment FI_"))}


@needs_root
@needs_namespace
def test_an_infiniband_pod_that_got_its_fabric_has_no_fabric_difference(tmp_path):
    registered, env = fabric_task(tmp_path, "fabric-ib")
    assert registered["pod"]["fabric"]["devices"] == {"rdma/ib": {
        "value": "8", "set_by": f"builtin fabric-ib.yaml:{fragment_line('fabric-ib', 'rdma/ib: auto', 2)}"}}
    done = run_child(tmp_path, "receipt", str(tmp_path / "registered.json"), env=env,
                     infiniband=["uverbs0", "rdma_cm"], hosts=K8S_HOSTS)
    [receipt] = receipts(done.stderr)
    assert fabric_differences(receipt) == {}
    fabric = receipt["observed"]["fabric"]
    assert (fabric["dev_infiniband_count"], fabric["ipc_lock"], fabric["host_network"]) == (2, True, False)
    assert receipt["observed"]["env"]["NCCL_IB_DISABLE"] == "0"  # the fabric's variables as the process sees them
    assert any(n.startswith("fabric: 2 device files under /dev/infiniband (rdma_cm, uverbs0); the node's RDMA devices") for n in receipt["notes"])


@needs_root
@needs_namespace
def test_an_infiniband_pod_without_its_fabric_says_so_at_the_fragment_s_lines_and_verify_too(tmp_path):
    registered, env = fabric_task(tmp_path, "fabric-ib")
    del env["NCCL_IB_DISABLE"]  # the cluster's PodTemplate or an admission policy lost it too
    done = run_child(tmp_path, "receipt", str(tmp_path / "registered.json"), env=env, ipc_lock=False, memlock=65536,
                     infiniband=None)
    assert done.returncode == 0, done.stderr  # never fatal by default
    [receipt] = receipts(done.stderr)
    found = fabric_differences(receipt)
    assert sorted(found) == ["capability IPC_LOCK", "environment NCCL_IB_DISABLE", "rdma/ib devices"]
    device, ipc_lock, variable = found["rdma/ib devices"], found["capability IPC_LOCK"], found["environment NCCL_IB_DISABLE"]
    assert (device["registered"], device["observed"], device["source"]) == ("8", "0", "/dev/infiniband")
    assert device["path"] == 'pod_template.spec.containers[name=primary].resources.limits.rdma/ib'
    assert device["set_by"] == f"builtin fabric-ib.yaml:{fragment_line('fabric-ib', 'rdma/ib: auto', 2)}"
    assert device["cause"].endswith("NCCL will use TCP sockets")
    assert (ipc_lock["registered"], ipc_lock["observed"]) == ("IPC_LOCK", None)
    assert ipc_lock["path"] == "pod_template.spec.containers[name=primary].securityContext.capabilities.add"
    assert ipc_lock["set_by"] == f"builtin fabric-ib.yaml:{fragment_line('fabric-ib', 'add: [IPC_LOCK]')}"
    assert "RLIMIT_MEMLOCK (64Ki)" in ipc_lock["cause"] and "ibv_reg_mr" in ipc_lock["cause"]
    assert variable["set_by"] == f"builtin fabric-ib.yaml:{fragment_line('fabric-ib', 'NCCL_IB_DISABLE') + 1}"
    lines = "\n".join(receipt_lines(done.stderr))
    assert ("kfdefaults receipt:   rdma/ib devices: 0 in the pod, 8 registered (pod_template.spec.containers"
            f"[name=primary].resources.limits.rdma/ib, {device['set_by']}); likely: the container got no device "
            "file of its fabric") in lines

    checked = verify(tmp_path, done.stderr)  # the receipt against the profile as it resolves now, in its folders
    assert checked.returncode == 1, checked.stdout + checked.stderr
    fragment = f"builtin {Path(builtin_folder(), 'fabric-ib.yaml')}"
    shown = checked.stdout.splitlines()
    assert (f"  pod_template.spec.containers[name=primary].resources.limits.rdma/ib (receipt: rdma/ib devices): "
            f"\"0\" -> \"8\"  {fragment}:{fragment_line('fabric-ib', 'rdma/ib: auto', 2)}") in shown, checked.stdout
    assert any(line.startswith("  pod_template.spec.containers[name=primary].securityContext.capabilities.add "
                               "(receipt: capability IPC_LOCK): ") and
               line.endswith(f"{fragment}:{fragment_line('fabric-ib', 'add: [IPC_LOCK]')}") for line in shown), shown


@needs_namespace
def test_a_roce_pod_on_the_pod_network_says_so_at_the_hostnetwork_line(tmp_path):
    _, env = fabric_task(tmp_path, "fabric-roce")
    on_host = run_child(tmp_path, "receipt", str(tmp_path / "registered.json"), env=env, hosts=HOST_NETWORK_HOSTS)
    assert "host network" not in fabric_differences(receipts(on_host.stderr)[0])
    moved = run_child(tmp_path, "receipt", str(tmp_path / "registered.json"), env=env, hosts=K8S_HOSTS)
    [receipt] = receipts(moved.stderr)
    host = fabric_differences(receipt)["host network"]
    assert (host["registered"], host["observed"], host["source"]) == ("true", "false", "/etc/hosts")
    assert host["path"] == "pod_template.spec.hostNetwork"
    assert host["set_by"] == f"builtin fabric-roce.yaml:{fragment_line('fabric-roce', 'hostNetwork: true')}"
    checked = verify(tmp_path, moved.stderr)
    assert checked.returncode == 1
    assert (f"  pod_template.spec.hostNetwork (receipt: host network): \"false\" -> \"true\"  builtin "
            f"{Path(builtin_folder(), 'fabric-roce.yaml')}:{fragment_line('fabric-roce', 'hostNetwork: true')}"
            ) in checked.stdout.splitlines(), checked.stdout


@needs_namespace
def test_an_efa_pod_without_its_devices_on_a_node_that_has_them(tmp_path):
    _, env = fabric_task(tmp_path, "fabric-efa")
    done = run_child(tmp_path, "receipt", str(tmp_path / "registered.json"), env=env, rdma=["rdmap0s30"])
    [receipt] = receipts(done.stderr)
    device = fabric_differences(receipt)["vpc.amazonaws.com/efa devices"]
    assert (device["registered"], device["observed"]) == ("4", "0")  # the pool's count, from the facts
    assert device["set_by"] == f"builtin fabric-efa.yaml:{fragment_line('fabric-efa', 'vpc.amazonaws.com/efa: auto', 2)}"
    assert device["cause"].endswith("(the node has RDMA devices rdmap0s30: /sys/class/infiniband)")
    assert receipt["observed"]["env"]["FI_PROVIDER"] == "efa" and receipt["observed"]["env"]["FI_EFA_FORK_SAFE"] == "1"


def test_a_receipt_s_fabric_readings_from_anyone_are_shown_bounded(tmp_path):
    """``verify`` reads receipts from logs anyone could write: the names a note shows are bounded in number and length."""
    from kfdefaults.receipt.compare import compare

    registered, _ = fabric_task(tmp_path, "fabric-ib")
    hostile = ["\x1b[31m" + "x" * 100_000] * 10_000
    fabric = {"dev_infiniband": hostile, "dev_infiniband_count": 0, "sys_infiniband": hostile, "ipc_lock": True,
              "memlock": {"soft": None, "hard": None}, "host_network": None}
    differences, notes = compare(registered, {"fabric": fabric, "env": {}})
    [note] = [n for n in notes if n.startswith("fabric: ")]
    assert len(note) < 10_000 and "(100,005 characters)" in note
    [device] = [d for d in differences if d["what"] == "rdma/ib devices"]
    assert len(device["cause"]) < 10_000
