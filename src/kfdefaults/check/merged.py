"""Warnings for a merged profile whose settings break together at run time, each located at the value (in its
layer and file) that makes the combination. The profile is valid: these are warnings (``--strict`` fails on them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Sequence

from ..errors import Finding, Location, sorted_findings
from ..k8s.mounts import is_shm_mount
from ..k8s.quantity import quantity_value
from ..paths import format_path
from ..read import TOML_SUFFIXES
from ..smp.schema import schema_type
from ..validate.suggest import closest

PathT = tuple


def _find_in(data: Any, steps: Sequence[Any]) -> PathT | None:
    """Follow ``steps`` (keys, and ``(merge_key, value)`` selectors for list items) into ``data``.

    Returns:
        The concrete path (keys and list indices) to a non-null value, or ``None``.
    """
    path: list[Any] = []
    node = data
    for step in steps:
        if isinstance(step, tuple):
            key, wanted = step
            if not isinstance(node, list):
                return None
            for i, item in enumerate(node):
                if isinstance(item, dict) and item.get(key) == wanted:
                    path.append(i)
                    node = item
                    break
            else:
                return None
        else:
            if not isinstance(node, dict) or step not in node:
                return None
            path.append(step)
            node = node[step]
    return tuple(path) if node is not None else None


@dataclass
class _Setter:
    """Which fragment set a merged value, and where."""

    index: int
    layer: str
    location: Location


def _setter(fragments: Sequence[Any], section: str, steps: Sequence[Any]) -> _Setter | None:
    """The highest fragment that sets the value at ``steps`` in its ``elastic`` or ``pod_template`` section.

    ``pod_template`` steps are in PodTemplateSpec shape (``["spec", "containers", ("name", "primary"), ...]``);
    the location is mapped back to the file's shape (``pod_template.spec...``, ``pod_template.labels``).
    """
    for index in range(len(fragments) - 1, -1, -1):
        fragment = fragments[index]
        data = fragment.elastic if section == "elastic" else fragment.pod_template
        found = _find_in(data, steps)
        if found is None:
            continue
        if section == "elastic":
            file_path: PathT = ("elastic",) + found
        elif found[:1] == ("metadata",):
            file_path = ("pod_template",) + found[1:]
        else:
            file_path = ("pod_template",) + found
        return _Setter(index, fragment.layer, fragment.location(file_path))
    return None


def _named(prefix: str, steps: Sequence[Any]) -> str:
    return format_path((prefix, *steps))


def _where(setter: _Setter | None) -> str:
    return f"[{setter.layer}] {setter.location}" if setter else "the defaults"


class _MergedChecker:
    def __init__(self, merged: Any, provided_volumes: Collection[str] = ()) -> None:
        self.merged = merged
        self.fragments = merged.fragments
        self.provided_volumes = provided_volumes
        self.findings: list[Finding] = []

    def warn(self, name: str, message: str, *setters: _Setter | None) -> None:
        """A warning located at the highest of ``setters`` (the layer that made the combination)."""
        present = [s for s in setters if s is not None]
        top = max(present, key=lambda s: s.index) if present else None
        location = top.location if top else Location(f"<profile {self.merged.name}>")
        self.findings.append(Finding(location, name, message, "warning", top.layer if top else None))

    @staticmethod
    def deletion(paths: Sequence[Sequence[Any]], *setters: _Setter | None) -> str:
        """How to delete ``paths`` in the file that the warning points at (the highest of ``setters``), written
        in that file's format: ``key: null`` in YAML, ``delete = ["..."]`` in TOML (which has no null)."""
        present = [s for s in setters if s is not None]
        top = max(present, key=lambda s: s.index) if present else None
        written = [format_path(tuple(p)) for p in paths]
        if top is not None and top.location.file.endswith(TOML_SUFFIXES):
            return "`delete = [" + ", ".join(f'"{w}"' if '"' not in w else f"'{w}'" for w in written) + "]`"
        return ", ".join(f"`{format_path(tuple(p)[-1:])}: null`" for p in paths) + \
            f" (or `delete: [{', '.join(written)}]`)"

    def pod_setter(self, steps: Sequence[Any]) -> _Setter | None:
        return _setter(self.fragments, "pod", steps)

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
            setters = (_setter(self.fragments, "elastic", ["rdzv_configs", "store_type"]),
                       _setter(self.fragments, "elastic", ["nnodes"]))
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
        if not isinstance(value, str) or not value.strip().isdigit():
            return
        spec = (self.merged.pod_template_spec or {}).get("spec") or {}
        grace = spec.get("terminationGracePeriodSeconds", 30)
        if not isinstance(grace, int) or int(value) < grace:
            return
        name = primary.get("name")
        steps = ["spec", "containers", ("name", name), "env", ("name", "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"), "value"]
        grace_setter = self.pod_setter(["spec", "terminationGracePeriodSeconds"])
        self.warn(
            _named("pod_template", steps),
            f"TORCH_ELASTIC_SHUTDOWN_TIMEOUT is {value} s but the pod's terminationGracePeriodSeconds is {grace} "
            f"({_where(grace_setter) if grace_setter else 'the Kubernetes default'}): when the pod is deleted, the "
            "kubelet kills the agent before it has stopped its workers; keep the grace period longer",
            self.pod_setter(steps), grace_setter,
        )

    def run_policy_of_a_single_pod(self) -> None:
        elastic = self.merged.elastic_settings
        if elastic.get("nnodes") == 1 and elastic.get("run_policy"):
            setters = (_setter(self.fragments, "elastic", ["run_policy"]), _setter(self.fragments, "elastic", ["nnodes"]))
            self.warn(
                "elastic.run_policy",
                "has no effect: with `nnodes: 1` the task runs as a plain pod, and `run_policy` is a PyTorchJob's "
                "(flytekitplugins.kfpytorch serializes it only for several nodes); remove it or delete it: "
                + self.deletion([("elastic", "run_policy")], *setters),
                *setters,
            )

    def primary_not_named(self, containers: list[dict[str, Any]], primary_name: str) -> None:
        names = [str(c.get("name")) for c in containers]
        setter = None
        for index in range(len(self.fragments) - 1, -1, -1):
            if self.fragments[index].primary_container_name is not None:
                fragment = self.fragments[index]
                setter = _Setter(index, fragment.layer, fragment.location(("pod_template", "primary_container_name")))
                break
        first = self.pod_setter(["spec", "containers", ("name", containers[0].get("name")), "name"])
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
            gpu_steps = ["spec", "containers", ("name", name), "resources", "limits", resource]
            gpu_setter = self.pod_setter(gpu_steps)
            nproc_setter = _setter(self.fragments, "elastic", ["nproc_per_node"])
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
                f"nproc_per_node is {nproc} ({_where(nproc_setter)}) but the primary container `{name}` has {shown} "
                f"`{resource}` ({_where(gpu_setter)}): torch elastic starts {nproc} worker{'s' * (nproc != 1)} per "
                f"node, one per GPU, {effect}",
                nproc_setter, gpu_setter,
            )

    def shm(self, container: dict[str, Any], volumes: dict[Any, dict[str, Any]]) -> None:
        name = container.get("name")
        base = ["spec", "containers", ("name", name)]
        mounts = [m for m in container.get("volumeMounts") or [] if isinstance(m, dict)]
        for mount in mounts:
            if mount.get("name") is not None and mount.get("name") not in volumes \
                    and mount.get("name") not in self.provided_volumes:
                steps = base + ["volumeMounts", ("mountPath", mount.get("mountPath")), "name"]
                self.warn(_named("pod_template", steps[:-1]),
                          f"container `{name}` mounts volume `{mount.get('name')}` at `{mount.get('mountPath')}`, "
                          "but no layer defines that volume in pod_template.spec.volumes: Kubernetes rejects the pod",
                          self.pod_setter(steps))
        shm = [m for m in mounts if is_shm_mount(m.get("mountPath"))]
        setters = [self.pod_setter(base + ["volumeMounts", ("mountPath", m.get("mountPath"))]) for m in shm]
        if len(shm) > 1:
            top = max(range(len(shm)), key=lambda i: setters[i].index if setters[i] else -1)
            listed = "; ".join(f"`{m.get('mountPath')}` (volume `{m.get('name')}`, {_where(s)})" for m, s in zip(shm, setters))
            self.warn(
                _named("pod_template", base + ["volumeMounts", ("mountPath", shm[top].get("mountPath"))]),
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
            if size is None or size <= memory:
                continue
            size_steps = ["spec", "volumes", ("name", volume.get("name")), "emptyDir", "sizeLimit"]
            memory_steps = base + ["resources", "limits", "memory"]
            size_setter = self.pod_setter(size_steps)
            memory_setter = self.pod_setter(memory_steps)
            memory_is_higher = memory_setter is not None and (size_setter is None or memory_setter.index > size_setter.index)
            self.warn(
                _named("pod_template", memory_steps if memory_is_higher else size_steps),  # the path of the line shown
                f"/dev/shm sizeLimit {size_text} ({_where(size_setter)}) is above the memory limit {memory_text} of "
                f"container `{name}` ({_where(memory_setter)}): /dev/shm in memory counts against the container's "
                "memory, so the container is OOM-killed before /dev/shm is full; keep sizeLimit below the memory limit",
                size_setter, memory_setter,
            )

    def no_image(self, field: str, container: dict[str, Any], primary_name: str) -> None:
        """A container other than the primary one without an image: the API server requires one
        (``validateContainerCommon``: "image: Required value"); flytekit sets the primary container's only."""
        name = container.get("name")
        steps = ["spec", field, ("name", name)]
        hint = closest(str(name), [primary_name]) if field == "containers" else None
        self.warn(
            _named("pod_template", steps),
            f"container `{name}` has no image: Kubernetes rejects the pod (flytekit gives an image to the primary "
            f"container `{primary_name}` only)" + (f"; did you mean `{primary_name}`?" if hint else "; give it one"),
            self.pod_setter(steps + ["name"]),
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
        setters = [self.pod_setter(["spec", "volumes", ("name", name), k]) for k in sources]
        listed = ", ".join(f"`{k}` ({_where(s)})" for k, s in zip(sources, setters))
        top = max(range(len(sources)), key=lambda i: setters[i].index if setters[i] else -1)
        lower = [k for i, k in enumerate(sources) if i != top]
        self.warn(
            _named("pod_template", ["spec", "volumes", ("name", name), sources[top]]),
            f"volume `{name}` has {len(sources)} sources: {listed}. Kubernetes rejects the pod (a volume has exactly "
            f"one source); to replace a lower layer's source, delete it where the new one is set: "
            + self.deletion([("pod_template", "spec", "volumes", ("name", name), k) for k in lower], *setters),
            *setters,
        )

    def join_timeout(self) -> None:
        rdzv = self.merged.elastic_settings.get("rdzv_configs") or {}
        if isinstance(rdzv, dict) and rdzv.get("timeout") is not None and rdzv.get("join_timeout") is None:
            self.warn(
                "elastic.rdzv_configs.timeout",
                "c10d ignores `timeout` and no layer sets `join_timeout`: the join timeout stays torch's 600 s; "
                "set `join_timeout`",
                _setter(self.fragments, "elastic", ["rdzv_configs", "timeout"]),
            )


def check_merged(merged: Any, provided_volumes: Collection[str] = ()) -> list[Finding]:
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
        provided_volumes: Volumes the pod gets from elsewhere (the cluster's PodTemplate): a mount of one is no
            mount of a missing volume.

    Returns:
        Warnings, each located at the value of the highest layer involved and naming the other values' places.
    """
    return sorted_findings(_MergedChecker(merged, provided_volumes).run())

