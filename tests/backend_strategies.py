"""Random pod specs and cluster templates for the differential test of the backend model against Go's mergo.

Small vocabularies on purpose: container names (``primary``, ``default``, ``pytorch``, ``main``...), volume names
(``dshm``, ``shm``...) and mount paths (``/dev/shm``) collide often; zero values (``0``, ``false``, ``""``),
explicit nulls, empty lists and maps and unknown fields are frequent, since that is where mergo surprises.
"""

from __future__ import annotations

import random
from typing import Any, Callable

NAMES = ["primary", "default", "pytorch", "sidecar", "main", "primary-init", "default-init", "init"]
VOLUMES = ["dshm", "data", "cache", "shm"]
PATHS = ["/dev/shm", "/data", "/cache", "/dev/shm/"]
KEYS = ["a", "b", "gpu", "team"]
QUANTITIES = ["0", "1", "500m", "2", "1Gi", "512Mi", "4Gi", "1000m", "1.5", "1e3"]


def maybe(r: random.Random, p: float = 0.5) -> bool:
    return r.random() < p


def some(r: random.Random, make: Callable[[random.Random], Any], most: int = 2) -> list[Any]:
    return [make(r) for _ in range(r.randint(0, most))]


def string_map(r: random.Random) -> dict[str, str]:
    return {r.choice(KEYS): r.choice(["1", "2", ""]) for _ in range(r.randint(0, 3))}


def resources(r: random.Random) -> dict[str, Any]:
    return {part: {r.choice(["cpu", "memory", "nvidia.com/gpu", "ephemeral-storage"]): r.choice(QUANTITIES)
                   for _ in range(r.randint(0, 3))}
            for part in ("limits", "requests") if maybe(r, 0.6)}


