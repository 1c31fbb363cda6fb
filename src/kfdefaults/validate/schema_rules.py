"""Which Kubernetes fields take which rule when a PodSpec fragment is checked, and the words for JSON types."""

from __future__ import annotations

from typing import Any

from ..k8s.names import STANDARD_CONTAINER_RESOURCES

QUANTITY_DEF = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING_DEF = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
RESOURCE_REQUIREMENTS = "io.k8s.api.core.v1.ResourceRequirements"
POD_SPEC = "io.k8s.api.core.v1.PodSpec"
CONTAINER = "io.k8s.api.core.v1.Container"
EPHEMERAL_CONTAINER = "io.k8s.api.core.v1.EphemeralContainer"
ENV_VAR = "io.k8s.api.core.v1.EnvVar"
"""Its ``name`` follows the API server's environment variable name rule (:func:`kfdefaults.k8s.names.env_var_name_problem`)."""
RESOURCE_OWNERS = (CONTAINER, EPHEMERAL_CONTAINER, POD_SPEC)
"""Where ``resources`` follows the container resource-name rules; a PersistentVolumeClaimSpec's ``resources``
(a ResourceRequirements before Kubernetes 1.29) asks for ``storage`` and is validated otherwise."""

MOUNT_NOTE = "; it names a volume, and volume names are DNS-1123 labels"
DNS_LABEL_FIELDS = {
    (CONTAINER, "name"): ("container name", ""),
    (EPHEMERAL_CONTAINER, "name"): ("container name", ""),
    ("io.k8s.api.core.v1.Volume", "name"): ("volume name", ""),
    ("io.k8s.api.core.v1.VolumeMount", "name"): ("volume mount name", MOUNT_NOTE),
    ("io.k8s.api.core.v1.VolumeDevice", "name"): ("volume device name", MOUNT_NOTE),
}
"""Fields whose value must be a non-empty DNS-1123 label, with how messages name them (k8s.io/kubernetes
pkg/apis/core/validation: ``validateContainerCommon`` and ``ValidateVolumes`` call ``ValidateDNS1123Label``;
``ValidateVolumeMounts`` and ``ValidateVolumeDevices`` require a name that is one of the volumes')."""

LABEL_MAP_FIELDS = {
    (POD_SPEC, "nodeSelector"): "node selector",
    ("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector", "matchLabels"): "label selector",
}
"""Mappings of label keys to label values (``ValidatePodSpec`` and ``ValidateLabelSelector`` call ``ValidateLabels``)."""
POD_LEVEL_RESOURCES = (
    "pod-level `resources` (a budget shared by all containers) need the PodLevelResources feature gate, alpha in "
    "Kubernetes 1.32 and beta from 1.34, and clusters without it drop them; a container's requests and limits go "
    "under `containers[name=primary].resources`"
)
"""Why ``spec.resources`` is a warning: in PodSpec schemas since 1.32, and most often a misplaced container key."""

PATCH_DIRECTIVE_VALUES = ("replace", "merge", "delete")
"""Values of ``$patch`` (apimachinery strategicpatch: ``replaceDirective``, ``mergeDirective``, ``deleteDirective``)."""

INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

STANDARD_RESOURCES = STANDARD_CONTAINER_RESOURCES
"""Resource names Kubernetes accepts without a domain, besides ``hugepages-<size>``
(pkg/apis/core/helper ``IsStandardContainerResourceName``); any other resource must be fully qualified (``nvidia.com/gpu``)."""

TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
}


def schema_types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    if t is None:
        return set()
    return ({t} if isinstance(t, str) else set(t)) - {"null"}


def matches_types(types: set[str], value: Any) -> bool:
    if not types:
        return True
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, int):
        return "integer" in types or "number" in types
    if isinstance(value, float):
        return "number" in types
    if isinstance(value, str):
        return "string" in types
    if isinstance(value, dict):
        return "object" in types
    if isinstance(value, list):
        return "array" in types
    return False
