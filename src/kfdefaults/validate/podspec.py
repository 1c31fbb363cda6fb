"""Checking a PodSpec fragment against the Kubernetes schema, in strict mode.

The rules come from the strict JSON Schemas that kubernetes-validate ships (:func:`kfdefaults.smp.schema.definitions`
with ``strict=True``), walked directly as dicts: no jsonschema import, no field names written here. A fragment is
a strategic merge patch, not a whole object, so:

* no field is required, and ``null`` is legal anywhere (it deletes what a lower layer set);
* the patch directives ``$patch``, ``$retainKeys``, ``$setElementOrder/FIELD`` and
  ``$deleteFromPrimitiveList/FIELD`` are legal where kubectl accepts them;
* everything else follows the schema: unknown fields, wrong types, integer ranges (``int32``/``int64``),
  resource quantities (apimachinery's grammar, :mod:`kfdefaults.k8s.quantity`) and enumerations;
* names follow the API server's rules (:mod:`kfdefaults.k8s.names`): container, volume and volume mount names are
  DNS-1123 labels, ``nodeSelector`` and ``matchLabels`` hold label keys and values, resource names are
  standard or extended resource names. :mod:`.metadata` checks the pod's labels and annotations.

The schemas carry no ``enum`` for core fields; the allowed values are read from the field's own description
("One of Always, Never, IfNotPresent.", "Valid operators are Exists and Equal."), see :mod:`.enums`.

Findings name list items by their patch merge key: ``pod_template.spec.containers[name=primary].env[name=FLAG].value``.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from ..errors import Finding
from ..k8s.names import (
    DNS1123_LABEL_RULE,
    QUALIFIED_NAME_RULE,
    container_resource_name_problem,
    dns1123_label_hint,
    env_var_name_problem,
    dns1123_label_problem,
    qualified_name_hint,
    qualified_name_problem,
    resource_value_problem,
)
from ..k8s.quantity import quantity_problem, quantity_value
from ..k8s.resources import is_fabric_device
from ..paths import Select, format_path, join
from ..read import Document
from ..smp.schema import definitions
from .enums import ENUM_EXTRA, enum_values
from .metadata import label_problems
from .schema_rules import (
    DNS_LABEL_FIELDS,
    ENV_VAR,
    INT_OR_STRING_DEF,
    INT_RANGES,
    LABEL_MAP_FIELDS,
    PATCH_DIRECTIVE_VALUES,
    POD_LEVEL_RESOURCES,
    POD_SPEC,
    QUANTITY_DEF,
    RESOURCE_OWNERS,
    RESOURCE_REQUIREMENTS,
    STANDARD_RESOURCES,
    TYPE_WORDS,
    matches_types,
    schema_types,
)
from .suggest import closest, describe, unknown_key_message

PathT = tuple

EMPTY_DIR_DEF = "io.k8s.api.core.v1.EmptyDirVolumeSource"
"""Its ``sizeLimit`` may be ``auto``: the memory request of the container that mounts the volume."""

# --- the walker ---------------------------------------------------------------------------------------------


class FragmentChecker:
    """Checks values against one Kubernetes version's strict schema and collects :class:`Finding` objects.

    Args:
        document: The parsed file the values come from, for positions (and for the text of plain scalars).
        layer: The layer the file belongs to, named in every finding.
        kubernetes_version: Kubernetes minor version of the schema (``"1.32"``); ``None`` for the default.
    """

    def __init__(self, document: Document, layer: str | None, kubernetes_version: str | None = None) -> None:
        self.doc = document
        self.layer = layer
        self.defs = definitions(kubernetes_version, strict=True)
        self.findings: list[Finding] = []
        self._structs: list[str] = []  # the definitions of the mappings being walked, outermost first

    # -- reporting

    def report(self, path: PathT, name: str, message: str, *, key: bool = False, severity: str = "error") -> None:
        self.findings.append(Finding(self.doc.location(path, key=key), name, message, severity, self.layer))

    def _written(self, path: PathT, value: Any) -> str:
        """The value as written in the file (``0755``, ``yes``), for "quote it" hints."""
        raw = getattr(self.doc, "plain_text", {}).get(tuple(path))
        if raw is not None:
            return raw
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    # -- entry points

    def check(self, value: Any, definition: str, path: PathT, name: str) -> list[Finding]:
        """Check ``value`` as a fragment of the definition ``definition`` (``"io.k8s.api.core.v1.PodSpec"``).

        Args:
            value: The fragment, as plain data.
            definition: Full name of the schema definition.
            path: Where the fragment sits in the document (``("pod_template", "spec")``).
            name: Its dotted name in messages (``"pod_template.spec"``).

        Returns:
            The findings so far (this call's and earlier ones').
        """
        self._value({"$ref": "#/$defs/" + definition}, value, tuple(path), name, None, None)
        return self.findings

    # -- values

    def _value(self, schema: dict[str, Any], value: Any, path: PathT, name: str, owner: str | None, field: str | None) -> None:
        if value is None:
            return  # null deletes what a lower layer set
        description = schema.get("description", "")
        ref = schema.get("$ref")
        target = ref.rsplit("/", 1)[-1] if ref else None
        if target is not None:
            if target == QUANTITY_DEF:
                self._quantity(value, path, name, owner, field)
                return
            if target == INT_OR_STRING_DEF:
                if isinstance(value, bool) or not isinstance(value, (int, str)):
                    self.report(path, name, f"expected an integer or a string (a port number or name), got {describe(value)}")
                return
            schema = self.defs.get(target, {})
        if "properties" in schema:
            self._struct(schema, value, path, name, target or "")
        elif isinstance(schema.get("additionalProperties"), dict) or (schema_types(schema) == {"object"} and "items" not in schema):
            self._map(schema, value, path, name, owner, field)
        elif "items" in schema or schema_types(schema) == {"array"}:
            self._list(schema, value, path, name)
        elif "oneOf" in schema or "anyOf" in schema:
            branches = schema.get("oneOf") or schema.get("anyOf") or []
            if not any(matches_types(schema_types(b), value) for b in branches):
                wanted = sorted({w for b in branches for w in schema_types(b)})
                self._wrong_type(wanted, value, path, name)
        else:
            self._scalar(schema, value, path, name, owner, field, description)

    def _wrong_type(self, wanted: Iterable[str], value: Any, path: PathT, name: str) -> None:
        wanted = list(wanted)
        words = " or ".join(TYPE_WORDS.get(w, w) for w in wanted)
        message = f"expected {words}, got {describe(value)}"
        if wanted == ["string"] and isinstance(value, (bool, int, float)):
            message += f'; quote it: "{self._written(path, value)}"'
        elif isinstance(value, str) and wanted in (["integer"], ["number"], ["integer", "number"]):
            message += "; write it without quotes" if re.fullmatch(r"[-+]?[0-9]+(\.[0-9]*)?", value.strip()) else ""
        elif isinstance(value, str) and wanted == ["boolean"]:
            message += "; write true or false without quotes (YAML 1.2 reads yes, no, on, off as strings)"
        self.report(path, name, message)

    def _scalar(self, schema: dict[str, Any], value: Any, path: PathT, name: str, owner: str | None, field: str | None,
                description: str) -> None:
        types = schema_types(schema)
        if not matches_types(types, value) or (types == {"integer"} and isinstance(value, float)):
            self._wrong_type(sorted(types), value, path, name)
            return
        fmt = schema.get("format")
        if isinstance(value, int) and not isinstance(value, bool) and fmt in INT_RANGES:
            lo, hi = INT_RANGES[fmt]
            if not lo <= value <= hi:
                self.report(path, name, f"{value} is out of range for an {fmt} ({lo} to {hi})")
        if isinstance(value, str) and value and "string" in types:
            allowed = enum_values(description) if description else None
            extra = ENUM_EXTRA.get((owner or "", field or ""))
            if allowed and value not in allowed and not (extra and extra.fullmatch(value)):

                listed = ", ".join(sorted(v for v in allowed if v)) + (" or empty" if "" in allowed else "")
                hint = closest(value, [v for v in allowed if v])
                message = f"`{value}` is not one of {listed} (values are case-sensitive)"
                self.report(path, name, message + (f"; did you mean `{hint}`?" if hint else ""))

    def _quantity(self, value: Any, path: PathT, name: str, owner: str | None, field: str | None) -> None:
        if value == "auto" and (owner, field) == (EMPTY_DIR_DEF, "sizeLimit"):
            return  # worked out from the merged memory request when the profile is rendered (kfdefaults.merge.auto)
        if value == "auto" and len(path) >= 2 and path[-2] in ("requests", "limits") and is_fabric_device(str(path[-1])):
            return  # the pool's device count, worked out from its nodes (kfdefaults.merge.auto.resolve_devices)
        problem = quantity_problem(value)
        if problem:
            self.report(path, name, problem)
            return
        negative = resource_value_problem("", value)  # a field that is not a resource list's: never counted whole
        if negative:
            self.report(path, name, negative)

    # -- containers

    def _struct(self, schema: dict[str, Any], value: Any, path: PathT, name: str, definition: str) -> None:
        if not isinstance(value, dict):
            self._wrong_type(["object"], value, path, name)
            return
        props: dict[str, Any] = schema["properties"]
        deleted = value.get("$patch") == "delete"  # a list item being deleted puts no name into the pod
        self._structs.append(definition)
        try:
            for key, item, key_path, key_label in self._entries(value, path, name):
                if key.startswith("$"):
                    self._directive(props, key, item, key_path, key_label)
                elif key in props:
                    if definition == POD_SPEC and key == "resources":
                        self.report(key_path, key_label, POD_LEVEL_RESOURCES, key=True, severity="warning")
                    self._value(props[key], item, key_path, key_label, definition, key)
                    if (definition, key) in DNS_LABEL_FIELDS and isinstance(item, str) and not deleted:
                        self._dns_label(item, key_path, key_label, *DNS_LABEL_FIELDS[definition, key])
                    elif (definition, key) == (ENV_VAR, "name") and isinstance(item, str) and not deleted:
                        problem = env_var_name_problem(item)
                        if problem is not None:
                            self.report(key_path, key_label, f"`{item}` is not an environment variable name: {problem}")
                else:
                    self.report(key_path, key_label, self._unknown_field(key, props, definition), key=True)
        finally:
            self._structs.pop()
        retain = value.get("$retainKeys")
        if isinstance(retain, list):
            for key in value:
                if not key.startswith("$") and key not in retain and value[key] is not None:
                    # apimachinery validatePatchWithRetainKeys: kubectl rejects the patch once it merges
                    self.report(path + ("$retainKeys",), join(name, "$retainKeys"),
                                f"`$retainKeys` does not list `{key}`, which this mapping sets; kubectl rejects the patch")

    def _unknown_field(self, key: str, props: dict[str, Any], definition: str) -> str:

        short = definition.rsplit(".", 1)[-1]
        if definition == POD_SPEC and key in ("labels", "annotations", "metadata"):
            return f"unknown field `{key}`; pod labels and annotations go in `pod_template.labels` / `pod_template.annotations`"
        if definition == POD_SPEC and key == "resources":
            return ("unknown field `resources` (pod-level resources came in Kubernetes 1.32); a container's requests "
                    "and limits go under `containers[name=primary].resources`")
        camel = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), key)
        if camel != key and camel in props:
            return f"unknown field `{key}`; did you mean `{camel}`? (fields are camelCase, as in a manifest)"
        message = unknown_key_message(key, props)
        return message if "did you mean" in message else f"{message} ({short} has no such field)"

    def _directive(self, props: dict[str, Any] | None, key: str, value: Any, path: PathT, name: str) -> None:

        if key == "$patch":
            if value not in PATCH_DIRECTIVE_VALUES:
                self.report(path, name, f"`$patch` must be replace, merge or delete, got {describe(value)}")
            return
        if props is None:
            self.report(path, name, f"`{key}` is not a directive of this mapping; only `$patch` is", key=True)
            return
        if key == "$retainKeys":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                self.report(path, name, "`$retainKeys` must be a list of field names")
                return
            for i, field in enumerate(value):
                if field not in props:
                    hint = closest(field, props)
                    self.report(path + (i,), f"{name}[{i}]", f"`$retainKeys` names an unknown field `{field}`"
                                + (f"; did you mean `{hint}`?" if hint else ""))
            return
        prefix, slash, field = key.partition("/")
        if slash and prefix in ("$setElementOrder", "$deleteFromPrimitiveList"):
            target = props.get(field)
            if target is None:
                hint = closest(field, props)
                self.report(path, name, f"`{key}` names an unknown field `{field}`" + (f"; did you mean `{hint}`?" if hint else ""),
                            key=True)
                return
            items = target.get("items")
            if items is None:
                self.report(path, name, f"`{key}`: `{field}` is not a list", key=True)
                return
            if not isinstance(value, list):
                self._wrong_type(["array"], value, path, name)
                return
            if prefix == "$deleteFromPrimitiveList":
                if "$ref" in items or "properties" in items:
                    self.report(path, name, f"`{key}`: `{field}` is a list of objects; delete items with `$patch: delete`", key=True)
                    return
                for i, item in enumerate(value):
                    self._value(items, item, path + (i,), f"{name}[{i}]", None, None)
            return
        self.report(path, name, f"unknown directive `{key}`; fragments take `$patch`, `$retainKeys`, "
                    "`$setElementOrder/FIELD` and `$deleteFromPrimitiveList/FIELD`", key=True)

    def _map(self, schema: dict[str, Any], value: Any, path: PathT, name: str, owner: str | None, field: str | None) -> None:
        if not isinstance(value, dict):
            self._wrong_type(["object"], value, path, name)
            return
        values = schema.get("additionalProperties")
        resources = (owner == RESOURCE_REQUIREMENTS and len(self._structs) >= 2 and self._structs[-2] in RESOURCE_OWNERS) \
            or (owner == POD_SPEC and field == "overhead")
        labels = LABEL_MAP_FIELDS.get((owner or "", field or ""))
        for key, item, key_path, key_label in self._entries(value, path, name):
            if key.startswith("$"):
                self._directive(None, key, item, key_path, key_label)
                continue
            if resources and isinstance(values, dict):
                self._resource_name(key, item, key_path, key_label)
            if labels and item is not None:
                label_problems(self.report, key, item, key_path, key_label, f"{labels} key")
            if isinstance(values, dict):
                self._value(values, item, key_path, key_label, owner, field)

    def _entries(self, value: dict[Any, Any], path: PathT, name: str) -> Iterable[tuple[str, Any, PathT, str]]:
        """``(key, value, path, dotted name)`` of each entry of a mapping; a key that is not a string is reported."""
        for key, item in value.items():
            if not isinstance(key, str):
                self.report(path, name, f"keys must be strings, got {describe(key)}")
                continue
            yield key, item, path + (key,), join(name, key)

    def _resource_name(self, key: str, value: Any, path: PathT, name: str) -> None:
        """A key of ``limits``/``requests``: pkg/apis/core/validation ``validateContainerResourceName`` (see
        :func:`kfdefaults._names.container_resource_name_problem`), then whole units for extended resources
        (``validateResourceQuantityValue``: ``IsIntegerResourceName``)."""

        problem = container_resource_name_problem(key)
        if problem == "standard":
            hint = "nvidia.com/gpu" if "gpu" in key.lower() else closest(key, STANDARD_RESOURCES)
            self.report(path, name, f"`{key}` is not a Kubernetes resource name: use cpu, memory, ephemeral-storage, "
                        "hugepages-<size> or a fully qualified name such as nvidia.com/gpu"
                        + (f"; did you mean `{hint}`?" if hint else ""), key=True)
            return
        if problem:
            if "/" in key and qualified_name_problem(key):
                problem += f"; an extended resource name is a qualified name: {QUALIFIED_NAME_RULE}"
            hint = qualified_name_hint(key)
            self.report(path, name, f"`{key}` is not a valid resource name: {problem}"
                        + (f"; did you mean `{hint}`?" if hint else ""), key=True)
            return
        problem = resource_value_problem(key, value)
        if problem and "negative" not in problem:  # a negative quantity is said by _quantity, for every field
            self.report(path, name, problem)

    def _dns_label(self, value: str, path: PathT, name: str, what: str, note: str = "") -> None:
        """A name that must be a DNS-1123 label (apimachinery ``IsDNS1123Label``), and not empty."""
        problem = dns1123_label_problem(value)
        if problem is None:
            return
        if not value:
            self.report(path, name, f"{what} is empty; it must be a DNS-1123 label: {DNS1123_LABEL_RULE}{note}")
            return
        hint = dns1123_label_hint(value)
        self.report(path, name, f"{what} `{value}` is not a valid DNS-1123 label: {DNS1123_LABEL_RULE}; {problem}{note}"
                    + (f"; did you mean `{hint}`?" if hint else ""))

    def _list(self, schema: dict[str, Any], value: Any, path: PathT, name: str) -> None:
        if not isinstance(value, list):
            self._wrong_type(["array"], value, path, name)
            return
        items = schema.get("items") or {}
        merge_key = schema.get("x-kubernetes-patch-merge-key")
        list_keys = [merge_key] if merge_key else list(schema.get("x-kubernetes-list-map-keys") or [])
        seen: dict[Any, int] = {}
        merges = merge_key and "merge" in str(schema.get("x-kubernetes-patch-strategy", "")).split(",")
        for i, item in enumerate(value):
            label = f"{name}[{i}]"
            if isinstance(item, dict) and item.get("$patch") == "merge":
                # kubectl rejects it when a lower layer has this list, and drops the item when none has
                self.report(path + (i, "$patch"), join(label, "$patch"), "`$patch: merge` is not supported in a list item: "
                            "kubectl rejects it when a lower layer has this list, and drops the item when none has; "
                            "remove it (items are merged by their merge key without it)")
                continue
            if merges and isinstance(item, dict) and merge_key not in item and not all(k.startswith("$") for k in item):
                # kubectl: "map: ... does not contain declared merge key" as soon as a lower layer has this list
                self.report(path + (i,), label, f"this item has no `{merge_key}`: items of this list are merged by "
                            f"`{merge_key}`, so each needs one")
            if isinstance(item, dict) and list_keys and all(k in item for k in list_keys):
                selector = ",".join(f"{k}={item[k]}" for k in list_keys)
                if merge_key:
                    label = name + str(Select(merge_key, item[merge_key]))
                if merge_key and "$patch" not in item and isinstance(item[merge_key], (str, int)):
                    mark = (type(item[merge_key]).__name__, item[merge_key])
                    if mark in seen and "$patch" not in value[seen[mark]]:
                        first = self.doc.location(path + (seen[mark],))
                        self.report(path + (i, merge_key), label, f"a second item with {selector} (first at line {first.line}); "
                                    f"items of this list are merged by `{merge_key}`, so give each its own")
                    seen.setdefault(mark, i)
            self._value(items, item, path + (i,), label, None, None)


def check_pod_spec(document: Document, spec: Any, layer: str | None, *, kubernetes_version: str | None = None,
                   path: PathT = ("pod_template", "spec")) -> list[Finding]:
    """Check a profile's PodSpec fragment (``pod_template.spec``) against the strict Kubernetes schema.

    Args:
        document: The parsed profile file (for positions).
        spec: The fragment as plain data; anything but a mapping is left to the section's own type check.
        layer: The file's layer, named in the findings.
        kubernetes_version: Kubernetes minor version of the schema; ``None`` for the default (1.32).
        path: Where the fragment sits in the document.

    Returns:
        One finding per problem, in document order, each located at the offending key or value.
    """
    if not isinstance(spec, dict):
        return []
    checker = FragmentChecker(document, layer, kubernetes_version)
    return checker.check(spec, POD_SPEC, path, format_path(path))
