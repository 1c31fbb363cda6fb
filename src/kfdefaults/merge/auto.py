"""``auto`` values, worked out from the merged profile once every layer is in.

Three settings may be written ``auto`` in any layer. The value is resolved after the merge, from what the merge
gave, so that a team raising the GPU limit also raises ``nproc_per_node``; what the plugin and the pod receive
is the resolved value, never ``auto``:

* ``elastic.nproc_per_node: auto``: the primary container's GPU limit (a ``*/gpu`` resource such as
  ``nvidia.com/gpu``; its request when it has no limit), else its CPU request (else its CPU limit, which Kubernetes
  then uses as the request) rounded down, at least 1; else 1. torch elastic starts one worker per slot.
* ``OMP_NUM_THREADS: auto`` (a container's ``env`` entry): the container's CPU request (else limit) divided by
  ``nproc_per_node`` for the primary container (by 1 for another), rounded down, at least 1; ``1`` when the
  container has neither (torchrun's default). torchrun and the kfpytorch plugin set 1 when it is unset and there
  are several workers; each worker's OpenMP pool otherwise takes every core of the node.
* ``emptyDir.sizeLimit: auto`` on a memory-backed volume (``medium: Memory``, the ``/dev/shm`` volume): the memory
  request (else limit) of the container that mounts it, the primary container first (KubeRay's rule for Ray's
  ``/dev/shm``: ray-project/kuberay, ray-operator/controllers/ray/common/pod.go). With no memory set, or on a
  volume that is not memory-backed, the key is left out: no size limit. Pages in a memory-backed ``/dev/shm``
  count against the container's memory, so a larger size could never be used.

:func:`resolve_auto` returns the rule applied to each value as text, for ``--explain``. A fabric device count
written ``auto`` (``vpc.amazonaws.com/efa: auto``) is the pool's, not the profile's: :func:`resolve_devices` works it
out from the cluster's pools once they are known.
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction
from typing import Any

from ..errors import Finding, Location, ProfileError
from ..k8s.quantity import quantity_value
from ..k8s.resources import is_fabric_device
from ..paths import Select, format_path
from ..targets import INT32_MAX
from .origins import where, written_by
from .result import Resolved

AUTO = "auto"
OMP_ENV = "OMP_NUM_THREADS"

PathT = tuple


def _resources(container: dict[str, Any], name: str) -> tuple[str, Any, Fraction] | None:
    """``(kind, as written, value)`` of resource ``name`` of a container: its request, else its limit."""
    resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
    for kind in ("requests", "limits"):
        values = resources.get(kind) if isinstance(resources.get(kind), dict) else {}
        amount = quantity_value(values.get(name)) if values.get(name) is not None else None
        if amount is not None and amount >= 0:
            return kind[:-1], values[name], amount
    return None


def _gpus(container: dict[str, Any]) -> tuple[str, str, Fraction] | None:
    """``(kind, resource, value)`` of the container's GPUs: a ``*/gpu`` limit, else request, of at least 1."""
    resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
    for kind in ("limits", "requests"):
        values = resources.get(kind) if isinstance(resources.get(kind), dict) else {}
        for resource, written in values.items():
            amount = quantity_value(written) if written is not None else None
            if resource.rsplit("/", 1)[-1] == "gpu" and "/" in resource and amount is not None and amount >= 1:
                return kind[:-1], resource, amount
    return None


def _whole(amount: Fraction) -> int:
    return max(1, math.floor(amount))


