"""One profile body -> the validated section models, or every error in it, each at ``FILE:LINE:COLUMN``.

The pydantic models (:mod:`.model`) check the sections; :func:`check_body` adds what they cannot locate key by
key: ``elastic.rdzv_configs`` (:mod:`.rdzv`), the PodSpec fragment against the strict Kubernetes schema
(:mod:`.podspec`) and the pod's labels and annotations (:mod:`.metadata`). Files and the task layer are
validated alike.
"""

from __future__ import annotations

from typing import Any, Mapping, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ..errors import Finding, SchemaLookupError, shown, sorted_findings
from ..paths import format_path
from ..read import Document
from ..smp.schema import schema_type
from .deletions import expand_deletions
from .locked import check_locked
from .metadata import check_pod_metadata
from .model import ElasticSection, PodTemplateSection, ProfileFile
from .podspec import check_pod_spec
from .rdzv import check_rdzv_configs
from .reserved import check_reserved
from .suggest import ELASTIC_SYNONYMS, unknown_key_message
from .torch_env import check_torch_env

PathT = tuple


def check_body(document: Document, data: Any, layer: str | None, kubernetes_version: str | None = None) -> list[Finding]:
    """The checks of one profile body that the section models leave out: ``locked`` (:mod:`.locked`),
    ``rdzv_configs`` (:mod:`.rdzv`), the PodSpec fragment (:mod:`.podspec`), names and ports that belong to
    the training operator, torch or Flyte (:mod:`.reserved`), the torch settings read from ``env``
    (:mod:`.torch_env`), and the pod's labels and annotations (:mod:`.metadata`).

    Args:
        document: The parsed file (for positions).
        data: The profile body as plain data (``document.data``, or the task layer's overrides).
        layer: The layer it belongs to, named in the findings.
        kubernetes_version: Kubernetes minor version of the schema for ``pod_template.spec`` (default 1.32).

    Returns:
        Errors and warnings, each located at the offending key or value.
    """
    findings: list[Finding] = []
    if not isinstance(data, dict):
        return findings
    findings += check_locked(document, data, layer, kubernetes_version)
    elastic = data.get("elastic")
    if isinstance(elastic, dict) and isinstance(elastic.get("rdzv_configs"), dict):
        findings += check_rdzv_configs(document, elastic["rdzv_configs"], layer)
    pod_template = data.get("pod_template")
    if isinstance(pod_template, dict):
        findings += check_pod_metadata(document, pod_template, layer)
    if isinstance(pod_template, dict) and isinstance(pod_template.get("spec"), dict):
        findings += check_pod_spec(document, pod_template["spec"], layer, kubernetes_version=kubernetes_version)
        findings += check_reserved(document, pod_template["spec"], layer)
        findings += check_torch_env(document, pod_template["spec"], layer)
    return findings


def validate_body(
    doc: Document,
    data: Any,
    layer: str,
    kubernetes_version: str | None = None,
    *,
    warnings: list[Finding] | None = None,
) -> tuple[Any, list[Finding]]:
    """Validate a profile body: the pydantic models, then :func:`check_body` (``rdzv_configs`` key by key, the
    PodSpec fragment against the strict Kubernetes schema).

    Args:
        doc: The parsed file; findings carry its positions.
        data: The body.
        layer: The layer, named in findings.
        kubernetes_version: Kubernetes minor version of the schema for ``pod_template.spec``.
        warnings: If given, the warnings found are appended to it.

    Returns:
        ``(body, errors)``: the validated :class:`~kfdefaults.validate.model.ProfileFile` and ``[]``, or ``None``
        and every error found, in file order.
    """

    if not isinstance(data, dict) or not data:
        kinds = {str: "a string", int: "a number", float: "a number", bool: "a boolean", list: "a list"}
        what = "empty" if not data else kinds.get(type(data), f"a {type(data).__name__}")
        return None, [Finding(doc.location(()), "", "a profile must be a mapping that says something (keys among "
                              f"name, description, extends, elastic, pod_template); this file is {what}", layer=layer)]
    data, findings = expand_deletions(doc, data, layer, kubernetes_version)
    findings += check_body(doc, data, layer, kubernetes_version)
    try:
        body = ProfileFile.model_validate(data)
    except ValidationError as e:
        body = None
        by_path: dict[str, Finding] = {}
        for err in e.errors(include_url=False):
            finding = pydantic_finding(doc, err, layer)
            by_path[finding.path] = finding  # one per value: of a union's members, the last one pydantic tried
        findings += by_path.values()
    findings = sorted_findings(findings)
    errors = [f for f in findings if f.severity == "error"]
    if warnings is not None:
        warnings.extend(f for f in findings if f.severity != "error")
    return (None if errors else body), errors


