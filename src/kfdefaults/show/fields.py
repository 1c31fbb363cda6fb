"""``kfdefaults fields PATH``: what a profile key is, its type, and how a higher layer merges onto it.

The ``kubectl explain`` habit, for profiles. Our own sections are described by the models that validate them
(:mod:`kfdefaults.validate.model`, the rendezvous table of :mod:`kfdefaults.validate.rdzv`); ``pod_template.spec``
by the Kubernetes schema of the version asked for: its description, and the patch strategy and merge key that
strategic merge patch reads (:mod:`kfdefaults.smp.schema`).
"""

from __future__ import annotations

from typing import Any

from ..errors import FieldError, PathError
from ..paths import format_path, parse_path
from ..smp.schema import definitions, normalize_version
from ..validate.model import (
    ElasticSection,
    PodTemplateSection,
    ProfileFile,
    RunPolicySection,
)
from ..validate.rdzv import RDZV_SETTINGS
from ..validate.suggest import closest

_MODELS = {(): ProfileFile, ("elastic",): ElasticSection, ("elastic", "run_policy"): RunPolicySection,
           ("pod_template",): PodTemplateSection}

KEY_BY_KEY = "key by key: a higher layer's value replaces this one, null (or delete) removes it"


def describe_field(path: str, kubernetes_version: str | None = None) -> dict[str, Any]:
    """What the field at ``path`` is.

    Args:
        path: A dotted path as ``--set`` writes it (``elastic.nnodes``, ``pod_template.spec.tolerations``,
            ``pod_template.spec.containers[name=primary].resources``); ``""`` for the top of a profile.
        kubernetes_version: Kubernetes minor version of the schema for ``pod_template.spec`` (default 1.32).

    Returns:
        ``{"path", "type", "description", "merge", "fields"?}``: ``merge`` says how a higher layer's value
        combines with this one; ``fields`` lists the keys below a mapping.

    Raises:
        FieldError: the path names no field (with the fields that exist where it went wrong).
    """
    try:
        steps = parse_path(path, item=True) if path else []
    except PathError as e:
        raise FieldError(str(e)) from None
    keys = [s for s in steps if not isinstance(s, tuple)]
    if keys[:2] == ["pod_template", "spec"]:
        return _spec_field(steps, kubernetes_version)
    if keys[:2] == ["elastic", "rdzv_configs"] and len(keys) == 3:
        return _rdzv_field(keys[2])
    return _model_field(keys)


def _model_field(keys: list[str]) -> dict[str, Any]:
    model = _MODELS.get(tuple(keys))
    if model is not None:
        return {"path": format_path(keys), "type": "mapping", "description": _plain(model.__doc__ or ""),
                "merge": KEY_BY_KEY, "fields": list(model.model_fields)}
    parent = _MODELS.get(tuple(keys[:-1]))
    if parent is None or keys[-1] not in parent.model_fields:
        known = list(parent.model_fields) if parent is not None else list(ProfileFile.model_fields)
        hint = closest(keys[-1], known)
        raise FieldError(f"no field `{format_path(keys)}`" + (f"; did you mean `{hint}`?" if hint else "")
                         + f" (the fields there: {', '.join(known)})")
    info = parent.model_fields[keys[-1]]
    kind = _type_words(info.annotation)
    merge = KEY_BY_KEY
    if keys == ["elastic", "rdzv_configs"]:
        merge = "per key: each rendezvous setting merges on its own"
        return {"path": format_path(keys), "type": kind, "description": info.description or "", "merge": merge,
                "fields": list(RDZV_SETTINGS)}
    if keys in (["extends"], ["name"], ["delete"]):
        merge = "read from this file only: not merged"
    elif keys == ["locked"]:
        merge = "not merged: each file's locks hold on their own, against every layer merged after that file"
    elif keys == ["deprecated"]:
        merge = "not merged: marks the profile this file defines, whatever the other layers say"
    return {"path": format_path(keys), "type": kind, "description": info.description or "", "merge": merge}


def _plain(text: str) -> str:
    """A docstring as plain words: its first paragraph, RST literals unquoted."""
    return " ".join(text.strip().split("\n\n")[0].split()).replace("``", "`")


def _rdzv_field(key: str) -> dict[str, Any]:
    if key not in RDZV_SETTINGS:
        raise FieldError(f"no rendezvous setting `{key}`; c10d reads {', '.join(RDZV_SETTINGS)}")
    kind, what = RDZV_SETTINGS[key]
    words = {"seconds": "integer (seconds) >= 1", "count": "integer >= 1", "bool": "true or false",
             "store": "tcp or file"}[kind]
    return {"path": format_path(["elastic", "rdzv_configs", key]), "type": words, "description": what,
            "merge": KEY_BY_KEY}


