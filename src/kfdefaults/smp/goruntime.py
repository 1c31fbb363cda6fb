"""What apimachinery's Go code relies on of the Go runtime, reproduced: slices, typed values, numbers, a sort.

kubectl's result depends on more than the algorithm of ``patch.go``. Each piece below was taken out in turn
and the kubectl differential tests run without it (docs/conformance.md, "What of Go's runtime the port
keeps, and why"); each stays because kubectl then gives another result. Per piece, the smallest such case
(PodTemplateSpec original, patch, what kubectl gives) and the test of ``tests/test_smp_kubectl.py`` that
holds it:

* **Slices sharing a backing array** (:class:`Slice`). ``mergeSliceWithSpecialElements`` deletes an item by
  shifting the rest left inside the same array, ``mergeSliceWithoutSpecialElements`` appends into the freed
  slot, and ``mergePatchIntoOriginal`` orders the result by the old slice header, which sees both writes.
  ``volumes: [data, cache]`` patched with ``$setElementOrder/volumes: [shm]`` and
  ``volumes: [shm, {name: cache, $patch: delete}]`` gives ``[data, shm]``; Python lists give ``[shm, data]``
  (``delete-and-add-with-element-order``).
* **The capacity Go's JSON decoder gives an array** (:meth:`Slice.decoded`: ``encoding/json`` appends one
  item at a time, so ``runtime.growslice`` doubles, grows by a quarter from 256 items and rounds up to the
  allocator's size classes, then to 8 KiB pages). ``mergeSlice`` appends the patch to a primitive list in
  place when the list has room, and ``deduplicateScalars`` then writes into the original list, which orders
  the result: ``finalizers: [a, a, b]`` (room for four) merged with ``[c]`` gives ``[a, c, b]``; without the
  room ``[c, a, b]`` (``merge-into-finalizers-with-duplicates-and-room``). Each rule of the capacity decides
  at its own size: 3, 33, 400 and 2100 items, with just as many new values as fit and one more
  (``test_long_list_matches_kubectl``).
* **Typed comparison** (:func:`go_eq`, :func:`go_key`, :class:`Positions`): ``80``, ``80.0`` and ``true``
  are different merge keys. ``ports: [{containerPort: 80}]`` patched with
  ``[{containerPort: 80.0, name: x}]`` gives two ports; Python's ``==`` merges them into one
  (``port-int-vs-float``, ``port-int-vs-bool``). And Go cannot compare two maps: a merge key that is an
  object makes kubectl crash (``comparing uncomparable type``, ``hash of unhashable type``), which
  :class:`~kfdefaults.errors.GoPanic` turns into a ``MergeError``, where Python's ``==`` would apply the patch
  (``object-merge-key``, ``element-order-of-objects-for-primitive-list``).
* **Numbers as kubectl reads them** (:func:`go_value`). The original makes a round trip through JSON, so its
  integral floats are int64: its ``containerPort: 80.0`` is the merge key of a patch's ``80``, one port, not
  two (``port-float-vs-int``); but a value printed beyond int64 is read back as a float64, so the original's
  ``1e19`` equals the patch's ``1e19`` where an int would make the list's items of two types
  (``float-beyond-int64-in-both``). An integer beyond int64 is a float64 (``int-beyond-int64``); one beyond
  float64 is no number kubectl can read, and it rejects the document (``int-beyond-float64``).
* **Numbers as kubectl prints them** (:func:`to_plain`): an integral float64 below 1e21 as an integer, in
  Go's shortest digits. The patch's ``containerPort: 80.0`` comes back ``80``, not ``80.0``
  (``port-float-vs-float``), ``2**64`` comes back ``18446744073709552000`` (``int-beyond-int64``), and
  ``float(2**60)`` comes back ``1152921504606847000``, not ``1152921504606846976``
  (``float-beyond-2-53-in-original``).
* **sort.SliceStable's order for an inconsistent less** (:func:`stable_sort`). ``normalizeSliceOrder``'s
  less is true for any pair with an item that has no position, as with an empty ``$setElementOrder`` list:
  ``containers: [a, b]`` patched with ``$setElementOrder/containers: []`` and ``containers: [a, c]`` gives
  ``[c, a, b]``; Python's ``sorted`` with the same less gives ``[b, c, a]`` (``empty-element-order``). Above
  20 items Go merges blocks of 20 (``symMerge``), and an insertion sort alone differs
  (``empty-element-order-19-items``, ``-44-items``).

:mod:`kfdefaults.smp.patch` uses these so that its result is kubectl's item for item.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ..errors import BadValue, GoPanic

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

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


class Slice:
    """A Go ``[]interface{}``: a window (offset, length, capacity) on a shared backing array."""

    __slots__ = ("arr", "off", "n", "cap")

    def __init__(self, arr: list[Any], off: int, n: int, cap: int) -> None:
        self.arr, self.off, self.n, self.cap = arr, off, n, cap

    @classmethod
    def make(cls, n: int = 0, cap: int = 0) -> Slice:
        """``make([]interface{}, n, cap)``."""
        return cls([None] * max(n, cap), 0, n, max(n, cap))

    @classmethod
    def decoded(cls, items: list[Any]) -> Slice:
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

    def sub(self, lo: int, hi: int | None = None) -> Slice:
        """``s[lo:hi]``: shares the backing array."""
        hi = self.n if hi is None else hi
        return Slice(self.arr, self.off + lo, hi - lo, self.cap - lo)

    def append(self, *values: Any) -> Slice:
        """``append(s, values...)``: in place when the capacity allows, else into a new array."""
        if not values:
            return self
        new_len = self.n + len(values)
        if new_len <= self.cap:
            start = self.off + self.n
            self.arr[start : start + len(values)] = values
            return Slice(self.arr, self.off, new_len, self.cap)
        cap = _grown_cap(self.cap, new_len)
        arr = self.items() + list(values)
        arr.extend([None] * (cap - new_len))
        return Slice(arr, 0, new_len, cap)

    def swap(self, i: int, j: int) -> None:
        arr, off = self.arr, self.off
        arr[off + i], arr[off + j] = arr[off + j], arr[off + i]


# --- Go values ---------------------------------------------------------------------------------------


_GO_TYPE_UNKNOWN = "?"
_GO_TYPE_OF: dict[type, str | None] = {type(None): None, bool: "bool", int: "int64", float: "float64", str: "string",
                                       dict: "map"}
"""The Go type of the exact Python types decoded JSON values have (one dictionary lookup on the hot path)."""


def go_type(v: Any) -> str | None:
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


def go_eq(a: Any, b: Any) -> bool:
    """Go's ``==`` on two ``interface{}`` values: typed, and a crash on two maps or two slices."""
    ta, tb = go_type(a), go_type(b)
    if ta != tb:
        return False
    if ta == "map" or ta == "slice":
        raise GoPanic(f"comparing uncomparable type {'map[string]interface {}' if ta == 'map' else '[]interface {}'}")
    return bool(a == b)


