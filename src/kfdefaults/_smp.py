"""Strategic merge patch, computed exactly as Kubernetes computes it.

This is a port of apimachinery's ``pkg/util/strategicpatch`` as kubectl v1.32 runs it for
``kubectl patch --local --type strategic``: ``StrategicMergePatch`` with ``MergeParallelList`` and
``IgnoreUnmatchedNulls`` on. Each function below is named after the Go function it stands for, so the two
can be read side by side. The patch metadata (which lists merge, by which key) comes from the Kubernetes
schema (:mod:`kfdefaults._k8s_schema`), never from field names written here.

Being identical to kubectl means keeping what is surprising about it:

* Go values are typed: ``80`` and ``"80"`` are different merge keys, ``1`` and ``True`` differ, and
  comparing two maps (say, two merge keys that are objects) crashes kubectl; here it raises
  :class:`~kfdefaults.MergeError`.
* Numbers are read as kubectl reads them: the object to patch makes a round trip through JSON first, so
  its integral numbers are int64 (``2.0`` is ``2``); the patch's ``2.0`` stays a float64, a different merge
  key from ``2``. The result prints integral floats as ints, as kubectl does.
* Go slices share their backing arrays. apimachinery deletes list items by shifting them inside the array
  and appends into spare capacity, and later reads the old slice header to order the result. The
  :class:`_Slice` type below reproduces Go's slices, including the capacity that Go's JSON decoder and
  ``append`` give them, so that the result is the same item for item.
* Go iterates over maps in random order. The only place where that changes kubectl's result is a patch
  that sets a primitive list and also lists ``$deleteFromPrimitiveList/`` values for it that overlap (or
  is ``null``); kfdefaults always applies the deletion list last, which is one of kubectl's outcomes.
* A list item that a patch adds to an existing list keeps whatever ``null`` values and nested directives
  it had: kubectl strips them only from values it copies into a map key that did not exist.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ._errors import MergeError
from ._k8s_schema import PatchMeta, SchemaLookupError, SchemaType, normalize_version, schema_type

_DIRECTIVE = "$patch"
_DELETE = "delete"
_REPLACE = "replace"
_MERGE = "merge"
_RETAIN_KEYS = "$retainKeys"
_DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
_SET_ELEMENT_ORDER = "$setElementOrder"

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class _Panic(Exception):
    """Where the Go code would panic (kubectl crashes): surfaced as a MergeError."""


# --- Go slices -------------------------------------------------------------------------------------

# Size classes of Go's allocator (runtime/sizeclasses.go), used to round capacities the way append does.
_SIZE_CLASSES = (
    0, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384,
    416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072,
    3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568,
    14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768,
)  # fmt: skip
_ELEM_SIZE = 16  # an interface{} value: two words


def _roundup_size(size: int) -> int:
    """Go's ``roundupsize`` for a pointer-holding allocation (malloc headers, Go 1.22 and later)."""
    if size <= 32768 - 8:
        req = size + 8 if size > 512 else size
        for cls in _SIZE_CLASSES:
            if cls >= req:
                return cls - (req - size)
    return (size + 8191) & ~8191


def _grown_cap(old_cap: int, new_len: int) -> int:
    """The capacity Go's ``growslice`` gives a ``[]interface{}`` that must hold ``new_len`` items."""
    new_cap = old_cap
    double = old_cap * 2
    if new_len > double:
        new_cap = new_len
    elif old_cap < 256:
        new_cap = double
    else:
        while new_cap < new_len:
            new_cap += (new_cap + 768) >> 2
    return _roundup_size(new_cap * _ELEM_SIZE) // _ELEM_SIZE


@functools.lru_cache(maxsize=1024)
def _decoded_cap(n: int) -> int:
    """Capacity of an n-item array decoded by Go's encoding/json (``append`` one by one from empty)."""
    cap = 0
    for i in range(1, n + 1):
        if i > cap:
            cap = _grown_cap(cap, i)
    return cap


