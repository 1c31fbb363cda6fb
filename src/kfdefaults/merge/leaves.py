"""A profile as a flat mapping of leaves: ``elastic.nnodes``, ``pod_template.spec.containers[name=primary].image``,
and :func:`same`, the one equality of their values.

The provenance (:mod:`.provenance`: ``--explain``, locks, the checks' locations), ``diff`` and ``verify`` all work
on leaves, so that all name a value the same way, and the way ``--set`` names it:

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

Nothing here imports flytekit or the kubernetes client. How leaves are printed is :mod:`kfdefaults.show.leaves`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..errors import SchemaLookupError
from ..paths import PathT, Select
from ..smp.schema import schema_type

_NOT_LEAVES = ("name", "extends")


def same(a: Any, b: Any) -> bool:
    """Whether two values are the same data, as JSON and Kubernetes read them: the one comparison of values of
    the provenance, locks, ``diff``, ``verify`` and the checks (docs/merge-semantics.md, "When two values are the
    same").

    * A number is a number: ``1`` and ``1.0`` are the same (JSON has one kind of number, Go's ``encoding/json``
      decodes both into the same ``float64``, and kubectl writes a patch's ``30.0`` out as ``30``). The merge
      engine keeps kubectl's typed comparison of merge keys, where they differ (:mod:`kfdefaults.smp.goruntime`).
    * A boolean is never a number (``true`` is not ``1``), a string never a number (``"8"`` is not ``8``, even
      where the API server would read both as the same quantity), ``null`` only ``null``.
    * Mappings are the same with the same keys and the same values, in any order; lists with the same items in
      the same order.
    * NaN, which is not JSON and which no profile holds (validation refuses it), is the same as NaN: a value is
      always the same as itself.
    """
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return a == b or (a != a and b != b)  # NaN
    return type(a) is type(b) and a == b


def profile_leaves(profile: Mapping[str, Any], *, kubernetes_version: str | None = None, patch: bool = False,
                   meant: set[PathT] | None = None) -> dict[PathT, Any]:
    """Flatten a profile (the shape of a profile file, or of ``Resolved.to_dict()``) into leaves.

    Args:
        profile: ``{"description": ..., "elastic": {...}, "pod_template": {"primary_container_name", "labels",
            "annotations", "spec"}}``; ``name`` and ``extends`` are skipped.
        kubernetes_version: Kubernetes minor version of the schema that tells which lists merge by which key.
        patch: Read ``profile`` as one layer's contribution rather than a merged result: ``null`` values and
            ``$``-directives are skipped, an item under ``$patch: delete`` is skipped, the merge key of a list
            item is not a leaf of its own (the item already names it) and an empty merge-keyed list writes
            nothing. The result is the set of leaves the layer writes. The items of a list without a merge key
            are numbered as they will be in the merged list (a ``$patch: replace`` item, which the merge takes
            out, is not counted).
        meant: With ``patch``, a set that receives the path of every list without a merge key that holds a
            ``$patch: replace`` item: the layer says it replaces the list below on purpose
            (:func:`without_replace_marks`).

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
                _walk(sub_value, ("pod_template", sub), schema, out, patch, None, meant)
        else:
            _walk(value, (key,), None, out, patch, None, meant)
    return out


def _pod_spec_schema(kubernetes_version: str | None) -> Any:
    return schema_type("PodSpec", kubernetes_version)


def _walk(value: Any, path: PathT, schema: Any, out: dict[PathT, Any], patch: bool, skip_key: str | None,
          meant: set[PathT] | None = None) -> None:
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
                _walk_list(sub, path + (key,), elem, meta, out, patch, meant)
            else:
                _walk(sub, path + (key,), child, out, patch, None, meant)
    elif isinstance(value, list):
        _walk_list(value, path, None, None, out, patch, meant)
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


def directive_only(item: Any) -> bool:
    """Whether a list item holds directives only (``{"$patch": "replace"}``): not an item of the merged list."""
    return isinstance(item, Mapping) and bool(item) and all(str(k).startswith("$") for k in item)


REPLACE_MARK = {"$patch": "replace"}
"""The item that says a list without a merge key is replaced on purpose (see :func:`without_replace_marks`)."""


def without_replace_marks(value: Any, schema: Any) -> Any:
    """``value`` (a patch of the type ``schema`` describes: a PodSpec) without the ``$patch: replace`` items of its
    lists that have no merge key; ``value`` itself when it holds none (it is never changed).

    Strategic merge patch replaces such a list whole anyway, and leaves a ``$patch: replace`` item in it as data
    (apimachinery ``mergeSliceHandler`` returns the patch's list as it is, for a field whose strategy is not
    ``merge``; ``kubectl patch`` puts ``{"$patch": "replace"}`` in the object). In a profile the item is the
    author's word that the lower list is dropped on purpose: it silences the warning of a replaced list
    (:mod:`kfdefaults.check.replaced`), and the merge patches without it, so that the result is kubectl's merge of
    the rest of the patch.
    """
    if isinstance(value, Mapping):
        out: dict[str, Any] | None = None
        for key, sub in value.items():
            child, meta = schema_field(schema, key)
            if isinstance(sub, list):
                new = _list_without_marks(sub, child.items() if child is not None and child.kind == "slice" else None,
                                          meta is None or "merge" not in meta.strategies)
            else:
                new = without_replace_marks(sub, child) if isinstance(sub, Mapping) else sub
            if new is not sub:
                out = dict(value) if out is None else out
                out[key] = new
        return value if out is None else out
    return value


def _list_without_marks(items: list, elem: Any, atomic: bool) -> list:
    kept = [item for item in items if not (atomic and isinstance(item, Mapping) and dict(item) == REPLACE_MARK)]
    inner = [without_replace_marks(item, elem) for item in kept]
    if len(kept) == len(items) and all(a is b for a, b in zip(inner, kept)):
        return items
    return inner


def merge_key_of(items: Sequence[Any], meta: Any) -> str | None:
    """The merge key that names the items of a list, or ``None`` when they are named by index.

    A list is named by merge key when its field has patch strategy ``merge`` and a merge key, and every item
    is a mapping holding a scalar value for it, no two of them :func:`same`.
    """
    if meta is None or not meta.merge_key or "merge" not in meta.strategies:
        return None
    key = meta.merge_key
    seen = set()
    for item in items:
        value = item.get(key) if isinstance(item, Mapping) else None
        if value is None or isinstance(value, (dict, list)):
            return None
        marker = (isinstance(value, bool), isinstance(value, str), value)  # 1 and 1.0 alike, not true and 1
        if marker in seen:
            return None
        seen.add(marker)
    return key


def _walk_list(items: list, path: PathT, elem: Any, meta: Any, out: dict[PathT, Any], patch: bool,
               meant: set[PathT] | None = None) -> None:
    merges = meta is not None and "merge" in meta.strategies
    real = [item for item in items if not (patch and directive_only(item))]
    if patch and meant is not None and not merges and len(real) < len(items) and REPLACE_MARK in items:
        meant.add(path)
    if not real:
        if not (patch and merges):  # an empty list replaces; an empty merged list adds nothing
            out[path] = []
        return
    key = merge_key_of(real, meta)
    for index, item in enumerate(real):  # numbered as in the merged list: a list directive is not an item
        if key is not None:
            _walk(item, path + (Select(key, item[key]),), elem, out, patch, key, meant)
        elif isinstance(item, list):
            _walk_list(item, path + (index,), None, None, out, patch, meant)
        else:
            _walk(item, path + (index,), elem, out, patch, None, meant)


def has_index(path: PathT) -> bool:
    """Whether a leaf path goes through an item of a list named by index (an atomic list)."""
    return any(isinstance(p, int) and not isinstance(p, bool) for p in path)


def atomic_list(path: PathT) -> PathT | None:
    """The path of the outermost list without a merge key (its items named by index) that ``path`` goes through."""
    for i, part in enumerate(path):
        if isinstance(part, int) and not isinstance(part, bool):
            return tuple(path[:i])
    return None


_KEYED: dict[int, tuple[list, str, int, dict[str, int]]] = {}
"""The long merge-keyed lists last looked into, by ``id`` (the list kept, so that the id stays its own): the list,
its merge key and length, and its items' indexes by their text merge key (:func:`item_index`); at most
:data:`_KEYED_ITEMS` items in all are kept."""

_KEYED_ITEMS = 1 << 17


def item_index(items: list, select: Select) -> int | None:
    """The index of the first item of ``items`` whose ``select.key`` is :func:`same` as ``select.value``. In a long
    list, a text value (a name, a mount path) is looked up in an index of the list, built once: each leaf's origin
    is looked for in its list, and searched item by item, a merged list of thousands of items made
    ``render --explain``, ``diff`` and ``render --as flyte`` take minutes."""
    if type(select.value) is not str or len(items) < 16:
        return next((i for i, item in enumerate(items) if isinstance(item, Mapping) and select.key in item
                     and same(item[select.key], select.value)), None)
    cached = _KEYED.get(id(items))
    if cached is None or cached[0] is not items or cached[1] != select.key or cached[2] != len(items):
        if sum(c[2] for c in _KEYED.values()) + len(items) > _KEYED_ITEMS:
            _KEYED.clear()
        index: dict[str, int] = {}
        for i, item in enumerate(items):
            if isinstance(item, Mapping) and type(item.get(select.key)) is str:
                index.setdefault(item[select.key], i)
        cached = _KEYED[id(items)] = (items, select.key, len(items), index)
    return cached[3].get(select.value)


def value_at(data: Any, path: PathT) -> Any:
    """The value at a leaf path in profile-shaped data (``Select`` items by merge key), ``None`` when absent."""
    node = data
    for part in path:
        if isinstance(part, Select):
            index = item_index(node, part) if isinstance(node, list) else None
            node = node[index] if index is not None else None
        elif isinstance(part, int) and not isinstance(part, bool):
            node = node[part] if isinstance(node, list) and part < len(node) else None
        else:
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is None:
            return None
    return node
