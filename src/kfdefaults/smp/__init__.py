"""Strategic merge patch: kubectl's algorithm, driven by the patch metadata of the Kubernetes schema.

Usable on its own: nothing here imports anything of kfdefaults but :mod:`kfdefaults.errors` (and the path
syntax of :mod:`kfdefaults.paths` that its messages use). :func:`strategic_merge_patch` is the entry point;
:mod:`.schema` reads the schema, :mod:`.patch` is the port of apimachinery's ``patch.go``, :mod:`.goruntime`
the Go behaviour it depends on. Importing the package imports none of them until a name is used.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {"strategic_merge_patch": ".patch", "SchemaType": ".schema", "PatchMeta": ".schema",
          "schema_type": ".schema", "normalize_version": ".schema",
          "DEFAULT_KUBERNETES_VERSION": ".schema"}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kfdefaults.smp' has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
