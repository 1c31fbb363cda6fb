"""The JSON Schema of a profile file, for editors (yaml-language-server, taplo) and other tools.

Built from the same sources as validation: the pydantic models of :mod:`kfdefaults.validate.model` for our sections,
:data:`kfdefaults.validate.rdzv.RDZV_SETTINGS` for ``rdzv_configs``, and for ``pod_template.spec`` the PodSpec definition
of kubernetes-validate's strict schema with every definition it refers to bundled under ``$defs``. The PodSpec
part is made a fragment: no field is required, ``null`` is allowed everywhere (it deletes), and the patch
directives (``$patch``, ``$retainKeys``, ``$setElementOrder/FIELD``, ``$deleteFromPrimitiveList/FIELD``) are
allowed. Quantities carry apimachinery's grammar as a pattern, integers their ``int32``/``int64`` range, and
string fields the values their description lists (:func:`kfdefaults.validate.enums.enum_values`).

The schema is a little more lenient than ``kfdefaults validate`` where JSON Schema cannot say a rule (``MIN <= MAX``
in ``nnodes``, whole numbers of extended resources, resource names); ``kfdefaults validate`` stays the reference.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from ..k8s.provenance import RECEIPT_ANNOTATION, RECEIPT_POLICIES
from ..k8s.resources import FABRIC_DEVICE
from ..smp.schema import definitions, normalize_version
from ..validate.enums import ENUM_EXTRA, enum_values
from ..validate.facts import ClusterFactsFile
from ..validate.model import ProfileFile
from ..validate.rdzv import (
    RDZV_MAX_ATTEMPTS,
    RDZV_MAX_SECONDS,
    RDZV_SETTINGS,
    RDZV_STORE_TYPES,
)
from ..validate.schema_rules import INT_RANGES

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

QUANTITY_PATTERN = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
"""apimachinery's quantity grammar (``resource.ParseQuantity``) as a JSON Schema pattern."""

_POD_SPEC = "io.k8s.api.core.v1.PodSpec"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_RESOURCES = "io.k8s.api.core.v1.ResourceRequirements"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_EMPTY_DIR = "io.k8s.api.core.v1.EmptyDirVolumeSource"
_PYDANTIC_BOUNDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum"}
_DIRECTIVE_PROPERTIES = {
    "$patch": {"enum": ["replace", "merge", "delete"], "description": "Strategic merge patch directive."},
    "$retainKeys": {"type": "array", "items": {"type": "string"}, "description": "Keys to keep (retainKeys strategy)."},
}
_DIRECTIVE_PATTERNS = {
    r"^\$setElementOrder/": {"type": "array", "description": "Order of the items of a merged list."},
    r"^\$deleteFromPrimitiveList/": {"type": "array", "description": "Values to delete from a list of scalars."},
}


def _refs(value: Any) -> set[str]:
    found: set[str] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.add(ref.rsplit("/", 1)[-1])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _closure(defs: dict[str, Any], root: str) -> list[str]:
    """``root`` and every definition it refers to, directly or not, sorted."""
    seen: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        todo.extend(_refs(defs[name]))
    return sorted(seen)


