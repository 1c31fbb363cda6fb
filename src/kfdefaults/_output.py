"""Printing merged profiles and manifests as YAML or JSON, in a stable order.

Order: a profile's own keys in the order of the file format (name, description, elastic, pod_template; the
elastic fields in the plugin's order); Kubernetes objects with ``apiVersion``, ``kind``, ``metadata`` first and
then, like ``kubectl -o yaml``, alphabetical keys, except that a list item starts with its merge key
(``- name: primary``) so that a reviewer sees which item it is. The same input prints the same bytes on
every run.

YAML output quotes every string that a YAML 1.1 reader (kubectl, PyYAML) would take for something else:
``"no"``, ``"on"``, ``"y"``, ``"0755"``, ``"1_000"``, ``"12:30"``, ``"2024-01-01"``. Round-tripping the output
through kubectl therefore keeps strings strings.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

_PROFILE_ORDER = ("name", "description", "extends", "elastic", "pod_template")
_ELASTIC_ORDER = ("nnodes", "nproc_per_node", "start_method", "monitor_interval", "max_restarts", "rdzv_configs", "run_policy")
_POD_TEMPLATE_ORDER = ("primary_container_name", "labels", "annotations", "spec")
_MANIFEST_FIRST = ("apiVersion", "kind", "metadata")

# Plain scalars that YAML 1.1 resolves to a non-string (booleans, null, ints in every base with
# underscores, sexagesimals, floats, timestamps, merge and value keys).
_YAML11_NOT_STRING = re.compile(
    r"""(?x)
    y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
    |~|null|Null|NULL|
    |[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
    |[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
      (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)?
    |<<|=
    """
)


def needs_quotes_for_yaml11(text: str) -> bool:
    """Whether a YAML 1.1 reader would take the plain scalar ``text`` for something other than a string."""
    return bool(_YAML11_NOT_STRING.fullmatch(text))


def order_k8s(value: Any, schema: Any = None, merge_key: str | None = None) -> Any:
    """Kubernetes data in output order: alphabetical keys, a list item's patch merge key first.

    Args:
        value: Plain data.
        schema: The :class:`kfdefaults._k8s_schema.SchemaType` of ``value``, which tells each list's merge key;
            ``None`` where unknown.
        merge_key: For a list item, the merge key of its list.
    """
    if isinstance(value, dict):
        keys = sorted(value)
        for first in reversed(_MANIFEST_FIRST):
            if first in value:
                keys.remove(first)
                keys.insert(0, first)
        if merge_key and merge_key in value:
            keys.remove(merge_key)
            keys.insert(0, merge_key)
        return {k: _order_field(value[k], schema, k) for k in keys}
    if isinstance(value, list):
        return [order_k8s(v, schema, merge_key) for v in value]
    return value


def _order_field(value: Any, schema: Any, key: str) -> Any:
    from ._k8s_schema import SchemaLookupError

    if schema is None or not isinstance(value, (dict, list)):
        return order_k8s(value)
    try:
        if isinstance(value, list):
            elem, meta = schema.lookup_slice(key)
            return order_k8s(value, elem, meta.merge_key or None)
        sub, _ = schema.lookup_struct(key)
        return order_k8s(value, sub)
    except SchemaLookupError:
        return order_k8s(value)


def _ordered(value: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    keys = [k for k in order if k in value] + sorted(k for k in value if k not in order)
    return {k: value[k] for k in keys}


def order_profile(profile: dict[str, Any]) -> dict[str, Any]:
    """A profile (file shape) in output order."""
    out = _ordered(profile, _PROFILE_ORDER)
    if isinstance(out.get("elastic"), dict):
        elastic = _ordered(out["elastic"], _ELASTIC_ORDER)
        for key in ("rdzv_configs", "run_policy"):
            if isinstance(elastic.get(key), dict):
                elastic[key] = dict(sorted(elastic[key].items()))
        out["elastic"] = elastic
    if isinstance(out.get("pod_template"), dict):
        pod = _ordered(out["pod_template"], _POD_TEMPLATE_ORDER)
        for key in ("labels", "annotations"):
            if isinstance(pod.get(key), dict):
                pod[key] = dict(sorted(pod[key].items()))
        if "spec" in pod:
            from ._k8s_schema import schema_type

            pod["spec"] = order_k8s(pod["spec"], schema_type("PodSpec"))
        out["pod_template"] = pod
    return out


def to_json(data: Any) -> str:
    """Indented JSON, keys in the given order, non-ASCII kept, ending with a newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def to_yaml(data: Any) -> str:
    """Block-style YAML 1.2 that YAML 1.1 readers read back the same, ending with a newline."""
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import RoundTripRepresenter

    class _Representer(RoundTripRepresenter):
        pass

    def represent_str(representer: Any, text: str) -> Any:
        style = None
        if "\n" in text:
            style = "|"
        elif needs_quotes_for_yaml11(text):
            style = '"'
        return representer.represent_scalar("tag:yaml.org,2002:str", text, style=style)

    def represent_none(representer: Any, _: None) -> Any:
        return representer.represent_scalar("tag:yaml.org,2002:null", "null")

    _Representer.add_representer(str, represent_str)
    _Representer.add_representer(type(None), represent_none)
    yaml = YAML(typ="rt", pure=True)
    yaml.Representer = _Representer
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()
