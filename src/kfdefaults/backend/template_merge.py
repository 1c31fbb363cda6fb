"""How Flyte's backend lays a task's pod spec onto the cluster's PodTemplate: ``MergeBasePodSpecOntoTemplate``.

Restated from flyteplugins v1.16.8 ``go/tasks/pluginmachinery/flytek8s/pod_helper.go`` (lines 675-849):

1. The pod-level fields: a deep copy of the template's spec, the task's whole spec merged onto it with
   :func:`~.mergo.mergo_merge`. Lists are concatenated, the template's first: two ``dshm`` volumes stay two.
2. The containers (and init containers) of that result are replaced by lists rebuilt from the **task's**
   containers only, in the task's order. A template container is never added on its own: a template sidecar or
   init container, or one named like a renamed primary container, is dropped.
3. Each task container is layered: a copy of the template's ``default`` container (``default-init`` for init
   containers); for the primary container, the template's ``primary`` (``primary-init``), whatever the primary
   is called; for any other container not named ``default``, every template container of its very name, in
   template order (v1.16.3 and later; before, the primary and ``default`` were layered twice); the task's
   container last. The last template container of each of those names counts. Flyte v2 (the clustered tasks'
   backend) skips there the template's ``default`` and ``primary`` instead, so a template container named like a
   primary that is not called ``primary`` is layered under it, the template's own container, not a copy.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from .gojson import JSON

# The merge below runs Go's model of a PodSpec (gojson, mergo), imported where it runs: the container names are
# read by every ``render --as podtemplate`` (:mod:`.pod_template_name`), which merges nothing.

DEFAULT_TEMPLATE = "default"
"""The template container laid under every container of the task."""
PRIMARY_TEMPLATE = "primary"
"""The template container laid under the task's primary container, whatever the primary is named."""
DEFAULT_INIT_TEMPLATE = "default-init"
PRIMARY_INIT_TEMPLATE = "primary-init"

CONTAINER = ("struct", "Container")


def template_containers_for(template: list[JSON], name: str, primary: str, *, init: bool = False,
                            legacy: bool = False) -> list[JSON]:
    """The template containers laid under the task container ``name``, lowest first (step 3 above).

    Args:
        template: The template's ``containers`` (or ``initContainers``).
        name: The task container's name.
        primary: The task's primary container name (its primary init container name for init containers).
        init: Whether these are init containers.
        legacy: flyteplugins v1.16.0 to v1.16.2, where the same-name match did not skip the primary nor
            ``default`` (fixed in v1.16.3, flyte#6733).
    """
    default_name, primary_name = (DEFAULT_INIT_TEMPLATE, PRIMARY_INIT_TEMPLATE) if init else (DEFAULT_TEMPLATE, PRIMARY_TEMPLATE)
    default = primary_template = None
    for c in template:  # the last of each name wins
        if c.get("name", "") == default_name:
            default = c
        elif c.get("name", "") == primary_name:
            primary_template = c
    out = [default] if default is not None else []
    if name == primary and primary_template is not None:
        out.append(primary_template)
    for c in template:
        if c.get("name", "") == name and (legacy or name not in (primary, default_name)):
            out.append(c)
    return out


def _layer_containers(template: list[JSON], task: list[JSON], primary: str, init: bool, legacy: bool,
                      flyte2: bool = False) -> list[JSON]:
    """Step 3 for one list, sharing data as the Go code does: the ``default`` and ``primary`` templates are
    located in the template itself and merged from there; a same-name match is used through ``&templateContainer``,
    a shallow per-iteration copy (Go 1.22 loop variables) whose maps and pointer targets are the template's."""
    from .mergo import deep_copy, go_copy, mergo_merge  # lazy: Go's model, where a merge runs (see above)

    default_name, primary_name = (DEFAULT_INIT_TEMPLATE, PRIMARY_INIT_TEMPLATE) if init else (DEFAULT_TEMPLATE, PRIMARY_TEMPLATE)
    default = primary_template = None
    for c in template:
        if c.get("name", "") == default_name:
            default = c
        elif c.get("name", "") == primary_name:
            primary_template = c
    out = []
    for task_container in task:
        base = go_copy(task_container, CONTAINER)
        name = base.get("name", "")
        merged: JSON | None = deep_copy(default) if default is not None else None
        if name == primary and primary_template is not None:
            merged = deep_copy(primary_template) if merged is None else mergo_merge(merged, primary_template, "Container")
        for c in template:
            if c.get("name", "") != name or (not legacy and name in ((default_name, primary_name) if flyte2
                                                                      else (primary, default_name))):
                continue
            same_name = c if flyte2 else go_copy(c, CONTAINER)  # v2: &templatePodSpec.Containers[i]
            merged = same_name if merged is None else mergo_merge(merged, same_name, "Container")
        merged = deep_copy(base) if merged is None else mergo_merge(merged, base, "Container")
        out.append(go_copy(merged, CONTAINER))
    return out


def merge_base_pod_spec_onto_template(template_spec: JSON, task_spec: JSON, primary: str, primary_init: str = "",
                                      *, legacy: bool = False, flyte2: bool = False) -> JSON:
    """``MergeBasePodSpecOntoTemplate``: the cluster template's spec below, the task's pod spec on top.

    Args:
        template_spec: The template's ``template.spec``, decoded (:func:`~.gojson.decode`).
        task_spec: The task's pod spec, decoded.
        primary: The primary container's name (``config["primary_container_name"]``).
        primary_init: The primary init container's name (flytekit tasks have none: ``""``).
        legacy: Model flyteplugins v1.16.0 to v1.16.2 (see :func:`template_containers_for`).
        flyte2: Model flyte v2's same-name rule (above).

    Returns:
        The merged pod spec, plain data (the inputs are not changed). Within one call, data is shared as Go
        shares it (pointers and maps taken from the template), so duplicate task container names give what Go gives.
    """
    # lazy: Go's model, where a merge runs (see above)
    from .gojson import unbox
    from .mergo import box, deep_copy, mergo_merge

    template = box(deep_copy(template_spec), "PodSpec")
    task = box(deep_copy(task_spec), "PodSpec")
    merged = mergo_merge(deep_copy(template), task, "PodSpec")
    for key, name, init in (("containers", primary, False), ("initContainers", primary_init, True)):
        rebuilt = _layer_containers(template.get(key) or [], task.get(key) or [], name, init, legacy, flyte2)
        if rebuilt:
            merged[key] = rebuilt
        else:
            merged.pop(key, None)
    return unbox(merged)


def merge_object_meta(template_meta: JSON, meta: JSON) -> JSON:
    """The pod metadata: a copy of the template's ``template.metadata``, the task's merged onto it (labels and
    annotations key by key, the task's winning; pod_helper.go lines 694-698)."""
    from .mergo import deep_copy, mergo_merge  # lazy: Go's model, where a merge runs (see above)

    return mergo_merge(deep_copy(template_meta), meta, "metav1.ObjectMeta")