def _fragment_node(node: Any, owner: str, field: str | None) -> Any:
    """A copy of a Kubernetes schema node, made a strategic-merge-patch fragment."""
    if isinstance(node, list):
        return [_fragment_node(v, owner, field) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-") or key == "required":
            continue
        if key == "properties":
            out[key] = {k: _fragment_node(v, owner, k) for k, v in value.items()}
        else:
            out[key] = _fragment_node(value, owner, field)
    types = out.get("type")
    type_set = {types} if isinstance(types, str) else set(types or [])
    if type_set and "null" not in type_set:
        out["type"] = sorted(type_set | {"null"})
    if "properties" in out or isinstance(out.get("additionalProperties"), dict):
        out["properties"] = {**out.get("properties", {}), **copy.deepcopy(_DIRECTIVE_PROPERTIES)}
        if "properties" in node:
            out["patternProperties"] = copy.deepcopy(_DIRECTIVE_PATTERNS)
    fmt = out.get("format")
    if fmt in INT_RANGES and "integer" in type_set:
        out["minimum"], out["maximum"] = INT_RANGES[fmt]
    if type_set - {"null"} == {"string"} and isinstance(out.get("description"), str):
        allowed = enum_values(out["description"])
        if allowed:
            choices: list[Any] = sorted(allowed | {""}) + [None]
            extra = ENUM_EXTRA.get((owner, field or ""))
            if extra is None:
                out["enum"] = choices
            else:
                out["anyOf"] = [{"enum": choices}, {"type": "string", "pattern": f"^{extra.pattern}$"}]
    return out


def _fix_pydantic(node: Any) -> Any:
    """pydantic writes ``gt``/``ge`` inside unions (``monitor_interval``); JSON Schema spells them otherwise."""
    if isinstance(node, list):
        return [_fix_pydantic(v) for v in node]
    if not isinstance(node, dict):
        return node
    return {_PYDANTIC_BOUNDS.get(k, k) if not isinstance(v, (dict, list)) else k: _fix_pydantic(v) for k, v in node.items()}


def _rdzv_schema() -> dict[str, Any]:
    kinds = {
        "seconds": {"type": "integer", "minimum": 1, "maximum": RDZV_MAX_SECONDS},
        "count": {"type": "integer", "minimum": 1, "maximum": RDZV_MAX_ATTEMPTS},
        "bool": {"type": "boolean"},
        "store": {"enum": list(RDZV_STORE_TYPES)},
    }
    properties = {
        key: {"anyOf": [dict(kinds[kind]), {"type": "null"}], "description": what} for key, (kind, what) in RDZV_SETTINGS.items()
    }
    return {
        "anyOf": [{"type": "object", "properties": properties, "additionalProperties": False}, {"type": "null"}],
        "description": "c10d rendezvous settings, timeouts in whole seconds; c10d reads join_timeout, not timeout.",
    }


_SECTIONS = {"ElasticSection": "elastic", "RunPolicySection": "elastic.run_policy", "PodTemplateSection": "pod_template"}
"""pydantic's definitions of our sections -> the path they sit at in a profile, for titles."""


def _title_sections(schema: dict[str, Any]) -> None:
    """Titles that read well in an editor's hover: each key of our sections titled by its path in a profile
    (``elastic.rdzv_configs.join_timeout``), each PodSpec field by its name, instead of pydantic's ``Nnodes``
    and, where a key has no title, its section's ``ElasticSection``."""
    defs = schema["$defs"]
    for key, prop in schema.get("properties", {}).items():
        prop["title"] = key
    for name, path in _SECTIONS.items():
        section = defs[name]
        section["title"] = path
        for key, prop in section.get("properties", {}).items():
            prop["title"] = f"{path}.{key}"
    rdzv = defs["ElasticSection"]["properties"]["rdzv_configs"]["anyOf"][0]
    for key, prop in rdzv["properties"].items():
        prop["title"] = f"elastic.rdzv_configs.{key}"
    for name, node in defs.items():
        if name not in _SECTIONS:
            node.setdefault("title", name.rsplit(".", 1)[-1])
            for key, prop in node.get("properties", {}).items():
                if isinstance(prop, dict):
                    prop.setdefault("title", key)


def _title_branches(node: Any) -> None:
    """Give every branch of an ``anyOf`` / ``oneOf`` a title of its own: the key's title and what the branch is
    (``elastic.nnodes: an integer``, ``elastic.nnodes: null (deletes what a lower layer set)``).

    Editors built on yaml-language-server take a union whose branches have neither title nor description for
    one whose every branch matched, and show the key's title once per branch (``Nnodes || Nnodes || Nnodes``);
    with titles of their own, the hover shows the title of the branch the value matched.
    """
    if isinstance(node, list):
        for item in node:
            _title_branches(item)
        return
    if not isinstance(node, dict):
        return
    for union in ("anyOf", "oneOf"):
        for branch in node.get(union, []):
            if isinstance(branch, dict) and "title" not in branch:
                kind = _branch_title(branch)
                # the branch's title is what the editor shows: the key's own title first, then what this branch is
                branch["title"] = f"{node['title']}: {kind}" if node.get("title") else kind
    for value in node.values():
        _title_branches(value)


def _branch_title(branch: dict[str, Any]) -> str:
    if "$ref" in branch:
        target = branch["$ref"].rsplit("/", 1)[-1]
        return _SECTIONS.get(target, target.rsplit(".", 1)[-1])
    if "const" in branch:
        return json.dumps(branch["const"]) if not isinstance(branch["const"], str) else branch["const"]
    if "enum" in branch:
        return "one of " + ", ".join("null" if v is None else str(v) or '""' for v in branch["enum"])
    kind = branch.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind or [])
    if kinds == ["null"]:
        return "null (deletes what a lower layer set)"
    words = {"integer": "an integer", "number": "a number", "string": "a string", "boolean": "true or false",
             "object": "a mapping", "array": "a list"}
    text = " or ".join(words.get(k, k) for k in kinds if k != "null") or "a value"
    if "pattern" in branch:
        text += " in the form " + ('"MIN:MAX"' if ":" in branch["pattern"] else f"/{branch['pattern']}/")
    return text