class _Slice:
    """A Go ``[]interface{}``: a window (offset, length, capacity) on a shared backing array."""

    __slots__ = ("arr", "off", "n", "cap")

    def __init__(self, arr: list[Any], off: int, n: int, cap: int) -> None:
        self.arr, self.off, self.n, self.cap = arr, off, n, cap

    @classmethod
    def make(cls, n: int = 0, cap: int = 0) -> _Slice:
        """``make([]interface{}, n, cap)``."""
        return cls([None] * max(n, cap), 0, n, max(n, cap))

    @classmethod
    def decoded(cls, items: list[Any]) -> _Slice:
        """A slice as Go's JSON decoder builds it from ``items``."""
        cap = _decoded_cap(len(items))
        return cls(items + [None] * (cap - len(items)), 0, len(items), cap)

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Any]:
        arr, off = self.arr, self.off
        for i in range(self.n):
            yield arr[off + i]

    def __getitem__(self, i: int) -> Any:
        if not 0 <= i < self.n:
            raise IndexError(i)
        return self.arr[self.off + i]

    def __setitem__(self, i: int, value: Any) -> None:
        if not 0 <= i < self.n:
            raise IndexError(i)
        self.arr[self.off + i] = value

    def items(self) -> list[Any]:
        """A copy of the visible items."""
        return self.arr[self.off : self.off + self.n]

    def sub(self, lo: int, hi: int | None = None) -> _Slice:
        """``s[lo:hi]``: shares the backing array."""
        hi = self.n if hi is None else hi
        return _Slice(self.arr, self.off + lo, hi - lo, self.cap - lo)

    def append(self, *values: Any) -> _Slice:
        """``append(s, values...)``: in place when the capacity allows, else into a new array."""
        if not values:
            return self
        new_len = self.n + len(values)
        if new_len <= self.cap:
            start = self.off + self.n
            self.arr[start : start + len(values)] = values
            return _Slice(self.arr, self.off, new_len, self.cap)
        cap = _grown_cap(self.cap, new_len)
        arr = self.items() + list(values)
        arr.extend([None] * (cap - new_len))
        return _Slice(arr, 0, new_len, cap)

    def swap(self, i: int, j: int) -> None:
        arr, off = self.arr, self.off
        arr[off + i], arr[off + j] = arr[off + j], arr[off + i]


# --- Go values ---------------------------------------------------------------------------------------


_GO_TYPE_UNKNOWN = "?"
_GO_TYPE_OF: dict[type, str | None] = {type(None): None, bool: "bool", int: "int64", float: "float64", str: "string",
                                       dict: "map"}
"""The Go type of the exact Python types decoded JSON values have (one dictionary lookup on the hot path)."""


def _go_type(v: Any) -> str | None:
    """The dynamic Go type of a decoded JSON value."""
    exact = _GO_TYPE_OF.get(type(v), _GO_TYPE_UNKNOWN)
    if exact is not _GO_TYPE_UNKNOWN:
        return exact
    if v is None:
        return None
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int64"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "map"
    return "slice"


def _go_eq(a: Any, b: Any) -> bool:
    """Go's ``==`` on two ``interface{}`` values: typed, and a crash on two maps or two slices."""
    ta, tb = _go_type(a), _go_type(b)
    if ta != tb:
        return False
    if ta == "map" or ta == "slice":
        raise _Panic(f"comparing uncomparable type {'map[string]interface {}' if ta == 'map' else '[]interface {}'}")
    return bool(a == b)


def _go_key(v: Any) -> tuple[str | None, Any]:
    """A hashable stand-in for ``v`` as a key of a Go ``map[interface{}]...``."""
    t = _go_type(v)
    if t == "map" or t == "slice":
        raise _Panic("hash of unhashable type")
    return (t, v)


