"""A profile as registration read it, carried to where a task on it is compiled again: a ``@dynamic``'s pod, a
Flyte 2 parent's pod (:func:`kfdefaults.runtime.carry_profiles`).

What travels is what the merge is a function of (:mod:`kfdefaults.merge.fold`): the profile's file-layer fragments
as registration expanded them, the Kubernetes version, the target, and, for flytekit, the cluster's default
PodTemplate; with the provenance annotations the registered pod carries. :func:`carried_pipeline` is a
:class:`~kfdefaults.pipeline.Pipeline` over them that reads no file: the task layer of the code in the pod
(``Elastic(...)``'s arguments, ``@task(pod_template=...)``, the task's resources, a node's override) merges on top
exactly as it did at registration, so the task compiled there is the task registered.

The value is JSON, gzip-compressed and base64-encoded as flytekit carries its serialization settings into a
``@dynamic``'s pod (``SerializationSettings.serialized_context``); reading it, a value that is not one kfdefaults
wrote, or that inflates beyond :data:`MAX_INFLATED` bytes, is no value.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import zlib
from typing import Any, Mapping

from ..errors import Location
from ..inputs import Inputs
from ..layers import Catalog, ClusterTemplatePath
from ..merge.result import SdkObjects
from ..paths import parse_path
from ..read import Document
from ..receipt.expect import file_name
from ..validate.fragment import Fragment, Lock
from . import Pipeline

VERSION = 1
"""The shape of the carried value; another is no value."""

MAX_INFLATED = 4 << 20
"""Bytes a carried value may inflate to (a profile's fragments are a few KiB)."""


def carried_entry(pipeline: Pipeline, profile: str, provenance: Mapping[str, str]) -> dict[str, Any]:
    """What a pod needs to merge ``profile`` as ``pipeline`` merges it: plain JSON data.

    Raises:
        ProfileError: the profile cannot be read (it was read already by the ``Elastic(...)`` call carried).
    """
    cluster = pipeline.cluster
    fragments = pipeline.fragments(profile)
    return {
        "target": pipeline.target.name,
        "profile": profile,
        "kubernetes_version": pipeline.kubernetes_version,
        "fragments": [_fragment_data(f) for f in fragments],
        # each file as registration names it, so that the pod's receipt names it alike (kfdefaults.receipt.expect)
        "names": {f.source: pipeline.file_names.get(f.source)
                  or file_name(f.source, pipeline.catalog, pipeline.project.root) for f in fragments
                  if f.document is not None},
        "cluster": None if cluster is None else {"path": cluster.path, "origin": cluster.origin,
                                                 "document": cluster.document.to_json()},
        "provenance": dict(provenance),
    }


def carried_pipeline(entry: Mapping[str, Any], sdk: SdkObjects | None) -> Pipeline:
    """A pipeline over a :func:`carried_entry`: its profile's fragments, its cluster template, no folder, no lock
    (registration held the profile to it).

    Raises:
        KeyError, TypeError, ValueError: ``entry`` is not of that shape.
    """
    pipeline = Pipeline(Catalog({}, None, Inputs()), kubernetes_version=entry["kubernetes_version"], sdk=sdk,
                        target=entry["target"])
    pipeline.expanded[entry["profile"]] = [_fragment(f) for f in entry["fragments"]]
    names = entry.get("names") or {}
    pipeline.file_names = {k: v for k, v in names.items() if isinstance(k, str) and isinstance(v, str)}
    cluster = entry.get("cluster")
    if cluster is not None and pipeline.target.name == "flytekit":
        path = cluster["path"]
        pipeline.cluster_template = ClusterTemplatePath(path, cluster["origin"])
        from ..backend.cluster import ClusterTemplate  # lazy: Go's model of a PodSpec, only for a template
        pipeline._cluster = ClusterTemplate(path, cluster["origin"], Document.from_json(path, cluster["document"]))
    return pipeline


def encode(calls: Mapping[str, Any]) -> str:
    """The environment variable's value for ``calls`` (runtime key -> :func:`carried_entry`): the same bytes for
    the same calls (sorted keys, no gzip timestamp), so that registering twice registers one task."""
    text = json.dumps({"version": VERSION, "calls": calls}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")


def decode(value: str) -> dict[str, Any]:
    """The calls of an :func:`encode` value; ``{}`` for a value kfdefaults did not write (damaged, another
    version, more than :data:`MAX_INFLATED` bytes inflated)."""
    try:
        packed = base64.b64decode(value.encode("ascii"), validate=True)
        with gzip.GzipFile(fileobj=io.BytesIO(packed)) as f:
            raw = f.read(MAX_INFLATED + 1)  # a longer value is cut, and no JSON
        data = json.loads(raw)
    except (ValueError, binascii.Error, OSError, EOFError, zlib.error, RecursionError, UnicodeError):
        return {}
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("calls"), dict):
        return {}
    return data["calls"]


def _fragment_data(fragment: Fragment) -> dict[str, Any]:
    return {"profile": fragment.profile, "layer": fragment.layer, "source": fragment.source,
            "description": fragment.description, "elastic": fragment.elastic, "pod_template": fragment.pod_template,
            "primary_container_name": fragment.primary_container_name, "deprecated": fragment.deprecated,
            "locks": [[lock.text, *lock.location] for lock in fragment.locks],
            "document": fragment.document.to_json() if fragment.document is not None else None}


def _fragment(data: Mapping[str, Any]) -> Fragment:
    locks = [Lock(text, parse_path(text, item=True), Location(file, line, column))
             for text, file, line, column in data["locks"]]
    document = Document.from_json(data["source"], data["document"]) if data.get("document") is not None else None
    return Fragment(data["profile"], data["layer"], data["source"], document, data["description"], data["elastic"],
                    data["pod_template"], data["primary_container_name"], locks=locks, deprecated=data["deprecated"])
