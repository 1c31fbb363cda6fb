"""Plain manifest data <-> the kubernetes Python client's models (``V1PodSpec``, ``V1PodTemplate``, ...).

Both SDK adapters hand the client's models to their SDK. The client is imported when a function here runs
(it takes about 0.6 s), never at import.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..errors import KfdefaultsError
from ..smp.schema import SchemaType, schema_type


def _api_client() -> Any:
    """``kubernetes.client.ApiClient()``.

    Raises:
        KfdefaultsError: the kubernetes client is not installed (it is the ``kubernetes`` extra, which the SDK
            extras include: the core needs none).
    """
    try:
        from kubernetes.client import ApiClient
    except ImportError:
        raise KfdefaultsError("this needs the kubernetes Python client, which kfdefaults' core does not install: "
                              "pip install 'kfdefaults[kubernetes]' (the flytekit and flyte2 extras include it)") from None
    return ApiClient()


class _JSONResponse:
    """What ``kubernetes.client.ApiClient.deserialize`` reads: an object with ``.data``."""

    def __init__(self, data: Any) -> None:
        self.data = json.dumps(data)


def to_k8s_model(data: Mapping[str, Any], klass: str, kubernetes_version: str | None = None) -> Any:
    """Plain manifest data -> a kubernetes client model (``"V1PodSpec"``, ``"V1PodTemplate"``, ...).

    Uses the client's own deserializer, so camelCase keys map to the model's attributes exactly as the
    client maps an API server response. Quantities written as numbers become strings first
    (:func:`quantities_as_strings`).

    Raises:
        KfdefaultsError: the kubernetes client is not installed.
    """
    import inspect

    data = quantities_as_strings(data, schema_type(klass[2:] if klass.startswith("V1") else klass, kubernetes_version))
    client = _api_client()
    if "content_type" in inspect.signature(client.deserialize).parameters:  # kubernetes >= 35
        return client.deserialize(json.dumps(data), klass, "application/json")
    return client.deserialize(_JSONResponse(data), klass)


def to_plain(model: Any) -> Any:
    """A kubernetes client model -> plain manifest data (camelCase keys, ``None`` dropped)."""
    return _api_client().sanitize_for_serialization(model)


def quantities_as_strings(value: Any, schema: SchemaType | None) -> Any:
    """A copy of ``value`` with every Kubernetes quantity written as a string (``8`` -> ``"8"``).

    The API server accepts a number where a quantity goes and stores it as a string; the kubernetes Python
    client's models accept strings only.
    """
    if schema is None:
        return value
    if schema.name == "Quantity" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, dict):
        if schema.kind == "struct":
            return {k: quantities_as_strings(v, schema.property(k)) for k, v in value.items()}
        if schema.kind == "map":
            values = schema.map_values()
            return {k: quantities_as_strings(v, values) for k, v in value.items()}
        return value
    if isinstance(value, list) and schema.kind == "slice":
        items = schema.items()
        return [quantities_as_strings(v, items) for v in value]
    return value
