"""``locked: [...]``: the paths a profile holds against every layer merged after it, checked one by one.

A path is written as ``--set`` and ``--explain`` write it (:mod:`kfdefaults.paths`)::

    locked:
      - pod_template.spec.tolerations
      - pod_template.spec.nodeSelector
      - elastic.rdzv_configs.join_timeout
      - pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"

What a lock means in the merge is :mod:`kfdefaults.merge.locks`; here each entry must name something a profile
can set: a field of ``elastic`` or ``pod_template``, a PodSpec field by the Kubernetes schema, an item of a list
merged by key by that key (``containers[name=primary]``). Each problem is located at its entry of ``locked``.
"""

from __future__ import annotations

from typing import Any

from ..errors import Finding, PathError, SchemaLookupError
from ..paths import format_path, parse_path
from ..read import Document
from ..smp.schema import SchemaType, schema_type
from .deletions import selected_items
from .model import ElasticSection, PodTemplateSection, RunPolicySection
from .rdzv import RDZV_SETTINGS
from .suggest import closest

LOCKED_KEY = "locked"

_ELASTIC_FIELDS = tuple(ElasticSection.model_fields)
_RUN_POLICY_FIELDS = tuple(RunPolicySection.model_fields)
_POD_TEMPLATE_FIELDS = tuple(PodTemplateSection.model_fields)


def check_locked(doc: Document, data: dict[str, Any], layer: str | None,
                 kubernetes_version: str | None = None) -> list[Finding]:
    """Check a profile's ``locked`` list: each entry a path a profile can set, none listed twice.

    Args:
        doc: The parsed file, for positions.
        data: The profile body.
        layer: The file's layer, named in the findings.
        kubernetes_version: Kubernetes minor version of the schema that says which PodSpec fields exist and which
            lists are merged by which key.

    Returns:
        One error per entry that cannot be a lock, at that entry.
    """
    entries = data.get(LOCKED_KEY)
    if entries is None:
        return []
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        return [Finding(doc.location((LOCKED_KEY,)), LOCKED_KEY, 'must be a list of paths, like '
                        '["pod_template.spec.tolerations", "elastic.rdzv_configs.join_timeout"]', layer=layer)]
    findings: list[Finding] = []
    seen: dict[str, int] = {}
    for index, text in enumerate(entries):
        where = doc.location((LOCKED_KEY, index))
        try:
            steps = parse_path(text, item=True)
            _check(steps, kubernetes_version)
        except PathError as e:
            reason = str(e)
            if "by position" in reason:
                reason = "a list without a merge key (tolerations, args, ...) is replaced whole by a layer: lock the list"
            findings.append(Finding(where, f"{LOCKED_KEY}[{index}]", f"cannot lock `{text}`: {reason}", layer=layer))
            continue
        written = format_path(steps)
        if written in seen:
            first = doc.location((LOCKED_KEY, seen[written]))
            findings.append(Finding(where, f"{LOCKED_KEY}[{index}]", f"`{text}` is locked twice (first at line "
                                    f"{first.line})", layer=layer))
        seen.setdefault(written, index)
    return findings


def _check(steps: list[Any], kubernetes_version: str | None) -> None:
    """Raise :class:`_Refused` unless ``steps`` names something a profile file sets."""
    head = steps[0]
    if head not in ("elastic", "pod_template"):
        raise PathError("a locked path starts with elastic or pod_template")
    if len(steps) == 1:
        raise PathError(f"lock the fields of {head} one by one (like {head}.{'nnodes' if head == 'elastic' else 'spec'})")
    fields = _ELASTIC_FIELDS if head == "elastic" else _POD_TEMPLATE_FIELDS
    _known(steps[1], fields, head)
    rest = steps[2:]
    if head == "pod_template" and steps[1] == "spec":
        _check_spec(rest, steps, kubernetes_version)
        return
    if any(isinstance(s, tuple) for s in rest):
        raise PathError("list selectors apply to pod_template.spec lists only")
    nested = {"rdzv_configs": tuple(RDZV_SETTINGS), "run_policy": _RUN_POLICY_FIELDS, "labels": None, "annotations": None}
    if rest and steps[1] not in nested:
        raise PathError(f"{format_path(steps[:2])} is a single value: lock it whole")
    if len(rest) > 1:
        raise PathError(f"{format_path(steps[:3])} is a single value: lock it whole")
    if rest and nested[steps[1]] is not None:
        _known(rest[0], nested[steps[1]], format_path(steps[:2]))


def _known(key: Any, fields: tuple[str, ...], owner: str) -> None:
    if key not in fields:
        hint = closest(str(key), fields)
        raise PathError(f"`{key}` is not a field of {owner}" + (f"; did you mean `{hint}`?" if hint else
                                                                 f" (fields: {', '.join(fields)})"))


def _check_spec(rest: list[Any], steps: list[Any], kubernetes_version: str | None) -> None:
    """A PodSpec path: each key a field of the Kubernetes schema (exact name), each selector on a list merged by
    that very key."""
    schema: SchemaType | None = schema_type("PodSpec", kubernetes_version)
    i = 0
    while i < len(rest):
        step = rest[i]
        following = rest[i + 1] if i + 1 < len(rest) else None
        if isinstance(step, tuple):
            raise PathError(f"a selector must follow a list field, in {format_path(steps)}")
        if schema is None or schema.kind not in ("struct", "map"):
            raise PathError(f"{format_path(steps[:i + 2])} is a single value: lock it whole")
        try:
            if schema.kind == "map":
                if isinstance(following, tuple):
                    raise PathError(f"{format_path(steps[:i + 3])}: a map has no list items")
                schema, i = schema.map_values(), i + 1
                continue
            if step not in schema.field_names():
                hint = closest(step, schema.field_names())
                raise PathError(f"`{step}` is not a field of {schema.name or 'this object'}"
                               + (f"; did you mean `{hint}`?" if hint else ""))
            if isinstance(following, tuple):
                schema, i = selected_items(schema, step, following, "lock"), i + 2
                continue
            schema, i = schema.lookup_struct(step)[0], i + 1
        except SchemaLookupError as e:
            raise PathError(str(e)) from None
