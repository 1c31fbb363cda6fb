"""The name rules of the Kubernetes API server: DNS labels, qualified names, label values, resource names.

The rules are apimachinery's (``k8s.io/apimachinery/pkg/util/validation/validation.go``): ``IsDNS1123Label``,
``IsDNS1123Subdomain``, ``IsQualifiedName`` and ``IsValidLabelValue``. Which field takes which rule is
``k8s.io/kubernetes/pkg/apis/core/validation/validation.go``: container names (``validateContainerCommon``),
volume names (``ValidateVolumes``) are DNS-1123 labels; label keys are qualified names and label values
valid label values (``ValidateLabels``, also for ``nodeSelector``); annotation keys are qualified names once
lower-cased, and all annotations together hold at most 256 KiB (``ValidateAnnotations``); container
resource names follow ``validateContainerResourceName`` (:func:`container_resource_name_problem`).

Each ``*_problem`` function returns why a name breaks its rule, in words for a message, or ``None``.
Lengths are counted in bytes, as Go's ``len`` counts them (names outside ASCII break the patterns anyway).
"""

from __future__ import annotations

import math
import re
from typing import Any

from .quantity import quantity_value

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
ANNOTATIONS_MAX_BYTES = 256 * 1024
"""apimachinery ``TotalAnnotationSizeLimitB``: the keys and values of all of an object's annotations, in bytes."""

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

DNS1123_LABEL_RULE = "lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters"
DNS1123_SUBDOMAIN_RULE = ("lowercase letters, digits, '-' and '.', each part between dots starting and ending with a "
                          "letter or digit, at most 253 characters")
QUALIFIED_NAME_RULE = ("an optional prefix and '/', then a name of at most 63 letters, digits, '-', '_' and '.' that "
                       "starts and ends with a letter or digit; the prefix is a DNS subdomain (lowercase letters, "
                       "digits, '-' and '.', at most 253 characters), as in `example.com/my-name`")
LABEL_VALUE_RULE = ("empty, or at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or "
                    "digit")

STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
"""pkg/apis/core/helper ``IsStandardContainerResourceName``: these and ``hugepages-<size>``."""

HUGEPAGES_PREFIX = "hugepages-"
NATIVE_RESOURCE_MARK = "kubernetes.io/"
"""core ``ResourceDefaultNamespacePrefix``: a prefixed name that contains it is native (``IsNativeResource``)."""
QUOTA_REQUESTS_PREFIX = "requests."
"""core ``DefaultResourceRequestsPrefix``: extended resource names may not start with it (``IsExtendedResourceName``)."""


def _byte_len(text: str) -> int:
    """Length in bytes, as Go's ``len`` counts a string (a lone surrogate counts as its 3 bytes, not an error)."""
    return len(text.encode("utf-8", "surrogatepass"))


