"""Kueue's own Configuration document, read as its manager reads it: the facts' ``kueue: {config: FILE}``.

The file is the ``controller_manager_config.yaml`` of the ``kueue-manager-config`` ConfigMap, exactly as the
cluster holds it (``kubectl get cm kueue-manager-config -n kueue-system -o
jsonpath='{.data.controller_manager_config\\.yaml}'``): ``apiVersion: config.kueue.x-k8s.io/v1beta1`` or
``v1beta2``, ``kind: Configuration``, its fields camelCase as Kueue writes them.

Kueue decodes it strictly (``serializer.EnableStrict`` in ``pkg/config/config.go``, v0.19.2): an unknown field
stops its manager. kfdefaults reports one as an error at its ``FILE:LINE:COLUMN`` with the nearest known name, for
the top level of each API version and inside the blocks whose values it uses (``waitForPodsReady`` and its
``requeuingStrategy``, ``integrations``); the other blocks (``controller``, ``multiKueue``, ``resources``...)
are taken as written and not looked into. Durations are Go durations (``time.ParseDuration``: ``5m``, ``1h30m``,
``0s``), as ``metav1.Duration`` reads them; a number there is an error, as it is for Kueue.

Nothing here defaults a field: which value an unstated field takes depends on the Kueue release, and is
:mod:`kfdefaults.check.kueue_defaults`' table.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import Finding, ProfileError, sorted_findings
from ..inputs import Inputs
from ..paths import value_at
from ..read import Document, parse_bytes, read_bytes
from .body import pydantic_finding

API_GROUP = "config.kueue.x-k8s.io"
API_VERSIONS = ("v1beta1", "v1beta2")
"""The Configuration's API versions Kueue 0.13 to 0.19 read (v1beta2 from 0.15; v1beta1 is still read by 0.19,
``cmd/kueue/main.go``)."""

INT32_MAX = 2**31 - 1

OLDEST_RELEASE = "0.13"
"""The oldest Kueue release whose defaults kfdefaults read (:mod:`kfdefaults.check.kueue_defaults`)."""

_RELEASE = re.compile(r"v?0\.([0-9]{1,4})(?:\.[0-9]{1,6})?")


def kueue_release(text: str) -> str | None:
    """``"0.19"`` of ``"0.19"`` or ``"v0.19.2"``; ``None`` for what is no Kueue release from :data:`OLDEST_RELEASE`
    on."""
    match = _RELEASE.fullmatch(text)
    if match is None or int(match.group(1)) < int(OLDEST_RELEASE.split(".")[1]):
        return None
    return f"0.{int(match.group(1))}"

_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
MAX_DURATION = 2**63 / 1e9
"""The longest Go duration, in seconds (an ``int64`` of nanoseconds: about 292 years)."""


def go_duration(text: str) -> float:
    """Seconds in a Go duration (``time.ParseDuration``, Go's ``time/format.go``): ``"5m"`` -> 300.0,
    ``"1h30m"`` -> 5400.0, ``"0"`` and ``"0s"`` -> 0.0; a sign is allowed, a unit is required but for ``0``.

    Raises:
        ValueError: not a Go duration, or longer than Go's ``time.Duration`` holds.
    """
    body = text[1:] if text[:1] in "+-" else text
    sign = -1 if text[:1] == "-" else 1
    if body == "0":
        return 0.0
    total, pos = 0.0, 0
    for match in _DURATION_PART.finditer(body):
        number = match.group(1)
        if match.start() != pos or number in ("", "."):
            break
        total += float(number) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not body or pos != len(body):
        raise ValueError(f"{text!r} is not a Go duration (5m, 1h30m, 90s, 0s)")
    if total > MAX_DURATION:
        raise ValueError(f"{text!r} is longer than a Go duration holds (about 292 years)")
    return sign * total


class _Go(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _duration(value: Optional[str]) -> Optional[str]:
    if value is not None and go_duration(value) < 0:  # validateWaitForPodsReady, pkg/config/validation.go
        raise ValueError(f"{value!r} is negative: Kueue's manager does not start with it")
    return value


class RequeuingStrategy(_Go):
    """``waitForPodsReady.requeuingStrategy``: how an evicted workload is requeued."""

    timestamp: Optional[Literal["Eviction", "Creation"]] = Field(None, description="Which time orders the queue.")
    backoffLimitCount: Optional[int] = Field(None, ge=0, le=INT32_MAX,
                                             description="Requeues before the workload is deactivated; null: "
                                                         "requeued forever.")
    backoffBaseSeconds: Optional[int] = Field(None, ge=0, le=INT32_MAX, description="The first backoff, seconds.")
    backoffMaxSeconds: Optional[int] = Field(None, ge=0, le=INT32_MAX, description="The longest backoff, seconds.")


class WaitForPodsReadyV1beta2(_Go):
    """``waitForPodsReady`` of ``v1beta2``: no ``enable``; present means on (and, from Kueue 0.19, absent too)."""

    timeout: Optional[str] = Field(None, description="A Go duration: the admitted workload's pods all Ready.")
    blockAdmission: Optional[bool] = Field(None, description="Admit nothing else until the pods are Ready.")
    requeuingStrategy: Optional[RequeuingStrategy] = None
    recoveryTimeout: Optional[str] = Field(None, description="A Go duration: a running workload's replaced pod "
                                                             "Ready again; 0s: no such clock.")

    _durations = field_validator("timeout", "recoveryTimeout")(_duration)


class WaitForPodsReadyV1beta1(WaitForPodsReadyV1beta2):
    """``waitForPodsReady`` of ``v1beta1``: off unless ``enable: true``."""

    enable: Optional[bool] = Field(None, description="Whether Kueue waits for the pods; default false.")


class IntegrationsV1beta2(_Go):
    """``integrations``: the job kinds Kueue manages."""

    frameworks: Optional[List[str]] = Field(None, description="kubeflow.org/pytorchjob, jobset.x-k8s.io/jobset, pod...")
    externalFrameworks: Optional[List[str]] = None
    labelKeysToCopy: Optional[List[str]] = None


class IntegrationsV1beta1(IntegrationsV1beta2):
    podOptions: Optional[Dict[str, Any]] = None


_Block = Optional[Dict[str, Any]]


class _Configuration(_Go):
    """The fields both API versions share: those kfdefaults uses, and every other top-level field by name."""

    kind: Literal["Configuration"]
    namespace: Optional[str] = None
    manageJobsWithoutQueueName: Optional[bool] = None
    managedJobsNamespaceSelector: _Block = None
    featureGates: Optional[Dict[str, bool]] = None
    pprofBindAddress: Optional[str] = None
    webhook: _Block = None
    leaderElection: _Block = None
    metrics: _Block = None
    health: _Block = None
    controller: _Block = None
    tls: _Block = None
    internalCertManagement: _Block = None
    clientConnection: _Block = None
    multiKueue: _Block = None
    fairSharing: _Block = None
    admissionFairSharing: _Block = None
    resources: _Block = None
    objectRetentionPolicies: _Block = None


class ConfigurationV1beta2(_Configuration):
    """Kueue's ``Configuration``, ``config.kueue.x-k8s.io/v1beta2`` (``apis/config/v1beta2/configuration_types.go``,
    v0.19.2)."""

    apiVersion: Literal["config.kueue.x-k8s.io/v1beta2"]
    waitForPodsReady: Optional[WaitForPodsReadyV1beta2] = None
    integrations: Optional[IntegrationsV1beta2] = None
    visibilityServer: _Block = None


class ConfigurationV1beta1(_Configuration):
    """``config.kueue.x-k8s.io/v1beta1`` (``apis/config/v1beta1/configuration_types.go``, v0.14.8 and v0.19.2)."""

    apiVersion: Literal["config.kueue.x-k8s.io/v1beta1"]
    waitForPodsReady: Optional[WaitForPodsReadyV1beta1] = None
    integrations: Optional[IntegrationsV1beta1] = None
    queueVisibility: _Block = None


MODELS = {"v1beta1": ConfigurationV1beta1, "v1beta2": ConfigurationV1beta2}


class KueueConfig:
    """A Configuration document as read.

    Attributes:
        file: The file.
        api_version: ``v1beta1`` or ``v1beta2``.
        data: The document as written (absent fields absent).
        document: The parsed file, for :meth:`location`.
    """

    def __init__(self, file: str, api_version: str, data: dict[str, Any], document: Document) -> None:
        self.file, self.api_version, self.data, self.document = file, api_version, data, document

    def get(self, *path: str) -> Any:
        """The field at ``path`` (``"waitForPodsReady", "timeout"``), or ``None`` when it is not written."""
        return value_at(self.data, path)

    def has(self, *path: str) -> bool:
        """Whether the field at ``path`` is written (``backoffLimitCount: null`` is)."""
        parent = value_at(self.data, path[:-1])
        return isinstance(parent, dict) and path[-1] in parent

    def location(self, *path: str):  # -> Location
        """Where the field at ``path`` is written (``FILE:LINE:COLUMN``)."""
        return self.document.location(tuple(path))


def load_kueue_config(file: str, inputs: Inputs | None = None) -> KueueConfig:
    """Read and check a Kueue Configuration document.

    Raises:
        ProfileError: the file cannot be read or parsed, is no Configuration of a known API version, or has an
            unknown field (with the nearest known one), a value of the wrong type, or a duration that is not a Go
            duration, each at its ``FILE:LINE:COLUMN``.
    """
    document = parse_bytes(read_bytes(file, inputs), file)
    data = document.data
    known = ", ".join(f"{API_GROUP}/{v}" for v in API_VERSIONS)
    if not isinstance(data, dict):
        raise ProfileError([Finding(document.location(()), "", f"Kueue's configuration must be a Configuration "
                                    f"document (apiVersion {known}, kind Configuration)")])
    api = data.get("apiVersion")
    version = api.removeprefix(f"{API_GROUP}/") if isinstance(api, str) and api.startswith(f"{API_GROUP}/") else None
    if version not in MODELS:
        raise ProfileError([Finding(document.location(("apiVersion",)), "apiVersion", f"apiVersion must be one of "
                                    f"{known}, as Kueue's manager reads them (got {str(api)[:60]!r})")])
    found: dict[str, Finding] = {}
    try:
        MODELS[version].model_validate(data)
    except ValidationError as e:
        for err in e.errors(include_url=False):
            finding = pydantic_finding(document, err, None, MODELS[version])
            found.setdefault(finding.path, finding)
    if found:
        raise ProfileError(sorted_findings(found.values()))
    return KueueConfig(file, version, data, document)


def timeout_required(config: KueueConfig, version: str | None) -> None:
    """Kueue 0.15 to 0.18 refuse a ``v1beta2`` ``waitForPodsReady`` block without ``timeout``
    (``validateWaitForPodsReady``, ``pkg/config/validation.go`` at v0.18.6: "must be specified"); 0.19 defaults it.

    Raises:
        ProfileError: such a block, on such a release (``version``, the facts' ``kueue.version``), at its line.
    """
    release = kueue_release(version) if isinstance(version, str) else None
    if config.api_version != "v1beta2" or release is None or int(release.split(".")[1]) >= 19:
        return
    timeout = config.get("waitForPodsReady", "timeout")
    if config.has("waitForPodsReady") and (not isinstance(timeout, str) or go_duration(timeout) == 0):
        raise ProfileError([Finding(config.location("waitForPodsReady"), "waitForPodsReady", f"Kueue {release} "
                                    "requires waitForPodsReady.timeout when the block is given (its manager does not "
                                    "start without it; Kueue 0.19 defaults it to 30m)")])
