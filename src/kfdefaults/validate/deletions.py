"""``delete = [...]``: deleting what lower layers set, in TOML (which has no null) and in YAML alike.

A profile's ``delete`` lists paths, written as ``--set`` and ``--explain`` write them (:mod:`kfdefaults.paths`)::

    delete = ["elastic.run_policy", "pod_template.spec.tolerations",
              "pod_template.spec.containers[name=log-shipper]", 'pod_template.labels."example.com/owner"']

Each path deletes there exactly what ``null`` would (a key, a whole section, a list), or for an item of a list
merged by key (``containers[name=log-shipper]``) what a ``$patch: delete`` item would. The paths are turned into
those ``null`` values and ``$patch: delete`` items before the body is validated, so the merge, the checks and
``--explain`` treat them as they treat the YAML spellings; each one is located at its entry of ``delete``.
"""

from __future__ import annotations

from typing import Any

from ..errors import Finding, PathError, SchemaLookupError, shown
from ..paths import format_path, parse_path
from ..read import Document
from ..smp.schema import schema_type

DELETE_KEY = "delete"

_SECTIONS = {
    ("description",): None,
    ("elastic",): {"nnodes", "nproc_per_node", "start_method", "monitor_interval", "max_restarts", "rdzv_configs",
                   "run_policy"},
    ("pod_template",): {"primary_container_name", "labels", "annotations", "spec"},
}
"""Where a path may start: the profile's own sections and their keys (a PodSpec path is checked by the schema)."""


def expand_deletions(doc: Document, data: dict[str, Any], layer: str | None,
                     kubernetes_version: str | None = None) -> tuple[dict[str, Any], list[Finding]]:
    """The body with its ``delete`` paths written as ``null`` values and ``$patch: delete`` items.

    The document's position tables gain the new values' positions (each that of its ``delete`` entry), so that
    every message and ``--explain`` point at the entry.

    Args:
        doc: The parsed file (positions are added to it).
        data: The body as written; not modified.
        layer: The file's layer, for messages.
        kubernetes_version: Kubernetes minor version of the schema that says which lists merge by which key.

    Returns:
        ``(body, errors)``: a new body (``data`` itself when it has no ``delete``), and every entry that could not
        be applied: not a path, a list item named by position, a path that the file also sets, a field that
        does not exist.
    """
    entries = data.get(DELETE_KEY)
    if entries is None:
        return data, []
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        return data, [Finding(doc.location((DELETE_KEY,)), DELETE_KEY, 'must be a list of paths, like '
                              '["elastic.run_policy", "pod_template.spec.tolerations"]', layer=layer)]
    body = _copy(data)
    findings = []
    for index, text in enumerate(entries):
        where = doc.location((DELETE_KEY, index))
        position = (where.line, where.column)
        try:
            steps = parse_path(text, item=True)
            _check_start(steps)
            _put(body, steps, doc, position, kubernetes_version)
        except PathError as e:
            findings.append(Finding(where, f"{DELETE_KEY}[{index}]", f"cannot delete `{text}`: {e}", layer=layer))
    return body, findings


def _check_start(steps: list[Any]) -> None:
    head = tuple(steps[:1])
    if head not in _SECTIONS:
        raise PathError("a path starts with description, elastic or pod_template")
    keys = _SECTIONS[head]
    if len(steps) > 1 and keys is not None and steps[1] not in keys:
        raise PathError(f"{format_path(steps[:2])} is not a field (fields of {head[0]}: {', '.join(sorted(keys))})")
    if head == ("description",) and len(steps) > 1:
        raise PathError("description has no fields")


def _put(body: dict[str, Any], steps: list[Any], doc: Document, position: tuple[int, int],
         kubernetes_version: str | None) -> None:
    """Write the deletion of ``steps`` into ``body``: ``null`` at a key, a ``$patch: delete`` item for a selector."""
    node: Any = body
    file_path: tuple = ()
    schema = schema_type("PodSpec", kubernetes_version) if steps[:2] == ["pod_template", "spec"] else None
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        if isinstance(step, tuple):  # an item of a list merged by key
            if not isinstance(node, list):
                raise PathError(f"{format_path(steps[:i])} is not a list")
            items = node
            key, value = step
            item = next((x for x in items if isinstance(x, dict) and str(x.get(key)) == str(value)), None)
            if item is None:
                item = {key: _typed(schema, key, value)}
                items.append(item)
                doc.values.setdefault(file_path + (len(items) - 1,), position)
            at = file_path + (items.index(item),)
            if last:
                if any(k not in (key, "$patch") for k in item):
                    raise PathError(f"this file also sets fields of {format_path(steps)}")
                item["$patch"] = "delete"
                doc.keys.setdefault(at + ("$patch",), position)
                doc.values.setdefault(at + ("$patch",), position)
            node, file_path = item, at
            continue
        if not isinstance(node, dict):
            raise PathError(f"{format_path(steps[:i])} is not a mapping")
        following = steps[i + 1] if not last else None
        if schema is not None and i >= 2:
            schema = _field(schema, step, following, steps)
        if last:
            if step in node and node[step] is not None:
                raise PathError(f"this file also sets `{format_path(steps)}` (line {doc.location(file_path + (step,)).line})")
            node[step] = None
            doc.keys.setdefault(file_path + (step,), position)
            doc.values.setdefault(file_path + (step,), position)
            return
        child = node.get(step)
        if child is None:
            child = [] if isinstance(following, tuple) else {}
            node[step] = child
            doc.keys.setdefault(file_path + (step,), position)
            doc.values.setdefault(file_path + (step,), position)
        node, file_path = child, file_path + (step,)


def _field(schema: Any, step: str, following: Any, steps: list[Any]) -> Any:
    """The schema type below ``step``; a selector must follow a list merged by that very key."""
    try:
        if isinstance(following, tuple):
            return selected_items(schema, step, following, "delete")
        if schema.kind == "map":
            return schema.map_values()
        return schema.lookup_struct(step)[0]
    except SchemaLookupError:
        raise PathError(f"`{step}` is not a field of {schema.name or 'this object'} ({format_path(steps)})") from None


def selected_items(schema: Any, step: str, selector: tuple[str, Any], verb: str) -> Any:
    """The schema type of the items of list field ``step`` of ``schema``, one of which ``selector`` (``(key,
    value)``) names: a :class:`~kfdefaults.errors.PathError` unless the list is merged by that very key (the
    message says to ``verb`` the whole list of one that a layer replaces whole)."""
    elem, meta = schema.lookup_slice(step)
    if not meta.merge_key or "merge" not in meta.strategies:
        raise PathError(f"`{step}` has no merge key: a layer replaces it whole, so {verb} the whole list")
    if selector[0] != meta.merge_key:
        raise PathError(f"`{step}` items are merged by `{meta.merge_key}`: name one as [{meta.merge_key}=...]")
    return elem


def _typed(schema: Any, key: str, value: Any) -> Any:
    """A selector's value as the merge key's type (``containerPort`` is an integer)."""
    if schema is not None and "integer" in schema.property_types(key):
        try:
            return int(value)
        except (TypeError, ValueError):
            raise PathError(f"`{key}` is an integer, not {shown(repr(value))}") from None
    return value


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