def nproc_rule(primary: dict[str, Any] | None, primary_name: str) -> tuple[int, str, PathT | None]:
    """``nproc_per_node: auto`` for the merged primary container: ``(value, the rule as text, the path in the
    container of the resource it was worked out from: ("resources", "limits", "nvidia.com/gpu"))``."""
    if primary is not None:
        gpus = _gpus(primary)
        if gpus is not None:
            kind, resource, amount = gpus
            return (_whole(amount), f"auto: the {resource} {kind} of the primary container `{primary_name}`",
                    ("resources", kind + "s", resource))
        cpu = _resources(primary, "cpu")
        if cpu is not None:
            kind, written, amount = cpu
            return _whole(amount), (f"auto: no GPU on the primary container `{primary_name}`; its cpu {kind} "
                                    f"{written}, rounded down, at least 1"), ("resources", kind + "s", "cpu")
    return 1, f"auto: neither GPUs nor a cpu request on the primary container `{primary_name}`: 1", None


def _nproc_too_large(resolved: Resolved, value: int, source: PathT | None) -> ProfileError:
    """``nproc_per_node: auto`` worked out above :data:`~kfdefaults.targets.INT32_MAX`, the bound of a written
    value: an error at the resource that made it (``nvidia.com/gpu: 1Ei``), naming the ``auto`` line."""
    path = ("pod_template", "spec", "containers", Select("name", resolved.primary_container_name), *(source or ()))
    made_by = written_by(resolved.fragments, path)
    auto_by = written_by(resolved.fragments, ("elastic", "nproc_per_node"))
    top = made_by or auto_by
    location = top.origin.location if top is not None else Location(f"<profile {resolved.name}>")
    written = (source or ("",))[-1]
    message = (f"`nproc_per_node: auto` ({where(auto_by)}) makes this {written} {value:,} workers per node, above "
               f"{INT32_MAX:,}, the most nproc_per_node may be (written or worked out: the PyTorchJob and flyteidl "
               "fields it becomes are int32); write the number of GPUs of one node")
    return ProfileError([Finding(location, format_path(path), message, "error",
                                 top.origin.layer if top is not None else None)])


def omp_rule(container: dict[str, Any], nproc: int, primary: bool) -> tuple[str, str]:
    """``OMP_NUM_THREADS: auto`` for a container: ``(value, the rule as text)``."""
    cpu = _resources(container, "cpu")
    if cpu is None:
        return "1", f"auto: container `{container.get('name')}` has no cpu request or limit: 1 (torchrun's default)"
    kind, written, amount = cpu
    divisor = nproc if primary else 1
    value = _whole(amount / divisor)
    per = f" / nproc_per_node {nproc}" if primary else ""
    return str(value), f"auto: cpu {kind} {written}{per}, rounded down, at least 1"


def size_limit_rule(volume: dict[str, Any], spec: dict[str, Any], primary_name: str) -> tuple[Any, str]:
    """``emptyDir.sizeLimit: auto`` for a volume: ``(the quantity, or None for no limit; the rule as text)``."""
    if (volume.get("emptyDir") or {}).get("medium") != "Memory":
        return None, "auto: not a memory-backed emptyDir (medium: Memory): no sizeLimit"
    mounting = [c for c in spec.get("containers") or [] if isinstance(c, dict)
                and any(isinstance(m, dict) and m.get("name") == volume.get("name") for m in c.get("volumeMounts") or [])]
    mounting.sort(key=lambda c: c.get("name") != primary_name)
    for container in mounting:
        memory = _resources(container, "memory")
        if memory is not None:
            kind, written, _ = memory
            return written, f"auto: the memory {kind} of container `{container.get('name')}`, which mounts it"
    return None, "auto: no container that mounts it has a memory request or limit: no sizeLimit"


