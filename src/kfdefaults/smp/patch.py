"""Strategic merge patch, computed exactly as Kubernetes computes it.

This is a port of apimachinery's ``pkg/util/strategicpatch`` as kubectl v1.32 runs it for
``kubectl patch --local --type strategic``: ``StrategicMergePatch`` with ``MergeParallelList`` and
``IgnoreUnmatchedNulls`` on. Each function below is named after the Go function it stands for, so the two
can be read side by side. The patch metadata (which lists merge, by which key) comes from the Kubernetes
schema (:mod:`kfdefaults.smp.schema`), never from field names written here; the Go runtime behaviour the
algorithm depends on is reproduced in :mod:`kfdefaults.smp.goruntime`.

Being identical to kubectl means keeping what is surprising about it:

* Go values are typed: ``80`` and ``"80"`` are different merge keys, ``1`` and ``True`` differ, and
  comparing two maps (say, two merge keys that are objects) crashes kubectl; here it raises
  :class:`~kfdefaults.MergeError`.
* Numbers are read as kubectl reads them: the object to patch makes a round trip through JSON first, so
  its integral numbers are int64 (``2.0`` is ``2``); the patch's ``2.0`` stays a float64, a different merge
  key from ``2``. The result prints integral floats as ints, as kubectl does.
* Go slices share their backing arrays. apimachinery deletes list items by shifting them inside the array
  and appends into spare capacity, and later reads the old slice header to order the result. The
  :class:`~kfdefaults.smp.goruntime.Slice` type reproduces Go's slices, including the capacity that Go's JSON decoder and
  ``append`` give them, so that the result is the same item for item.
* Go iterates over maps in random order. The only place where that changes kubectl's result is a patch
  that sets a primitive list and also lists ``$deleteFromPrimitiveList/`` values for it that overlap (or
  is ``null``); kfdefaults always applies the deletion list last, which is one of kubectl's outcomes.
* A list item that a patch adds to an existing list keeps whatever ``null`` values and nested directives
  it had: kubectl strips them only from values it copies into a map key that did not exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import BadValue, GoPanic, MergeError, SchemaLookupError
from ..paths import ANY_ITEM, format_path
from .goruntime import (
    ABSENT,
    Positions,
    Slice,
    Swapper,
    comparable,
    go_eq,
    go_key,
    go_type,
    go_value,
    shown,
    stable_sort,
    to_plain,
)
from .schema import PatchMeta, SchemaType, normalize_version, schema_type

_DIRECTIVE = "$patch"
_DELETE = "delete"
_REPLACE = "replace"
_MERGE = "merge"
_RETAIN_KEYS = "$retainKeys"
_DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
_SET_ELEMENT_ORDER = "$setElementOrder"

PathT = tuple
"""Where a value is, for messages: keys, and ``(merge key, value)`` for list items (:mod:`kfdefaults.paths`)."""



def rejected(parts: Iterable[Any], reason: str) -> MergeError:
    """The :class:`~kfdefaults.errors.MergeError` of a patch kubectl rejects at ``parts``, its path written out."""
    parts = tuple(parts)
    return MergeError(parts, reason, format_path(parts))

def _from_plain(value: Any, *, floats_stay: bool = False) -> Any:
    """Plain Python data -> Go values, as kubectl reads the same document.

    kubectl reads the object to patch into an unstructured object and writes it out again before merging,
    so an integral float there comes back an int64 (``80.0`` -> ``80``); the patch is read once, so its
    floats stay float64 (``floats_stay=True``) and ``80.0`` is not the merge key ``80``.

    Raises:
        MergeError: for what is not JSON data (a key that is not a string, a NaN, a number beyond float64),
            with the path of the value (``spec.containers[0].ports``).
    """
    try:
        return go_value(value, floats_stay)
    except BadValue as e:
        raise rejected(tuple(reversed(e.steps)), e.message) from None


def _item(path: PathT, merge_key: str, item: Any) -> PathT:
    """The path of a list item: named by its merge key, or ``[]`` when it has none."""
    if merge_key and isinstance(item, dict) and merge_key in item:
        return path + ((merge_key, to_plain(item[merge_key])),)
    return path + (ANY_ITEM,)


# --- the algorithm ---------------------------------------------------------------------------------


def _extract_key(key: str, prefix: str, path: PathT) -> str:
    """``extractKey``: ``"$setElementOrder/containers"`` -> ``"containers"``."""
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise rejected(path, f"bad directive key {key!r}: expected {prefix}/<field>")
    return rest


def _retain_keys_strategy(strategies: tuple[str, ...], path: PathT) -> str:
    """``extractRetainKeysPatchStrategy``: the strategy other than ``retainKeys``."""
    if len(strategies) == 1:
        return "" if strategies[0] == "retainKeys" else strategies[0]
    if len(strategies) == 2 and "retainKeys" in strategies:
        return strategies[1] if strategies[0] == "retainKeys" else strategies[0]
    raise rejected(path, f"unexpected patch strategy: {list(strategies)}")


def _remove_directives(obj: Any) -> tuple[Any, bool]:
    """``removeDirectives``: drop maps holding ``$patch`` (returns keep=False for such a map itself)."""
    if isinstance(obj, dict):
        if _DIRECTIVE in obj:
            return None, False
        for k in list(obj):
            v, keep = _remove_directives(obj[k])
            if keep:
                obj[k] = v
            else:
                del obj[k]
        return obj, True
    if isinstance(obj, Slice):
        res = Slice.make()
        for v in obj:
            nv, keep = _remove_directives(v)
            if keep:
                res = res.append(nv)
        return res, True
    return obj, True


def _discard_null_values(obj: Any) -> None:
    """``discardNullValuesFromPatch``: drop null map values at every depth (list items stay)."""
    if isinstance(obj, dict):
        for k in list(obj):
            if obj[k] is None:
                del obj[k]
            else:
                _discard_null_values(obj[k])
    elif isinstance(obj, Slice):
        for v in obj:
            _discard_null_values(v)


def _slice_element_type(path: PathT, *slices: Slice | None) -> str:
    """``sliceElementType``: the one Go type of every item of the given slices."""
    prev: str | None = None
    seen = False
    for s in slices:
        for v in s or ():
            cur = go_type(v)
            if not seen:
                if cur is None:
                    raise GoPanic("a list item is null")
                prev, seen = cur, True
                if cur == "slice":
                    raise rejected(path, "lists of lists are not supported")
            elif cur != prev:
                raise rejected(path, "list items are of different types")
    if not seen:
        raise rejected(path, "no elements in any of the given lists")
    assert prev is not None
    return prev


def _find_map_in_slice(items: Slice | None, key: str, value: Any, path: PathT) -> tuple[dict | None, int]:
    """``findMapInSliceBasedOnKeyValue``: the first map whose ``key`` equals ``value``, and its index."""
    for i, v in enumerate(items or ()):
        if not isinstance(v, dict):
            raise rejected(path, f"list item {i} is not an object")
        if key in v and go_eq(v[key], value):
            return v, i
    return None, -1


def _extract_to_delete_items(items: Slice, path: PathT) -> tuple[Slice, Slice]:
    """``extractToDeleteItems``: (items to keep, items marked ``$patch: delete``)."""
    keep, delete = Slice.make(), Slice.make()
    for v in items:
        if not isinstance(v, dict):
            raise rejected(path, "expected a list of objects")
        if _DIRECTIVE in v and go_eq(v[_DIRECTIVE], _DELETE):
            delete = delete.append(v)
        else:
            keep = keep.append(v)
    return keep, delete


def _validate_merge_key_in_lists(merge_key: str, path: PathT, *lists: Slice | None) -> None:
    for items in lists:
        for v in items or ():
            if not isinstance(v, dict):
                raise rejected(path, "expected a list of objects")
            if merge_key not in v:
                raise rejected(path, f"list item has no merge key {merge_key!r}")


def _index(items: Slice | None, value: Any, merge_key: str, kind: str) -> int:
    """``index``: position of ``value`` in ``items``, by merge key for maps, else by value; -1 if absent."""
    if kind == "map":

        def get(item: Any) -> Any:
            return item.get(merge_key) if isinstance(item, dict) else None

    else:

        def get(item: Any) -> Any:
            return item

    target = get(value)
    for i, v in enumerate(items or ()):
        if go_eq(target, get(v)):
            return i
    return -1


def _key_values(items: Slice | None, merge_key: str, kind: str) -> list[Any]:
    """What ``index`` compares for each item: the merge key's value for maps (None if missing), else the item."""
    if kind != "map":
        return list(items or ())
    return [item.get(merge_key) if isinstance(item, dict) else None for item in items or ()]


