"""Node lists as ``kubectl get nodes -o json`` prints them, built with the kubernetes client's models.

``ApiClient().sanitize_for_serialization`` writes a model as the API server's JSON (camelCase, nulls left out), and
``json.dumps(..., indent=4)`` as kubectl indents it. A node carries what a real one does beside what the scheduler
reads (addresses, conditions, the images it holds, its system info), so that a reader that trips on those fails
here.
"""

from __future__ import annotations

import json
from pathlib import Path

from kubernetes.client import (
    ApiClient,
    V1ContainerImage,
    V1Node,
    V1NodeAddress,
    V1NodeCondition,
    V1NodeSpec,
    V1NodeStatus,
    V1NodeSystemInfo,
    V1ObjectMeta,
    V1Taint,
)

plain = ApiClient().sanitize_for_serialization

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def node(name="node1", labels=None, taints=(), allocatable=None, unschedulable=None, capacity=None,
         real: bool = False) -> dict:
    """One item of ``kubectl get nodes -o json``; ``real`` adds what a node reports besides (addresses, conditions,
    images, system info)."""
    status = V1NodeStatus(allocatable=allocatable, capacity=capacity)
    if real:
        status.addresses = [V1NodeAddress(type="InternalIP", address="10.0.0.4"),
                            V1NodeAddress(type="Hostname", address=name)]
        status.conditions = [V1NodeCondition(type="Ready", status="True", reason="KubeletReady",
                                             message="kubelet is posting ready status")]
        status.images = [V1ContainerImage(names=[f"registry.example.com/train@sha256:{i:064x}",
                                                 f"registry.example.com/train:{i}"], size_bytes=9_876_543_210)
                         for i in range(20)]
        status.node_info = V1NodeSystemInfo(
            architecture="amd64", boot_id="b", container_runtime_version="containerd://1.7.15", kernel_version="6.1.0",
            kube_proxy_version="v1.31.1", kubelet_version="v1.31.1", machine_id="m", operating_system="linux",
            os_image="Container-Optimized OS", system_uuid="u")
    return plain(V1Node(api_version="v1", kind="Node", metadata=V1ObjectMeta(name=name, labels=labels),
                        spec=V1NodeSpec(taints=[V1Taint(**t) for t in taints] or None, unschedulable=unschedulable),
                        status=status))


def node_list(*nodes: dict) -> dict:
    """``kubectl get nodes -o json``: a ``List`` of the nodes."""
    return {"apiVersion": "v1", "kind": "List", "items": list(nodes), "metadata": {"resourceVersion": ""}}


def pool_nodes(pool: str, count: int, allocatable: dict, *, taints=(), labels=None, zones=("us-c1-a", "us-c1-b"),
               **fields) -> list[dict]:
    """``count`` nodes of one GKE node pool, spread over ``zones``, each named ``POOL-I``."""
    return [node(f"{pool}-{i}", {"kubernetes.io/hostname": f"{pool}-{i}", "topology.kubernetes.io/zone": zones[i % len(zones)],
                                 "cloud.google.com/gke-nodepool": pool, **(labels or {})},
                 list(taints), allocatable, capacity=allocatable, real=True, **fields) for i in range(count)]


def write_node_list(path: Path, *nodes: dict) -> str:
    """Write the nodes as kubectl prints them; the text written."""
    text = json.dumps(node_list(*nodes), indent=4) + "\n"
    path.write_text(text)
    return text


def line_of(text: str, needle: str, after: str | None = None) -> int:
    """The 1-based line of the first ``needle`` in ``text`` (after the first ``after``, when given)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(i for i, line in enumerate(lines[start:], start + 1) if needle in line)
