"""The primary container is a role, not a name: each layer's container in that role is merged into one."""

from __future__ import annotations

from typing import Any

from ..validate.fragment import Fragment

DEFAULT_PRIMARY_CONTAINER_NAME = "primary"
"""The default ``primary_container_name`` of ``flytekit.PodTemplate`` and ``flyte.PodTemplate``, in effect until a
layer sets one."""


PYTORCH_JOB_CONTAINER = "pytorch"
"""The container name a PyTorchJob requires; Flyte's backend gives it to the primary container."""


def assign_primary_container(fragments: list[Fragment]) -> list[Fragment]:
    """Make "the primary container" a role, not a name: name it the same in every fragment.

    Each fragment refers to its primary container by the ``primary_container_name`` in effect for it (its
    own, else the one below it, else flytekit's default ``primary``). The highest layer's name wins; in every
    other fragment, the container holding the primary role is renamed to it before merging, so that a task
    choosing ``primary_container_name="main"`` gets the profile's ``/dev/shm`` mount and GPUs on ``main``, not
    on a stray container called ``primary``. A fragment without its primary container but with a container
    named ``pytorch`` (the name a PyTorchJob gives the primary container) means that one.

    Returns:
        The fragments, the renamed ones replaced by copies (the originals are not changed).
    """
    final = "primary"
    for fragment in fragments:
        if fragment.primary_container_name is not None:
            final = fragment.primary_container_name
    out = []
    view = "primary"
    for fragment in fragments:
        view = fragment.primary_container_name or view
        renamed = _rename_primary(fragment.pod_template, view, final)
        out.append(fragment if renamed is fragment.pod_template else fragment.replace(pod_template=renamed))
    return out


def _rename_primary(patch: dict[str, Any], source: str, target: str) -> dict[str, Any]:
    spec = patch.get("spec") if isinstance(patch, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list):
        return patch
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    if source not in names and PYTORCH_JOB_CONTAINER in names:
        source = PYTORCH_JOB_CONTAINER
    if source == target or source not in names or target in names:
        return patch

    def rename(items: Any) -> Any:
        if not isinstance(items, list):
            return items
        return [dict(c, name=target) if isinstance(c, dict) and c.get("name") == source else c for c in items]

    new_spec = dict(spec, containers=rename(containers))
    order_key = "$setElementOrder/containers"
    if order_key in new_spec:
        new_spec[order_key] = rename(new_spec[order_key])
    return dict(patch, spec=new_spec)


def name_primary_as_the_profile_does(spec: dict[str, Any], task_primary: str, profile_primary: str) -> None:
    """Rename the task's ``primary`` container to the profile's primary container name, in place.

    ``PodTemplate(primary_container_name=...)`` defaults to ``"primary"``, so a task that leaves it unset cannot
    be told from one that sets ``"primary"``; either way its container named ``primary`` is the task's primary
    container, and it means the profile's (``main``, say), not a second container beside it. A name the task
    chooses other than the default is a choice, which the merge applies to every layer instead.
    """
    if task_primary != DEFAULT_PRIMARY_CONTAINER_NAME or profile_primary == task_primary:
        return
    containers = spec.get("containers")
    if not isinstance(containers, list):
        return
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    if task_primary in names and profile_primary not in names:
        for container in containers:
            if isinstance(container, dict) and container.get("name") == task_primary:
                container["name"] = profile_primary