def _normalize_slice_order(to_sort: Slice, order: Slice | None, merge_key: str, kind: str, path: PathT) -> Slice:
    """``normalizeSliceOrder``: sort ``to_sort`` by the positions its items have in ``order``."""
    to_delete = Slice.make()
    if kind == "map":
        _validate_merge_key_in_lists(merge_key, path, to_sort, order)
        to_sort, to_delete = _extract_to_delete_items(to_sort, path)

    positions = Positions(_key_values(order, merge_key, kind))
    sorted_values = _key_values(to_sort, merge_key, kind)
    if positions.usable and all(comparable(v) for v in sorted_values):
        # the same order as the scans below, found in constant time per item
        rank = [positions.index(v) for v in sorted_values]
        items = to_sort.items()
        if min(rank, default=0) >= 0:
            # every item is in ``order``: ``less`` is then a strict weak order, and every stable sort (Go's
            # SliceStable, Python's sorted) gives the one same result
            for i, item in enumerate(item for _, item in sorted(zip(rank, items), key=lambda pair: pair[0])):
                to_sort[i] = item
            return to_sort.append(*to_delete.items())

        def less(i: int, j: int) -> bool:
            ii, ij = rank[i], rank[j]
            return ii < ij if ii >= 0 and ij >= 0 else True

        def swap(i: int, j: int) -> None:
            rank[i], rank[j] = rank[j], rank[i]
            items[i], items[j] = items[j], items[i]

        stable_sort(Swapper(len(items), swap), less)
        for i, item in enumerate(items):
            to_sort[i] = item
    else:

        def less(i: int, j: int) -> bool:
            ii = _index(order, to_sort[i], merge_key, kind)
            if ii >= 0:
                ij = _index(order, to_sort[j], merge_key, kind)
                if ij >= 0:
                    return ii < ij
            return True

        stable_sort(to_sort, less)
    return to_sort.append(*to_delete.items())


