"""Plain data -> the objects flytekit, the kfpytorch plugin and the kubernetes client expect.

Everything here imports flytekit or the kubernetes client, so nothing on the render, list or validate paths
imports this module.
"""

from __future__ import annotations

import json
from typing import Any, Mapping


class _JSONResponse:
    """What ``kubernetes.client.ApiClient.deserialize`` reads: an object with ``.data``."""

    def __init__(self, data: Any) -> None:
        self.data = json.dumps(data)


def to_k8s_model(data: Mapping[str, Any], klass: str) -> Any:
    """Plain manifest data -> a kubernetes client model (``"V1PodSpec"``, ``"V1PodTemplate"``, ...).

    Uses the client's own deserializer, so camelCase keys map to the model's attributes exactly as the
    client maps an API server response.
    """
    import inspect

    from kubernetes.client import ApiClient

    from ._k8s_schema import quantities_as_strings, schema_type

    data = quantities_as_strings(data, schema_type(klass[2:] if klass.startswith("V1") else klass))
    client = ApiClient()
    if "content_type" in inspect.signature(client.deserialize).parameters:  # kubernetes >= 35
        return client.deserialize(json.dumps(data), klass, "application/json")
    return client.deserialize(_JSONResponse(data), klass)


def to_plain(model: Any) -> Any:
    """A kubernetes client model -> plain manifest data (camelCase keys, ``None`` dropped)."""
    from kubernetes.client import ApiClient

    return ApiClient().sanitize_for_serialization(model)


def plugin_elastic(settings: Mapping[str, Any]) -> Any:
    """Merged elastic settings -> ``flytekitplugins.kfpytorch.Elastic`` with ``increase_shared_mem=False``."""
    from flytekitplugins.kfpytorch import Elastic
    from flytekitplugins.kfpytorch.task import CleanPodPolicy, RunPolicy

    kwargs = {k: v for k, v in settings.items() if k != "run_policy"}
    kwargs["rdzv_configs"] = dict(kwargs.get("rdzv_configs") or {})
    run_policy = settings.get("run_policy")
    if run_policy:
        policy = dict(run_policy)
        if policy.get("clean_pod_policy"):
            policy["clean_pod_policy"] = CleanPodPolicy[policy["clean_pod_policy"].upper()]
        kwargs["run_policy"] = RunPolicy(**policy)
    return Elastic(increase_shared_mem=False, **kwargs)


def flytekit_pod_template(
    pod_spec: Mapping[str, Any], primary_container_name: str, labels: Mapping[str, str], annotations: Mapping[str, str]
) -> Any:
    """A ``flytekit.PodTemplate`` holding a ``kubernetes.client.V1PodSpec`` built from plain data."""
    from flytekit import PodTemplate

    spec = dict(pod_spec)
    spec.setdefault("containers", [])
    return PodTemplate(
        pod_spec=to_k8s_model(spec, "V1PodSpec"),
        primary_container_name=primary_container_name,
        labels=dict(labels) or None,
        annotations=dict(annotations) or None,
    )
