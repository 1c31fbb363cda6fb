"""Step 1, read: profile files -> :class:`Document` objects (plain data, and where each key and value was written).

YAML is read with the YAML 1.2 core schema, whatever the file's YAML version; TOML by :mod:`tomllib`. Nothing
here validates or merges.
"""

from __future__ import annotations

from .document import (
           MANIFEST_BUDGET,
           MAX_DEPTH,
           MAX_FILE_BYTES,
           MAX_NODES,
           PROFILE_BUDGET,
           Budget,
           Document,
)
from .files import (
           PROFILE_SUFFIXES,
           TOML_SUFFIXES,
           YAML_SUFFIXES,
           decode_text,
           parse_bytes,
           parse_text,
           path_problem,
           read_bytes,
           read_document,
           read_input,
           read_manifests,
)
from .yaml import parse_yaml_documents

__all__ = ["Budget", "Document", "MANIFEST_BUDGET", "MAX_DEPTH", "MAX_FILE_BYTES", "MAX_NODES", "PROFILE_BUDGET",
           "PROFILE_SUFFIXES", "TOML_SUFFIXES", "YAML_SUFFIXES", "decode_text", "parse_bytes", "parse_text",
           "parse_yaml_documents", "path_problem", "read_bytes", "read_document", "read_input", "read_manifests"]