def profile_schema(kubernetes_version: str | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one profile file.

    Args:
        kubernetes_version: Kubernetes minor version of the bundled PodSpec schema (``"1.32"``, the default).

    Returns:
        The schema as JSON data; ``pod_template.spec`` refers to ``#/$defs/io.k8s.api.core.v1.PodSpec``.
    """
    version = normalize_version(kubernetes_version)
    schema = _fix_pydantic(ProfileFile.model_json_schema(mode="validation"))
    defs = schema.setdefault("$defs", {})
    defs["ElasticSection"]["properties"]["rdzv_configs"] = _rdzv_schema()
    defs["PodTemplateSection"]["properties"]["spec"] = {
        "anyOf": [{"$ref": f"#/$defs/{_POD_SPEC}"}, {"type": "null"}],
        "description": f"A Kubernetes PodSpec fragment (Kubernetes {version}), merged by strategic merge patch.",
    }
    annotations = defs["PodTemplateSection"]["properties"]["annotations"]["anyOf"][0]
    annotations["properties"] = {RECEIPT_ANNOTATION: {
        "anyOf": [{"enum": list(RECEIPT_POLICIES)}, {"type": "null"}],
        "description": "What the pod's receipt does: " + "; ".join(f"{k}: {v}" for k, v in RECEIPT_POLICIES.items()) + "."}}
    k8s = definitions(version, strict=True)
    for name in _closure(k8s, _POD_SPEC):
        if name == _QUANTITY:
            defs[name] = {
                "anyOf": [{"type": "string", "pattern": QUANTITY_PATTERN}, {"type": "number"}, {"type": "null"}],
                "description": "A Kubernetes quantity: 8, 500m, 16Gi, 1e3.",
            }
        elif name == _INT_OR_STRING:
            defs[name] = {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}],
                          "description": "An integer or a string (a port number or a port name)."}
        else:
            defs[name] = _fragment_node(k8s[name], name, None)
    size_limit = defs.get(_EMPTY_DIR, {}).get("properties", {}).get("sizeLimit")
    if isinstance(size_limit, dict) and "$ref" in size_limit:  # auto: the memory request (kfdefaults.merge.auto)
        ref = size_limit.pop("$ref")
        size_limit["anyOf"] = [{"$ref": ref}, {"const": "auto", "description": "The memory request (else limit) of "
                               "the container that mounts the volume, worked out when the profile is rendered."}]
    for side in ("requests", "limits"):  # a fabric device's count may be auto: the pool's (kfdefaults.merge.auto)
        amounts = defs.get(_RESOURCES, {}).get("properties", {}).get(side)
        if isinstance(amounts, dict) and "additionalProperties" in amounts:
            amounts["patternProperties"] = {f"^(?:{FABRIC_DEVICE.pattern})$": {"anyOf": [
                amounts["additionalProperties"], {"const": "auto", "description": "What one node of the pool offers, "
                                                  "worked out when the profile is rendered."}]}}
    _title_sections(schema)
    _title_branches(schema)
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "kfdefaults profile",
        "description": "One kfdefaults profile file (YAML or TOML): elastic settings and a pod template fragment.",
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }


def facts_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a file of the cluster's facts (:mod:`kfdefaults.validate.facts`), from
    the same models that validate it; allocatable resources carry apimachinery's quantity grammar."""
    schema = _fix_pydantic(ClusterFactsFile.model_json_schema(mode="validation"))
    quantity = {"anyOf": [{"type": "string", "pattern": QUANTITY_PATTERN}, {"type": "integer"}],
                "description": "A Kubernetes quantity: 8, 500m, 16Gi, 1e3."}
    pool = schema["$defs"]["NodePool"]["properties"]["allocatable"]
    pool["anyOf"] = [{"type": "object", "additionalProperties": quantity}, {"type": "null"}]
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "kfdefaults cluster facts",
        "description": "What a platform measured of its cluster (_cluster-facts.yaml): node pools, start and pull "
                       "times, Kueue, Flyte, torch. Every fact optional; times in seconds.",
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }
