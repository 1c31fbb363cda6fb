"""The receipt's pieces where a real run cannot reach them on this machine (the real runs are
``tests/test_receipt_runs.py``): cgroup v2 (this machine has cgroup v1 only: its files are read here from a tree in
the kernel's layout, Documentation/admin-guide/cgroup-v2.rst), the downward API's quoting, the kubelet's sizing
rule against a pod memory limit below ``sizeLimit``, and a receipt that cannot be taken (never fatal) or is off.
"""

from __future__ import annotations

import io
import os

import pytest

import kfdefaults
from kfdefaults.receipt import take_receipt
from kfdefaults.receipt.compare import compare
from kfdefaults.receipt.expect import expected_pod
from kfdefaults.receipt.probe import Places, go_unquote, observe


def test_cgroup_v2_limits_are_read_from_the_process_s_own_cgroup(tmp_path):
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/kubepods.slice/pod1/cri-containerd-2\n")
    (tmp_path / "proc" / "self" / "mountinfo").write_text(
        "2032 2020 0:145 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k\n")
    own = tmp_path / "cgroup" / "kubepods.slice" / "pod1" / "cri-containerd-2"
    own.mkdir(parents=True)
    (own / "memory.max").write_text("3221225472\n")
    (own / "cpu.max").write_text("150000 100000\n")
    seen = observe({}, places=Places(proc=str(tmp_path / "proc"), cgroup=str(tmp_path / "cgroup"),
                                     dev=str(tmp_path), shm="/dev/shm"))
    assert seen["memory"] == {"limit": 3 << 30, "source": str(own / "memory.max")}
    assert seen["cpu"] == {"limit_millis": 1500, "source": str(own / "cpu.max")}
    assert (seen["shm"]["mount"], seen["shm"]["fstype"]) == (True, "tmpfs")
    (own / "memory.max").write_text("max\n")
    (own / "cpu.max").write_text("max 100000\n")
    seen = observe({}, places=Places(proc=str(tmp_path / "proc"), cgroup=str(tmp_path / "cgroup"), dev=str(tmp_path)))
    assert seen["memory"]["limit"] is None and seen["cpu"]["limit_millis"] is None
    # a private cgroup namespace: the process sees its cgroup as "/", at the mount's top
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/\n")
    (tmp_path / "cgroup" / "memory.max").write_text("1073741824\n")
    seen = observe({}, places=Places(proc=str(tmp_path / "proc"), cgroup=str(tmp_path / "cgroup"), dev=str(tmp_path)))
    assert seen["memory"]["limit"] == 1 << 30


@pytest.mark.parametrize("quoted, text", [
    ('"vision"', "vision"),
    ('"a \\"b\\"\\n\\tc\\\\"', 'a "b"\n\tc\\'),
    ('"caf\u00e9 \\u202e"', "caf\u00e9 \u202e"),
    ('"\\x1b[1m"', "\x1b[1m"),
    ('"\\xff"', "\\xff"),  # a byte that is not UTF-8 stays visible
    ('"\\377"', "\\xff"),
    ('"\\U0001F600"', "\U0001F600"),
    ('"unterminated', None),
    ('"a"b"', None),
    ('"\\q"', None),
])
def test_the_downward_api_s_go_quoting_reads_back(quoted, text):
    assert go_unquote(quoted) == text


def test_the_kubelet_sizes_dev_shm_by_the_pod_s_memory_limit_when_it_is_smaller():
    """``calculateEmptyDirMemorySize``: a sizeLimit above the pod's memory limit gives a tmpfs of the memory limit."""
    resolved = kfdefaults.resolve("cpu-small", overrides={"pod_template": {"spec": {"volumes": [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "4Gi"}}]}}})
    pod = expected_pod(resolved, resolved.pod_spec, resolved.annotations)
    assert (pod["shm"]["size_limit"], pod["pod_memory_limit"]) == ("4Gi", str(2 << 30))
    observed = {"shm": {"mount": True, "fstype": "tmpfs", "size": 2 << 30}, "memory": {"limit": 2 << 30, "source": "x"},
                "cpu": {"limit_millis": None, "source": "x"}, "gpus": {"devices": 0}, "env": {"OMP_NUM_THREADS": "1"},
                "podinfo": {}}
    registered = {"elastic": resolved.elastic_settings, "pod": pod}
    assert compare(registered, observed)[0] == []
    observed["shm"]["size"] = 4 << 30
    [difference] = compare(registered, observed)[0]
    assert (difference["registered"], difference["observed"]) == ("2Gi", "4Gi")
    assert difference["cause"].startswith("the kubelet sizes this /dev/shm by the pod's memory limit")


def test_a_receipt_that_cannot_be_taken_says_so_and_the_task_goes_on():
    out = io.StringIO()
    assert take_receipt({"elastic": {}, "pod": {"shm": "not a volume"}, "profile": "p"}, "wf.t", out=out) is None
    assert out.getvalue().startswith("kfdefaults receipt: could not be taken: ")


def test_a_profile_can_turn_the_receipt_off():
    resolved = kfdefaults.resolve("cpu-small", overrides={"pod_template": {"annotations": {"kfdefaults.io/receipt": "off"}}})
    pod = expected_pod(resolved, resolved.pod_spec, resolved.annotations)
    out = io.StringIO()
    assert take_receipt({"elastic": resolved.elastic_settings, "pod": pod}, "wf.t", out=out, environ=os.environ) is None
    assert out.getvalue() == ""