def _printed_integer(value: float) -> int | None:
    """The integer Go's encoding/json writes for an integral float64, or ``None`` when it writes an exponent.

    Go writes a float64 below 1e21 in magnitude in plain decimal, with the shortest digits that read back to
    the same float, then zeros (``2**64`` -> ``18446744073709552000``, not ``...551616``); Python's ``repr`` has
    the same shortest digits.
    """
    if not value.is_integer() or abs(value) >= 1e21:
        return None
    from decimal import Decimal

    return int(Decimal(repr(value)))


def _int64_or_float(value: float) -> Any:
    """What Go's JSON round trip makes of a float64: an int64 when the integer it is written as fits one
    (``2.0`` -> ``2``), else the float64."""
    printed = _printed_integer(value)
    if printed is not None and _INT64_MIN <= printed <= _INT64_MAX:
        return printed
    return value


_GO_AS_IS = frozenset({str, bool, type(None)})
"""Types whose values are the same in Go as in Python (ints are not: they have a range)."""


_PLAIN_AS_IS = frozenset({str, bool, int, type(None)})
"""Types of Go values printed as they are (floats are not: an integral one prints as an int)."""


class _BadValue(Exception):
    """A value kubectl could not read; ``steps`` collects its path, innermost first, as it propagates."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.steps: list[str | int] = []


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
        return _go_value(value, floats_stay)
    except _BadValue as e:
        path = ""
        for step in reversed(e.steps):
            path = f"{path}[{step}]" if isinstance(step, int) else (f"{path}.{step}" if path else step)
        raise MergeError(path, e.message) from None


def _go_value(value: Any, floats_stay: bool) -> Any:
    """:func:`_from_plain` without paths: they are built only for an error, which is rare."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is dict or isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise _BadValue(f"object keys must be strings, not {type(k).__name__} {k!r}")
            if type(v) in _GO_AS_IS:  # most values are strings: no call for them
                out[k] = v
                continue
            try:
                out[k] = _go_value(v, floats_stay)
            except _BadValue as e:
                e.steps.append(k)
                raise
        return out
    if kind is list or isinstance(value, (list, tuple)):
        items = []
        for i, v in enumerate(value):
            if type(v) in _GO_AS_IS:
                items.append(v)
                continue
            try:
                items.append(_go_value(v, floats_stay))
            except _BadValue as e:
                e.steps.append(i)
                raise
        return _Slice.decoded(items)
    if isinstance(value, str):  # a str subclass
        return value
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return value
        try:
            return float(value)  # as Go's decoder reads an integer beyond int64
        except OverflowError:
            raise _BadValue("a number beyond the range of a JSON number (float64)") from None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _BadValue(f"{value} is not a JSON number")
        return value if floats_stay else _int64_or_float(value)
    raise _BadValue(f"not JSON data: {type(value).__name__}")


def _shown(value: Any) -> str:
    """A Go value as a message shows it: its JSON text (``"remove"``, ``["x"]``)."""
    import json

    return json.dumps(_to_plain(value), sort_keys=True)


