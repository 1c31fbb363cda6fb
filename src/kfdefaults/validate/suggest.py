"""Words for messages: suggestions for near misses (``volumeMount`` -> ``volumeMounts``, ``heartbeat`` ->
``heartbeat_timeout``) and how a value reads (``the string "8"``)."""

from __future__ import annotations

import difflib
import json
import re
from typing import Any, Iterable


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``word``, if one is close enough to be a likely typo.

    Case-insensitive matches, prefixes (``heartbeat`` of ``heartbeat_timeout``) and small edits count.
    """
    candidates = list(candidates)
    lowered = {c.lower(): c for c in candidates}
    if word.lower() in lowered:
        return lowered[word.lower()]
    matches = difflib.get_close_matches(word, candidates, n=1, cutoff=0.75)
    if matches:
        return matches[0]
    prefixed = [c for c in candidates if len(word) >= 4 and (c.startswith(word) or word.startswith(c))]
    if len(prefixed) == 1:
        return prefixed[0]
    matches = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[matches[0]] if matches else None


#: Names users carry over from torchrun, ``torch.multiprocessing.spawn`` and PyTorchJob manifests, which no
#: spelling distance finds: ``nprocs`` (spawn) is ``nproc_per_node``, torchrun's ``--rdzv-conf`` is
#: ``rdzv_configs``, a PyTorchJob's ``minReplicas``/``maxReplicas`` are the two ends of ``nnodes``.
ELASTIC_SYNONYMS = {
    "nprocs": "`nproc_per_node`",
    "nproc": "`nproc_per_node`",
    "num_procs": "`nproc_per_node`",
    "procs_per_node": "`nproc_per_node`",
    "gpus_per_node": "`nproc_per_node`",
    "num_nodes": "`nnodes`",
    "nodes": "`nnodes`",
    "min_nodes": '`nnodes` (a range "MIN:MAX")',
    "max_nodes": '`nnodes` (a range "MIN:MAX")',
    "min_replicas": '`nnodes` (a range "MIN:MAX")',
    "max_replicas": '`nnodes` (a range "MIN:MAX")',
    "restarts": "`max_restarts`",
    "rdzv_conf": "`rdzv_configs`",
    "rdzv_config": "`rdzv_configs`",
}


def unknown_key_message(key: str, known: Iterable[str], what: str = "field",
                        synonyms: dict[str, str] | None = None) -> str:
    """``unknown field `volumeMount`; did you mean `volumeMounts`?``

    ``synonyms`` maps a normalised key (lower case, ``-`` read as ``_``, camelCase split) to the hint for
    the known key it stands for, when spelling does not find it (:data:`ELASTIC_SYNONYMS`).
    """
    if synonyms:
        normal = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower().replace("-", "_")
        if normal in synonyms:
            return f"unknown {what} `{key}`; did you mean {synonyms[normal]}?"
    hint = closest(key, known)
    return f"unknown {what} `{key}`" + (f"; did you mean `{hint}`?" if hint else "")


def describe(value: Any) -> str:
    """How a value reads in a message: ``the number 8``, ``the string "8"``, ``true``, ``a list``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {json.dumps(value)}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"
