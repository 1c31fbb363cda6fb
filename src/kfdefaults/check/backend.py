"""What goes wrong when Flyte's backend builds the pod of a task on a profile, each located at the files that cause it.

The pod is the one :mod:`.template_merge` builds from the registered pod spec (:mod:`.registered`) and the
cluster's PodTemplate, the primary container renamed ``pytorch`` when the task runs as a PyTorchJob. Compared to
what the profile says:

* **errors** (:func:`backend_errors`, raised by every entry point): two containers of one name, which the API
  server rejects; mostly a container named ``pytorch`` beside the primary of a multi-node task, which the
  PyTorch plugin's renaming turns into two. They do not depend on the cluster's PodTemplate;
* **warnings** (:func:`backend_warnings`): a path mounted twice in a container, two volumes of one name, a mount of
  a volume that is not in the pod, a value of the profile the template's wins over (mergo never lets a zero
  value, ``false``, ``0`` or ``""``, override), a profile's ``/dev/shm`` volume (its ``sizeLimit``, its
  ``medium``) that the template's replaces (:mod:`kfdefaults.backend.avoid` leaves the profile's out), and
  template containers the backend drops. Each needs the cluster's PodTemplate to happen, and is reported only
  when it involves it.
"""

from __future__ import annotations

import json
from typing import Any

from ..backend.registered import PYTORCH_CONTAINER, is_multi_node, registered_pod_spec
from ..errors import Finding, Location, sorted_findings
from ..k8s.mounts import normal_mount_path
from ..merge.leaves import same
from ..merge.origins import written_by
from ..merge.provenance import Setter, highest, provenance, where
from ..merge.result import Resolved
from ..paths import PathT, Select, format_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ..backend.cluster import ClusterTemplate
    from ..backend.gojson import JSON
    from ..backend.kinds import Kind

# What follows backend_errors needs the cluster's PodTemplate, and Go's model of a PodSpec to merge it (the
# backend's mergo, the kinds of its fields): imported where used, so that a render without a template never does.

FIELDS = ("containers", "initContainers")
SPEC = ("pod_template", "spec")


def _finding(path: PathT, message: str, setters: list[Setter | None], fallback: Location, fallback_layer: str | None,
             severity: str = "warning") -> Finding:
    """A finding at the highest of ``setters`` (the layer that made the combination), else at ``fallback``."""
    top = highest(setters)
    if top is not None:
        return Finding(top.origin.location, format_path(path), message, severity, top.origin.layer)
    return Finding(fallback, format_path(path), message, severity, fallback_layer)


def backend_pod(resolved: Resolved, cluster: ClusterTemplate | None) -> JSON:
    """The pod spec the backend builds from the profile's registered pod spec and the cluster's template, before
    its own additions (environment, resources, tolerations): the merge, then the PyTorch plugin's renaming."""
    # lazy: Go's JSON model and mergo, only where the cluster has a template (see above)
    from ..backend.gojson import canonical, decode
    from ..backend.template_merge import merge_base_pod_spec_onto_template

    spec = decode(registered_pod_spec(resolved), "PodSpec")
    primary = resolved.primary_container_name
    pod = merge_base_pod_spec_onto_template(cluster.spec, spec, primary) if cluster is not None else spec
    if is_multi_node(resolved.elastic_settings):
        for c in pod.get("containers") or []:
            if c.get("name", "") == primary:
                c["name"] = PYTORCH_CONTAINER
                break
    return canonical(pod, "PodSpec")


