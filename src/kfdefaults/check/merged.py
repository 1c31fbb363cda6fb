"""Warnings for a merged profile whose settings break together at run time, each located at the value (in its
layer and file) that makes the combination. The profile is valid: these are warnings (``--strict`` fails on them)."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Collection, Sequence

from ..errors import Finding, Location, sorted_findings
from ..k8s.mounts import is_shm_mount
from ..k8s.quantity import quantity_text, quantity_value
from ..merge.provenance import Setter, highest, provenance, where
from ..paths import PathT, Select, format_path
from ..read import TOML_SUFFIXES
from ..smp.schema import schema_type
from ..backend.registered import is_multi_node
from ..validate.suggest import closest
from .shm import ShmHeadroom


SPEC = ("pod_template", "spec")

def deletion(paths: Sequence[PathT], *setters: Setter | None) -> str:
    """How to delete ``paths`` in the file that a finding points at (the highest of ``setters``), written in that
    file's format: ``key: null`` in YAML, ``delete = ["..."]`` in TOML (which has no null)."""
    top = highest(setters)
    written = [format_path(p) for p in paths]
    if top is not None and top.origin.location.file.endswith(TOML_SUFFIXES):
        return "`delete = [" + ", ".join(f'"{w}"' if '"' not in w else f"'{w}'" for w in written) + "]`"
    return ", ".join(f"`{format_path(p[-1:])}: null`" for p in paths) + \
        f" (or `delete: [{', '.join(written)}]`)"