def pydantic_finding(doc: Document, err: Mapping[str, Any], layer: str | None,
                     model: type[BaseModel] = ProfileFile) -> Finding:
    """A pydantic error of ``model`` validating ``doc``'s data, as a finding at the value's ``FILE:LINE:COLUMN``:
    an unknown key names the known ones (and the profile section a top-level key belongs in), a value its type and
    how to write it."""
    loc = tuple(err["loc"])
    # pydantic puts the union member it tried (``int``, ``str``, ``function-before[...]``) into ``loc``: keep the
    # parts that are keys or indices of the data, which a user's key such as ``int`` or ``a[b`` also is
    path_parts: list[Any] = []
    node = doc.data
    for part in loc:
        if isinstance(node, dict) and part in node or isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path_parts.append(part)
            node = node[part]
    path = tuple(path_parts)
    kind = err.get("type", "")
    msg = err.get("msg", "invalid value")
    if kind == "extra_forbidden":
        key = path[-1] if path else loc[-1]
        known = _known_keys(model, path[:-1])
        synonyms = ELASTIC_SYNONYMS if model is ProfileFile and path[:-1] == ("elastic",) else None
        message = unknown_key_message(str(key), known, synonyms=synonyms)
        section = _section_of(str(key)) if len(path) == 1 and model is ProfileFile else None
        if section is not None:
            message = f"unknown field `{key}`; did you mean `{section}.{key}`?"
        return Finding(doc.location(path, key=True), format_path(path), message, layer=layer)
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    value = err.get("input")
    scalar = not isinstance(value, (dict, list))  # a container's text may be long: never printed
    plain, written = (shown(str(value)), shown(repr(value))) if scalar else ("", "")  # a hostile value: short
    said = scalar and (f"got {plain}" in msg or f"got {written}" in msg or msg.startswith(written))
    if kind not in ("missing",) and scalar and not said:
        msg = f"{msg} (got {written})"
    if kind in ("int_type", "float_type") and isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        msg = f"{msg}; write it without quotes"
    if kind == "string_type" and isinstance(value, (bool, int, float)):
        written = doc.plain_text.get(path, str(value).lower() if isinstance(value, bool) else str(value))
        msg = f'{msg}; quote it: "{written}"'
    return Finding(doc.location(path), format_path(path), msg, layer=layer)


def _section_of(key: str) -> str | None:
    """The section a top-level key belongs in, for ``--set nnodes=2``: ``elastic``, ``pod_template``..."""
    if key in ElasticSection.model_fields:
        return "elastic"
    if key in PodTemplateSection.model_fields:
        return "pod_template"
    try:
        schema_type("PodSpec").lookup_struct(key)
    except (SchemaLookupError, ValueError):
        return None
    return "pod_template.spec"


def _known_keys(model: type[BaseModel], path: PathT) -> list[str]:
    """The keys the mapping at ``path`` of ``model``'s data takes (``[]`` where it is not a model: a PodSpec
    fragment, a mapping of free names)."""
    node: Any = model
    for part in path:
        if _is_model(node):
            node = node.model_fields[part].annotation if part in node.model_fields else None
        else:  # a mapping of names or a list: the part is a key or an index, the value the annotation's inner type
            node = _inner(node)
        node = _unwrap(node)
    return list(node.model_fields) if _is_model(node) else []


def _is_model(node: Any) -> bool:
    return isinstance(node, type) and issubclass(node, BaseModel)


def _unwrap(annotation: Any) -> Any:
    """``Optional[X]`` and ``Union[X, None]`` -> ``X`` (a union of several is left whole)."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    return args[0] if get_origin(annotation) is Union and len(args) == 1 else annotation


def _inner(annotation: Any) -> Any:
    """The type of a ``Dict[str, X]``'s values or a ``List[X]``'s items; in a union, of its mapping or list."""
    origin = get_origin(annotation)
    if origin in (dict, list):
        return get_args(annotation)[-1]
    if origin is Union:
        return next((_inner(a) for a in get_args(annotation) if get_origin(a) in (dict, list)), None)
    return None
