"""The Kubernetes schema and its patch metadata, read from the JSON Schemas that kubernetes-validate ships.

One folder per Kubernetes minor version (``v1.32.0-local``) holds ``_definitions.json``: every API type, its
properties, and on list and map fields the patch metadata that Kubernetes generates from its Go struct tags
(``x-kubernetes-patch-strategy``, ``x-kubernetes-patch-merge-key``). The strategic merge engine, the
validator and the printers read it from here; nothing in kfdefaults lists Kubernetes fields by hand.

The file is about 1.3 MB. It is read on first use only (``import kfdefaults`` does not touch it), once per
version per process, and without importing the kubernetes-validate package itself. What merging reads of
it (110 types in 40 KB for a PodTemplate) can be computed once with :func:`reduced_definitions` and handed
back in later processes with :func:`preload` (kfdefaults keeps it in its cache), so that merging and
printing need not read the whole file.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
from typing import Any, NamedTuple

from ..errors import SchemaLookupError

DEFAULT_KUBERNETES_VERSION = "1.32"
"""The Kubernetes minor version whose schema is used unless one is asked for; kubectl v1.32 is the reference."""

_CORE_PREFIX = "io.k8s.api.core.v1."
_STRATEGY = "x-kubernetes-patch-strategy"
_MERGE_KEY = "x-kubernetes-patch-merge-key"


@functools.lru_cache(maxsize=1)
def _schema_root() -> str:
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("kubernetes-validate is not installed: run `pip install kubernetes-validate`")
    return os.path.join(list(spec.submodule_search_locations)[0], "kubernetes-json-schema")


@functools.lru_cache(maxsize=1)
def schema_package_version() -> str:
    """The version of the installed kubernetes-validate (read from its files, without importing it)."""
    try:
        with open(os.path.join(os.path.dirname(_schema_root()), "version.py"), encoding="utf-8") as f:
            m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", f.read())
        return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"


@functools.lru_cache(maxsize=1)
def available_versions() -> tuple[str, ...]:
    """Kubernetes minor versions with a schema on this machine, oldest first (``("1.25", ..., "1.37")``)."""
    found = []
    for name in os.listdir(_schema_root()):
        m = re.fullmatch(r"v(\d+)\.(\d+)\.0-local", name)
        if m:
            found.append((int(m.group(1)), int(m.group(2))))
    return tuple(f"{a}.{b}" for a, b in sorted(found))


def normalize_version(version: str | None) -> str:
    """Turn ``None``, ``"v1.32"``, ``"1.32.4"`` or ``"1.32"`` into ``"1.32"``.

    Raises:
        ValueError: the version has no schema in the installed kubernetes-validate.
    """
    if version is None:
        return DEFAULT_KUBERNETES_VERSION
    m = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", str(version).strip())
    minor = f"{m.group(1)}.{m.group(2)}" if m else str(version)
    if minor not in available_versions():
        raise ValueError(
            f"no Kubernetes schema for version {version!r}; available: {', '.join(available_versions())}"
        )
    return minor


@functools.lru_cache(maxsize=None)
def definitions(version: str | None = None, *, strict: bool = False) -> dict[str, Any]:
    """All type definitions of one Kubernetes version, keyed by their full name.

    Args:
        version: Kubernetes minor version such as ``"1.32"``; ``None`` for the default.
        strict: Read the strict variant, whose objects carry ``additionalProperties: false``.

    Returns:
        ``{"io.k8s.api.core.v1.PodSpec": {...JSON Schema...}, ...}``.
    """
    minor = normalize_version(version)
    folder = f"v{minor}.0-local" + ("-strict" if strict else "")
    with open(os.path.join(_schema_root(), folder, "_definitions.json"), "rb") as f:
        return json.load(f)["$defs"]


_PATCH_KEYS = {"$ref", "items", "additionalProperties", "properties", "type", "oneOf", "allOf", "anyOf", _STRATEGY, _MERGE_KEY}


def _strip(node: Any, *, property_names: bool = False) -> Any:
    """A schema node without what merging and printing never read (descriptions, validations, ...)."""
    if isinstance(node, dict):
        if property_names:
            return {k: _strip(v) for k, v in node.items()}
        return {k: _strip(v, property_names=(k == "properties")) for k, v in node.items() if k in _PATCH_KEYS}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


_POD_TEMPLATE = _CORE_PREFIX + "PodTemplate"


def _references(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.add(_ref_name(v))
            else:
                _references(v, out)
    elif isinstance(node, list):
        for v in node:
            _references(v, out)


_PRELOADED: dict[tuple[str, str | None], dict[str, Any]] = {}


def preload(version: str | None, definitions_: dict[str, Any], root: str | None = _POD_TEMPLATE) -> None:
    """Hand this process the reduced definitions of ``root`` that :func:`reduced_definitions` computed earlier,
    so that :func:`patch_definitions` need not read the schema file.

    Args:
        version: Kubernetes minor version they were computed for.
        definitions_: What :func:`reduced_definitions` returned for the same version and root, for the same
            kubernetes-validate (:func:`schema_package_version`); the caller keys its store by all three.
        root: The definition they are reachable from.
    """
    key = (normalize_version(version), root)
    if key not in _PRELOADED and definitions_:
        _PRELOADED[key] = definitions_
        patch_definitions.cache_clear()


@functools.lru_cache(maxsize=None)
def patch_definitions(version: str | None = None, root: str | None = _POD_TEMPLATE) -> dict[str, Any]:
    """The type definitions reachable from ``root`` (all of them for ``None``), reduced to what merging reads:
    what :func:`preload` handed over, else :func:`reduced_definitions`."""
    minor = normalize_version(version)
    preloaded = _PRELOADED.get((minor, root))
    return preloaded if preloaded is not None else reduced_definitions(minor, root)


def reduced_definitions(version: str | None = None, root: str | None = _POD_TEMPLATE) -> dict[str, Any]:
    """Compute the type definitions reachable from ``root`` (all for ``None``), reduced to types, references
    and patch metadata: for a PodTemplate, 110 types in 40 KB out of 638 in 1.3 MB.

    Returns:
        ``{"io.k8s.api.core.v1.PodSpec": {...}, ...}``: plain JSON data, sorted by name.
    """
    minor = normalize_version(version)
    full = definitions(minor, strict=True)  # the validator reads the strict variant too: one file, read once
    names, todo = set(), [root] if root else list(full)
    while todo:
        name = todo.pop()
        if name in names or name not in full:
            continue
        names.add(name)
        found: set[str] = set()
        _references(full[name], found)
        todo.extend(found)
    return {name: _strip(full[name]) for name in sorted(names)}


def definition_name(kind: str, version: str | None = None) -> str:
    """The full definition name of a kind: ``"PodSpec"`` -> ``"io.k8s.api.core.v1.PodSpec"``.

    Core v1 types win over same-named types of other groups; a full name is accepted as is.

    Raises:
        ValueError: no type of that name.
    """
    for full in (kind, _CORE_PREFIX + kind):
        if full in patch_definitions(version):
            return full
    defs = patch_definitions(version, None)
    if kind in defs:
        return kind
    if _CORE_PREFIX + kind in defs:
        return _CORE_PREFIX + kind
    matches = sorted(name for name in defs if name.rsplit(".", 1)[-1] == kind)
    if not matches:
        raise ValueError(f"unknown Kubernetes kind {kind!r}")
    return matches[0]


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _types_of(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    if t is None:
        return set()
    return {t} if isinstance(t, str) else set(t)


class PatchMeta(NamedTuple):
    """Patch metadata of one field.

    Attributes:
        strategies: The field's patch strategies (``("merge", "retainKeys")``), ``("",)`` when it has none,
            exactly as Go's ``strings.Split(tag, ",")`` gives them.
        merge_key: The patch merge key (``"name"``), ``""`` when none.
    """

    strategies: tuple[str, ...]
    merge_key: str


class SchemaType:
    """A schema node seen the way apimachinery's ``PatchMetaFromStruct`` sees a Go type.

    ``kind`` is ``"struct"`` (an object with properties), ``"map"`` (an object with free keys), ``"slice"``
    or ``"scalar"``. A field given a list on both sides of a patch where the schema has an object or a scalar is
    rejected, as kubectl rejects it for non-pointer Go fields (``metadata``, ``resources``, ``image``). For
    pointer fields (``affinity``, ``securityContext``) kubectl replaces the value instead; the schema does not
    say which fields are pointers, and rejecting is the safe reading.
    """

    __slots__ = ("_version", "kind", "name", "_props", "_items", "_values", "_cache")

    def __init__(self, version: str, schema: dict[str, Any], name: str) -> None:
        self._version = version
        self.name = name
        self._cache: dict[str, tuple[SchemaType, PatchMeta]] = {}
        self._props: dict[str, Any] | None = None
        self._items: dict[str, Any] | None = None
        self._values: dict[str, Any] | None = None
        types = _types_of(schema)
        if "properties" in schema:
            self.kind = "struct"
            self._props = schema["properties"]
        elif "items" in schema or "array" in types:
            self.kind = "slice"
            self._items = schema.get("items") or {}
        elif "additionalProperties" in schema or "object" in types:
            self.kind = "map"
            extra = schema.get("additionalProperties")
            self._values = extra if isinstance(extra, dict) else None
        else:
            self.kind = "scalar"

    def go_kind(self) -> str:
        """The Go reflect kind kubectl would name in its messages."""
        return {"scalar": "string"}.get(self.kind, self.kind)

    def lookup_struct(self, key: str) -> tuple[SchemaType, PatchMeta]:
        """The type and patch metadata of field ``key`` (apimachinery's ``LookupPatchMetadataForStruct``).

        The field is found by exact name first, then case-insensitively, as Go's encoding/json does.

        Raises:
            SchemaLookupError: this type has no fields, or no field of that name.
        """
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if self.kind != "struct":
            raise SchemaLookupError(
                f"merging an object in json but data type is not struct, instead is: {self.go_kind()}"
            )
        assert self._props is not None
        prop = self._props.get(key)
        if prop is None:
            folded = key.lower()
            for name, candidate in self._props.items():
                if len(name) == len(key) and name.lower() == folded:
                    prop = candidate
                    break
        if prop is None:
            raise SchemaLookupError(f"unable to find api field in struct {self.name} for the json field {key!r}")
        meta = PatchMeta(tuple(prop.get(_STRATEGY, "").split(",")), prop.get(_MERGE_KEY, ""))
        hit = (_resolve(self._version, prop), meta)
        self._cache[key] = hit
        return hit

    def items(self) -> SchemaType | None:
        """For a list: the type of its items."""
        return _resolve(self._version, self._items) if self._items is not None else None

    def map_values(self) -> SchemaType | None:
        """For a map with typed values (``resources.limits``): the type of its values."""
        return _resolve(self._version, self._values) if self._values is not None else None

    def property_types(self, key: str) -> set[str]:
        """For a struct: the JSON types its field ``key`` may have (``{"integer", "null"}``); empty if unknown."""
        if self._props is None or key not in self._props:
            return set()
        return _types_of(self._props[key])

    def field_names(self) -> tuple[str, ...]:
        """For a struct: the names of its fields, in schema order; empty for other kinds."""
        return tuple(self._props) if self._props is not None else ()

    def property(self, key: str) -> SchemaType | None:
        """For a struct: the type of field ``key`` (exact name), or ``None``."""
        if self._props is None or key not in self._props:
            return None
        return _resolve(self._version, self._props[key])

    def lookup_slice(self, key: str) -> tuple[SchemaType, PatchMeta]:
        """The element type and patch metadata of list field ``key`` (``LookupPatchMetadataForSlice``).

        Raises:
            SchemaLookupError: no such field, or the field is neither a list nor an object.
        """
        field_type, meta = self.lookup_struct(key)
        if field_type.kind == "slice":
            assert field_type._items is not None
            elem = _resolve(self._version, field_type._items)
            if elem.kind == "slice":
                raise SchemaLookupError("unexpected slice of slice")
            return elem, meta
        raise SchemaLookupError(f"expected slice or array type, but got: {self.go_kind()}")


def _resolve(version: str, schema: dict[str, Any]) -> SchemaType:
    ref = schema.get("$ref")
    if ref:
        return schema_type(_ref_name(ref), version)
    return SchemaType(version, schema, "")


@functools.lru_cache(maxsize=None)
def schema_type(name: str, version: str | None = None) -> SchemaType:
    """The :class:`SchemaType` of a definition (``"PodTemplateSpec"`` or a full name), cached.

    Raises:
        ValueError: unknown kind or version.
    """
    version = normalize_version(version)
    full = definition_name(name, version)
    defs = patch_definitions(version)
    node = defs[full] if full in defs else patch_definitions(version, None)[full]
    return SchemaType(version, node, full.rsplit(".", 1)[-1])
