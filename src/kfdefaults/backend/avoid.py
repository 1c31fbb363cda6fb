"""Leave out the profile's ``/dev/shm`` where the cluster's PodTemplate already gives the task one.

Flyte's backend adds the cluster template's list items to the task's (:mod:`.template_merge`), so a
``/dev/shm`` mount in the template's ``default`` or ``primary`` container and one in the profile make two
mounts at one path, which the API server rejects; a template volume and a profile volume of one name make two
volumes of that name. For ``/dev/shm`` kfdefaults can do what the user means, and does:

* a container the template gives a ``/dev/shm`` mount (``default`` for every container, ``primary`` for the
  primary, a template container of the same name for another) keeps the template's: the profile's ``/dev/shm``
  mounts of that container are left out, and the volumes only they mounted;
* a profile volume mounted only at ``/dev/shm`` whose name a template volume has, and that template volume an
  ``emptyDir``, is left out: the mount uses the cluster's volume of that name.

Both are one more step of the merge, a :class:`ClusterFragment` of layer ``cluster`` on top of the task layer,
so ``--explain`` shows what it removed and the template line that made it. Any other clash is reported, never
changed (:mod:`.checks`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import Location
from ..k8s.mounts import is_shm_mount
from ..merge.step import merge_step
from ..merge.result import Resolved
from ..validate.fragment import Fragment
from .cluster import LAYER, ClusterTemplate
from .registered import registered_pod_spec

JSON = dict


class ReplacedShm(NamedTuple):
    """A ``/dev/shm`` volume of the profile left out for the cluster template's: the pod's ``/dev/shm`` is then
    the template's volume, its ``emptyDir`` (``sizeLimit``, ``medium``) and not the profile's.

    Attributes:
        volume: The profile's volume as merged (``{"name": ..., "emptyDir": {...}}``).
        template_volume: The template's volume the pod mounts at ``/dev/shm`` instead, or ``None`` when the
            template mounts a volume it does not define (reported on its own).
        location: Where the template's volume (else its mount) is written.
    """

    volume: JSON
    template_volume: JSON | None
    location: Location


class ClusterFragment(Fragment):
    """The cluster layer: deletions the cluster's PodTemplate makes necessary, each located at the template line
    that causes it.

    Attributes:
        causes: ``(list field, item index in this fragment's patch)`` -> the template line that made the deletion.
        replaced: The profile's ``/dev/shm`` volumes left out for the template's (:class:`ReplacedShm`), to say
            where the template's volume is another (:func:`kfdefaults.check.backend.backend_warnings`).
    """

    __slots__ = ("causes", "default_location", "replaced")

    def __init__(self, profile: str, cluster: ClusterTemplate, patch: JSON, causes: dict[tuple[str, int], Location],
                 replaced: list[ReplacedShm] | None = None) -> None:
        super().__init__(profile, LAYER, cluster.path, None, pod_template=patch)
        self.causes = causes
        self.default_location = cluster.location()
        self.replaced: list[ReplacedShm] = replaced or []

    def replace(self, **changes: Any) -> Fragment:
        """A plain :class:`Fragment` cannot hold the causes: the cluster layer is never renamed or changed."""
        return self

    def location(self, file_path: tuple, *, key: bool = False) -> Location:
        """The template line that made the deletion at ``file_path`` (in this fragment's own shape)."""
        parts = tuple(file_path)
        if parts[:2] == ("pod_template", "spec") and len(parts) >= 3:
            index = parts[3] if len(parts) >= 4 and isinstance(parts[3], int) else 0  # a null: the first cause
            return self.causes.get((parts[2], index), self.default_location)
        return self.default_location


def template_shm(cluster: ClusterTemplate, field: str, name: str, primary: str) -> tuple[JSON, Location] | None:
    """The ``/dev/shm`` mount the template gives the task container ``name``, and where it is written, if it
    gives one."""
    for index, container in cluster.layers_for(field, name, primary):
        for j, mount in enumerate(container.get("volumeMounts") or []):
            if isinstance(mount, dict) and is_shm_mount(mount.get("mountPath")):
                return mount, cluster.location(field, index, "volumeMounts", j, "mountPath")
    return None


def template_shm_mount(cluster: ClusterTemplate, field: str, name: str, primary: str) -> Location | None:
    """Where the template gives the task container ``name`` a ``/dev/shm`` mount, if it does."""
    found = template_shm(cluster, field, name, primary)
    return found[1] if found is not None else None


def shm_patch(resolved: Resolved, cluster: ClusterTemplate) -> tuple[JSON, dict[tuple[str, int], Location]]:
    """The deletions (a strategic merge patch of the PodTemplateSpec: ``$patch: delete`` items, or ``null`` where
    nothing of a list is left) and their causes; ``({}, {})`` when none.

    Long because it walks containers, then volumes, building one patch; each part is a few lines.
    """
    spec = registered_pod_spec(resolved)
    patch_spec: JSON = {}
    causes: dict[tuple[str, int], Location] = {}
    dropped_mounts: dict[str, Location] = {}  # volume name -> the template mount that replaced its mount
    for field in ("containers", "initContainers"):
        items = []
        for container in spec.get(field) or []:
            name = container.get("name")
            cause = template_shm_mount(cluster, field, name, resolved.primary_container_name)
            ours = [m for m in container.get("volumeMounts") or [] if is_shm_mount(m.get("mountPath"))]
            if cause is None or not ours:
                continue
            causes[(field, len(items))] = cause
            rest = [m for m in container.get("volumeMounts") or [] if not is_shm_mount(m.get("mountPath"))]
            deletions = [{"mountPath": m["mountPath"], "$patch": "delete"} for m in ours] if rest else None
            items.append({"name": name, "volumeMounts": deletions})
            for m in ours:
                dropped_mounts.setdefault(m.get("name"), cause)
        if items:
            patch_spec[field] = items
    dropped_paths = {(f, c.get("name"), m.get("mountPath")) for f in ("containers", "initContainers")
                     for c in spec.get(f) or [] if any(item["name"] == c.get("name") for item in patch_spec.get(f, []))
                     for m in c.get("volumeMounts") or [] if is_shm_mount(m.get("mountPath"))}
    still_mounted: dict[str, list[str]] = {}
    for field in ("containers", "initContainers"):
        for container in spec.get(field) or []:
            for m in container.get("volumeMounts") or []:
                if (field, container.get("name"), m.get("mountPath")) not in dropped_paths:
                    still_mounted.setdefault(m.get("name"), []).append(m.get("mountPath"))
    template_volumes = {v.get("name"): (i, v) for i, v in enumerate(cluster.raw_spec.get("volumes") or []) if isinstance(v, dict)}
    volumes = []
    for volume in spec.get("volumes") or []:
        name = volume.get("name")
        cause = None
        if name in dropped_mounts and name not in still_mounted:
            cause = dropped_mounts[name]
        elif name in template_volumes and name in still_mounted and all(is_shm_mount(p) for p in still_mounted[name]) \
                and isinstance(template_volumes[name][1].get("emptyDir"), dict):
            cause = cluster.location("volumes", template_volumes[name][0], "name")
        if cause is not None:
            causes[("volumes", len(volumes))] = cause
            volumes.append({"name": name, "$patch": "delete"})
    if volumes:
        patch_spec["volumes"] = volumes if len(volumes) < len(spec.get("volumes") or []) else None
    return ({"spec": patch_spec} if patch_spec else {}), causes


def leave_out_duplicate_shm(resolved: Resolved, cluster: ClusterTemplate) -> Resolved:
    """``resolved`` with the cluster layer applied (see above), or ``resolved`` itself when it changes nothing.

    Raises:
        ProfileError: the strategic merge patch is rejected (it deletes only items it found, so it is not).
    """
    patch, causes = shm_patch(resolved, cluster)
    if not patch:
        return resolved
    fragment = ClusterFragment(resolved.name, cluster, patch, causes)
    merged = merge_step(resolved, fragment)
    fragment.replaced = replaced_shm(resolved, merged, cluster)
    return merged


def replaced_shm(before: Resolved, after: Resolved, cluster: ClusterTemplate) -> list[ReplacedShm]:
    """The profile's volumes the cluster layer left out (in ``before``, not in ``after``) whose ``/dev/shm`` mount
    the template serves instead: with the template's ``/dev/shm`` mount of the container that mounted it, else the
    template's volume of its name."""
    spec = registered_pod_spec(before)
    kept = {v.get("name") for v in (after.pod_template_spec.get("spec") or {}).get("volumes") or []}
    template_volumes = {v.get("name"): (i, v) for i, v in enumerate(cluster.raw_spec.get("volumes") or [])
                        if isinstance(v, dict)}
    out = []
    for volume in spec.get("volumes") or []:
        name = volume.get("name")
        if name in kept:
            continue
        served_by = name
        for field in ("containers", "initContainers"):
            for container in spec.get(field) or []:
                found = template_shm(cluster, field, container.get("name"), before.primary_container_name)
                if found is not None and any(m.get("name") == name and is_shm_mount(m.get("mountPath"))
                                             for m in container.get("volumeMounts") or []):
                    served_by = found[0].get("name") or served_by
        index, theirs = template_volumes.get(served_by, (None, None))
        out.append(ReplacedShm(volume, theirs, cluster.location("volumes", index, "name") if index is not None
                               else cluster.location()))
    return out