class _MergedChecker:
    def __init__(self, merged: Any, headroom: ShmHeadroom | None = None, provided_volumes: Collection[str] = ()) -> None:
        self.merged = merged
        self.headroom = headroom
        self.provided_volumes = provided_volumes
        self.findings: list[Finding] = []

    def setter(self, *path: Any) -> Setter | None:
        """The layer and line that set the value at ``path`` (:mod:`kfdefaults.merge.provenance`); ``None`` for a
        default."""
        return provenance(self.merged).setter(path)

    def warn(self, name: str, message: str, *setters: Setter | None) -> None:
        """A warning located at the highest of ``setters`` (the layer that made the combination)."""
        top = highest(setters)
        location = top.origin.location if top else Location(f"<profile {self.merged.name}>")
        self.findings.append(Finding(location, name, message, "warning", top.origin.layer if top else None))

    def run(self) -> list[Finding]:
        spec = (self.merged.pod_template_spec or {}).get("spec") or {}
        containers = [c for c in spec.get("containers") or [] if isinstance(c, dict)]
        primary_name = self.merged.primary_container_name
        primary = next((c for c in containers if c.get("name") == primary_name), None)
        if containers and primary is None:
            self.primary_not_named(containers, primary_name)
        if primary is not None:
            self.gpus(primary)
        for field in ("containers", "initContainers"):
            for container in spec.get(field) or []:
                if isinstance(container, dict) and container is not primary and not container.get("image"):
                    self.no_image(field, container, primary_name)
        volumes = {v.get("name"): v for v in spec.get("volumes") or [] if isinstance(v, dict)}
        for volume in volumes.values():
            self.volume_sources(volume)
        for container in containers:
            self.shm(container, volumes)
        self.join_timeout()
        self.deadline_below_join_timeout()
        self.run_policy_of_a_single_pod()
        self.file_store_on_several_nodes()
        if primary is not None:
            self.shutdown_after_grace(primary)
        return self.findings

    def file_store_on_several_nodes(self) -> None:
        """``store_type: file`` with more than one node: c10d takes the endpoint for a file path
        (``c10d_rendezvous_backend._create_file_store``), on each pod's own disk, so the nodes never meet."""
        elastic = self.merged.elastic_settings
        rdzv = elastic.get("rdzv_configs") or {}
        if isinstance(rdzv, dict) and rdzv.get("store_type") == "file" and elastic.get("nnodes") not in (1, None):
            setters = (self.setter("elastic", "rdzv_configs", "store_type"), self.setter("elastic", "nnodes"))
            self.warn(
                "elastic.rdzv_configs.store_type",
                f"`store_type: file` with nnodes {elastic.get('nnodes')}: the file store uses the rendezvous endpoint "
                "as a file path on each pod's own disk, so the nodes never meet and each waits out join_timeout; "
                "use tcp (the default)",
                *setters,
            )

    def shutdown_after_grace(self, primary: dict[str, Any]) -> None:
        """``TORCH_ELASTIC_SHUTDOWN_TIMEOUT`` at or above the pod's ``terminationGracePeriodSeconds`` (Kubernetes'
        default 30): the kubelet's SIGKILL ends the agent before the agent's own SIGKILL ends the workers."""
        env = {e.get("name"): e for e in primary.get("env") or [] if isinstance(e, dict)}
        value = (env.get("TORCH_ELASTIC_SHUTDOWN_TIMEOUT") or {}).get("value")
        if not isinstance(value, str) or not re.fullmatch(r"\s*[0-9]{1,20}\s*", value):  # as the file check took it
            return
        spec = (self.merged.pod_template_spec or {}).get("spec") or {}
        grace = spec.get("terminationGracePeriodSeconds", 30)
        if not isinstance(grace, int) or int(value) < grace:
            return
        name = primary.get("name")
        path = (*SPEC, "containers", Select("name", name), "env", Select("name", "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"), "value")
        grace_setter = self.setter(*SPEC, "terminationGracePeriodSeconds")
        self.warn(
            format_path(path),
            f"TORCH_ELASTIC_SHUTDOWN_TIMEOUT is {value} s but the pod's terminationGracePeriodSeconds is {grace} "
            f"({where(grace_setter) if grace_setter else 'the Kubernetes default'}): when the pod is deleted, the "
            "kubelet kills the agent before it has stopped its workers; keep the grace period longer",
            self.setter(*path), grace_setter,
        )

    def run_policy_of_a_single_pod(self) -> None:
        elastic = self.merged.elastic_settings
        if elastic.get("nnodes") == 1 and elastic.get("run_policy"):
            setters = (self.setter("elastic", "run_policy"), self.setter("elastic", "nnodes"))
            self.warn(
                "elastic.run_policy",
                "has no effect: with `nnodes: 1` the task runs as a plain pod, and `run_policy` is a PyTorchJob's "
                "(flytekitplugins.kfpytorch serializes it only for several nodes); remove it or delete it: "
                + deletion([("elastic", "run_policy")], *setters),
                *setters,
            )

    def primary_not_named(self, containers: list[dict[str, Any]], primary_name: str) -> None:
        names = [str(c.get("name")) for c in containers]
        setter = self.setter("pod_template", "primary_container_name")
        first = self.setter(*SPEC, "containers", Select("name", containers[0].get("name")), "name")
        hint = closest(primary_name, names)
        self.warn(
            "pod_template.primary_container_name",
            f"no container is named `{primary_name}` (the primary container): the pod's containers are "
            f"{', '.join(f'`{n}`' for n in names)}. flytekit adds an empty `{primary_name}` container to run the task, "
            "and the settings written for the others do not reach it"
            + (f"; did you mean `{hint}`?" if hint else f"; name one of them `{primary_name}` or set primary_container_name"),
            setter, first,
        )

    def gpus(self, primary: dict[str, Any]) -> None:
        nproc = self.merged.elastic_settings.get("nproc_per_node")
        limits = (primary.get("resources") or {}).get("limits") or {}
        if not isinstance(nproc, int) or isinstance(nproc, bool) or not isinstance(limits, dict):
            return
        for resource, amount in limits.items():
            if "/" not in resource or resource.rsplit("/", 1)[-1] != "gpu":
                continue
            gpus = quantity_value(amount)
            if gpus is None or gpus < 1 or nproc == gpus:
                continue
            name = primary.get("name")
            gpu_setter = self.setter(*SPEC, "containers", Select("name", name), "resources", "limits", resource)
            nproc_setter = self.setter("elastic", "nproc_per_node")
            shown = int(gpus) if gpus.denominator == 1 else float(gpus)
            if nproc > gpus:
                effect = (f"so workers beyond {shown} share a GPU or fail to get one; set nproc_per_node to {shown} "
                          "or raise the limit")
            else:
                idle = shown - nproc
                effect = (f"so {idle} GPU{'s' * (idle != 1)} of each node {'stay' if idle != 1 else 'stays'} idle; "
                          f"set nproc_per_node to {shown} "
                          "or lower the limit (unless each worker drives several GPUs itself)")
            self.warn(
                "elastic.nproc_per_node",
                f"nproc_per_node is {nproc} ({where(nproc_setter)}) but the primary container `{name}` has {shown} "
                f"`{resource}` ({where(gpu_setter)}): torch elastic starts {nproc} worker{'s' * (nproc != 1)} per "
                f"node, one per GPU, {effect}",
                nproc_setter, gpu_setter,
            )

    def shm(self, container: dict[str, Any], volumes: dict[Any, dict[str, Any]]) -> None:
        name = container.get("name")
        base = (*SPEC, "containers", Select("name", name))
        mounts = [m for m in container.get("volumeMounts") or [] if isinstance(m, dict)]
        for mount in mounts:
            if mount.get("name") is not None and mount.get("name") not in volumes \
                    and mount.get("name") not in self.provided_volumes:
                path = (*base, "volumeMounts", Select("mountPath", mount.get("mountPath")))
                self.warn(format_path(path),
                          f"container `{name}` mounts volume `{mount.get('name')}` at `{mount.get('mountPath')}`, "
                          "but no layer defines that volume in pod_template.spec.volumes: Kubernetes rejects the pod",
                          self.setter(*path, "name"))
        shm = [m for m in mounts if is_shm_mount(m.get("mountPath"))]
        if len(shm) > 1:  # who set what is asked only of a profile that has something to report
            setters = [self.setter(*base, "volumeMounts", Select("mountPath", m.get("mountPath"))) for m in shm]
            top = max(range(len(shm)), key=lambda i: setters[i].index if setters[i] else -1)
            listed = "; ".join(f"`{m.get('mountPath')}` (volume `{m.get('name')}`, {where(s)})" for m, s in zip(shm, setters))
            self.warn(
                format_path((*base, "volumeMounts", Select("mountPath", shm[top].get("mountPath")))),
                f"container `{name}` mounts /dev/shm {len(shm)} times: {listed}. One mount hides the other; keep one "
                "(a layer replaces a lower layer's mount by giving the same mountPath)",
                *setters,
            )
        limits = (container.get("resources") or {}).get("limits") or {}
        memory_text = limits.get("memory") if isinstance(limits, dict) else None
        memory = quantity_value(memory_text) if memory_text is not None else None
        if memory is None:
            return
        for mount in shm:
            volume = volumes.get(mount.get("name")) or {}
            empty_dir = volume.get("emptyDir") if isinstance(volume.get("emptyDir"), dict) else {}
            size_text = empty_dir.get("sizeLimit")
            size = quantity_value(size_text) if size_text is not None else None
            if size is None or empty_dir.get("medium") != "Memory":
                continue
            needed = self.headroom.of(memory) if self.headroom is not None else Fraction(0)
            if memory - size >= needed and size <= memory:
                continue
            size_path = (*SPEC, "volumes", Select("name", volume.get("name")), "emptyDir", "sizeLimit")
            memory_path = (*base, "resources", "limits", "memory")
            size_setter, memory_setter = self.setter(*size_path), self.setter(*memory_path)
            memory_is_higher = memory_setter is not None and (size_setter is None or memory_setter.index > size_setter.index)
            if size > memory:
                message = (f"/dev/shm sizeLimit {size_text} ({where(size_setter)}) is above the memory limit {memory_text} "
                           f"of container `{name}` ({where(memory_setter)}): /dev/shm in memory counts against the "
                           "container's memory, so the container is OOM-killed before /dev/shm is full; keep sizeLimit "
                           "below the memory limit")
            else:
                assert self.headroom is not None
                message = (f"/dev/shm sizeLimit {size_text} ({where(size_setter)}) leaves container `{name}` "
                           f"{quantity_text(memory - size)} of its memory limit {memory_text} ({where(memory_setter)}), "
                           f"less than the cluster's shm_headroom {self.headroom.written} ({self.headroom.at}): /dev/shm "
                           "in memory counts against the container's memory, so a full /dev/shm leaves the workload too "
                           f"little and it is OOM-killed; set sizeLimit to at most {quantity_text(memory - needed)} or "
                           "raise the memory limit")
            self.warn(format_path(memory_path if memory_is_higher else size_path),  # the path of the line shown
                      message, size_setter, memory_setter)

    def no_image(self, field: str, container: dict[str, Any], primary_name: str) -> None:
        """A container other than the primary one without an image: the API server requires one
        (``validateContainerCommon``: "image: Required value"); flytekit sets the primary container's only."""
        name = container.get("name")
        path = (*SPEC, field, Select("name", name))
        hint = closest(str(name), [primary_name]) if field == "containers" else None
        self.warn(
            format_path(path),
            f"container `{name}` has no image: Kubernetes rejects the pod (flytekit gives an image to the primary "
            f"container `{primary_name}` only)" + (f"; did you mean `{primary_name}`?" if hint else "; give it one"),
            self.setter(*path, "name"),
        )

    def volume_sources(self, volume: dict[str, Any]) -> None:
        """A volume with two sources (``emptyDir`` and ``hostPath``), most often from two layers.

        The API server accepts exactly one source per volume ("may not specify more than 1 volume type",
        ``ValidateVolumes`` in k8s.io/kubernetes pkg/apis/core/validation); a strategic merge patch keeps the
        lower layer's source beside a higher layer's new one unless the higher layer deletes it. The sources
        are the fields of the schema's ``Volume`` other than ``name``.
        """
        set_keys = [k for k, v in volume.items() if k != "name" and v is not None]
        if len(set_keys) < 2:  # the common case decides without the schema
            return
        source_fields = set(schema_type("io.k8s.api.core.v1.Volume").field_names()) - {"name"}
        sources = [k for k in set_keys if k in source_fields]
        if len(sources) < 2:
            return
        name = volume.get("name")
        setters = [self.setter(*SPEC, "volumes", Select("name", name), k) for k in sources]
        listed = ", ".join(f"`{k}` ({where(s)})" for k, s in zip(sources, setters))
        top = max(range(len(sources)), key=lambda i: setters[i].index if setters[i] else -1)
        lower = [k for i, k in enumerate(sources) if i != top]
        self.warn(
            format_path((*SPEC, "volumes", Select("name", name), sources[top])),
            f"volume `{name}` has {len(sources)} sources: {listed}. Kubernetes rejects the pod (a volume has exactly "
            f"one source); to replace a lower layer's source, delete it where the new one is set: "
            + deletion([(*SPEC, "volumes", Select("name", name), k) for k in lower], *setters),
            *setters,
        )

    def join_timeout(self) -> None:
        rdzv = self.merged.elastic_settings.get("rdzv_configs") or {}
        if isinstance(rdzv, dict) and rdzv.get("timeout") is not None and rdzv.get("join_timeout") is None:
            # lazy: torch's defaults by release are the clocks' table, which a render of no such profile reads not
            from .torch_defaults import RDZV_DEFAULTS

            self.warn(
                "elastic.rdzv_configs.timeout",
                "c10d ignores `timeout` and no layer sets `join_timeout`: the join timeout stays torch's "
                f"{RDZV_DEFAULTS['join_timeout']} s; set `join_timeout`",
                self.setter("elastic", "rdzv_configs", "timeout"),
            )

    def deadline_below_join_timeout(self) -> None:
        """``run_policy.active_deadline_seconds`` below ``join_timeout`` on several nodes: the training operator
        ends the job (``DeadlineExceeded``, counted from the job's start) before a rendezvous waiting for a late
        node gives up, and whatever trains longer than the deadline."""
        elastic = self.merged.elastic_settings
        policy, rdzv = elastic.get("run_policy") or {}, elastic.get("rdzv_configs") or {}
        deadline = policy.get("active_deadline_seconds") if isinstance(policy, dict) else None
        join = rdzv.get("join_timeout") if isinstance(rdzv, dict) else None
        if not (is_multi_node(elastic) and _seconds(deadline)):
            return
        if join is None:
            # lazy: torch's defaults by release are the clocks' table, which a render without a deadline reads not
            from .torch_defaults import RDZV_DEFAULTS

            join = RDZV_DEFAULTS["join_timeout"]
        if not (_seconds(join) and deadline < join):
            return
        path = ("elastic", "run_policy", "active_deadline_seconds")
        setter, join_setter = self.setter(*path), self.setter("elastic", "rdzv_configs", "join_timeout")
        self.warn(
            format_path(path),
            f"active_deadline_seconds is {deadline} s ({where(setter)}), below join_timeout's {join} s "
            f"({where(join_setter) if join_setter else 'torch default'}): the training operator ends the job "
            f"(DeadlineExceeded) {deadline} s after it starts, before a rendezvous waiting for a late node gives up "
            "and before any training longer than that ends; raise it above join_timeout plus the training, or "
            "remove it",
            setter, join_setter,
        )