def security_context(r: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, values in (("runAsUser", [0, 1000, 2000]), ("runAsNonRoot", [True, False]), ("privileged", [True, False])):
        if maybe(r):
            out[key] = r.choice(values)
    if maybe(r):
        out["capabilities"] = {k: some(r, lambda r: r.choice(["SYS_ADMIN", "NET_ADMIN", "ALL"])) for k in ("add", "drop") if maybe(r)}
    if maybe(r, 0.2):
        out["readOnlyRootFilesystem"] = r.choice([True, False])
    return out


def probe(r: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = ({"httpGet": {"path": r.choice(["/", "/health", ""]), "port": r.choice([0, 8080, 9090, "http", "metrics"])}}
                           if maybe(r) else {"tcpSocket": {"port": r.choice([8080, "grpc"])}})
    if maybe(r):
        out["periodSeconds"] = r.choice([0, 5, 10])
    if maybe(r, 0.3):
        out["terminationGracePeriodSeconds"] = r.choice([0, 30])
    return out


def env_var(r: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {"name": r.choice(["A", "B", "OMP_NUM_THREADS", "NCCL_DEBUG"])}
    roll = r.random()
    if roll < 0.6:
        out["value"] = r.choice(["1", "", "INFO"])
    elif roll < 0.8:
        out["valueFrom"] = {"fieldRef": {"fieldPath": "metadata.name"}}
    else:
        out["valueFrom"] = {"resourceFieldRef": {"resource": "limits.cpu", "divisor": r.choice(["1", "1m", "0"])}}
    return out


def mount(r: random.Random) -> dict[str, Any]:
    return {"name": r.choice(VOLUMES), "mountPath": r.choice(PATHS), **({"readOnly": True} if maybe(r, 0.2) else {})}


def container(r: random.Random, names: list[str] = NAMES) -> dict[str, Any]:
    """Long because it lists a container's fields, each with its own odds."""
    out: dict[str, Any] = {"name": r.choice(names)}
    if maybe(r, 0.6):
        out["image"] = r.choice(["img:1", "img:2", ""])
    if maybe(r, 0.3):
        out["command"] = some(r, lambda r: r.choice(["python", "-m", "x"]))
    if maybe(r, 0.4):
        out["args"] = some(r, lambda r: r.choice(["--a", "{{.input}}", "b"]))
    if maybe(r):
        out["env"] = some(r, env_var)
    if maybe(r, 0.6):
        out["resources"] = resources(r)
    if maybe(r):
        out["volumeMounts"] = some(r, mount)
    if maybe(r, 0.4):
        out["securityContext"] = security_context(r)
    if maybe(r, 0.2):
        out["livenessProbe"] = probe(r)
    for key, values in (("imagePullPolicy", ["Always", "IfNotPresent", ""]), ("workingDir", ["/w", ""])):
        if maybe(r, 0.2):
            out[key] = r.choice(values)
    if maybe(r, 0.2):
        out["ports"] = [{"containerPort": r.choice([0, 8080]), "name": r.choice(["http", ""])}]
    if maybe(r, 0.1):
        out["stdin"] = r.choice([True, False])
    if maybe(r, 0.1):
        out["unknownField"] = {"x": 1}  # dropped by Go's decoder
    if maybe(r, 0.1):
        out["securityContext"] = None
    return out


def volume(r: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {"name": r.choice(VOLUMES)}
    roll = r.random()
    if roll < 0.6:
        out["emptyDir"] = {"medium": r.choice(["Memory", ""])}
        if maybe(r, 0.4):
            out["emptyDir"]["sizeLimit"] = r.choice(QUANTITIES)
    elif roll < 0.8:
        out["configMap"] = {"name": "cm", **({"defaultMode": r.choice([0, 420])} if maybe(r) else {})}
    else:
        out["hostPath"] = {"path": "/mnt"}
    return out


def toleration(r: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {"key": r.choice(KEYS), "operator": r.choice(["Exists", "Equal", ""])}
    if maybe(r):
        out["effect"] = "NoSchedule"
    if maybe(r, 0.2):
        out["tolerationSeconds"] = r.choice([0, 60])
    return out


def affinity(r: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if maybe(r, 0.7):
        out["nodeAffinity"] = {}
        if maybe(r, 0.8):
            out["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": some(
                r, lambda r: {"matchExpressions": [{"key": r.choice(KEYS), "operator": "In", "values": [r.choice(["x", "y"])]}]})}
    if maybe(r, 0.3):
        out["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": r.choice([1, 100]), "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}
    return out


POD_SCALARS = (("schedulerName", ["", "volcano"]), ("serviceAccountName", ["", "sa"]),
               ("restartPolicy", ["", "Never", "OnFailure"]), ("priorityClassName", ["", "high"]),
               ("dnsPolicy", ["", "ClusterFirst"]), ("hostNetwork", [True, False]),
               ("terminationGracePeriodSeconds", [0, 30, None]), ("activeDeadlineSeconds", [0, 100]),
               ("enableServiceLinks", [True, False]), ("runtimeClassName", ["", "nvidia"]),
               ("shareProcessNamespace", [True, False]))


def pod_spec(r: random.Random, names: list[str] = NAMES) -> dict[str, Any]:
    """A PodSpec, task's or template's. Long because it lists the pod's fields, each with its own odds."""
    out: dict[str, Any] = {}
    if maybe(r, 0.9):
        out["containers"] = [container(r, names) for _ in range(r.randint(0, 3))]
    if maybe(r, 0.3):
        out["initContainers"] = [container(r, names) for _ in range(r.randint(0, 2))]
    for key, make, p in (("volumes", lambda r: some(r, volume), 0.5), ("tolerations", lambda r: some(r, toleration), 0.4),
                         ("nodeSelector", string_map, 0.4), ("affinity", affinity, 0.3)):
        if maybe(r, p):
            out[key] = make(r)
    if maybe(r, 0.3):
        out["securityContext"] = {k: v for k, v in (("runAsUser", r.choice([0, 1000])), ("fsGroup", r.choice([0, 100])),
                                                    ("runAsNonRoot", r.choice([True, False]))) if maybe(r)}
    for key, values in POD_SCALARS:
        if maybe(r, 0.2):
            out[key] = r.choice(values)
    if maybe(r, 0.2):
        out["imagePullSecrets"] = [{"name": r.choice(["reg", "reg2"])}]
    if maybe(r, 0.15):
        out["overhead"] = {"cpu": r.choice(QUANTITIES)}
    if maybe(r, 0.1):
        out["resources"] = resources(r)
    if maybe(r, 0.1):
        out["notAField"] = True
    return out


def object_meta(r: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("labels", "annotations"):
        if maybe(r, 0.7):
            out[key] = string_map(r)
    if maybe(r, 0.2):
        out["name"] = r.choice(["", "x"])
    if maybe(r, 0.2):
        out["creationTimestamp"] = r.choice([None, "2024-01-02T03:04:05Z"])
    if maybe(r, 0.1):
        out["finalizers"] = [r.choice(["f1", "f2"])]
    return out


OTHER_TYPES = {"Volume": volume, "EnvVar": env_var, "Probe": probe, "Toleration": toleration, "Affinity": affinity,
               "SecurityContext": security_context}
"""Types the pod merge reaches inside appended lists or pointers, each with its generator."""
