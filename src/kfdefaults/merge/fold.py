"""Fragments, lowest layer first -> one :class:`~.result.Resolved`: the ``elastic`` sections key by key, the pod
templates by strategic merge patch, one :func:`~.step.merge_step` per fragment.

A merge is a function of its fragments alone (and of kfdefaults' code and the schema version), so it is kept in
the cache (:mod:`kfdefaults.cache`): a profile whose files are unchanged is merged once.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from .. import cache
from ..errors import Finding, Location, ProfileError, sorted_findings
from ..paths import format_path
from ..smp.schema import normalize_version
from ..targets import FLYTEKIT, Target
from ..validate.fragment import Fragment
from .auto import resolve_auto
from .locks import LockBook
from .near_names import near_miss_containers
from .primary import assign_primary_container
from .provenance import Provenance
from .result import Resolved, SdkObjects
from .step import fill_plugin_defaults, merge_step


def merge_fragments(name: str, fragments: list[Fragment], *, kubernetes_version: str | None = None,
                    remember: bool = True, sdk: SdkObjects | None = None, target: Target = FLYTEKIT) -> Resolved:
    """Merge fragments, lowest first.

    The ``elastic`` sections merge key by key over the ``target`` plugin's defaults (:func:`.elastic.merge_elastic`);
    pod templates merge with :func:`kfdefaults.strategic_merge_patch` (kind ``PodTemplateSpec``), starting
    from an empty one. One :func:`~.step.merge_step` per fragment from :meth:`Resolved.initial`, then
    :func:`~.step.fill_plugin_defaults`: :mod:`.provenance` replays these same steps to say who set what, so
    keep the merge in them.

    Policy is checked on the way, step by step: a fragment that changes a path a fragment below it locked
    (:mod:`.locks`, on the leaves the provenance sees each step change, recorded as the merge goes when a
    fragment locks anything and kept with the result), or that adds a container whose name is a near miss of the
    primary container's or of one below (:mod:`.near_names`), is an error.

    ``remember=False`` neither reads nor stores the merge in the cache (``validate`` merges a thousand profiles
    once each: storing them would cost more than it saves).

    Raises:
        ProfileError: a pod template patch that Kubernetes would reject, a lock broken, or a container added by a
            near-miss name, located in the fragment's file (a lock's message names the lock's file and line).
    """
    fragments = assign_primary_container(fragments)
    entry_key = merge_key(fragments, kubernetes_version, target) if remember else None
    if entry_key is not None:
        hit = cache.load(entry_key, lambda value: _is_merge(value, target))
        if hit is not None:
            return Resolved(name, hit["description"], hit["elastic"], hit["pod"], hit["primary"], fragments, sdk,
                            target, kubernetes_version)
    state = Resolved.initial(name, sdk, target, kubernetes_version)
    locks = LockBook(fragments, kubernetes_version)
    record = Provenance(state) if locks.any else None
    problems: list[Finding] = []
    for fragment, view in zip(fragments, locks.views):
        before, state = state, merge_step(state, fragment)
        problems += near_miss_containers(before, fragment, (view, locks.final))
        if record is not None:
            problems += locks.step(before, state, fragment, record.apply(state, fragment))
    if problems:
        raise ProfileError(sorted_findings(problems))
    _reject_leftover_directives(state.pod_template_spec, fragments)
    if record is not None:
        record.finish()
    merged = state.replace(elastic_settings=fill_plugin_defaults(state.elastic_settings, target), fragments=fragments)
    merged, _ = resolve_auto(merged)  # nproc_per_node, OMP_NUM_THREADS and /dev/shm sizeLimit written "auto"
    merged.provenance_memo = record
    if entry_key is not None:
        cache.store(entry_key, {"description": merged.description, "elastic": merged.elastic_settings,
                                "pod": merged.pod_template_spec, "primary": merged.primary_container_name})
    return merged


def _is_merge(value: Any, target: Target) -> bool:
    """Whether a cache entry has the shape :func:`merge_fragments` stores (else it is a miss): the merged
    ``elastic`` settings (every default of ``target`` filled in), a PodTemplateSpec of ``metadata`` and ``spec`` mappings, the primary container's
    name, the description."""
    if not (isinstance(value, dict) and set(value) == {"description", "elastic", "pod", "primary"}):
        return False
    elastic, pod = value["elastic"], value["pod"]
    return (isinstance(value["description"], (str, type(None))) and isinstance(value["primary"], str)
            and isinstance(elastic, dict) and set(elastic) >= set(target.defaults)
            and isinstance(elastic["rdzv_configs"], dict) and isinstance(elastic.get("run_policy") or {}, dict)
            and isinstance(pod, dict) and set(pod) <= {"metadata", "spec"}
            and all(isinstance(part, dict) for part in pod.values()))


def merge_key(fragments: list[Fragment], kubernetes_version: str | None, target: Target = FLYTEKIT) -> str | None:
    """The cache key of a merge: everything the merge reads from the fragments, in order, and the target (whose
    plugin defaults lie below them).

    The merge is a function of these alone (and of kfdefaults' code and the schema version, which every cache
    key holds), so a profile whose files are unchanged is merged once: later runs skip the strategic merge
    patch, deepmerge and their imports. ``None`` when the data is not JSON (only the task layer can hold such
    values, and then the merge reports them).
    """
    import json

    try:
        text = json.dumps([[f.layer, f.elastic, f.pod_template, f.primary_container_name, f.description,
                            [lock.text for lock in f.locks]] for f in fragments],
                          allow_nan=False, separators=(",", ":"))
        version = normalize_version(kubernetes_version)
    except (TypeError, ValueError):
        return None
    return cache.key(text.encode(), "merge", version, target.name, _deepmerge_stamp())


@functools.lru_cache(maxsize=1)
def _deepmerge_stamp() -> str:
    """The installed deepmerge's version, which merges the ``elastic`` sections: another deepmerge is another merge
    key. Read from the package's ``_version.py`` (written by its build), else from its ``*.dist-info`` folder's
    name, without importing it or :mod:`importlib.metadata` (a tenth of a second)."""
    import importlib.util
    import re

    spec = importlib.util.find_spec("deepmerge")
    folder = list(spec.submodule_search_locations or [])[0] if spec and spec.submodule_search_locations else None
    if folder is None:
        return "deepmerge ?"
    try:
        with open(os.path.join(folder, "_version.py"), encoding="utf-8") as f:
            found = re.search(r"""__version__\s*=\s*(?:version\s*=\s*)?["']([^"']+)["']""", f.read())
        if found:
            return f"deepmerge {found.group(1)}"
    except OSError:
        pass
    names = sorted(n for n in os.listdir(os.path.dirname(folder)) if re.fullmatch(r"deepmerge-.+\.dist-info", n))
    return f"deepmerge {names}"


def _directive_paths(value: Any, field: tuple = (), at: tuple = ()) -> list[tuple[tuple, tuple, str]]:
    """``(field path without list positions, concrete path, key)`` of every ``$``-key in ``value``."""
    found: list[tuple[tuple, tuple, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key.startswith("$"):
                found.append((field, at + (key,), key))
            else:
                found.extend(_directive_paths(item, field + (key,), at + (key,)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(_directive_paths(item, field, at + (i,)))
    return found


def _reject_leftover_directives(pod: dict[str, Any], fragments: list[Fragment]) -> None:
    """A directive left in the merged pod template is an error.

    Strategic merge patch applies ``$patch``, ``$retainKeys`` and the others only where they meet something to
    act on; kubectl copies the rest into the object as data (a ``$patch: delete`` item in a list without a merge
    key, such as ``tolerations``, is added, not deleted). The cluster would then get what the author did not
    mean, silently: the Kubernetes client drops the ``$`` key and keeps the rest of the item.

    Raises:
        ProfileError: located at the highest fragment that writes such a directive at that field.
    """
    leftovers = _directive_paths(pod)
    if not leftovers:
        return
    findings = []
    for field, _, key in leftovers:
        for fragment in reversed(fragments):
            matches = [at for f, at, k in _directive_paths(fragment.pod_template) if f == field and k == key]
            if matches:
                at = matches[0]
                file_path = ("pod_template",) + (at[1:] if at[:1] == ("metadata",) else at)
                findings.append(Finding(
                    fragment.location(file_path, key=True), format_path(file_path),
                    f"`{key}` has nothing to act on here and would reach the cluster as data: strategic merge patch "
                    f"applies it only to an item of a list merged by key, or to a field that exists below; "
                    f"`{format_path(field)}` is replaced whole or is new at this point (kubectl leaves it in too)",
                    layer=fragment.layer))
                break
    unique = {str(f): f for f in findings}
    raise ProfileError(list(unique.values()) or [Finding(Location("kfdefaults"), "", "a directive is left in the merged pod template")])
