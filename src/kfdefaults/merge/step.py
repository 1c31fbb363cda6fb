"""One step of the merge: a fragment applied on top of what the fragments below it built.

:func:`~.fold.merge_fragments` takes these steps, and so does the replay that records who set what
(:mod:`.provenance`), and the cluster layer (:mod:`kfdefaults.backend.avoid`): one way to merge a fragment.
"""

from __future__ import annotations

from typing import Any

from ..errors import Finding, MergeError, ProfileError
from ..paths import PathT, format_path
from ..smp.schema import schema_type
from ..targets import FLYTEKIT, Target
from ..validate.fragment import Fragment
from .elastic import merge_elastic
from .leaves import without_replace_marks
from .result import Resolved


def merge_step(state: Resolved, fragment: Fragment) -> Resolved:
    """Apply one fragment on top of ``state``: one step of :func:`~.fold.merge_fragments`.

    Args:
        state: What the fragments below built (merged with its Kubernetes version's schema); not modified.
        fragment: The next fragment, its containers already named as
            :func:`~.primary.assign_primary_container` names them.

    Returns:
        The new state.

    Raises:
        ProfileError: a pod template patch that Kubernetes would reject, located in the fragment's file.
    """
    # lazy: a merge read from the cache neither needs nor imports the engine (tests/test_cache.py sees it so)
    from ..smp.patch import strategic_merge_patch

    new = state.replace(fragments=state.fragments + [fragment])
    if fragment.description is not None:
        new.description = fragment.description or None
    if fragment.primary_container_name is not None:
        new.primary_container_name = fragment.primary_container_name
    if fragment.elastic:
        new.elastic_settings = merge_elastic(state.elastic_settings, fragment.elastic)
    if fragment.pod_template:
        patch = fragment.pod_template
        if "spec" in patch:  # a list without a merge key marked `$patch: replace`: merged without the mark
            spec = without_replace_marks(patch["spec"], schema_type("PodSpec", state.kubernetes_version))
            patch = patch if spec is patch["spec"] else {**patch, "spec": spec}
        try:
            new.pod_template_spec = strategic_merge_patch(state.pod_template_spec, patch,
                                                          kubernetes_version=state.kubernetes_version)
        except MergeError as e:
            file_path = _file_path_of(e.parts)
            raise ProfileError([Finding(fragment.location(file_path), format_path(file_path) or "pod_template",
                                        e.reason, layer=fragment.layer)]) from None
    return new


def fill_plugin_defaults(elastic: dict[str, Any], target: Target = FLYTEKIT) -> dict[str, Any]:
    """``elastic`` with every key a layer deleted (``null``) set back to the ``target`` plugin's default, in place.

    ``rdzv_configs`` comes back as ``{}``: deleting it means "no rendezvous settings", not the defaults.
    """
    for key, default in target.defaults.items():
        if key not in elastic:
            elastic[key] = {} if key == "rdzv_configs" else default
    return elastic


def _file_path_of(parts: tuple) -> PathT:
    """A PodTemplateSpec path (``metadata.labels.team``) -> the profile file's (``pod_template.labels.team``),
    cut at the first list item: items are named by merge key, and the list is the best position in the file."""
    keys: list[Any] = []
    for part in parts:
        if not isinstance(part, str):
            break
        keys.append(part)
    if keys[:1] == ["metadata"]:
        keys = keys[1:]
    return ("pod_template", *keys)