def is_dns1123_label(value: str) -> bool:
    """apimachinery ``IsDNS1123Label``: ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``, at most 63 characters."""
    return _byte_len(value) <= DNS1123_LABEL_MAX and _DNS1123_LABEL.fullmatch(value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    """apimachinery ``IsDNS1123Subdomain``: dot-separated DNS labels, at most 253 characters in all."""
    return _byte_len(value) <= DNS1123_SUBDOMAIN_MAX and _DNS1123_SUBDOMAIN.fullmatch(value) is not None


def _shape(text: str, allowed: str, what: str) -> str:
    """Why ``text`` (which breaks a ``[alnum]([allowed]*[alnum])?`` pattern) breaks it: its first bad character."""
    bad = re.search(f"[^{allowed}]", text)
    if bad:
        char = bad.group()
        shown = "a space" if char == " " else f"`{char}`" if char != "`" else "'`'"
        if char.isalpha() and char.isascii() and char.isupper() and "A-Z" not in allowed:
            return f"{what} has an uppercase letter"
        return f"{what} has {shown}"
    if not text[:1].isalnum():
        return f"{what} starts with `{text[0]}`"
    return f"{what} ends with `{text[-1]}`"


def dns1123_label_problem(value: str) -> str | None:
    """Why ``value`` is not a DNS-1123 label (``"it is empty"``, ``"it has 70 characters"``...), or ``None``."""
    if is_dns1123_label(value):
        return None
    if not value:
        return "it is empty (the API server's validateEnvVarName)"
    if _byte_len(value) > DNS1123_LABEL_MAX:
        return f"it has {_byte_len(value)} characters"
    return _shape(value, "-a-z0-9", "it")


def dns1123_label_hint(value: str) -> str | None:
    """A DNS-1123 label that ``value`` was probably meant to be (``Bad_Name`` -> ``bad-name``), or ``None``."""
    guess = re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")
    return guess if guess != value and is_dns1123_label(guess) else None


def qualified_name_problem(value: str) -> str | None:
    """Why ``value`` is not a qualified name (apimachinery ``IsQualifiedName``), or ``None``.

    A qualified name is ``[prefix/]name``: the prefix a DNS-1123 subdomain, the name at most 63 characters of
    ``([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]``.
    """
    parts = value.split("/")
    if len(parts) > 2:
        return f"it has {len(parts) - 1} '/', and a qualified name has at most one"
    if len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return "its prefix (before '/') is empty"
        if not is_dns1123_subdomain(prefix):
            if _byte_len(prefix) > DNS1123_SUBDOMAIN_MAX:
                return f"its prefix has {_byte_len(prefix)} characters, more than a DNS subdomain's 253"
            if re.search(r"[^-a-z0-9.]", prefix):
                why = _shape(prefix, "-a-z0-9.", "it")
            else:
                why = "a part between dots is empty or starts or ends with `-`"
            return f"its prefix `{prefix}` is not a DNS subdomain: {why}"
        where = "its name part (after '/')"
    else:
        name, where = value, "it"
    if not name:
        return f"{where} is empty" if where != "it" else "it is empty"
    if _byte_len(name) > QUALIFIED_NAME_MAX:
        return f"{where} has {_byte_len(name)} characters, more than 63"
    if _QUALIFIED_NAME.fullmatch(name) is None:
        return _shape(name, "-A-Za-z0-9_.", where)
    return None


def qualified_name_hint(value: str) -> str | None:
    """A qualified name ``value`` was probably meant to be (its prefix lower-cased: ``Example.com/x``), or ``None``."""
    prefix, slash, name = value.partition("/")
    if slash and "/" not in name:
        guess = prefix.lower() + "/" + name
        if guess != value and qualified_name_problem(guess) is None:
            return guess
    return None


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not a valid label value (apimachinery ``IsValidLabelValue``), or ``None``; empty is valid."""
    if _byte_len(value) > LABEL_VALUE_MAX:
        return f"it has {_byte_len(value)} characters"
    if _LABEL_VALUE.fullmatch(value) is None:
        return _shape(value, "-A-Za-z0-9_.", "it")
    return None


def annotation_key_problem(key: str) -> str | None:
    """Why ``key`` is not an annotation key, or ``None``: a qualified name once lower-cased, as
    ``ValidateAnnotations`` checks it (so ``Example.COM/Key`` is accepted)."""
    return qualified_name_problem(key.lower())


def env_var_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a container's environment variable name, or ``None``: the API server's
    ``validateEnvVarName`` (pkg/apis/core/validation/validation.go) with the relaxed rule of Kubernetes 1.32
    (``RelaxedEnvironmentVariableValidation``, on by default since 1.32: apimachinery's ``IsRelaxedEnvVarName``): not
    empty, printable ASCII characters other than ``=``. A control character, a non-ASCII letter or a ``=`` is
    refused where the pod is created."""
    if not name:
        return "it is empty (the API server's validateEnvVarName)"
    bad = next((c for c in name if not " " <= c <= "~" or c == "="), None)
    if bad is not None:
        return (f"it holds {bad!r}: an environment variable name is printable ASCII characters other than '=' "
                "(the API server's validateEnvVarName)")
    return None


def is_native_resource(name: str) -> bool:
    """pkg/apis/core/helper ``IsNativeResource``: no prefix, or a prefix in ``kubernetes.io/``."""
    return "/" not in name or NATIVE_RESOURCE_MARK in name


def overcommit_allowed(name: str) -> bool:
    """pkg/apis/core/helper ``IsOvercommitAllowed``: a native resource other than hugepages. A container's request
    of any other resource (``nvidia.com/gpu``, ``hugepages-2Mi``) must equal its limit, and a limit must be set
    (``validateResourceRequirements``, pkg/apis/core/validation)."""
    return is_native_resource(name) and not name.startswith(HUGEPAGES_PREFIX)


def is_extended_resource(name: str) -> bool:
    """pkg/apis/core/helper ``IsExtendedResourceName``: not native, not ``requests.``-prefixed, and still a
    qualified name with ``requests.`` in front (the name a ResourceQuota gives it)."""
    if is_native_resource(name) or name.startswith(QUOTA_REQUESTS_PREFIX):
        return False
    return qualified_name_problem(QUOTA_REQUESTS_PREFIX + name) is None


INTEGER_RESOURCES = frozenset({"pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
                               "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})
"""pkg/apis/core/helper ``integerResources``: the standard resources counted in whole units."""


def resource_value_problem(name: str, value: Any) -> str | None:
    """Why the API server refuses quantity ``value`` of resource ``name`` in a resource list, or ``None``
    (pkg/apis/core/validation ``ValidateResourceQuantityValue``, which ``ValidateNodeResources`` applies to a node's
    capacity and allocatable and ``validateResourceRequirements`` to a container's): a negative quantity
    (``ValidateNonnegativeQuantity``), or a fraction of a resource counted in whole units, ``pods`` or an extended
    resource such as ``nvidia.com/gpu`` (``IsIntegerResourceName``: ``MilliValue() % 1000 != 0``, so ``0.5`` and
    ``100m`` are refused). ``value`` that is no quantity at all is :func:`kfdefaults.k8s.quantity.quantity_problem`'s."""
    amount = quantity_value(value)
    if amount is None:
        return None
    if amount < 0:
        return f"`{value}` is negative; Kubernetes rejects negative resource quantities (ValidateNonnegativeQuantity)"
    if (name in INTEGER_RESOURCES or is_extended_resource(name)) and math.ceil(amount * 1000) % 1000:
        return (f"`{value}` is not a whole number; Kubernetes counts `{name}` in whole units (IsIntegerResourceName)")
    return None


def container_resource_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a key of a container's ``limits`` or ``requests``, or ``None``.

    Follows pkg/apis/core/validation ``validateContainerResourceName``: the name must be a qualified name
    (``validateResourceName``); without a prefix it must be a standard container resource (``cpu``,
    ``memory``, ``ephemeral-storage``, ``hugepages-<size>``; ``IsStandardContainerResourceName``), and
    ``validateResourceRequirements`` rejects a ``hugepages-`` size that is not a positive quantity
    (``HugePageSizeFromResourceName``); with a prefix it must be native (``kubernetes.io/``, which the API
    server does not check further) or an extended resource (``IsExtendedResourceName``: not
    ``requests.``-prefixed, prefix short enough for the quota name ``requests.<name>``).

    The returned text does not repeat ``name``; for names without a prefix it is ``"standard"``, which the
    caller words with the list of standard names.
    """
    if "/" not in name:
        if name in STANDARD_CONTAINER_RESOURCES:
            return None
        if name.startswith(HUGEPAGES_PREFIX):
            size = name[len(HUGEPAGES_PREFIX):]
            amount = quantity_value(size) if qualified_name_problem(name) is None else None
            if amount is None or amount <= 0:
                return f"`{size}` is not a page size: write hugepages-<size> with a quantity such as 2Mi or 1Gi"
            return None
        return "standard"
    problem = qualified_name_problem(name)
    if problem:
        return problem
    if is_native_resource(name):
        return None
    if name.startswith(QUOTA_REQUESTS_PREFIX):
        return f"the `{QUOTA_REQUESTS_PREFIX}` prefix is for ResourceQuota names; a container asks for " \
               f"`{name[len(QUOTA_REQUESTS_PREFIX):]}`"
    if not is_extended_resource(name):
        return (f"its prefix is too long for an extended resource, whose quota name `{QUOTA_REQUESTS_PREFIX}<name>` "
                "must be a qualified name (a prefix of at most 244 characters)")
    return None