def _merge_sorted_slice(left: Slice, right: Slice, server_order: Slice | None, merge_key: str, kind: str) -> Slice:
    """``mergeSortedSlice``: interleave server-only items (left) into patch items (right)."""
    size = len(left) + len(right)
    out = Slice.make(size, size)
    positions = Positions(_key_values(server_order, merge_key, kind))
    fast = positions.usable and all(comparable(v) for v in _key_values(left, merge_key, kind) + _key_values(right, merge_key, kind))

    def position(item: Any) -> int:
        if not fast:
            return _index(server_order, item, merge_key, kind)
        return positions.index(item.get(merge_key) if kind == "map" and isinstance(item, dict) else (None if kind == "map" else item))

    i = j = 0
    for k in range(size):
        if i >= len(left) and j < len(right):
            out[k] = right[j]
            j += 1
        elif j >= len(right) and i < len(left):
            out[k] = left[i]
            i += 1
        else:
            li = position(left[i])
            ri = position(right[j])
            if li >= 0 and ri >= 0 and li < ri:
                out[k] = left[i]
                i += 1
            else:
                out[k] = right[j]
                j += 1
    return out


def _normalize_element_order(
    patch: Slice,
    server_only: Slice,
    patch_order: Slice | None,
    server_order: Slice | None,
    merge_key: str,
    kind: str,
    path: PathT,
) -> Slice:
    """``normalizeElementOrder``: patch items in patch order, server-only items in server order, interleaved."""
    patch = _normalize_slice_order(patch, patch_order, merge_key, kind, path)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, kind, path)
    return _merge_sorted_slice(server_only, patch, server_order, merge_key, kind)