def backend_errors(resolved: Resolved) -> list[Finding]:
    """Containers of one name in the backend's pod (the API server requires unique names across containers and
    init containers): a container named ``pytorch`` beside the primary of a multi-node task, most often."""
    primary = resolved.primary_container_name
    spec = registered_pod_spec(resolved)
    renamed = is_multi_node(resolved.elastic_settings) and primary != PYTORCH_CONTAINER
    placed = [(field, c.get("name"), c.get("name") == primary and field == "containers")
              for field in FIELDS for c in spec.get(field) or []]
    final = [PYTORCH_CONTAINER if is_primary and renamed else name for _, name, is_primary in placed]
    findings = []
    for name in sorted({n for n in final if final.count(n) > 1}, key=str):
        others = [(field, original) for (field, original, is_primary), n in zip(placed, final) if n == name and not is_primary]
        field = others[0][0] if others else "containers"
        path = (*SPEC, field, Select("name", name))
        if name == PYTORCH_CONTAINER and renamed:
            message = (f"a container named `pytorch` beside the primary container `{primary}`: this profile runs as a "
                       f"PyTorchJob (nnodes {resolved.elastic_settings.get('nnodes')!r}), where Flyte's PyTorch plugin "
                       f"renames the primary container `pytorch`, so the pod would have two containers of that name, "
                       "which the API server rejects; rename this one")
            setters = [provenance(resolved).setter((*path, "name"))]
        else:
            message = (f"two containers named `{name}` in the pod (containers and init containers share one set of "
                       "names): the API server rejects it; rename one")
            setters = [provenance(resolved).setter((*SPEC, f, Select("name", name), "name")) for f in FIELDS]
        findings.append(_finding(path, message, setters, Location(f"<profile {resolved.name}>"),
                                 None, "error"))
    return sorted_findings(findings)


def backend_warnings(resolved: Resolved, cluster: ClusterTemplate | None) -> list[Finding]:
    """What the cluster's PodTemplate breaks or overrides in a task on this profile (see the module's docstring);
    ``[]`` without a template."""
    if cluster is None:
        return []
    checker = _Checker(resolved, cluster)
    checker.run()
    return sorted_findings(checker.findings)


