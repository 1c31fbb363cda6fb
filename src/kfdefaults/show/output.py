"""Printing merged profiles and manifests as YAML or JSON, in a stable order.

Order: a profile's own keys in the order of the file format (name, description, elastic, pod_template; the
elastic fields in the plugin's order); Kubernetes objects with ``apiVersion``, ``kind``, ``metadata`` first and
then, like ``kubectl -o yaml``, alphabetical keys, except that a list item starts with its merge key
(``- name: primary``) so that a reviewer sees which item it is. The same input prints the same bytes on
every run.

YAML output quotes every string that a YAML 1.1 reader (kubectl, PyYAML) would take for something else:
``"no"``, ``"on"``, ``"y"``, ``"0755"``, ``"1_000"``, ``"12:30"``, ``"2024-01-01"``. Round-tripping the output
through kubectl therefore keeps strings strings.

Strings are written with the format's own escapes (``"\\u001b"``, ``"\\u202e"``) for every character a terminal
would act on rather than show (:func:`kfdefaults.escape.is_unsafe`): the data reads back the same, and the
output is safe to print.

Output for a terminal or file whose encoding is not a Unicode one (the ``C`` locale without Python's UTF-8
mode, ``de_DE.ISO-8859-1``) writes the characters that encoding cannot hold as escapes of the format
(:func:`output_encoding`): ``"\\u65e5"`` in JSON and YAML, which read back as the same data.
"""

from __future__ import annotations

from ..errors import SchemaLookupError
import codecs
import json
import re
import sys
from typing import Any

from ..escape import is_unsafe, printable
from ..smp.schema import schema_type
from ..targets import ELASTIC_KEYS

_PROFILE_ORDER = ("name", "description", "extends", "elastic", "pod_template")
ELASTIC_ORDER = ELASTIC_KEYS
POD_TEMPLATE_ORDER = ("primary_container_name", "labels", "annotations", "spec")
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
        schema: The :class:`kfdefaults.smp.schema.SchemaType` of ``value``, which tells each list's merge key;
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


def order_profile(profile: dict[str, Any], kubernetes_version: str | None = None) -> dict[str, Any]:
    """A profile (file shape) in output order."""
    out = _ordered(profile, _PROFILE_ORDER)
    if isinstance(out.get("elastic"), dict):
        elastic = _ordered(out["elastic"], ELASTIC_ORDER)
        for key in ("rdzv_configs", "run_policy"):
            if isinstance(elastic.get(key), dict):
                elastic[key] = dict(sorted(elastic[key].items()))
        out["elastic"] = elastic
    if isinstance(out.get("pod_template"), dict):
        pod = _ordered(out["pod_template"], POD_TEMPLATE_ORDER)
        for key in ("labels", "annotations"):
            if isinstance(pod.get(key), dict):
                pod[key] = dict(sorted(pod[key].items()))
        if "spec" in pod:
            pod["spec"] = order_k8s(pod["spec"], schema_type("PodSpec", kubernetes_version))
        out["pod_template"] = pod
    return out


def output_encoding(stream: Any = None) -> str | None:
    """The encoding of ``stream`` (standard output) when it cannot hold every character, else ``None``.

    ``None`` for UTF-8 and the other Unicode encodings, and for a stream that says nothing (a ``StringIO``);
    the codec's name (``"iso8859-1"``, ``"ascii"``) otherwise.
    """
    encoding = getattr(sys.stdout if stream is None else stream, "encoding", None)
    if not encoding:
        return None
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return "ascii"
    return None if name.startswith("utf") else name


def escaped_strings(text: str, encoding: str | None, *, astral: str) -> str:
    """``text`` with every character ``encoding`` cannot hold, and every one a terminal would act on
    (:func:`kfdefaults.escape.is_unsafe`: DEL, the C1 controls, the bidirectional and zero-width format
    characters, U+2028...), written as ``\\uXXXX``; a character beyond U+FFFF as JSON writes it
    (``astral="json"``: a surrogate pair) or as YAML does (``"yaml"``: ``\\UXXXXXXXX``).

    Only valid where those characters stand inside double-quoted strings, as in the JSON and YAML written here
    (plain YAML scalars are printable ASCII; JSON has escaped the C0 controls already).
    """
    if text.isascii() and "\x7f" not in text:
        return text
    if encoding is None and text.replace("\n", "").isprintable():
        return text
    out = []
    for c in text:
        if c == "\n" or (c.isascii() and c != "\x7f") or printable(c, encoding) == c:
            out.append(c)
            continue
        code = ord(c)
        if code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        elif astral == "yaml":
            out.append(f"\\U{code:08x}")
        else:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
    return "".join(out)


def to_json(data: Any, *, encoding: str | None = None) -> str:
    """Indented JSON, keys in the given order, non-ASCII kept, ending with a newline.

    Args:
        data: Plain data.
        encoding: What the text will be written in (:func:`output_encoding`); characters it cannot hold are
            written as JSON escapes (``\\u65e5``). ``None``: every character kept.
    """
    return escaped_strings(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding, astral="json")