def _partition_primitives(items: Slice, partition_by: Slice | None) -> tuple[Slice, Slice]:
    """``partitionPrimitivesByPresentInList``: (items in ``partition_by``, the others)."""
    inside, outside = Slice.make(0, len(items)), Slice.make(0, len(items))
    present = {go_key(v) for v in partition_by or ()}
    for v in items:
        if go_key(v) in present:
            inside = inside.append(v)
        else:
            outside = outside.append(v)
    return inside, outside


def _partition_maps(items: Slice, partition_by: Slice | None, merge_key: str, path: PathT) -> tuple[Slice, Slice]:
    """``partitionMapsByPresentInList``: (items whose merge key is in ``partition_by``, the others)."""
    inside, outside = Slice.make(0, len(items)), Slice.make(0, len(items))
    all_maps = all(isinstance(item, dict) for item in partition_by or ())
    positions = Positions(item.get(merge_key, ABSENT) for item in partition_by or ()) if all_maps else None
    for v in items:
        if not isinstance(v, dict):
            raise rejected(path, "expected a list of objects")
        if merge_key not in v:
            raise rejected(path, f"list item has no merge key {merge_key!r}")
        if positions is not None and positions.usable and comparable(v[merge_key]):
            found = True if positions.index(v[merge_key]) >= 0 else None
        else:
            found, _ = _find_map_in_slice(partition_by, merge_key, v[merge_key], path)
        if found is None:
            outside = outside.append(v)
        else:
            inside = inside.append(v)
    return inside, outside


def _delete_from_slice(current: Slice, to_delete: Slice) -> Slice:
    """``deleteFromSlice``: ``current`` without the values of a ``$deleteFromPrimitiveList`` list."""
    gone = {go_key(v) for v in to_delete}
    out = Slice.make(0, len(current))
    for v in current:
        if go_key(v) not in gone:
            out = out.append(v)
    return out


def _deduplicate_scalars(s: Slice) -> Slice:
    """``deduplicateScalars``, in place: a duplicate is overwritten by the last item and the slice shrinks."""
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if go_eq(s[i], s[j]):
                s[j] = s[length]
                s = s.sub(0, length)
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def _merge_key_value_equal(left: Any, right: Any, merge_key: str, path: PathT) -> bool:
    if not merge_key:
        return go_eq(left, right)
    if not isinstance(left, dict) or not isinstance(right, dict):
        raise rejected(path, "expected a list of objects")
    if merge_key not in left or merge_key not in right:
        raise rejected(path, f"list item has no merge key {merge_key!r}")
    return go_eq(left[merge_key], right[merge_key])


def _validate_patch_with_set_order_list(patch_list: Slice | None, order: Slice, merge_key: str, path: PathT) -> None:
    """``validatePatchWithSetOrderList``: the patch list must follow the ``$setElementOrder`` list."""
    if not order or not patch_list:
        return
    items = _extract_to_delete_items(patch_list, path)[0] if merge_key else patch_list
    pi = si = 0
    while pi < len(items) and si < len(order):
        if isinstance(items[pi], dict) and _DIRECTIVE in items[pi]:
            pi += 1
            continue
        if _merge_key_value_equal(items[pi], order[si], merge_key, path):
            pi += 1
        si += 1
    if pi < len(items) and si >= len(order):
        raise rejected(path, f"the order of the patch list does not match its {_SET_ELEMENT_ORDER} list")


