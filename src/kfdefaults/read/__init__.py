"""Step 1, read: profile files -> :class:`Document` objects (plain data, and where each key and value was written).

YAML is read with the YAML 1.2 core schema, whatever the file's YAML version; TOML by :mod:`tomllib`. Nothing
here validates or merges.
"""

from __future__ import annotations

from .document import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, Document
from .files import (
           PROFILE_SUFFIXES,
           TOML_SUFFIXES,
           YAML_SUFFIXES,
           parse_bytes,
           parse_text,
           path_problem,
           read_bytes,
           read_document,
)

__all__ = ["Document", "MAX_DEPTH", "MAX_FILE_BYTES", "MAX_NODES", "PROFILE_SUFFIXES", "TOML_SUFFIXES",
           "YAML_SUFFIXES", "parse_bytes", "parse_text", "path_problem", "read_bytes", "read_document"]