_PLAIN = re.compile(r"(?:[A-Za-z0-9_./(]|-+[A-Za-z0-9_./(])[A-Za-z0-9_./()@=+:;,~^$%<>!&*?|'\"\- ]*")


def _yaml_scalar(value: Any) -> str:
    """One scalar: plain where every YAML reader reads it back the same, else a JSON (double-quoted) string."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)  # YAML 1.1 wants a dot in every float, also before an exponent: 1.0e-05
        mantissa, e, exponent = text.partition("e")
        return (mantissa if "." in mantissa else mantissa + ".0") + (e + exponent if e else "")
    text = str(value)
    plain = (
        _PLAIN.fullmatch(text) is not None
        and not text.endswith((" ", ":"))
        and ": " not in text
        and not needs_quotes_for_yaml11(text)
        and _YAML12_NOT_STRING.fullmatch(text) is None
    )
    return text if plain else yaml_quoted(text)


def _yaml_printable(c: str) -> bool:
    """Whether YAML allows ``c`` unescaped (line separators, which readers take for line breaks, excluded) and a
    terminal shows it as it is (:func:`kfdefaults.escape.is_unsafe`)."""
    code = ord(c)
    return (code in (0x09, 0x0A, 0x0D) or 0x20 <= code <= 0x7E or 0xA0 <= code <= 0x2027 or 0x202A <= code <= 0xD7FF
            or 0xE000 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF) and not is_unsafe(c)


def yaml_quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar (a JSON string, valid YAML), with what YAML does not allow
    unescaped and what a terminal would act on written as ``\\uXXXX`` / ``\\UXXXXXXXX``: it reads back as
    ``text`` and shows as one line of visible characters.

    A character loop rather than a regular expression: the class of YAML's printable characters spans the
    whole of Unicode, and compiling it cost more than rendering a profile.
    """
    quoted = json.dumps(text, ensure_ascii=False)
    if quoted.isascii() and "\x7f" not in quoted:  # json.dumps has escaped the ASCII control characters
        return quoted
    return "".join(c if _yaml_printable(c) else (f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
                   for c in quoted)


_YAML12_NOT_STRING = re.compile(
    r"~|null|Null|NULL|true|True|TRUE|false|False|FALSE|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"
)


def _emit(value: Any, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            head = f"{pad}{_yaml_scalar(str(key))}:"
            if isinstance(item, (dict, list)) and item:
                lines.append(head)
                _emit(item, indent + 2, lines)
            else:
                lines.append(f"{head} {_yaml_inline(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                sub: list[str] = []
                _emit(item, indent + 2, sub)
                lines.append(f"{pad}- {sub[0][indent + 2 :]}")
                lines.extend(sub[1:])
            else:
                lines.append(f"{pad}- {_yaml_inline(item)}")


def _yaml_inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _yaml_scalar(value)


def to_yaml(data: Any, *, encoding: str | None = None) -> str:
    """Block-style YAML that YAML 1.2 and YAML 1.1 readers (kubectl, PyYAML) read back the same.

    Strings stay plain where no reader could take them for anything else and are written as JSON strings
    (valid YAML double-quoted scalars) otherwise; lists are indented under their key as ``kubectl`` users
    write them. Written here rather than with a YAML library because rendering runs in editors and hooks on
    every change, and the emitter of plain data is a few lines while a YAML library takes longer to import
    than the whole rest of a render.

    Args:
        data: Plain data: dicts with string keys, lists, str, int, float, bool, None.
        encoding: What the text will be written in (:func:`output_encoding`); characters it cannot hold are
            written as YAML escapes (``\\u65e5``, in double-quoted strings). ``None``: every character kept.

    Returns:
        The document, ending with a newline.
    """
    if not isinstance(data, (dict, list)) or not data:
        return escaped_strings(_yaml_inline(data) + "\n", encoding, astral="yaml")
    lines: list[str] = []
    _emit(data, 0, lines)
    return escaped_strings("\n".join(lines) + "\n", encoding, astral="yaml")


def stable_task_template(template: dict[str, Any]) -> dict[str, Any]:
    """A serialized Flyte TaskTemplate (protobuf JSON) with its keys in a fixed order: protobuf maps come out in a
    different order every run (``render --as flyte``, for either SDK).

    Keys are sorted at every level; the pod spec is ordered as ``render`` orders Kubernetes data (list items
    start with their merge key).
    """
    def ordered(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ordered(value[k]) for k in sorted(value)}
        if isinstance(value, list):
            return [ordered(v) for v in value]
        return value

    out = ordered(template)
    pod = out.get("k8sPod")
    if isinstance(pod, dict) and isinstance(pod.get("podSpec"), dict):
        pod["podSpec"] = order_k8s(pod["podSpec"], schema_type("PodSpec"))
    return out
