"""One profile file -> its validated :class:`~.fragment.Definition`: read, validated, remembered.

A file that validates is kept in the cache (:mod:`kfdefaults.cache`), keyed by its bytes, its format, the
Kubernetes version and kfdefaults' own code, so that an unchanged file costs a hash and a read. An invalid
file is read again each time, to report its errors.
"""

from __future__ import annotations

import os
import re
from typing import Any

from .. import cache
from ..errors import Finding, Location, ProfileError
from ..inputs import Inputs
from ..layers import NAME_PATTERN, profile_name_of
from ..read import MAX_FILE_BYTES, TOML_SUFFIXES, Document, parse_bytes, read_bytes
from ..smp.schema import normalize_version
from .fragment import Definition, Fragment, fragment_from_body, locks_of

class DefinitionLoader:
    """Loads profile files of one Kubernetes version, each once.

    Args:
        kubernetes_version: Kubernetes minor version the PodSpec fragments are checked against (``None``: 1.32).
        inputs: Where each file read is recorded (:mod:`kfdefaults.inputs`).

    Attributes:
        loaded: File -> its definition, for every file loaded so far.
        remember: Store each file validated in the cache (it is read from the cache either way). ``validate``
            turns it off: it checks a thousand files once each, and creating a thousand cache files costs more
            than reading them back saves (from 0.1 s on a fast disk to over a second where creating a file is slow).
    """

    def __init__(self, kubernetes_version: str | None = None, inputs: Inputs | None = None) -> None:
        self.kubernetes_version = normalize_version(kubernetes_version)
        self.inputs = Inputs() if inputs is None else inputs
        self.loaded: dict[str, Definition] = {}
        self.remember = True

    def load(self, file: str, layer: str) -> Definition:
        """Parse and validate one profile file of ``layer``.

        Raises:
            ProfileError: every problem found in the file, each at ``FILE:LINE:COLUMN``.
        """
        cached = self.loaded.get(file)
        if cached is not None:
            return cached
        raw = read_bytes(file, self.inputs)
        # the same bytes are another document in the other format: the suffix chooses the parser
        file_format = "toml" if file.endswith(TOML_SUFFIXES) else "yaml"
        entry_key = cache.key(raw, "profile", file_format, self.kubernetes_version)
        entry = cache.load(entry_key)
        definition = _definition_from_entry(entry, file, layer) if entry is not None else None
        stem = profile_name_of(file)
        if definition is None:
            # lazy: the validation machinery (pydantic and the section models) costs about a quarter of a second to
            # import, which a file read from the cache does not need
            from .body import validate_body

            doc = parse_bytes(raw, file)
            warnings: list[Finding] = []
            body, findings = validate_body(doc, doc.data, layer, self.kubernetes_version, warnings=warnings)
            if findings:
                raise ProfileError(findings)
            definition = Definition(body.name or stem, layer, file, doc, body.parents(),
                                    fragment_from_body(stem, layer, file, body, doc), warnings)
            _check_file_name(definition, stem)
            if self.remember:
                cache.store(entry_key, _definition_to_entry(definition))
        else:
            _check_file_name(definition, stem)  # the cache keys a file by its content, not by its name
        self.loaded[file] = definition
        return definition


def _check_file_name(definition: Definition, stem: str) -> None:
    """The file name is the profile name: it must be one, and a ``name:`` in the file must say the same.

    Raises:
        ProfileError: the stem is not ``[a-z0-9][a-z0-9-]*`` (``gpu_large.yaml`` would silently be another
            profile than the ``gpu-large`` it means to change), or ``name:`` names another profile.
    """
    doc, layer = definition.document, definition.layer
    suffix = os.path.splitext(doc.file)[1]
    if not re.fullmatch(NAME_PATTERN, stem):
        suggestion = re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-")
        hint = f": rename the file to `{suggestion}{suffix}`" if suggestion else ""
        raise ProfileError([Finding(Location(doc.file, 1, 1), "", f"the file name `{stem}` is not a profile name "
                                    f"(lower-case letters, digits and dashes){hint}", layer=layer)])
    if definition.name != stem:
        raise ProfileError([Finding(doc.location(("name",)), "name", f"`{definition.name}` is not the file's name: "
                                    f"kfdefaults finds a profile by its file name; rename the file to "
                                    f"`{definition.name}{suffix}` or remove `name:`", layer=layer)])


def _definition_to_entry(definition: Definition) -> dict[str, Any]:
    """What the cache keeps of a valid file: the parsed document and the validated fragment."""
    fragment = definition.fragment
    return {
        "document": definition.document.to_json(),
        # what the file declares, not the name it was loaded as: another file may hold the same bytes
        "declared_name": definition.document.data.get("name") if isinstance(definition.document.data, dict) else None,
        "parents": definition.parents,
        "description": fragment.description,
        "elastic": fragment.elastic,
        "pod_template": fragment.pod_template,
        "primary_container_name": fragment.primary_container_name,
        "locked": [lock.text for lock in fragment.locks],
        "deprecated": fragment.deprecated,
        "warnings": [[w.location.line, w.location.column, w.path, w.message, w.severity] for w in definition.warnings],
    }


def _definition_from_entry(entry: Any, file: str, layer: str) -> Definition | None:
    """The inverse of :func:`_definition_to_entry`, for ``file`` in ``layer``; ``None`` if the entry is not of
    that shape (damaged, or written by other code): a miss."""
    try:
        doc = Document.from_json(file, entry["document"])
        warnings = []
        for line, column, dotted, message, severity in entry["warnings"]:
            if not (type(line) is int and type(column) is int and isinstance(dotted, str) and isinstance(message, str)
                    and severity in ("error", "warning")):
                return None
            warnings.append(Finding(Location(file, line, column), dotted, message, severity, layer=layer))
        stem = profile_name_of(file)
        declared, description, primary = entry["declared_name"], entry["description"], entry["primary_container_name"]
        elastic, pod_template, parents = entry["elastic"], entry["pod_template"], list(entry["parents"])
        if not (_is_section(elastic) and _is_pod_patch(pod_template) and all(isinstance(p, str) for p in parents)
                and all(v is None or isinstance(v, str) for v in (declared, description, primary))):
            return None
        locked, deprecated = entry["locked"], entry["deprecated"]
        if not (isinstance(locked, list) and all(isinstance(t, str) for t in locked)
                and (deprecated is None or isinstance(deprecated, str))):
            return None
        fragment = Fragment(stem, layer, file, doc, description, elastic, pod_template, primary,
                            locks=locks_of(doc, locked), deprecated=deprecated)
        return Definition(declared or stem, layer, file, doc, parents, fragment, warnings)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _is_section(value: Any) -> bool:
    """A mapping with string keys whose mappings below are mappings too (``elastic``, as written)."""
    return isinstance(value, dict) and all(isinstance(k, str) for k in value) and all(
        v is None or not isinstance(v, dict) or _is_section(v) for v in value.values())


def _is_pod_patch(value: Any) -> bool:
    """A PodTemplateSpec patch as :func:`~.fragment.pod_template_patch` makes it: ``metadata`` and ``spec``."""
    return (isinstance(value, dict) and set(value) <= {"metadata", "spec"}
            and all(isinstance(v, dict) and all(isinstance(k, str) for k in v) for v in value.values()))