def resolve_auto(resolved: Resolved) -> tuple[Resolved, dict[PathT, tuple[Any, str]]]:
    """Replace every ``auto`` value of a merged profile by its value (the rules are in this module's docstring).

    Args:
        resolved: A merged profile, the plugin's defaults filled in; not modified.

    Returns:
        ``(resolved, rules)``: the profile with every ``auto`` resolved (``resolved`` itself when it has none),
        and for each resolved value its leaf path (as :mod:`.leaves` names it) -> ``(the value,
        or None where the key was left out; the rule applied, as text)``.

    Raises:
        ProfileError: ``nproc_per_node: auto`` works out above the bound of a written value (2,147,483,647: a GPU
            limit of ``1Ei``), at the resource that made it, naming the ``auto`` line.
    """
    elastic = resolved.elastic_settings
    spec = (resolved.pod_template_spec or {}).get("spec") or {}
    if elastic.get("nproc_per_node") != AUTO and AUTO not in _auto_markers(spec):
        return resolved, {}
    out = resolved.copy()
    spec = out.pod_template_spec.get("spec") or {}
    rules: dict[PathT, tuple[Any, str]] = {}
    containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
    primary_name = out.primary_container_name
    primary = next((c for c in containers if c.get("name") == primary_name), None)
    if out.elastic_settings.get("nproc_per_node") == AUTO:
        value, rule, source = nproc_rule(primary, primary_name)
        if value > INT32_MAX:
            raise _nproc_too_large(out, value, source)
        out.elastic_settings["nproc_per_node"] = value
        rules[("elastic", "nproc_per_node")] = (value, rule)
    nproc = out.elastic_settings.get("nproc_per_node")
    nproc = nproc if isinstance(nproc, int) and not isinstance(nproc, bool) and nproc >= 1 else 1
    for field in ("containers", "initContainers"):
        for container in spec.get(field) or []:
            for entry in (container.get("env") or []) if isinstance(container, dict) else []:
                if isinstance(entry, dict) and entry.get("name") == OMP_ENV and entry.get("value") == AUTO:
                    value, rule = omp_rule(container, nproc, container is primary)
                    entry["value"] = value
                    path = ("pod_template", "spec", field, Select("name", container.get("name")), "env",
                            Select("name", OMP_ENV), "value")
                    rules[path] = (value, rule)
    for volume in spec.get("volumes") or []:
        empty_dir = volume.get("emptyDir") if isinstance(volume, dict) else None
        if isinstance(empty_dir, dict) and empty_dir.get("sizeLimit") == AUTO:
            value, rule = size_limit_rule(volume, spec, primary_name)
            if value is None:
                del empty_dir["sizeLimit"]
            else:
                empty_dir["sizeLimit"] = copy.deepcopy(value)
            rules[("pod_template", "spec", "volumes", Select("name", volume.get("name")), "emptyDir", "sizeLimit")] = (value, rule)
    return out, rules


def _auto_markers(spec: dict[str, Any]) -> set[str]:
    """``{"auto"}`` when the pod spec holds an ``OMP_NUM_THREADS: auto`` or a ``sizeLimit: auto``, else empty."""
    for field in ("containers", "initContainers"):
        for container in spec.get(field) or []:
            for entry in (container.get("env") or []) if isinstance(container, dict) else []:
                if isinstance(entry, dict) and entry.get("name") == OMP_ENV and entry.get("value") == AUTO:
                    return {AUTO}
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict) and isinstance(volume.get("emptyDir"), dict) and volume["emptyDir"].get("sizeLimit") == AUTO:
            return {AUTO}
    return set()


def uses_auto(fragments: list[Any]) -> bool:
    """Whether any fragment writes an ``auto`` value (so that resources added later change the profile)."""
    for fragment in fragments:
        if (fragment.elastic or {}).get("nproc_per_node") == AUTO:
            return True
        spec = (fragment.pod_template or {}).get("spec")
        if isinstance(spec, dict) and _auto_markers(spec):
            return True
    return False


def device_autos(resolved: Resolved) -> list[tuple[str, str]]:
    """``(kind, resource)`` of every fabric device the primary container requests as ``auto``
    (``("limits", "vpc.amazonaws.com/efa")``)."""
    spec = (resolved.pod_template_spec or {}).get("spec") or {}
    primary = next((c for c in spec.get("containers") or [] if isinstance(c, dict)
                    and c.get("name") == resolved.primary_container_name), None)
    resources = (primary or {}).get("resources") if isinstance((primary or {}).get("resources"), dict) else {}
    return [(kind, name) for kind in ("requests", "limits") if isinstance(resources.get(kind), dict)
            for name, value in resources[kind].items() if value == AUTO and is_fabric_device(name)]