def _seconds(value: Any) -> bool:
    """Whether ``value`` is a positive whole number of seconds."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def check_merged(merged: Any, headroom: ShmHeadroom | None = None,
                 provided_volumes: Collection[str] = ()) -> list[Finding]:
    """Warnings for a merged profile whose settings break together at run time.

    * ``nproc_per_node`` other than the primary container's GPU limit (``nvidia.com/gpu`` or another
      ``*/gpu`` resource): torch elastic starts ``nproc_per_node`` workers, one per GPU, so more workers share
      GPUs and fewer leave GPUs idle.
    * a ``/dev/shm`` volume whose ``emptyDir.sizeLimit`` is above the mounting container's memory limit
      (memory-backed emptyDir pages are charged to the container writing them; Kubernetes docs, emptyDir).
    * two ``/dev/shm`` mounts in one container (``/dev/shm`` and ``/dev/shm/`` are different merge keys).
    * containers none of which is the primary container (flytekit then adds an empty one,
      ``flytekit.core.utils._serialize_pod_spec``).
    * ``rdzv_configs.timeout`` without any ``join_timeout``.
    * ``run_policy.active_deadline_seconds`` below ``join_timeout`` (several nodes).
    * a volume with two sources (``emptyDir`` from one layer, ``hostPath`` from another): the API server
      accepts one.
    * a container or init container, other than the primary container, without an image (a misspelt
      primary container name, most often).
    * a ``run_policy`` with ``nnodes: 1``: the plugin runs a plain pod and serializes no run policy.
    * ``rdzv_configs.store_type: file`` with more than one node: the nodes never meet.
    * ``TORCH_ELASTIC_SHUTDOWN_TIMEOUT`` not below the pod's ``terminationGracePeriodSeconds``.

    Args:
        merged: A :class:`kfdefaults.Resolved` (anything with its ``name``, ``elastic_settings``,
            ``pod_template_spec``, ``primary_container_name`` and ``fragments``).
        headroom: The memory a container keeps beside its ``/dev/shm`` (:func:`.shm.shm_headroom`); ``None``: none.
        provided_volumes: Volumes the pod gets from elsewhere (the cluster's PodTemplate): a mount of one is no
            mount of a missing volume.

    Returns:
        Warnings, each located at the value of the highest layer involved and naming the other values' places.
    """
    return sorted_findings(_MergedChecker(merged, headroom, provided_volumes).run())

