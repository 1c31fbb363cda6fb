"""Hypothesis strategies for strategic merge patch cases: pod templates and patches to them.

The documents are realistic in shape (the fields a training job's pod template uses) and adversarial in
content: names come from alphabets of two to four values so that list items collide by merge key all the
time, and the patches use every directive kubectl knows:

* ``$patch: replace`` and ``$patch: delete`` on maps and as list items, and ``$patch: merge`` and unknown
  ``$patch`` values, which kubectl rejects;
* ``$retainKeys`` on volumes (a ``merge,retainKeys`` list) and elsewhere, valid and invalid;
* ``$deleteFromPrimitiveList/<field>`` on finalizers, args, command and hostnames;
* ``$setElementOrder/<field>`` on merge lists and finalizers, consistent and inconsistent with the patch's
  own list;
* ``null`` to delete keys, also inside new list items and new maps;
* duplicate merge keys, merge keys of mixed types (``80``, ``80.0``, ``"80"``), missing merge keys,
  non-map items in merge lists, mixed-type primitive lists, fields the API does not have, and values of
  the wrong JSON type.

Everything is driven by a small description of the API (:data:`POD_TEMPLATE_SPEC`), so each field is
generated the way kubectl treats it: a merge list by its merge key, an atomic list as a whole, a map of
strings key by key.

The generators take their choices from a :class:`Source`: a seeded :class:`random.Random` for bulk runs
(:func:`random_cases`), or bytes that Hypothesis draws (:func:`smp_examples`, :func:`originals`,
:func:`patches`), which Hypothesis shrinks toward simpler documents: the zero choice is the first value
and turns rare features off.

One patch comes with several originals (:func:`make_example`), because kubectl applies one patch to a
whole List in one process.

Two things are never generated, because kubectl's own result is not a function of its input there:

* A patch with both ``<field>`` and ``$deleteFromPrimitiveList/<field>``, unless the field is a merged
  list (``finalizers``) and both are lists with no value in common. Go visits the keys of a map in random
  order, and the order can decide the result: with a value in both lists, it is kept or not; with a
  ``null`` or a value of the wrong type on either side, there is an error or not. For an atomic list
  (``args``) it can decide even when the patch is well formed: the delete list fails on an original
  list of numbers (``list element types are not identical``) only if it comes before the field that
  replaces that list; kubectl rejected such a case in 89 of 100 runs.
* Integers outside int64 and non-finite floats (not numbers kubectl can hold).

And one thing is not generated because kubectl's result depends on what the Kubernetes schema does not say,
whether the Go field is a pointer: a list on both sides of a field the schema types as an object or a
scalar, and ``$setElementOrder/`` naming such a field. kubectl rejects these for non-pointer fields
(``metadata``, ``resources``) and replaces the value for pointer fields (``affinity``, ``valueFrom``); the
engine always rejects. ``tests/test_smp_kubectl.py`` pins both outcomes with hand-written cases.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from hypothesis import strategies as st

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
SET_ORDER = "$setElementOrder/"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"

# --------------------------------------------------------------------------------------------------------
# A description of the fields generated, with how kubectl merges each.
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scalar:
    """A string, number or boolean field.

    Attributes:
        values: The values drawn (few, so that patches often set what is there already).
    """

    values: tuple


@dataclass(frozen=True)
class StringMap:
    """A map merged key by key (``labels``, ``nodeSelector``, ``resources.limits``).

    Attributes:
        keys: The keys drawn.
        values: The values drawn.
    """

    keys: tuple
    values: tuple


@dataclass(frozen=True, eq=False)
class Struct:
    """An object of a known type, merged field by field.

    Attributes:
        fields: Field name to schema.
        odds: Field name to ``(per mille of originals, per mille of patches)`` that have the field;
            ``default_odds`` for the fields not named.
        default_odds: The odds of the fields not in ``odds``.
        one_of: Fields of which a realistic original has exactly one (a volume's sources).
        retain_keys: Whether the object is an item of a ``merge,retainKeys`` list.
    """

    fields: dict
    odds: dict = field(default_factory=dict)
    default_odds: tuple = (350, 250)
    one_of: tuple = ()
    retain_keys: bool = False


@dataclass(frozen=True, eq=False)
class MergeList:
    """A list of objects merged by a merge key.

    Attributes:
        key: The merge key field.
        item: The schema of an item; the merge key is generated here, not from ``item``.
        key_values: The merge key values usually drawn.
        odd_key_values: Merge key values of other JSON types (or ``null``), drawn seldom.
        duplicate_odds: Per mille of originals whose list may repeat a merge key.
    """

    key: str
    item: Struct
    key_values: tuple
    odd_key_values: tuple = ()
    duplicate_odds: int = 60


@dataclass(frozen=True, eq=False)
class AtomicList:
    """A list replaced as a whole (``tolerations``, the ``items`` of a configMap volume)."""

    item: Any


@dataclass(frozen=True)
class PrimitiveList:
    """A list of strings: merged as a set (``finalizers``) or atomic (``args``, ``command``).

    Attributes:
        values: The values drawn.
        merge: Whether kubectl merges the list (patch strategy ``merge``); otherwise it replaces it.
    """

    values: tuple
    merge: bool = False


@dataclass(frozen=True)
class Unknown:
    """A field the API does not have: kubectl cannot merge a map or a list under it, and fails."""


Schema = Union[Scalar, StringMap, Struct, MergeList, AtomicList, PrimitiveList, Unknown]

QUANTITIES = ("1", "2", "500m", "8Gi", "512Mi", "0")
RESOURCES = StringMap(("cpu", "memory", "nvidia.com/gpu", "ephemeral-storage"), QUANTITIES)
VOLUME_NAMES = ("data", "dshm", "cache")

ENV = Struct(
    {
        "value": Scalar(("1", "0", "", "y", "true")),
        "valueFrom": Struct(
            {
                "fieldRef": Struct({"fieldPath": Scalar(("metadata.name", "status.podIP"))}),
                "secretKeyRef": Struct({"name": Scalar(("s1", "s2")), "key": Scalar(("k", "token"))}),
                "configMapKeyRef": Struct({"name": Scalar(("c1",)), "key": Scalar(("k",))}),
                "resourceFieldRef": Struct({"resource": Scalar(("limits.cpu", "requests.memory"))}),
            },
            one_of=("fieldRef", "secretKeyRef", "configMapKeyRef", "resourceFieldRef"),
            default_odds=(0, 250),
        ),
    },
    odds={"value": (700, 500), "valueFrom": (250, 250)},
)

PORT = Struct(
    {
        "protocol": Scalar(("TCP", "UDP", "SCTP")),
        "name": Scalar(("http", "dist")),
        "hostPort": Scalar((80, 29500)),
    },
    odds={"protocol": (500, 400), "hostPort": (100, 100)},
)

VOLUME_MOUNT = Struct(
    {
        "name": Scalar(VOLUME_NAMES),
        "readOnly": Scalar((True, False)),
        "subPath": Scalar(("a", "")),
    },
    odds={"name": (900, 400)},
)

CONTAINER = Struct(
    {
        "image": Scalar(("pytorch:2.4", "pytorch:2.5", "busybox")),
        "args": PrimitiveList(("--epochs", "10", "--lr", "0.1")),
        "command": PrimitiveList(("python", "-m", "torchrun")),
        "env": MergeList("name", ENV, ("A", "B", "C", "NCCL_DEBUG"), odd_key_values=(1, "")),
        # The same port for TCP and UDP is common (DNS), so originals repeat ports often.
        "ports": MergeList(
            "containerPort", PORT, (80, 8080, 29500), odd_key_values=("80", 80.0, 80.5), duplicate_odds=300
        ),
        "volumeMounts": MergeList("mountPath", VOLUME_MOUNT, ("/data", "/dev/shm", "/cache")),
        "resources": Struct({"limits": RESOURCES, "requests": RESOURCES}, default_odds=(600, 500)),
        "imagePullPolicy": Scalar(("Always", "IfNotPresent")),
        "stdin": Scalar((True, 1)),
    },
    odds={
        "image": (800, 300),
        "env": (500, 300),
        "resources": (400, 250),
        "imagePullPolicy": (50, 30),
        "stdin": (20, 20),
    },
)

VOLUME = Struct(
    {
        "emptyDir": Struct({"medium": Scalar(("Memory", "")), "sizeLimit": Scalar(QUANTITIES)}),
        "configMap": Struct(
            {
                "name": Scalar(("cm1", "cm2")),
                "defaultMode": Scalar((420, 511)),
                "items": AtomicList(Struct({"key": Scalar(("k",)), "path": Scalar(("p", "q"))})),
            }
        ),
        "secret": Struct({"secretName": Scalar(("s1", "s2")), "defaultMode": Scalar((256,))}),
        "hostPath": Struct({"path": Scalar(("/mnt", "/dev/shm")), "type": Scalar(("Directory", ""))}),
    },
    one_of=("emptyDir", "configMap", "secret", "hostPath"),
    default_odds=(0, 350),
    retain_keys=True,
)

TOLERATION = Struct(
    {
        "key": Scalar(("nvidia.com/gpu", "spot")),
        "operator": Scalar(("Exists", "Equal")),
        "value": Scalar(("true", "")),
        "effect": Scalar(("NoSchedule", "NoExecute")),
        "tolerationSeconds": Scalar((30, 0)),
    },
    default_odds=(500, 500),
)

TOPOLOGY_SPREAD = Struct(
    {
        "maxSkew": Scalar((1, 2)),
        "whenUnsatisfiable": Scalar(("DoNotSchedule", "ScheduleAnyway")),
        "labelSelector": Struct({"matchLabels": StringMap(("app", "role"), ("a", "b"))}, default_odds=(800, 500)),
    },
    default_odds=(500, 350),
)

POD_SPEC = Struct(
    {
        "containers": MergeList("name", CONTAINER, ("primary", "sidecar", "init"), odd_key_values=(None, 3)),
        "initContainers": MergeList("name", CONTAINER, ("init", "primary")),
        "volumes": MergeList("name", VOLUME, VOLUME_NAMES),
        "tolerations": AtomicList(TOLERATION),
        "nodeSelector": StringMap(("pool", "gpu", "kubernetes.io/arch"), ("a", "b", "amd64")),
        "imagePullSecrets": MergeList("name", Struct({}), ("regcred", "other")),
        "hostAliases": MergeList(
            "ip",
            Struct({"hostnames": PrimitiveList(("h1", "h2", "h3"))}, default_odds=(900, 600)),
            ("10.0.0.1", "10.0.0.2"),
        ),
        "topologySpreadConstraints": MergeList("topologyKey", TOPOLOGY_SPREAD, ("zone", "kubernetes.io/hostname")),
        "restartPolicy": Scalar(("Never", "OnFailure")),
        "terminationGracePeriodSeconds": Scalar((30, 0, 1.5)),
        "serviceAccountName": Scalar(("default", "trainer")),
        "hostNetwork": Scalar((True, False)),
        "unknownField": Unknown(),
    },
    odds={
        "containers": (900, 600),
        "volumes": (400, 200),
        "unknownField": (30, 30),
        "serviceAccountName": (100, 50),
        "hostNetwork": (50, 50),
    },
    default_odds=(250, 120),
)

METADATA = Struct(
    {
        "labels": StringMap(("app", "team", "kf/role", "x"), ("a", "b", "", "y", "é")),
        "annotations": StringMap(("note", "kf/profile"), ("a", "b")),
        "finalizers": PrimitiveList(("a", "b", "c", "kf/cleanup"), merge=True),
        "name": Scalar(("pod", "other")),
    },
    odds={"labels": (600, 400), "finalizers": (400, 300), "name": (50, 20)},
)

POD_TEMPLATE_SPEC = Struct({"metadata": METADATA, "spec": POD_SPEC}, odds={"metadata": (600, 400), "spec": (950, 800)})

#: The schema of each kind of case the strategies can generate.
SCHEMAS = {"PodTemplateSpec": POD_TEMPLATE_SPEC, "PodSpec": POD_SPEC, "Container": CONTAINER}

#: The name of every Container case's original and patch: kubectl can only patch a container as an item
#: of a pod's container list, which is faithful only when both carry the same name (see
#: ``smp_oracle.wrap``).
CONTAINER_NAME = "primary"

# --------------------------------------------------------------------------------------------------------
# Sources of choices.
# --------------------------------------------------------------------------------------------------------


class Source(Protocol):
    """Where the generators get their choices from."""

    def below(self, n: int) -> int:
        """Return a choice in ``range(n)``; ``n`` is at least 1."""


class RandomSource:
    """Choices from a :class:`random.Random`: fast, and each seed gives a new example."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def below(self, n: int) -> int:
        return self.rng.randrange(n)


class BytesSource:
    """Choices read from a byte string that Hypothesis draws.

    A whole example comes from one ``st.binary`` draw rather than from a Hypothesis draw per choice:
    drawing per choice made generation several times slower, and Hypothesis's mutator, which copies
    parts of earlier examples into new ones, then made most examples repeat earlier ones. Every choice
    is 0 once the bytes run out, and 0 is the simplest choice everywhere (the first value, the rare
    feature off), so Hypothesis still shrinks an example by zeroing and cutting bytes.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def below(self, n: int) -> int:
        if n <= 1:
            return 0
        width = 1 if n <= 256 else 2
        chunk = self.data[self.pos : self.pos + width]
        self.pos += width
        return int.from_bytes(chunk, "big") % n if len(chunk) == width else 0


def _chance(src: Source, per_mille: int) -> bool:
    """Return True with probability ``per_mille``/1000; the zero choice gives False."""
    return src.below(1000) >= 1000 - per_mille


def _pick(src: Source, values: Sequence) -> Any:
    """Choose one of ``values``; the zero choice gives the first."""
    return values[src.below(len(values))]


def _some(src: Source, values: Sequence, max_size: int, min_size: int = 0, unique: bool = True) -> list:
    """Choose a list of ``min_size`` to ``max_size`` of ``values`` (without repeats if ``unique``)."""
    pool = list(values)
    size = min_size + src.below(max_size - min_size + 1)
    out = []
    while len(out) < size and pool:
        index = src.below(len(pool))
        out.append(pool.pop(index) if unique else pool[index])
    return out


def _key_of(value: Any) -> tuple:
    """Return a hashable key that keeps apart what JSON keeps apart (``1``, ``1.0``, ``true``)."""
    return (type(value).__name__, repr(value))


def _unique(values: list) -> list:
    seen, out = set(), []
    for v in values:
        if _key_of(v) not in seen:
            seen.add(_key_of(v))
            out.append(v)
    return out


def _merge_key(src: Source, schema: MergeList) -> Any:
    """Draw a merge key value: one of the usual ones, seldom one of another JSON type."""
    if schema.odd_key_values and _chance(src, 30):
        return _pick(src, schema.odd_key_values)
    return _pick(src, schema.key_values)


def _wrong_type(src: Source, schema: Schema, *, lists: bool = True) -> Any:
    """Draw a value of another JSON type than ``schema`` has (no list for an object with ``lists=False``)."""
    if isinstance(schema, Struct) and not lists:
        return _pick(src, ("x", 0))
    if isinstance(schema, (Struct, StringMap)):
        return _pick(src, (["x"], "x", [{"name": "primary"}]))
    if isinstance(schema, (MergeList, AtomicList, PrimitiveList)):
        key = schema.key if isinstance(schema, MergeList) else "name"
        return _pick(src, ({key: "primary"}, "x", 0))
    return _pick(src, (["x"], {"a": "b"}))


# --------------------------------------------------------------------------------------------------------
# Originals.
# --------------------------------------------------------------------------------------------------------


def _original(src: Source, schema: Schema) -> Any:
    """Draw a value of ``schema`` as it may stand in a pod template that is patched."""
    if not isinstance(schema, Scalar) and _chance(src, 20):
        return _wrong_type(src, schema, lists=False)
    if isinstance(schema, Scalar):
        return _pick(src, schema.values)
    if isinstance(schema, Unknown):
        return _pick(src, ({"a": "b"}, ["a"], "a"))
    if isinstance(schema, StringMap):
        return {k: _pick(src, schema.values) for k in _some(src, schema.keys, 3)}
    if isinstance(schema, PrimitiveList):
        values = _some(src, schema.values, 3, unique=not _chance(src, 80))
        if _chance(src, 30):
            values.append(_pick(src, (1, {"a": 1})))  # mixed types
        return values
    if isinstance(schema, AtomicList):
        return [_original(src, schema.item) for _ in range(src.below(3))]
    if isinstance(schema, MergeList):
        return _original_merge_list(src, schema)
    return _original_struct(src, schema)


def _original_struct(src: Source, schema: Struct) -> dict:
    chosen = [
        name
        for name in schema.fields
        if name not in schema.one_of and _chance(src, schema.odds.get(name, schema.default_odds)[0])
    ]
    if schema.one_of and not _chance(src, 100):
        count = 2 if _chance(src, 30) else 1
        chosen += _some(src, schema.one_of, count, min_size=count)
    return {name: _original(src, schema.fields[name]) for name in chosen}


def _original_merge_list(src: Source, schema: MergeList) -> list:
    duplicates = _chance(src, schema.duplicate_odds)
    keys: list = []
    for _ in range(1 + src.below(3)):
        key = _merge_key(src, schema)
        if duplicates or _key_of(key) not in {_key_of(k) for k in keys}:
            keys.append(key)
    items: list = []
    for key in keys:
        item = _original_struct(src, schema.item)
        item[schema.key] = key
        items.append(item)
    if _chance(src, 350):
        # An item without its merge key: kubectl fails when a patch merges into this list.
        items.insert(src.below(len(items) + 1), _original_struct(src, schema.item))
    if _chance(src, 20):
        items.append(_pick(src, ("x", 1)))  # not a map
    return items


# --------------------------------------------------------------------------------------------------------
# Patches.
# --------------------------------------------------------------------------------------------------------


def _map_directive(src: Source) -> dict:
    """Draw a ``$patch`` for a map, or nothing: mostly valid, seldom one kubectl rejects."""
    if _chance(src, 40):
        return {DIRECTIVE: "replace"}
    if _chance(src, 25):
        return {DIRECTIVE: "delete"}
    if _chance(src, 40):
        return {DIRECTIVE: _pick(src, ("merge", "Replace", "bogus"))}
    return {}


def _patch(src: Source, schema: Schema) -> Any:
    """Draw the patch of a field of ``schema`` (never ``null`` itself; the caller decides that)."""
    if not isinstance(schema, Scalar) and _chance(src, 10):
        return _wrong_type(src, schema)
    if isinstance(schema, Scalar):
        return _pick(src, schema.values)
    if isinstance(schema, Unknown):
        return _pick(src, ({"b": "c"}, ["b"], "b", {DIRECTIVE: "delete"}))
    if isinstance(schema, StringMap):
        keys = _some(src, schema.keys, 3, min_size=1)
        patch = {k: None if _chance(src, 200) else _pick(src, schema.values) for k in keys}
        patch.update(_map_directive(src))
        return patch
    if isinstance(schema, PrimitiveList):
        values = _some(src, schema.values, 3, unique=not _chance(src, 60))
        if _chance(src, 8):
            values.append(_pick(src, (1, {"a": 1}, {DIRECTIVE: "replace"})))
        return values
    if isinstance(schema, AtomicList):
        return [_original(src, schema.item) for _ in range(src.below(3))]
    if isinstance(schema, MergeList):
        return _patch_merge_list(src, schema)
    return _patch_struct(src, schema)


def _patch_merge_list(src: Source, schema: MergeList) -> list:
    items: list = []
    for _ in range(src.below(4)):
        if _chance(src, 25):
            items.append(_pick(src, ({DIRECTIVE: "merge"}, "primary", 1)))
        elif _chance(src, 30):
            items.append(_patch_struct(src, schema.item))  # no merge key
        elif _chance(src, 60):
            items.append({DIRECTIVE: "replace"})
        elif _chance(src, 120):
            items.append({schema.key: _merge_key(src, schema), DIRECTIVE: "delete"})
        else:
            item = _patch_struct(src, schema.item)
            item[schema.key] = _merge_key(src, schema)
            items.append(item)
    return items


def _set_element_order(src: Source, schema: Schema, patch_list: Any) -> Any:
    """Draw a ``$setElementOrder`` list for a field whose patch list is ``patch_list`` (if any).

    Mostly consistent with the patch (the patch's items in the patch's order, others anywhere between);
    seldom a permutation that breaks the patch's order, a list that leaves a patch item out, or not a list
    of the right items at all.
    """
    if _chance(src, 25):
        return _pick(src, ("x", None, [1], ["x"]))
    items = patch_list if isinstance(patch_list, list) else []
    if isinstance(schema, MergeList):
        vocabulary = schema.key_values
        in_patch = [
            item[schema.key]
            for item in items
            if isinstance(item, dict) and schema.key in item and item.get(DIRECTIVE) != "delete"
        ]
    else:
        vocabulary = schema.values
        in_patch = [v for v in items if isinstance(v, str)]
    in_patch = _unique(in_patch)
    if len(in_patch) >= 2 and _chance(src, 250):
        order = _some(src, in_patch, len(in_patch), min_size=len(in_patch))  # a permutation
    elif in_patch and _chance(src, 80):
        order = in_patch[:-1]
    else:
        order = list(in_patch)
        extra = [v for v in vocabulary if _key_of(v) not in {_key_of(o) for o in order}]
        for value in _some(src, extra, 2):
            order.insert(src.below(len(order) + 1), value)
    if order and _chance(src, 30):
        order.insert(src.below(len(order) + 1), _pick(src, order))  # an item twice
    return [{schema.key: v} if isinstance(schema, MergeList) else v for v in order]


def _delete_list(src: Source, schema: PrimitiveList, patch: dict, name: str) -> Any:
    """Draw a ``$deleteFromPrimitiveList`` value that kubectl applies alike whatever the key order."""
    if name not in patch and _chance(src, 80):
        return _pick(src, (None, "a", [1]))
    in_patch = patch.get(name)
    taken = {_key_of(v) for v in in_patch} if isinstance(in_patch, list) else set()
    free = [v for v in schema.values if _key_of(v) not in taken]
    return _some(src, free, 2, min_size=1, unique=False) if free else []


def _retain_keys(src: Source, schema: Struct, patch: dict) -> Any:
    """Draw a ``$retainKeys`` list: usually every key the patch sets and maybe more; seldom invalid."""
    if _chance(src, 50):
        return _pick(src, ("name", None, [1]))
    keys = [k for k in patch if not k.startswith("$")]
    if keys and _chance(src, 120):
        keys.remove(_pick(src, keys))  # leaves out a key the patch sets: rejected
    extra = [k for k in (*schema.fields, "name") if k not in keys]
    return keys + _some(src, extra, 2)


def _patch_struct(src: Source, schema: Struct) -> dict:
    patch: dict = {}
    for name, sub in schema.fields.items():
        if _chance(src, schema.odds.get(name, schema.default_odds)[1]):
            patch[name] = None if _chance(src, 70) else _patch(src, sub)
    for name, sub in schema.fields.items():
        # Directives mostly for the lists the patch sets, seldom for others.
        per_mille = 150 if name in patch else 10
        ordered = isinstance(sub, MergeList) or (isinstance(sub, PrimitiveList) and sub.merge)
        if ordered and _chance(src, per_mille):
            patch[SET_ORDER + name] = _set_element_order(src, sub, patch.get(name))
        # Both keys only for a merged list set to a list: otherwise which key Go visits first can
        # decide between an error and a result (see the module docstring).
        merged_list = isinstance(sub, PrimitiveList) and sub.merge
        deletable = name not in patch or (merged_list and isinstance(patch[name], list))
        if isinstance(sub, PrimitiveList) and deletable and _chance(src, per_mille):
            patch[DELETE_PRIMITIVE + name] = _delete_list(src, sub, patch, name)
    if _chance(src, 250 if schema.retain_keys else 5):
        patch[RETAIN_KEYS] = _retain_keys(src, schema, patch)
    if _chance(src, 15):
        key, value = _odd_directive(src, schema)
        if key.split("/")[-1] not in patch:
            patch[key] = value
    patch.update(_map_directive(src))
    return patch


def _odd_directive(src: Source, schema: Struct) -> tuple[str, Any]:
    """Draw a key that looks like a directive but does not fit the struct (for a field the patch lacks)."""
    names = list(schema.fields) or ["name"]
    # $setElementOrder only for fields that are lists or maps of strings (see the module docstring)
    orderable = [n for n, f in schema.fields.items() if not isinstance(f, (Struct, Scalar, Unknown))] or names[:0]
    return _pick(
        src,
        (
            ("$bogus", "x"),
            (SET_ORDER + _pick(src, orderable or ["noSuchField"]), ["x"]),
            (DELETE_PRIMITIVE + _pick(src, names), ["x"]),
            (SET_ORDER + "noSuchField", [{"name": "x"}]),
            (DELETE_PRIMITIVE + "noSuchField", ["x"]),
        ),
    )


# --------------------------------------------------------------------------------------------------------
# Generating examples.
# --------------------------------------------------------------------------------------------------------

#: Bytes of choices for one :func:`smp_examples` example; an example that needs more gets zeros after.
EXAMPLE_BYTES = 4096


def make_original(src: Source, kind: str = "PodTemplateSpec") -> dict:
    """Generate an original document of ``kind`` (a key of :data:`SCHEMAS`)."""
    original = _original_struct(src, SCHEMAS[kind])
    if kind == "Container":
        original["name"] = CONTAINER_NAME
    return original


def make_patch(src: Source, kind: str = "PodTemplateSpec") -> dict:
    """Generate a strategic merge patch of ``kind`` (a key of :data:`SCHEMAS`).

    A Container patch never has a ``$patch`` of its own (see :data:`CONTAINER_NAME`).
    """
    patch = _patch_struct(src, SCHEMAS[kind])
    if kind == "Container":
        patch.pop(DIRECTIVE, None)
        patch["name"] = CONTAINER_NAME
    return patch


def make_example(
    src: Source, kind: str = "PodTemplateSpec", min_originals: int = 8, max_originals: int = 10
) -> tuple[dict, list[dict]]:
    """Generate one patch and several originals to apply it to (one kubectl process for them all).

    Returns:
        ``(patch, [original, ...])``.
    """
    patch = make_patch(src, kind)
    count = min_originals + src.below(max_originals - min_originals + 1)
    return patch, [make_original(src, kind) for _ in range(count)]


def random_cases(
    count: int, seed: int, kind: str = "PodTemplateSpec", per_patch: int = 10
) -> list[tuple[dict, dict]]:
    """Generate ``count`` ``(original, patch)`` cases, ``per_patch`` in a row sharing a patch.

    The same arguments give the same cases.
    """
    src = RandomSource(random.Random(seed))
    cases: list[tuple[dict, dict]] = []
    while len(cases) < count:
        patch, originals = make_example(src, kind, per_patch, per_patch)
        cases.extend((original, patch) for original in originals)
    return cases[:count]


def _from_bytes(size: int, make: Callable[[Source], Any]) -> st.SearchStrategy:
    return st.binary(min_size=size, max_size=size).map(lambda data: make(BytesSource(data)))


def originals(kind: str = "PodTemplateSpec") -> st.SearchStrategy[dict]:
    """Return a Hypothesis strategy for original documents of ``kind`` (see :func:`make_original`)."""
    return _from_bytes(1024, lambda src: make_original(src, kind))


def patches(kind: str = "PodTemplateSpec") -> st.SearchStrategy[dict]:
    """Return a Hypothesis strategy for strategic merge patches of ``kind`` (see :func:`make_patch`)."""
    return _from_bytes(1024, lambda src: make_patch(src, kind))


def smp_examples(
    kind: str = "PodTemplateSpec", min_originals: int = 8, max_originals: int = 10
) -> st.SearchStrategy[tuple[dict, list[dict]]]:
    """Return a Hypothesis strategy for ``(patch, [original, ...])`` examples (see :func:`make_example`)."""
    return _from_bytes(EXAMPLE_BYTES, lambda src: make_example(src, kind, min_originals, max_originals))
