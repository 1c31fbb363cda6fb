"""``render --as flyte``: the TaskTemplate a real serialization printed, kept for the next run with the same inputs.

Serializing a task imports the SDK (flytekit and its kfpytorch plugin: seconds; Flyte 2's ``flyte``), and the
template depends on nothing but what :func:`preview_key` covers. So the first run defines and serializes the task
as always (:mod:`kfdefaults.flytekit.preview`, :mod:`kfdefaults.flyte2.preview`) and keeps its TaskTemplate and
the warnings said meanwhile in kfdefaults' cache (:mod:`kfdefaults.cache`); a later run with the same inputs
prints them without importing the SDK. Nothing here makes a template: what is printed was serialized by the SDK,
from the same inputs. ``KFDEFAULTS_NO_CACHE=1`` serializes every time.

The key is everything the template and the warnings can depend on:

* kfdefaults' own code (:func:`kfdefaults.cache.key`: its version and every source file);
* the command's arguments (profile, folders, ``--set``, ``--image``, target, Kubernetes version, cluster
  template) and the working folder (the project is looked for from it);
* the merged profile the command resolved (the task layer included), the layer and source of each fragment, and
  the bytes of every profile file read, of the project's ``pyproject.toml``, of its ``kfdefaults.lock`` and of
  the cluster's template (a moved line changes a warning's ``FILE:LINE``);
* the environment variables that name folders or settings for kfdefaults or the SDK (``KFDEFAULTS_*``,
  ``FLYTE*``, ``_F_*``, ``PET_*``, ``PYTHON*``), ``sys.path``, the interpreter and its version (flytekit's
  default image names the Python version);
* the installed SDK: for each of its packages, where it is and the ``stat`` of its ``__init__.py`` and folder (an
  upgrade or reinstall replaces them).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import Any, Mapping, Sequence

from .. import cache
from ..merge.result import Resolved

ENV_PREFIXES = ("KFDEFAULTS_", "FLYTE", "_F_", "PET_", "PYTHON")
"""Environment variables that count: kfdefaults' own, flytekit's and Flyte's (``FLYTE_INTERNAL_IMAGE`` is the
default image, ``FLYTECTL_CONFIG`` the configuration), those of the pod (``_F_*``, ``PET_*``) and Python's."""

SDK_MODULES = {
    "flytekit": ("flytekit", "flytekitplugins.kfpytorch", "flyteidl", "google.protobuf", "kubernetes"),
    "flyte2": ("flyte", "flyteplugins.pytorch", "flyteidl2", "google.protobuf", "kubernetes"),
}
"""The packages whose code makes each target's TaskTemplate."""


def _file_digest(path: str | None) -> str | None:
    """The digest of a small file's bytes, ``None`` when there is none or it cannot be read."""
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            return cache.digest(f.read(4 << 20))
    except OSError:
        return None


def _stat(path: str | None) -> list[int] | None:
    try:
        st = os.stat(path) if path else None
    except OSError:
        return None
    return None if st is None else [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def sdk_fingerprint(target: str) -> list[Any]:
    """Where each package of the target's SDK is installed, with the ``stat`` of its ``__init__.py`` and of its
    folder; found without importing it (a subpackage's parent is imported, which for namespace packages such as
    ``flytekitplugins`` runs no code)."""
    out: list[Any] = []
    for name in SDK_MODULES.get(target, ()):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
        out.append([name, origin, _stat(origin), _stat(os.path.dirname(origin) if origin else None)])
    return out


def preview_key(arguments: Mapping[str, Any], resolved: Resolved, files: Mapping[str, str], project_files: Sequence[str | None]) -> str:
    """The cache key of one ``render --as flyte``.

    Args:
        arguments: The command's arguments that shape the task (profile, folders, ``--set`` tree, ``--image``,
            target, Kubernetes version, ``--cluster-template``), as plain data.
        resolved: The profile as the command merged it, task layer included.
        files: Every profile file read -> the digest of its bytes (the pipeline's loader).
        project_files: The project's ``pyproject.toml``, its lock file and the cluster's template (``None`` where
            there is none); their bytes are read.
    """
    target = resolved.target.name
    inputs = {
        "arguments": arguments,
        "cwd": os.getcwd(),
        "profile": [resolved.digest(), resolved.to_dict(), [[f.layer, f.source] for f in resolved.fragments]],
        "files": sorted(files.items()),
        "project": [[path, _file_digest(path)] for path in project_files],
        "environment": sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)),
        "python": [sys.executable, sys.version, sys.path],
        "sdk": sdk_fingerprint(target),
    }
    text = json.dumps(inputs, sort_keys=True, default=repr, ensure_ascii=False)
    return cache.key(text.encode("utf-8", "surrogatepass"), "render --as flyte", target)


def _is_entry(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("template"), dict) and isinstance(value.get("said"), list)
            and all(isinstance(s, list) and len(s) == 4 and isinstance(s[0], str) and isinstance(s[1], str)
                    for s in value["said"]))


def load_preview(key: str) -> tuple[dict[str, Any], list[list[Any]]] | None:
    """``(TaskTemplate, warnings)`` kept under ``key``, or ``None``. Each warning is ``[category, message,
    filename, lineno]``, ``category`` ``"KfdefaultsWarning"`` for kfdefaults' own."""
    value = cache.load(key, _is_entry)
    return None if value is None else (value["template"], value["said"])


def store_preview(key: str, template: Mapping[str, Any], said: Sequence[Sequence[Any]]) -> None:
    """Keep what a real serialization printed under ``key`` (see :func:`load_preview`)."""
    cache.store(key, {"template": dict(template), "said": [list(s) for s in said]})