def go_key(v: Any) -> tuple[str | None, Any]:
    """A hashable stand-in for ``v`` as a key of a Go ``map[interface{}]...``."""
    t = go_type(v)
    if t == "map" or t == "slice":
        raise GoPanic("hash of unhashable type")
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
    if printed is not None and INT64_MIN <= printed <= INT64_MAX:
        return printed
    return value


GO_AS_IS = frozenset({str, bool, type(None)})
"""Types whose values are the same in Go as in Python (ints are not: they have a range)."""


PLAIN_AS_IS = frozenset({str, bool, int, type(None)})
"""Types of Go values printed as they are (floats are not: an integral one prints as an int)."""


def go_value(value: Any, floats_stay: bool) -> Any:
    """:func:`_from_plain` without paths: they are built only for an error, which is rare."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is dict or isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise BadValue(f"object keys must be strings, not {type(k).__name__} {k!r}")
            if type(v) in GO_AS_IS:  # most values are strings: no call for them
                out[k] = v
                continue
            try:
                out[k] = go_value(v, floats_stay)
            except BadValue as e:
                e.steps.append(k)
                raise
        return out
    if kind is list or isinstance(value, (list, tuple)):
        items = []
        for i, v in enumerate(value):
            if type(v) in GO_AS_IS:
                items.append(v)
                continue
            try:
                items.append(go_value(v, floats_stay))
            except BadValue as e:
                e.steps.append(i)
                raise
        return Slice.decoded(items)
    if isinstance(value, str):  # a str subclass
        return value
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return value
        try:
            return float(value)  # as Go's decoder reads an integer beyond int64
        except OverflowError:
            raise BadValue("a number beyond the range of a JSON number (float64)") from None
    if isinstance(value, float):
        if not math.isfinite(value):
            raise BadValue(f"{value} is not a JSON number")
        return value if floats_stay else _int64_or_float(value)
    raise BadValue(f"not JSON data: {type(value).__name__}")


def shown(value: Any) -> str:
    """A Go value as a message shows it: its JSON text (``"remove"``, ``["x"]``)."""
    import json

    return json.dumps(to_plain(value), sort_keys=True)


def to_plain(value: Any) -> Any:
    """Go values -> plain Python data, as kubectl prints the result (integral floats print as ints)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict or isinstance(value, dict):
        return {k: v if type(v) in PLAIN_AS_IS else to_plain(v) for k, v in value.items()}
    if kind is Slice:
        return [v if type(v) in PLAIN_AS_IS else to_plain(v) for v in value.items()]
    if isinstance(value, float):
        printed = _printed_integer(value)  # as kubectl prints the result: an integral float without exponent
        return value if printed is None else printed
    return value


ABSENT = object()


class Positions:
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
            if value is ABSENT:
                continue
            t = go_type(value)
            if t == "map" or t == "slice":
                self.usable = False
                return
            self.first.setdefault((t, value), i)

    def index(self, value: Any) -> int:
        """The first position of ``value``, -1 if absent; ``usable`` must be true and ``value`` comparable."""
        return self.first.get((go_type(value), value), -1)


class Swapper:
    """A sequence of ``n`` items known only by how to swap two of them (what ``sort.SliceStable`` needs)."""

    __slots__ = ("n", "swap")

    def __init__(self, n: int, swap: Callable[[int, int], None]) -> None:
        self.n, self.swap = n, swap

    def __len__(self) -> int:
        return self.n


def comparable(value: Any) -> bool:
    t = go_type(value)
    return t != "map" and t != "slice"


def stable_sort(data: Slice, less: Callable[[int, int], bool]) -> None:
    """Go's ``sort.SliceStable``, step for step (the order kubectl gets also for inconsistent ``less``).

    Long because it is one port: Go's ``insertionSort``, ``symMerge``, ``rotate`` and ``swapRange`` as nested
    functions, kept together so that they read beside Go's ``sort/zsortfunc.go``.
    """

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