class _Checker:
    def __init__(self, resolved: Resolved, cluster: ClusterTemplate) -> None:
        self.resolved, self.cluster = resolved, cluster
        self.primary = resolved.primary_container_name
        self.spec = registered_pod_spec(resolved)
        self.pod = backend_pod(resolved, cluster)
        self.findings: list[Finding] = []

    def warn(self, path: PathT, message: str, setters: list[Setter | None], fallback: Location) -> None:
        from ..backend.cluster import LAYER  # lazy: only where the cluster has a template (see above)

        self.findings.append(_finding(path, message, setters, fallback, LAYER))

    def setter(self, path: PathT) -> Setter | None:
        return provenance(self.resolved).setter(path)

    def run(self) -> None:
        for field in FIELDS:
            for ours, theirs in zip(self.spec.get(field) or [], self.pod.get(field) or []):
                self.mounts(field, ours, theirs)
                self.lost_values((*SPEC, field, Select("name", ours.get("name"))), ours, theirs,
                                 ("struct", "Container"), field, ours.get("name"))
        self.volumes()
        pod_level = {k: v for k, v in self.spec.items() if k not in FIELDS}
        self.lost_values(SPEC, pod_level, self.pod, ("struct", "PodSpec"), None, None)
        self.dropped_template_containers()
        self.replaced_shm()

    def replaced_shm(self) -> None:
        """The profile's ``/dev/shm`` volume left out for the template's (:mod:`kfdefaults.backend.avoid`), where the
        template's ``emptyDir`` gives another ``sizeLimit`` or ``medium``: the pod gets the template's."""
        # lazy: only where the cluster has a template (see above)
        from ..backend.avoid import ClusterFragment
        from ..backend.cluster import LAYER

        for fragment in self.resolved.fragments:
            for replaced in fragment.replaced if isinstance(fragment, ClusterFragment) else ():
                name = replaced.volume.get("name")
                ours = replaced.volume.get("emptyDir") if isinstance(replaced.volume.get("emptyDir"), dict) else {}
                theirs = (replaced.template_volume or {}).get("emptyDir")
                if not ours or replaced.template_volume is None:
                    continue  # not an emptyDir of the profile's, or a volume the template lacks (said above)
                theirs = theirs if isinstance(theirs, dict) else {}
                changed = [key for key in ("sizeLimit", "medium") if key in ours and ours[key] != theirs.get(key)]
                if not changed:
                    continue
                path = (*SPEC, "volumes", Select("name", name), "emptyDir", changed[0])
                setter = written_by(self.resolved.fragments, path, skip=(LAYER,))  # the profile's, which went
                said = ", ".join(f"{key} {theirs[key] if key in theirs else 'unset'} in place of {ours[key]}"
                                 for key in changed)
                self.warn(path, (
                    f"/dev/shm is the cluster's PodTemplate's volume `{replaced.template_volume.get('name')}` "
                    f"({replaced.location}), not this profile's `{name}`: {said}. Flyte's backend "
                    "adds the template's volume to the pod, so kfdefaults leaves out the profile's; change the "
                    "template's volume, or mount the profile's at another path"), [setter], replaced.location)

    def template_mounts(self, field: str, name: str) -> list[tuple[dict, Location, str]]:
        """The mounts the template gives the task container ``name``: (mount, where, template container)."""
        return [(m, self.cluster.location(field, i, "volumeMounts", j), c.get("name"))
                for i, c in self.cluster.layers_for(field, name, self.primary)
                for j, m in enumerate(c.get("volumeMounts") or []) if isinstance(m, dict)]

    def mounts(self, field: str, ours: JSON, theirs: JSON) -> None:
        name = ours.get("name")
        from_template = self.template_mounts(field, name)
        base = (*SPEC, field, Select("name", name))
        by_path: dict[str, list[str]] = {}
        for m in theirs.get("volumeMounts") or []:
            by_path.setdefault(normal_mount_path(m.get("mountPath")), []).append(m.get("mountPath"))
        for path, written in by_path.items():
            template_side = [(m, loc, c) for m, loc, c in from_template if normal_mount_path(m.get("mountPath")) == path]
            if len(written) < 2 or not template_side:
                continue
            setters = [self.setter((*base, "volumeMounts", Select("mountPath", m.get("mountPath"))))
                       for m in ours.get("volumeMounts") or [] if normal_mount_path(m.get("mountPath")) == path]
            listed = [f"volume `{m.get('name')}` from the cluster's PodTemplate (container `{c}`, {loc})" for m, loc, c in template_side]
            listed += [f"one from this profile ({where(s)})" for s in setters]
            self.warn((*base, "volumeMounts", Select("mountPath", written[-1])),
                      f"container `{name}` mounts `{path}` {len(written)} times in the pod Flyte's backend builds: "
                      f"{'; '.join(listed)}. The backend adds the template's mounts to the task's, it does not merge "
                      "them, and the API server rejects a path mounted twice; keep one", setters, template_side[0][1])
        volumes = {v.get("name") for v in self.pod.get("volumes") or []}
        own = {(m.get("name"), m.get("mountPath")) for m in ours.get("volumeMounts") or []}
        for m, loc, c in from_template:
            if m.get("name") not in volumes and (m.get("name"), m.get("mountPath")) not in own:
                self.warn(base, f"the cluster's PodTemplate mounts volume `{m.get('name')}` at "
                          f"`{m.get('mountPath')}` in container `{name}` (from its container `{c}`, {loc}), but "
                          "neither the template nor the profile defines that volume: the API server rejects the pod",
                          [], loc)

    def volumes(self) -> None:
        names = [v.get("name") for v in self.pod.get("volumes") or []]
        template = [(i, v) for i, v in enumerate(self.cluster.raw_spec.get("volumes") or []) if isinstance(v, dict)]
        for name in sorted({n for n in names if names.count(n) > 1}, key=str):
            theirs = [self.cluster.location("volumes", i, "name") for i, v in template if v.get("name") == name]
            if not theirs:
                continue  # the profile's own duplicates are not the backend's doing
            setter = self.setter((*SPEC, "volumes", Select("name", name)))
            self.warn((*SPEC, "volumes", Select("name", name)),
                      f"{names.count(name)} volumes named `{name}` in the pod Flyte's backend builds: the cluster's "
                      f"PodTemplate defines one ({', '.join(map(str, theirs))}) and this profile another ({where(setter)}); "
                      "the backend adds the template's volumes to the task's and the API server rejects two of one "
                      "name: rename the profile's, or mount the cluster's", [setter], theirs[0])

    def lost_values(self, path: PathT, ours: Any, theirs: Any, kind: Kind, field: str | None, name: str | None) -> None:
        """Scalars the profile sets that the pod does not get: the template's value won (mergo lets no zero value
        override). A container's ``name`` is the PyTorch plugin's to change, not the template's."""
        from ..backend.kinds import SCALAR_TAGS, fields  # lazy: only where the cluster has a template (see above)

        for key, sub in fields(kind[1]):
            if key in FIELDS or key not in ours or ours[key] is None or (kind[1] == "Container" and key == "name"):
                continue
            inner = sub[1] if sub[0] == "ptr" else sub
            value, got = ours[key], (theirs or {}).get(key)
            if inner[0] == "struct" and isinstance(value, dict):
                self.lost_values((*path, key), value, got if isinstance(got, dict) else {}, inner, field, name)
            elif (inner[0] in SCALAR_TAGS or inner[0] == "intorstr") and not _same(value, got, inner):
                self.report_lost((*path, key), value, got, field, name)

    def report_lost(self, path: PathT, value: Any, got: Any, field: str | None, name: str | None) -> None:
        keys = [s for s in path[2:] if not isinstance(s, Select)]
        if field is None:
            loc = self.cluster.location(*keys)
        else:
            layers = self.cluster.layers_for(field, name, self.primary)
            loc = next((self.cluster.location(field, i, *keys[1:]) for i, c in reversed(layers)
                        if _get(c, keys[1:]) is not None), self.cluster.location(field))
        self.warn(path, f"the pod gets `{json.dumps(got)}` from the cluster's PodTemplate ({loc}), not "
                  f"this profile's `{json.dumps(value)}`: Flyte's backend merges with mergo, where a zero value (false, "
                  "0, \"\") never overrides the template's; change the template, or set a value other than zero",
                  [self.setter(path)], loc)

    def dropped_template_containers(self) -> None:
        # lazy: only where the cluster has a template (see above)
        from ..backend.template_merge import DEFAULT_INIT_TEMPLATE, DEFAULT_TEMPLATE, PRIMARY_INIT_TEMPLATE, PRIMARY_TEMPLATE

        task_names = {f: {c.get("name") for c in self.spec.get(f) or []} - {self.primary} for f in FIELDS}
        kept = {"containers": (DEFAULT_TEMPLATE, PRIMARY_TEMPLATE), "initContainers": (DEFAULT_INIT_TEMPLATE, PRIMARY_INIT_TEMPLATE)}
        for field in FIELDS:
            for i, c in enumerate(self.cluster.raw_spec.get(field) or []):
                name = c.get("name") if isinstance(c, dict) else None
                if name in kept[field] or name in task_names[field]:
                    continue
                what = "init container" if field == "initContainers" else "container"
                self.warn(("template", "spec", field, i),
                          f"Flyte's backend drops the cluster PodTemplate's {what} `{name}` from this task's pod: it "
                          f"lays `{kept[field][0]}` under every {what}, `{kept[field][1]}` under the primary, and a "
                          f"{what} of another name only under a task {what} of that very name"
                          + (f" (the primary container `{self.primary}` is not one)" if name == self.primary else ""),
                          [], self.cluster.location(field, i, "name"))


def _get(data: Any, keys: list) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _same(value: Any, got: Any, kind: Kind) -> bool:
    """Whether the pod's value is the profile's (a missing value is the Go zero value)."""
    if kind[0] == "intorstr":
        return same(value if value not in (None, 0) else None, got if got not in (None, 0) else None)
    zero = {"str": "", "int": 0, "bool": False, "float": 0}[kind[0]]
    return same(zero if value is None else value, zero if got is None else got)
