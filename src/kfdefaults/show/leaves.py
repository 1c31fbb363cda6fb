"""A profile as a flat mapping of leaves: ``elastic.nnodes``, ``pod_template.spec.containers[name=primary].image``.

``render --explain`` and ``diff`` both work on leaves, so that both name a value the same way, and the way
``--set`` names it:

* A mapping key is a path segment; a key holding ``.``, brackets, quotes, ``=``, whitespace or a control
  character is written in double quotes (``limits."nvidia.com/gpu"``), as ``--set`` reads it
  (:func:`kfdefaults.paths.format_key`).
* An item of a list that Kubernetes merges by a patch merge key is named by that key
  (``containers[name=primary]``, ``volumeMounts[mountPath=/dev/shm]``); the key and the strategy come from
  the schema's ``x-kubernetes-patch-merge-key`` / ``x-kubernetes-patch-strategy`` through
  :class:`kfdefaults.smp.schema.SchemaType`, never from field names written here. An item of any other
  list (an atomic list such as ``tolerations``, ``args``) is named by its index: ``tolerations[0]``.
* A leaf is a scalar, or an empty mapping or list (``emptyDir: {}`` says something).
* ``name`` (the profile asked for) and ``extends`` (consumed by the merge) are not leaves.

Nothing here imports flytekit or the kubernetes client.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Mapping, Sequence

from ..escape import has_unsafe
from ..paths import PathT, Select, format_path
from ..read.scalars import resolve_plain_scalar
from ..smp.schema import SchemaLookupError, schema_type
from .output import escaped_strings, needs_quotes_for_yaml11, yaml_quoted

_NOT_LEAVES = ("name", "extends")


def format_value(value: Any) -> str:
    """A leaf value as one line of text, the way a YAML 1.2 flow scalar (and ``--set``) writes it.

    Strings stay bare unless a reader would take them for something else or they hold whitespace, YAML
    indicators or a character a terminal would act on (:func:`kfdefaults.escape.is_unsafe`); then they are
    double-quoted, those characters escaped (``"2:4"``, ``"no"``, ``"8 x A100"``, ``"a\\u001bb"``:
    :func:`kfdefaults.show.output.yaml_quoted`). Numbers, booleans and ``null`` are written as YAML writes them;
    empty containers as ``{}`` and ``[]``, others as JSON (a flow collection), their strings escaped alike. The
    result is always one line of visible characters.
    """
    if isinstance(value, str):
        return yaml_quoted(value) if _needs_quotes(value) else value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    return escaped_strings(json.dumps(value, ensure_ascii=False, sort_keys=True), None, astral="yaml")


def _needs_quotes(text: str) -> bool:
    if not text or text != text.strip() or any(c.isspace() for c in text) or has_unsafe(text):
        return True
    if text[0] in "-?:,[]{}#&*!|>'\"%@`" or ": " in text or " #" in text:
        return True
    return needs_quotes_for_yaml11(text) or resolve_plain_scalar(text) != text


def same(a: Any, b: Any) -> bool:
    """Whether two leaf values are the same data: typed, as Kubernetes compares them (``8`` is not ``"8"``,
    ``1`` is not ``true``, ``1`` is not ``1.0``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def profile_leaves(profile: Mapping[str, Any], *, kubernetes_version: str | None = None, patch: bool = False) -> dict[PathT, Any]:
    """Flatten a profile (the shape of a profile file, or of ``Resolved.to_dict()``) into leaves.

    Args:
        profile: ``{"description": ..., "elastic": {...}, "pod_template": {"primary_container_name", "labels",
            "annotations", "spec"}}``; ``name`` and ``extends`` are skipped.
        kubernetes_version: Kubernetes minor version of the schema that tells which lists merge by which key.
        patch: Read ``profile`` as one layer's contribution rather than a merged result: ``null`` values and
            ``$``-directives are skipped, an item under ``$patch: delete`` is skipped, the merge key of a list
            item is not a leaf of its own (the item already names it) and an empty merge-keyed list writes
            nothing. The result is the set of leaves the layer writes.

    Returns:
        Leaf path -> value, in the order of ``profile``.
    """
    out: dict[PathT, Any] = {}
    for key, value in profile.items():
        if key in _NOT_LEAVES:
            continue
        if key == "pod_template" and isinstance(value, Mapping):
            for sub, sub_value in value.items():
                schema = _pod_spec_schema(kubernetes_version) if sub == "spec" else None
                _walk(sub_value, ("pod_template", sub), schema, out, patch, None)
        else:
            _walk(value, (key,), None, out, patch, None)
    return out


def _pod_spec_schema(kubernetes_version: str | None) -> Any:
    return schema_type("PodSpec", kubernetes_version)


def _walk(value: Any, path: PathT, schema: Any, out: dict[PathT, Any], patch: bool, skip_key: str | None) -> None:
    if isinstance(value, Mapping):
        if patch and value.get("$patch") == "delete":
            return
        keys = [k for k in value if not (patch and (str(k).startswith("$") or value[k] is None))]
        if patch and skip_key is not None:
            keys = [k for k in keys if k != skip_key]
            if not keys:
                return  # an item that only names itself writes nothing of its own
        if not keys:
            out[path] = {}
            return
        for key in keys:
            child, meta = schema_field(schema, key)
            sub = value[key]
            if isinstance(sub, list):
                elem = child.items() if child is not None and child.kind == "slice" else None
                _walk_list(sub, path + (key,), elem, meta, out, patch)
            else:
                _walk(sub, path + (key,), child, out, patch, None)
    elif isinstance(value, list):
        _walk_list(value, path, None, None, out, patch)
    elif not (patch and value is None):
        out[path] = value


def schema_field(schema: Any, key: str) -> tuple[Any, Any]:
    """The schema type and patch metadata of ``key`` in a struct or map; ``(None, None)`` when unknown."""
    if schema is None:
        return None, None
    if schema.kind == "map":
        return schema.map_values(), None
    if schema.kind != "struct":
        return None, None
    try:
        return schema.lookup_struct(key)
    except SchemaLookupError:
        return None, None


def _directive_only(item: Any) -> bool:
    return isinstance(item, Mapping) and bool(item) and all(str(k).startswith("$") for k in item)


def merge_key_of(items: Sequence[Any], meta: Any) -> str | None:
    """The merge key that names the items of a list, or ``None`` when they are named by index.

    A list is named by merge key when its field has patch strategy ``merge`` and a merge key, and every item
    is a mapping holding a distinct scalar value for it.
    """
    if meta is None or not meta.merge_key or "merge" not in meta.strategies:
        return None
    key = meta.merge_key
    seen = set()
    for item in items:
        value = item.get(key) if isinstance(item, Mapping) else None
        if value is None or isinstance(value, (dict, list)):
            return None
        marker = (type(value).__name__, json.dumps(value))
        if marker in seen:
            return None
        seen.add(marker)
    return key


def _walk_list(items: list, path: PathT, elem: Any, meta: Any, out: dict[PathT, Any], patch: bool) -> None:
    merges = meta is not None and "merge" in meta.strategies
    real = [item for item in items if not (patch and _directive_only(item))]
    if not real:
        if not (patch and merges):  # an empty list replaces; an empty merged list adds nothing
            out[path] = []
        return
    key = merge_key_of(real, meta)
    for index, item in enumerate(items):
        if patch and _directive_only(item):
            continue  # a list directive such as {"$patch": "replace"}
        if key is not None:
            _walk(item, path + (Select(key, item[key]),), elem, out, patch, key)
        elif isinstance(item, list):
            _walk_list(item, path + (index,), None, None, out, patch)
        else:
            _walk(item, path + (index,), elem, out, patch, None)


def has_index(path: PathT) -> bool:
    """Whether a leaf path goes through an item of a list named by index (an atomic list)."""
    return any(isinstance(p, int) and not isinstance(p, bool) for p in path)


def tree_order(paths: Iterable[PathT], reference: Iterable[PathT]) -> list[PathT]:
    """``paths`` sorted in the tree order of ``reference`` (normally the leaves of the rendered profile).

    A segment that ``reference`` holds keeps its position among its siblings there; others follow their
    known siblings, sorted by their text. Equal paths keep their order (the sort is stable).
    """
    children: dict[PathT, dict[Any, int]] = {}
    for path in reference:
        for depth in range(len(path)):
            siblings = children.setdefault(path[:depth], {})
            siblings.setdefault(path[depth], len(siblings))

    def sort_key(path: PathT) -> tuple:
        key = []
        for depth, part in enumerate(path):
            rank = children.get(path[:depth], {}).get(part)
            key.append((0, rank, "") if rank is not None else (1, 0, format_path((part,))))
        return tuple(key)

    return sorted(paths, key=sort_key)