def _to_plain(value: Any) -> Any:
    """Go values -> plain Python data, as kubectl prints the result (integral floats print as ints)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict or isinstance(value, dict):
        return {k: v if type(v) in _PLAIN_AS_IS else _to_plain(v) for k, v in value.items()}
    if kind is _Slice:
        return [v if type(v) in _PLAIN_AS_IS else _to_plain(v) for v in value.items()]
    if isinstance(value, float):
        printed = _printed_integer(value)  # as kubectl prints the result: an integral float without exponent
        return value if printed is None else printed
    return value


# --- paths for messages ----------------------------------------------------------------------------


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _item(path: str, merge_key: str, item: Any) -> str:
    if merge_key and isinstance(item, dict) and merge_key in item:
        return f"{path}[{merge_key}={item[merge_key]}]"
    return f"{path}[]"


# --- the algorithm ---------------------------------------------------------------------------------


def _extract_key(key: str, prefix: str, path: str) -> str:
    """``extractKey``: ``"$setElementOrder/containers"`` -> ``"containers"``."""
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        raise MergeError(path, f"bad directive key {key!r}: expected {prefix}/<field>")
    return rest


def _retain_keys_strategy(strategies: tuple[str, ...], path: str) -> str:
    """``extractRetainKeysPatchStrategy``: the strategy other than ``retainKeys``."""
    if len(strategies) == 1:
        return "" if strategies[0] == "retainKeys" else strategies[0]
    if len(strategies) == 2 and "retainKeys" in strategies:
        return strategies[1] if strategies[0] == "retainKeys" else strategies[0]
    raise MergeError(path, f"unexpected patch strategy: {list(strategies)}")


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
    if isinstance(obj, _Slice):
        res = _Slice.make()
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
    elif isinstance(obj, _Slice):
        for v in obj:
            _discard_null_values(v)


def _slice_element_type(path: str, *slices: _Slice | None) -> str:
    """``sliceElementType``: the one Go type of every item of the given slices."""
    prev: str | None = None
    seen = False
    for s in slices:
        for v in s or ():
            cur = _go_type(v)
            if not seen:
                if cur is None:
                    raise _Panic("a list item is null")
                prev, seen = cur, True
                if cur == "slice":
                    raise MergeError(path, "lists of lists are not supported")
            elif cur != prev:
                raise MergeError(path, "list items are of different types")
    if not seen:
        raise MergeError(path, "no elements in any of the given lists")
    assert prev is not None
    return prev


def _find_map_in_slice(items: _Slice | None, key: str, value: Any, path: str) -> tuple[dict | None, int]:
    """``findMapInSliceBasedOnKeyValue``: the first map whose ``key`` equals ``value``, and its index."""
    for i, v in enumerate(items or ()):
        if not isinstance(v, dict):
            raise MergeError(path, f"list item {i} is not an object")
        if key in v and _go_eq(v[key], value):
            return v, i
    return None, -1


def _extract_to_delete_items(items: _Slice, path: str) -> tuple[_Slice, _Slice]:
    """``extractToDeleteItems``: (items to keep, items marked ``$patch: delete``)."""
    keep, delete = _Slice.make(), _Slice.make()
    for v in items:
        if not isinstance(v, dict):
            raise MergeError(path, "expected a list of objects")
        if _DIRECTIVE in v and _go_eq(v[_DIRECTIVE], _DELETE):
            delete = delete.append(v)
        else:
            keep = keep.append(v)
    return keep, delete


def _validate_merge_key_in_lists(merge_key: str, path: str, *lists: _Slice | None) -> None:
    for items in lists:
        for v in items or ():
            if not isinstance(v, dict):
                raise MergeError(path, "expected a list of objects")
            if merge_key not in v:
                raise MergeError(path, f"list item has no merge key {merge_key!r}")


def _index(items: _Slice | None, value: Any, merge_key: str, kind: str) -> int:
    """``index``: position of ``value`` in ``items``, by merge key for maps, else by value; -1 if absent."""
    if kind == "map":

        def get(item: Any) -> Any:
            return item.get(merge_key) if isinstance(item, dict) else None

    else:

        def get(item: Any) -> Any:
            return item

    target = get(value)
    for i, v in enumerate(items or ()):
        if _go_eq(target, get(v)):
            return i
    return -1


_ABSENT = object()


class _Positions:
    """Where each value first occurs in a list, for lookups with Go's typed equality in constant time.

    apimachinery finds items by linear scans (``index``, ``findMapInSliceBasedOnKeyValue``); a profile's lists
    are short, but a scan per item per comparison makes a list of a thousand volumes take seconds. The first
    position of each value is the answer those scans give. Values Go cannot compare (maps, slices), which
    make the scans panic, leave ``usable`` false, and callers then scan as Go does.
    """

    __slots__ = ("first", "usable")

    def __init__(self, values: Iterable[Any]) -> None:
        self.first: dict[tuple[str | None, Any], int] = {}
        self.usable = True
        for i, value in enumerate(values):
            if value is _ABSENT:
                continue
            t = _go_type(value)
            if t == "map" or t == "slice":
                self.usable = False
                return
            self.first.setdefault((t, value), i)

    def index(self, value: Any) -> int:
        """The first position of ``value``, -1 if absent; ``usable`` must be true and ``value`` comparable."""
        return self.first.get((_go_type(value), value), -1)


class _Swapper:
    """A sequence of ``n`` items known only by how to swap two of them (what ``sort.SliceStable`` needs)."""

    __slots__ = ("n", "swap")

    def __init__(self, n: int, swap: Callable[[int, int], None]) -> None:
        self.n, self.swap = n, swap

    def __len__(self) -> int:
        return self.n


def _comparable(value: Any) -> bool:
    t = _go_type(value)
    return t != "map" and t != "slice"


def _key_values(items: _Slice | None, merge_key: str, kind: str) -> list[Any]:
    """What ``index`` compares for each item: the merge key's value for maps (None if missing), else the item."""
    if kind != "map":
        return list(items or ())
    return [item.get(merge_key) if isinstance(item, dict) else None for item in items or ()]