class _Merger:
    """One application of a patch; holds nothing but the functions of the algorithm."""

    def merge_map(self, original: dict, patch: dict, schema: SchemaType, path: PathT) -> dict:
        """``mergeMap``: merge ``patch`` into ``original`` (both are changed)."""
        if _DIRECTIVE in patch:
            directive = patch[_DIRECTIVE]
            if go_eq(directive, _REPLACE):
                del patch[_DIRECTIVE]
                return patch
            if go_eq(directive, _DELETE):
                return {}
            raise rejected(path, f"unknown patch type {shown(directive)} in a map ($patch takes replace or delete)")
        if original is None:
            original = {}
        self.apply_retain_keys_directive(original, patch, path)
        self.merge_patch_into_original(original, patch, schema, path)

        # Go visits the keys in random order; deletion lists last is the one order kfdefaults keeps.
        keys = sorted(patch, key=lambda k: k.startswith(_DELETE_FROM_PRIMITIVE_LIST))
        for k in keys:
            patch_v = patch[k]
            is_delete_list = False
            if k.startswith(_DELETE_FROM_PRIMITIVE_LIST):
                k = _extract_key(k, _DELETE_FROM_PRIMITIVE_LIST, path + (k,))
                is_delete_list = True
            key_path = path + (k,)
            if patch_v is None:
                original.pop(k, None)
                continue
            if k not in original or go_type(original[k]) != go_type(patch_v):
                if not is_delete_list:
                    _discard_null_values(patch_v)
                    value, keep = _remove_directives(patch_v)
                    if keep:
                        original[k] = value
                    else:
                        original.pop(k, None)
                continue
            kind = go_type(original[k])
            try:
                if kind == "map":
                    sub, meta = schema.lookup_struct(k)
                    strategy = _retain_keys_strategy(meta.strategies, key_path)
                    if strategy != _REPLACE:
                        original[k] = self.merge_map(original[k], patch_v, sub, key_path)
                    else:
                        original[k] = patch_v
                elif kind == "slice":
                    sub, meta = schema.lookup_slice(k)
                    original[k] = self.merge_slice_handler(original[k], patch_v, sub, meta, is_delete_list, key_path)
                else:
                    original[k] = _remove_directives(patch_v)[0]
            except SchemaLookupError as e:
                raise rejected(key_path, str(e)) from None
        return original

    def merge_slice_handler(
        self, original: Slice, patch: Slice, schema: SchemaType, meta: PatchMeta, is_delete_list: bool, path: PathT
    ) -> Slice:
        """``mergeSliceHandler``: merge lists whose strategy is merge (and deletion lists); replace others."""
        strategy = _retain_keys_strategy(meta.strategies, path)
        if strategy == _MERGE or is_delete_list:
            return self.merge_slice(original, patch, schema, meta.merge_key, is_delete_list, path)
        return patch

    def merge_slice(
        self, original: Slice, patch: Slice | None, schema: SchemaType, merge_key: str, is_delete_list: bool, path: PathT
    ) -> Slice:
        """``mergeSlice``: union of primitives, or merge of objects by their merge key; then order them."""
        if not original and not patch:
            return original
        kind = _slice_element_type(path, original, patch)
        if kind != "map":
            if is_delete_list:
                return _delete_from_slice(original, patch or Slice.make())
            both = original.append(*(patch or Slice.make()).items())
            merged = _deduplicate_scalars(both)
        else:
            if not merge_key:
                raise rejected(path, "cannot merge a list of objects that has no merge key")
            original, patch = self.merge_slice_with_special_elements(original, patch, merge_key, path)
            merged = self.merge_slice_without_special_elements(original, patch, merge_key, schema, path)
        if not merge_key:
            patch_items, server_only = _partition_primitives(merged, patch)
        else:
            patch_items, server_only = _partition_maps(merged, patch, merge_key, path)
        return _normalize_element_order(patch_items, server_only, patch, original, merge_key, kind, path)

    def merge_slice_with_special_elements(
        self, original: Slice, patch: Slice | None, merge_key: str, path: PathT
    ) -> tuple[Slice, Slice | None]:
        """``mergeSliceWithSpecialElements``: apply list items that carry ``$patch``."""
        plain = Slice.make()
        replace = False
        for v in patch or ():
            if _DIRECTIVE not in v:
                plain = plain.append(v)
                continue
            directive = v[_DIRECTIVE]
            if go_eq(directive, _DELETE):
                if merge_key not in v:
                    raise rejected(_item(path, merge_key, v), f"$patch: delete needs the merge key {merge_key!r}")
                while True:
                    _, at = _find_map_in_slice(original, merge_key, v[merge_key], path)
                    if at < 0:
                        break
                    original = original.sub(0, at).append(*original.sub(at + 1).items())
            elif go_eq(directive, _REPLACE):
                replace = True
            elif go_eq(directive, _MERGE):
                raise rejected(path, "$patch: merge is not supported in a list (kubectl rejects it)")
            else:
                raise rejected(path, f"unknown patch type {shown(directive)} in a list item")
        if replace:
            return plain, None
        return original, plain

    def merge_slice_without_special_elements(
        self, original: Slice, patch: Slice | None, merge_key: str, schema: SchemaType, path: PathT
    ) -> Slice:
        """``mergeSliceWithoutSpecialElements``: merge items with equal merge keys, append the others."""
        # every item is a map here (mergeSlice checked their one type); index them by merge key as they come
        positions = Positions(item.get(merge_key, ABSENT) for item in original)
        for v in patch or ():
            if merge_key not in v:
                raise rejected(path, f"list item has no merge key {merge_key!r}")
            value = v[merge_key]
            if positions.usable and comparable(value):
                at = positions.index(value)
                found = original[at] if at >= 0 else None
            else:
                found, at = _find_map_in_slice(original, merge_key, value, path)
            if found is not None:
                original[at] = self.merge_map(found, v, schema, _item(path, merge_key, v))
            else:
                original = original.append(v)
                if positions.usable:
                    if comparable(value):
                        positions.first.setdefault((go_type(value), value), len(original) - 1)
                    else:
                        positions.usable = False
        return original

    def apply_retain_keys_directive(self, original: dict, patch: dict, path: PathT) -> None:
        """``applyRetainKeysDirective``: drop from ``original`` every key ``$retainKeys`` does not list."""
        if _RETAIN_KEYS not in patch:
            return
        retain = patch.pop(_RETAIN_KEYS)
        if not isinstance(retain, Slice):
            raise rejected(path + (_RETAIN_KEYS,), "$retainKeys must be a list of field names")
        allowed = {go_key(v) for v in retain}
        for k, v in patch.items():
            if v is None or k.startswith(_DELETE_FROM_PRIMITIVE_LIST) or k.startswith(_SET_ELEMENT_ORDER):
                continue
            if ("string", k) not in allowed:
                raise rejected(path + (_RETAIN_KEYS,), f"the patch sets {k!r}, which $retainKeys does not list")
        for k in list(original):
            if ("string", k) not in allowed:
                del original[k]

    def merge_patch_into_original(self, original: dict, patch: dict, schema: SchemaType, path: PathT) -> None:
        """``mergePatchIntoOriginal``: merge each list named by a ``$setElementOrder/`` key, in that order."""
        for key in [k for k in patch if k.startswith(_SET_ELEMENT_ORDER)]:
            if key not in patch:
                continue
            order = patch.pop(key)
            directive_path = path + (key,)
            if not isinstance(order, Slice):
                raise rejected(directive_path, "$setElementOrder must be a list")
            okey = _extract_key(key, _SET_ELEMENT_ORDER, directive_path)
            key_path = path + (okey,)
            original_list = patch_list = None
            if okey in original:
                if not isinstance(original[okey], Slice):
                    raise rejected(key_path, "$setElementOrder names a field that is not a list")
                original_list = original[okey]
            if okey in patch:
                if not isinstance(patch[okey], Slice):
                    raise rejected(key_path, "$setElementOrder names a field that is not a list")
                patch_list = patch[okey]
            try:
                sub, meta = schema.lookup_slice(okey)
            except SchemaLookupError as e:
                raise rejected(key_path, str(e)) from None
            _retain_keys_strategy(meta.strategies, key_path)
            merge_key = meta.merge_key
            _validate_patch_with_set_order_list(patch_list, order, merge_key, key_path)
            if original_list is not None and patch_list is None:
                merged = original_list
            elif original_list is None and patch_list is not None:
                merged = _remove_directives(patch_list)[0]
            elif original_list is not None and patch_list is not None:
                merged = self.merge_slice_handler(original_list, patch_list, sub, meta, False, key_path)
            else:
                continue
            if not merge_key:
                patch_items, server_only = _partition_primitives(merged, order)
            else:
                patch_items, server_only = _partition_maps(merged, order, merge_key, key_path)
            kind = _slice_element_type(key_path, original_list, patch_list)
            original[okey] = _normalize_element_order(
                patch_items, server_only, order, original_list, merge_key, kind, key_path
            )
            patch.pop(okey, None)


