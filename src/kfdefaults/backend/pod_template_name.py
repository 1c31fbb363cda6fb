"""What Flyte's backend keeps of a profile rendered as a PodTemplate and named by a task's ``pod_template_name``.

A task's ``pod_template_name`` makes the backend use that PodTemplate instead of the cluster's default one, in
the same way (:mod:`.template_merge`): its pod-level fields and metadata are laid under the task's pod (lists
added to the task's), its container ``primary`` under the task's primary container, ``default`` under every
container, and a container of another name only under a task container of that very name. So of
``kfdefaults render NAME --as podtemplate``:

* a primary container named otherwise than ``primary`` (``main``) is dropped: its image, environment, GPUs and
  mounts never reach the task;
* sidecars and init containers are dropped, unless the task has containers of their names;
* on a task that already uses kfdefaults with the same profile, every list (volumes, tolerations, env, mounts)
  comes twice.
"""

from __future__ import annotations

from ..errors import Finding, Location
from ..merge.provenance import highest, provenance
from ..merge.result import Resolved
from ..paths import Select, format_path
from .template_merge import (
    DEFAULT_INIT_TEMPLATE,
    DEFAULT_TEMPLATE,
    PRIMARY_INIT_TEMPLATE,
    PRIMARY_TEMPLATE,
)

SUMMARY = (
    "note: named by a task's pod_template_name, this PodTemplate keeps its pod-level fields and labels and, of its "
    "containers, `primary` (laid under the task's primary container) and `default` (under every container); "
    "Flyte's backend drops the others:"
)
"""Printed on standard error by ``render --as podtemplate`` before the containers it drops, when it drops some."""


def dropped_by_pod_template_name(resolved: Resolved) -> list[Finding]:
    """A warning for each container of the profile that the backend drops from it as a ``pod_template_name``
    template, located where the profile defines it."""
    spec = resolved.pod_spec
    findings = []
    kept = {"containers": (DEFAULT_TEMPLATE, PRIMARY_TEMPLATE), "initContainers": (DEFAULT_INIT_TEMPLATE, PRIMARY_INIT_TEMPLATE)}
    for field in kept:
        for container in spec.get(field) or []:
            name = container.get("name")
            if name in kept[field]:
                continue
            path = ("pod_template", "spec", field, Select("name", name))
            setters = [provenance(resolved).setter((*path, "name"))]
            if field == "containers" and name == resolved.primary_container_name:
                setters.append(provenance(resolved).setter(("pod_template", "primary_container_name")))
                why = ("it is the primary container, but the backend lays only a template container named `primary` "
                       "under a task's primary container: name it `primary` (primary_container_name) for this use")
            else:
                what = "init container" if field == "initContainers" else "sidecar"
                why = f"a {what} reaches the task only if the task has a container named `{name}` itself"
            top = highest(setters)
            findings.append(Finding(top.origin.location if top else Location(f"<profile {resolved.name}>"),
                                    format_path(path), f"dropped when this PodTemplate is named by pod_template_name: "
                                    f"{why}", "warning", top.origin.layer if top else None))
    return findings