def offered_by(pools: Any, resolved: Resolved, every: bool = False) -> dict[str, dict[str, Fraction]]:
    """Pool name -> what one of its nodes offers (``Pool.allocatable``), for :func:`resolve_devices`: of the pools
    whose nodes the merged pod can be scheduled on, its ``nodeSelector`` and required node affinity matching their
    labels and its tolerations their taints (kube-scheduler's NodeAffinity and TaintToleration filters,
    :mod:`kfdefaults.k8s.scheduling`). Every pool when ``every`` (``fit`` judges each), or when the pod can be
    scheduled on none (``fit`` says why)."""
    pools = list(pools or [])
    if not every:
        from ..k8s.scheduling import required_node_affinity_matches, taint_toleration  # lazy: only for a device

        spec = (resolved.pod_template_spec or {}).get("spec") or {}
        pools = [p for p in pools if required_node_affinity_matches(spec, p.node)
                 and not taint_toleration(spec, p.node).reasons] or pools
    return {p.name: p.allocatable for p in pools}


def resolve_devices(resolved: Resolved, offered: dict[str, dict[str, Fraction]] | None,
                    pool: str | None = None) -> Resolved:
    """Replace a fabric device count written ``auto`` (``vpc.amazonaws.com/efa: auto``, the builtin ``fabric-*``
    fragments) by what a node of the pool offers, as ``nproc_per_node: auto`` takes the node's GPUs.

    Args:
        resolved: A merged profile; not modified.
        offered: Pool name -> what one of its nodes offers (its allocatable, as amounts); ``None``: no pool known.
        pool: The pool the pod is judged on (``fit``): its count, ``1`` where it offers none (so that the
            scheduler's filter says the pool lacks the device). ``None``: the one count every pool that offers the
            device agrees on.

    Raises:
        ProfileError: ``pool`` is ``None`` and no pool offers the device, or pools offer different counts: at the
            ``auto`` line, naming the fact that is missing.
    """
    autos = device_autos(resolved)
    if not autos:
        return resolved
    out = resolved.copy()
    spec = out.pod_template_spec["spec"]
    primary = next(c for c in spec["containers"] if isinstance(c, dict) and c.get("name") == out.primary_container_name)
    for kind, resource in autos:
        if pool is not None:
            count = (offered or {}).get(pool, {}).get(resource) or 1
        else:
            counts = {name: amount[resource] for name, amount in (offered or {}).items() if amount.get(resource)}
            if len(set(counts.values())) != 1:
                raise _device_unknown(out, kind, resource, counts, offered is not None)
            count = next(iter(counts.values()))
        primary["resources"][kind][resource] = math.floor(count)
    return out


def _device_unknown(resolved: Resolved, kind: str, resource: str, counts: dict[str, Fraction], any_pool: bool
                    ) -> ProfileError:
    path = ("pod_template", "spec", "containers", Select("name", resolved.primary_container_name), "resources", kind,
            resource)
    setter = written_by(resolved.fragments, path)
    location = setter.origin.location if setter is not None else Location(f"<profile {resolved.name}>")
    if counts:
        found = ", ".join(f"{name} {math.floor(n)}" for name, n in counts.items())
        why = (f"the pools the pod can be scheduled on offer different counts ({found}): select one (a nodeSelector "
               f"on its label) or write the count, in requests and limits")
    else:
        fact = f'node_pools.NAME.allocatable."{resource}"'
        why = (f"{'no pool of the cluster offers it' if any_pool else 'no cluster facts or node list are given'}: "
               f"state `{fact}` in the cluster's facts (or give `--nodes`), or write the count")
    message = f"`{resource}: auto` is the count a node of the pool offers, and {why}"
    return ProfileError([Finding(location, format_path(path), message, "error",
                                 setter.origin.layer if setter is not None else None)])