def _stable_sort(data: _Slice, less: Callable[[int, int], bool]) -> None:
    """Go's ``sort.SliceStable``, step for step (the order kubectl gets also for inconsistent ``less``)."""

    def insertion_sort(a: int, b: int) -> None:
        for i in range(a + 1, b):
            j = i
            while j > a and less(j, j - 1):
                data.swap(j, j - 1)
                j -= 1

    def swap_range(a: int, b: int, n: int) -> None:
        for i in range(n):
            data.swap(a + i, b + i)

    def rotate(a: int, m: int, b: int) -> None:
        i, j = m - a, b - m
        while i != j:
            if i > j:
                swap_range(m - i, m, j)
                i -= j
            else:
                swap_range(m - i, m + j - i, i)
                j -= i
        swap_range(m - i, m, i)

    def sym_merge(a: int, m: int, b: int) -> None:
        if m - a == 1:
            i, j = m, b
            while i < j:
                h = (i + j) >> 1
                if less(h, a):
                    i = h + 1
                else:
                    j = h
            for k in range(a, i - 1):
                data.swap(k, k + 1)
            return
        if b - m == 1:
            i, j = a, m
            while i < j:
                h = (i + j) >> 1
                if not less(m, h):
                    i = h + 1
                else:
                    j = h
            for k in range(m, i, -1):
                data.swap(k, k - 1)
            return
        mid = (a + b) >> 1
        n = mid + m
        if m > mid:
            start, r = n - b, mid
        else:
            start, r = a, m
        p = n - 1
        while start < r:
            c = (start + r) >> 1
            if not less(p - c, c):
                start = c + 1
            else:
                r = c
        end = n - start
        if start < m < end:
            rotate(start, m, end)
        if a < start < mid:
            sym_merge(a, start, mid)
        if mid < end < b:
            sym_merge(mid, end, b)

    n = len(data)
    block = 20
    a, b = 0, block
    while b <= n:
        insertion_sort(a, b)
        a, b = b, b + block
    insertion_sort(a, n)
    while block < n:
        a, b = 0, 2 * block
        while b <= n:
            sym_merge(a, a + block, b)
            a, b = b, b + 2 * block
        if a + block < n:
            sym_merge(a, a + block, n)
        block *= 2


def _normalize_slice_order(to_sort: _Slice, order: _Slice | None, merge_key: str, kind: str, path: str) -> _Slice:
    """``normalizeSliceOrder``: sort ``to_sort`` by the positions its items have in ``order``."""
    to_delete = _Slice.make()
    if kind == "map":
        _validate_merge_key_in_lists(merge_key, path, to_sort, order)
        to_sort, to_delete = _extract_to_delete_items(to_sort, path)

    positions = _Positions(_key_values(order, merge_key, kind))
    sorted_values = _key_values(to_sort, merge_key, kind)
    if positions.usable and all(_comparable(v) for v in sorted_values):
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

        _stable_sort(_Swapper(len(items), swap), less)
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

        _stable_sort(to_sort, less)
    return to_sort.append(*to_delete.items())