def strategic_merge_patch(
    original: Mapping[str, Any],
    patch: Mapping[str, Any],
    *,
    kind: str = "PodTemplateSpec",
    kubernetes_version: str | None = None,
) -> dict[str, Any]:
    """Apply a strategic merge patch to a Kubernetes object, exactly as ``kubectl patch --type strategic``.

    The result equals what ``kubectl patch --local --type strategic`` (v1.32, the pinned default) prints for
    the same object and patch: maps merged key by key, lists with a patch merge key merged by that key and
    ordered as apimachinery's ``mergeSlice`` and ``normalizeElementOrder`` order them, primitive lists with
    the merge strategy unioned, other lists replaced, ``null`` deleting a key, and the directives
    ``$patch: replace|delete``, ``$retainKeys``, ``$deleteFromPrimitiveList/<field>`` and
    ``$setElementOrder/<field>`` applied. Which lists merge, and by which key, is read from the Kubernetes
    schema of ``kubernetes_version``.

    Args:
        original: The object to patch, as plain JSON data (dicts, lists, str, int, float, bool, None).
            Not modified.
        patch: The strategic merge patch, same shape. Not modified.
        kind: The Kubernetes type both describe: ``"PodTemplateSpec"`` (``{"metadata": ..., "spec": ...}``),
            ``"PodSpec"``, ``"Container"``, or any other type name of the schema.
        kubernetes_version: Kubernetes minor version whose schema gives the patch metadata, such as
            ``"1.30"``; ``None`` for the pinned default, 1.32.

    Returns:
        A new dict. Integral numbers come back as ``int`` (``2.0`` becomes ``2``), as kubectl prints them.

    Raises:
        MergeError: where kubectl rejects the patch (for example ``$patch: merge``, a list item without its
            merge key, a ``$retainKeys`` list missing a key the patch sets, a ``$setElementOrder`` list that
            contradicts the patch), with the path of the offending value; also for input that is not JSON
            data.
        ValueError: ``kind`` or ``kubernetes_version`` is unknown.
    """
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a Kubernetes type name such as 'PodTemplateSpec', not {type(kind).__name__}")
    schema = schema_type(kind, normalize_version(kubernetes_version))
    if not isinstance(original, Mapping):
        raise rejected((), f"the original must be an object, not {type(original).__name__}")
    if not isinstance(patch, Mapping):
        raise rejected((), f"a patch must be an object, not {type(patch).__name__}")
    try:
        go_original, go_patch = _from_plain(original), _from_plain(patch, floats_stay=True)
        merged = _Merger().merge_map(go_original, go_patch, schema, ())
        return to_plain(merged)
    except GoPanic as e:
        raise rejected((), f"kubectl fails on this patch ({e})") from None
    except RecursionError:
        raise rejected((), "the document is nested too deeply, or contains itself") from None