def _type_words(annotation: Any) -> str:
    """An annotation of the section models in words: ``Optional[Union[int, str]]`` -> ``integer or string``."""
    import typing

    origin, args = typing.get_origin(annotation), [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin is typing.Union:
        return " or ".join(_type_words(a) for a in args)
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin in (list, typing.List):
        return f"list of {_type_words(args[0])}s" if args else "list"
    if origin in (dict, typing.Dict):
        return "mapping" if not args or args[-1] is typing.Any else f"mapping of {_type_words(args[-1])}s"
    words = {int: "integer", str: "string", float: "number", bool: "true or false"}
    if annotation in words:
        return words[annotation]
    return "mapping" if isinstance(annotation, type) and hasattr(annotation, "model_fields") else str(annotation)


def _spec_field(steps: list[Any], kubernetes_version: str | None) -> dict[str, Any]:
    """A field of ``pod_template.spec``, from the strict Kubernetes schema (its description) and the patch metadata."""
    version = normalize_version(kubernetes_version)
    defs = definitions(version, strict=True)
    node: dict[str, Any] = {"$ref": "#/$defs/io.k8s.api.core.v1.PodSpec"}
    owner, where = "PodSpec", ["pod_template", "spec"]
    for step in steps[2:]:
        merge_key = node.get("x-kubernetes-patch-merge-key")
        node = _deref(defs, node)
        if isinstance(step, tuple):
            if "items" not in node:
                raise FieldError(f"`{format_path(where)}` is not a list: no item to select")
            if step[0] != merge_key:
                raise FieldError(f"`{format_path(where)}` items are not named by `{step[0]}`: " + (
                    f"they are merged by `{merge_key}`" if merge_key else "the list has no merge key, a higher layer "
                    "replaces it whole"))
            node = node["items"]
            where.append(step)
            continue
        props = node.get("properties")
        if props is None and isinstance(node.get("additionalProperties"), dict):
            node, where = node["additionalProperties"], where + [step]  # a map's value: a label, a quantity
            continue
        if props is None or step not in props:
            hint = closest(step, props or [])
            known = ", ".join(sorted(props)) if props else "none (not a mapping)"
            raise FieldError(f"{owner} has no field `{step}` (Kubernetes {version})"
                             + (f"; did you mean `{hint}`?" if hint else f"; its fields: {known}"))
        owner = node.get("$ref", "").rsplit(".", 1)[-1] or owner
        node, where = props[step], where + [step]
        owner = step
    return _spec_answer(defs, node, where, version)


def _deref(defs: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not ref:
        return node
    merged = dict(defs.get(ref.rsplit("/", 1)[-1], {}))
    merged.update({k: v for k, v in node.items() if k != "$ref"})
    return merged


def _spec_answer(defs: dict[str, Any], node: dict[str, Any], where: list[Any], version: str) -> dict[str, Any]:
    description = node.get("description", "")
    strategy = str(node.get("x-kubernetes-patch-strategy", ""))
    merge_key = node.get("x-kubernetes-patch-merge-key", "")
    target = _deref(defs, node)
    if "items" in target:
        item = _deref(defs, target["items"])
        item_type = node["items"].get("$ref", "").rsplit(".", 1)[-1] or _json_type(item)
        kind = f"list of {item_type}"
        if merge_key and "merge" in strategy.split(","):
            merge = (f"list merged by key `{merge_key}`: a higher layer's item with the same {merge_key} merges "
                     f"into this one, others are added (--set and --explain name items [{merge_key}=...])")
        elif "merge" in strategy.split(","):
            merge = "list of values merged as a set: a higher layer's values are added"
        else:
            merge = "atomic list: a higher layer replaces it whole (--explain says how many items went)"
        fields = sorted(item.get("properties", {}))
    elif "properties" in target:
        kind = node.get("$ref", "").rsplit(".", 1)[-1] or "object"
        merge = "retainKeys: a higher layer's value replaces the keys it lists" if "retainKeys" in strategy else KEY_BY_KEY
        fields = sorted(target["properties"])
    elif isinstance(target.get("additionalProperties"), dict):
        values = target["additionalProperties"]
        kind = f"mapping of {values.get('$ref', '').rsplit('.', 1)[-1] or _json_type(values)}"
        merge, fields = KEY_BY_KEY, []
    else:
        kind = (node.get("$ref", "").rsplit(".", 1)[-1] or _json_type(target))
        merge, fields = "a higher layer's value replaces this one; null (or delete) removes it", []
    out = {"path": format_path(where), "type": kind, "description": description, "merge": merge,
           "kubernetes_version": version}
    if fields:
        out["fields"] = fields
    return out


def _json_type(node: dict[str, Any]) -> str:
    t = node.get("type", "value")
    types = [t] if isinstance(t, str) else [x for x in t if x != "null"]
    fmt = node.get("format")
    return "/".join(types) + (f" ({fmt})" if fmt else "")