def _merge_sorted_slice(left: _Slice, right: _Slice, server_order: _Slice | None, merge_key: str, kind: str) -> _Slice:
    """``mergeSortedSlice``: interleave server-only items (left) into patch items (right)."""
    size = len(left) + len(right)
    out = _Slice.make(size, size)
    positions = _Positions(_key_values(server_order, merge_key, kind))
    fast = positions.usable and all(_comparable(v) for v in _key_values(left, merge_key, kind) + _key_values(right, merge_key, kind))

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
    patch: _Slice,
    server_only: _Slice,
    patch_order: _Slice | None,
    server_order: _Slice | None,
    merge_key: str,
    kind: str,
    path: str,
) -> _Slice:
    """``normalizeElementOrder``: patch items in patch order, server-only items in server order, interleaved."""
    patch = _normalize_slice_order(patch, patch_order, merge_key, kind, path)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, kind, path)
    return _merge_sorted_slice(server_only, patch, server_order, merge_key, kind)


def _partition_primitives(items: _Slice, partition_by: _Slice | None) -> tuple[_Slice, _Slice]:
    """``partitionPrimitivesByPresentInList``: (items in ``partition_by``, the others)."""
    inside, outside = _Slice.make(0, len(items)), _Slice.make(0, len(items))
    present = {_go_key(v) for v in partition_by or ()}
    for v in items:
        if _go_key(v) in present:
            inside = inside.append(v)
        else:
            outside = outside.append(v)
    return inside, outside


def _partition_maps(items: _Slice, partition_by: _Slice | None, merge_key: str, path: str) -> tuple[_Slice, _Slice]:
    """``partitionMapsByPresentInList``: (items whose merge key is in ``partition_by``, the others)."""
    inside, outside = _Slice.make(0, len(items)), _Slice.make(0, len(items))
    all_maps = all(isinstance(item, dict) for item in partition_by or ())
    positions = _Positions(item.get(merge_key, _ABSENT) for item in partition_by or ()) if all_maps else None
    for v in items:
        if not isinstance(v, dict):
            raise MergeError(path, "expected a list of objects")
        if merge_key not in v:
            raise MergeError(path, f"list item has no merge key {merge_key!r}")
        if positions is not None and positions.usable and _comparable(v[merge_key]):
            found = True if positions.index(v[merge_key]) >= 0 else None
        else:
            found, _ = _find_map_in_slice(partition_by, merge_key, v[merge_key], path)
        if found is None:
            outside = outside.append(v)
        else:
            inside = inside.append(v)
    return inside, outside


def _delete_from_slice(current: _Slice, to_delete: _Slice) -> _Slice:
    """``deleteFromSlice``: ``current`` without the values of a ``$deleteFromPrimitiveList`` list."""
    gone = {_go_key(v) for v in to_delete}
    out = _Slice.make(0, len(current))
    for v in current:
        if _go_key(v) not in gone:
            out = out.append(v)
    return out


def _deduplicate_scalars(s: _Slice) -> _Slice:
    """``deduplicateScalars``, in place: a duplicate is overwritten by the last item and the slice shrinks."""
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if _go_eq(s[i], s[j]):
                s[j] = s[length]
                s = s.sub(0, length)
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def _merge_key_value_equal(left: Any, right: Any, merge_key: str, path: str) -> bool:
    if not merge_key:
        return _go_eq(left, right)
    if not isinstance(left, dict) or not isinstance(right, dict):
        raise MergeError(path, "expected a list of objects")
    if merge_key not in left or merge_key not in right:
        raise MergeError(path, f"list item has no merge key {merge_key!r}")
    return _go_eq(left[merge_key], right[merge_key])


def _validate_patch_with_set_order_list(patch_list: _Slice | None, order: _Slice, merge_key: str, path: str) -> None:
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
        raise MergeError(path, f"the order of the patch list does not match its {_SET_ELEMENT_ORDER} list")


class _Merger:
    """One application of a patch; holds nothing but the functions of the algorithm."""

    def merge_map(self, original: dict, patch: dict, schema: SchemaType, path: str) -> dict:
        """``mergeMap``: merge ``patch`` into ``original`` (both are changed)."""
        if _DIRECTIVE in patch:
            directive = patch[_DIRECTIVE]
            if _go_eq(directive, _REPLACE):
                del patch[_DIRECTIVE]
                return patch
            if _go_eq(directive, _DELETE):
                return {}
            raise MergeError(path, f"unknown patch type {_shown(directive)} in a map ($patch takes replace or delete)")
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
                k = _extract_key(k, _DELETE_FROM_PRIMITIVE_LIST, _join(path, k))
                is_delete_list = True
            key_path = _join(path, k)
            if patch_v is None:
                original.pop(k, None)
                continue
            if k not in original or _go_type(original[k]) != _go_type(patch_v):
                if not is_delete_list:
                    _discard_null_values(patch_v)
                    value, keep = _remove_directives(patch_v)
                    if keep:
                        original[k] = value
                    else:
                        original.pop(k, None)
                continue
            kind = _go_type(original[k])
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
                raise MergeError(key_path, str(e)) from None
        return original

    def merge_slice_handler(
        self, original: _Slice, patch: _Slice, schema: SchemaType, meta: PatchMeta, is_delete_list: bool, path: str
    ) -> _Slice:
        """``mergeSliceHandler``: merge lists whose strategy is merge (and deletion lists); replace others."""
        strategy = _retain_keys_strategy(meta.strategies, path)
        if strategy == _MERGE or is_delete_list:
            return self.merge_slice(original, patch, schema, meta.merge_key, is_delete_list, path)
        return patch

    def merge_slice(
        self, original: _Slice, patch: _Slice | None, schema: SchemaType, merge_key: str, is_delete_list: bool, path: str
    ) -> _Slice:
        """``mergeSlice``: union of primitives, or merge of objects by their merge key; then order them."""
        if not original and not patch:
            return original
        kind = _slice_element_type(path, original, patch)
        if kind != "map":
            if is_delete_list:
                return _delete_from_slice(original, patch or _Slice.make())
            both = original.append(*(patch or _Slice.make()).items())
            merged = _deduplicate_scalars(both)
        else:
            if not merge_key:
                raise MergeError(path, "cannot merge a list of objects that has no merge key")
            original, patch = self.merge_slice_with_special_elements(original, patch, merge_key, path)
            merged = self.merge_slice_without_special_elements(original, patch, merge_key, schema, path)
        if not merge_key:
            patch_items, server_only = _partition_primitives(merged, patch)
        else:
            patch_items, server_only = _partition_maps(merged, patch, merge_key, path)
        return _normalize_element_order(patch_items, server_only, patch, original, merge_key, kind, path)

    def merge_slice_with_special_elements(
        self, original: _Slice, patch: _Slice | None, merge_key: str, path: str
    ) -> tuple[_Slice, _Slice | None]:
        """``mergeSliceWithSpecialElements``: apply list items that carry ``$patch``."""
        plain = _Slice.make()
        replace = False
        for v in patch or ():
            if _DIRECTIVE not in v:
                plain = plain.append(v)
                continue
            directive = v[_DIRECTIVE]
            if _go_eq(directive, _DELETE):
                if merge_key not in v:
                    raise MergeError(_item(path, merge_key, v), f"$patch: delete needs the merge key {merge_key!r}")
                while True:
                    _, at = _find_map_in_slice(original, merge_key, v[merge_key], path)
                    if at < 0:
                        break
                    original = original.sub(0, at).append(*original.sub(at + 1).items())
            elif _go_eq(directive, _REPLACE):
                replace = True
            elif _go_eq(directive, _MERGE):
                raise MergeError(path, "$patch: merge is not supported in a list (kubectl rejects it)")
            else:
                raise MergeError(path, f"unknown patch type {_shown(directive)} in a list item")
        if replace:
            return plain, None
        return original, plain

    def merge_slice_without_special_elements(
        self, original: _Slice, patch: _Slice | None, merge_key: str, schema: SchemaType, path: str
    ) -> _Slice:
        """``mergeSliceWithoutSpecialElements``: merge items with equal merge keys, append the others."""
        # every item is a map here (mergeSlice checked their one type); index them by merge key as they come
        positions = _Positions(item.get(merge_key, _ABSENT) for item in original)
        for v in patch or ():
            if merge_key not in v:
                raise MergeError(path, f"list item has no merge key {merge_key!r}")
            value = v[merge_key]
            if positions.usable and _comparable(value):
                at = positions.index(value)
                found = original[at] if at >= 0 else None
            else:
                found, at = _find_map_in_slice(original, merge_key, value, path)
            if found is not None:
                original[at] = self.merge_map(found, v, schema, _item(path, merge_key, v))
            else:
                original = original.append(v)
                if positions.usable:
                    if _comparable(value):
                        positions.first.setdefault((_go_type(value), value), len(original) - 1)
                    else:
                        positions.usable = False
        return original

    def apply_retain_keys_directive(self, original: dict, patch: dict, path: str) -> None:
        """``applyRetainKeysDirective``: drop from ``original`` every key ``$retainKeys`` does not list."""
        if _RETAIN_KEYS not in patch:
            return
        retain = patch.pop(_RETAIN_KEYS)
        if not isinstance(retain, _Slice):
            raise MergeError(_join(path, _RETAIN_KEYS), "$retainKeys must be a list of field names")
        allowed = {_go_key(v) for v in retain}
        for k, v in patch.items():
            if v is None or k.startswith(_DELETE_FROM_PRIMITIVE_LIST) or k.startswith(_SET_ELEMENT_ORDER):
                continue
            if ("string", k) not in allowed:
                raise MergeError(_join(path, _RETAIN_KEYS), f"the patch sets {k!r}, which $retainKeys does not list")
        for k in list(original):
            if ("string", k) not in allowed:
                del original[k]

    def merge_patch_into_original(self, original: dict, patch: dict, schema: SchemaType, path: str) -> None:
        """``mergePatchIntoOriginal``: merge each list named by a ``$setElementOrder/`` key, in that order."""
        for key in [k for k in patch if k.startswith(_SET_ELEMENT_ORDER)]:
            if key not in patch:
                continue
            order = patch.pop(key)
            directive_path = _join(path, key)
            if not isinstance(order, _Slice):
                raise MergeError(directive_path, "$setElementOrder must be a list")
            okey = _extract_key(key, _SET_ELEMENT_ORDER, directive_path)
            key_path = _join(path, okey)
            original_list = patch_list = None
            if okey in original:
                if not isinstance(original[okey], _Slice):
                    raise MergeError(key_path, "$setElementOrder names a field that is not a list")
                original_list = original[okey]
            if okey in patch:
                if not isinstance(patch[okey], _Slice):
                    raise MergeError(key_path, "$setElementOrder names a field that is not a list")
                patch_list = patch[okey]
            try:
                sub, meta = schema.lookup_slice(okey)
            except SchemaLookupError as e:
                raise MergeError(key_path, str(e)) from None
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
        raise MergeError("", f"the original must be an object, not {type(original).__name__}")
    if not isinstance(patch, Mapping):
        raise MergeError("", f"a patch must be an object, not {type(patch).__name__}")
    try:
        go_original, go_patch = _from_plain(original), _from_plain(patch, floats_stay=True)
        merged = _Merger().merge_map(go_original, go_patch, schema, "")
        return _to_plain(merged)
    except _Panic as e:
        raise MergeError("", f"kubectl fails on this patch ({e})") from None
    except RecursionError:
        raise MergeError("", "the document is nested too deeply, or contains itself") from None
