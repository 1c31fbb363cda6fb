"""The cluster's facts: what a platform team measured of the cluster its profiles run on, validated like a profile.

A platform folder may hold ``_cluster-facts.yaml`` (or ``.toml``), found as its ``_cluster-template.yaml`` is
(:mod:`kfdefaults.layers.facts`). Every fact is optional: a missing fact is unknown, and whatever uses the facts
says so rather than guessing. Times are whole seconds, resources Kubernetes quantities::

    description: the training cluster, measured 2026-11
    node_start: {typical: 90, worst: 600}      # a node scaled up to Ready, seconds
    image_pull: {typical: 40, worst: 420}      # the task image pulled on a node that lacks it
    node_pools:
      a100:
        labels: {cloud.example.com/gpu: a100}
        taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
        allocatable: {cpu: "95", memory: 1100Gi, nvidia.com/gpu: 8, ephemeral-storage: 800Gi}
        nodes: {min: 0, max: 16}                 # or a number: the most nodes the pool has
        price_per_node_hour: 32.77
        node_start: {typical: 240, worst: 900}   # this pool's own, over the cluster's
    nodes: _nodes.json                         # `kubectl get nodes -o json`, saved beside this file
    shm_headroom: 8Gi                          # memory a container keeps beside its /dev/shm (or "25%")
    kueue:
      config: _kueue-config.yaml               # Kueue's Configuration, saved beside this file
      version: "0.19"                          # Kueue's release: which of its defaults apply
    flyte:
      task_timeout: 86400                      # the platform's default task timeout, seconds
    torch:
      version: "2.5.1"                         # the torch in the task images
      profiles: {gpu-large: "2.3.1"}           # where a profile's image has another
    max_hang: 3600                             # the longest a hung collective may hold the nodes, seconds
    fabric_labels:                             # node labels that mark an RDMA fabric no device plugin announces
      example.com/roce: fabric-roce            # label -> the fragment that asks for it

Unknown keys are errors (``FILE:LINE:COLUMN``), values are not coerced, and the JSON Schema of the file is
``kfdefaults schema --facts``.
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import Finding, Location, ProfileError, shown, sorted_findings
from ..inputs import Inputs
from ..k8s.names import qualified_name_problem, resource_value_problem
from ..k8s.quantity import quantity_problem
from ..layers import NAME_PATTERN
from ..paths import format_path, value_at
from ..read import Document, parse_bytes, read_bytes
from .body import pydantic_finding
from .kueue_config import OLDEST_RELEASE, KueueConfig, kueue_release, load_kueue_config, timeout_required

KUEUE_CONFIG_COMMAND = ("kubectl get cm kueue-manager-config -n kueue-system -o "
                        "jsonpath='{.data.controller_manager_config\\.yaml}'")
"""How a platform saves Kueue's configuration beside its facts."""

MAX_SECONDS = 30 * 86400
"""Longest time a fact may state (30 days): past it, a number is a mistake (milliseconds for seconds, say)."""

MAX_NODES = 100_000
"""Most nodes a pool may state (the largest Kubernetes clusters run some tens of thousands)."""

MAX_PRICE = 1e9
"""Most a node may cost an hour, in any currency (a GPU node costs some tens of dollars, a million or so in the
currencies of smallest unit): a price times the node-hours of the longest job (100,000 nodes for 2^31 seconds) stays
a figure, where ``1e308`` overflowed."""

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
"""A taint's effects (``k8s.io/api/core/v1`` ``TaintEffect``)."""

_PERCENT = re.compile(r"(100|[1-9]?[0-9])%")

_TORCH_VERSION = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?([a-z0-9.+-]*)?")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Span(_Strict):
    """How long something takes, in whole seconds: as it usually does, and at worst."""

    typical: Optional[int] = Field(None, ge=0, le=MAX_SECONDS, description="Seconds it usually takes.")
    worst: Optional[int] = Field(None, ge=0, le=MAX_SECONDS, description="Seconds it takes at worst.")

    @model_validator(mode="after")
    def _ordered(self) -> Span:
        if self.typical is not None and self.worst is not None and self.typical > self.worst:
            raise ValueError(f"typical ({self.typical} s) is longer than worst ({self.worst} s)")
        return self


class Taint(_Strict):
    """A node's taint, as ``kubectl get node -o yaml`` writes it."""

    key: str = Field(description="The taint's key (nvidia.com/gpu).")
    value: Optional[str] = Field(None, description="Its value, if any.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(description="Its effect.")


class NodeCount(_Strict):
    """How many nodes a pool can have (an autoscaler's bounds)."""

    min: Optional[int] = Field(None, ge=0, le=MAX_NODES, description="Fewest nodes.")
    max: Optional[int] = Field(None, ge=0, le=MAX_NODES, description="Most nodes.")

    @model_validator(mode="after")
    def _ordered(self) -> NodeCount:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is more than max ({self.max})")
        return self


class NodePool(_Strict):
    """One pool of like nodes: what each node offers the scheduler, and how long one takes to come up."""

    labels: Optional[Dict[str, str]] = Field(None, description="The labels of its nodes.")
    taints: Optional[List[Taint]] = Field(None, description="The taints of its nodes.")
    allocatable: Optional[Dict[str, Union[str, int]]] = Field(
        None, description="What each node offers pods (status.allocatable): cpu, memory, nvidia.com/gpu, "
                          "ephemeral-storage, pods, as Kubernetes quantities.")
    nodes: Optional[Union[Annotated[int, Field(ge=0, le=MAX_NODES)], NodeCount]] = Field(
        None, description="How many nodes the pool has at most, or {min, max}.")
    price_per_node_hour: Optional[float] = Field(None, ge=0, le=MAX_PRICE, allow_inf_nan=False,
                                                 description="What a node costs an hour (any currency).")
    node_start: Optional[Span] = Field(None, description="A node of this pool scaled up to Ready, in seconds.")
    image_pull: Optional[Span] = Field(None, description="The task image pulled on a node of this pool, in seconds.")


class WaitForPodsReady(_Strict):
    """The short form of Kueue's ``waitForPodsReady``, in seconds (deprecated: ``kueue.config`` reads Kueue's own
    Configuration). Read as a ``v1beta1`` block: on unless ``enable: false``; without ``timeout``, Kueue's
    ``v1beta1`` default (5 minutes, :mod:`kfdefaults.check.kueue_defaults`)."""

    enable: Optional[bool] = Field(None, description="Whether Kueue waits for pods to be ready (default: true, the "
                                                     "block being stated).")
    timeout: Optional[int] = Field(None, ge=1, le=MAX_SECONDS,
                                   description="Seconds a workload's pods may take to be ready.")


class Kueue(_Strict):
    """What Kueue does to a job, when the cluster queues jobs with it."""

    config: Optional[str] = Field(None, description="Kueue's Configuration document (the kueue-manager-config "
                                                    "ConfigMap's controller_manager_config.yaml), beside this file.")
    version: Optional[str] = Field(None, description="Kueue's release (\"0.19\"): which defaults apply.")
    wait_for_pods_ready: Optional[WaitForPodsReady] = Field(
        None, description="Deprecated short form of Kueue's waitForPodsReady, in seconds; use config.")

    @field_validator("version")
    @classmethod
    def _release(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and kueue_release(value) is None:
            raise ValueError(f"{value!r} is not a Kueue release from {OLDEST_RELEASE} on (\"0.19\", \"v0.19.2\")")
        return value

    @model_validator(mode="after")
    def _one_form(self) -> Kueue:
        if self.config is not None and self.wait_for_pods_ready is not None:
            raise ValueError("give Kueue's configuration (config) or the short form (wait_for_pods_ready), not both")
        return self


class Flyte(_Strict):
    """The Flyte deployment's own settings."""

    task_timeout: Optional[int] = Field(None, ge=1, le=MAX_SECONDS,
                                        description="The default timeout of a task, in seconds.")


class Torch(_Strict):
    """The torch in the task images."""

    version: Optional[str] = Field(None, description="torch's version in the images (2.5.1).")
    profiles: Optional[Dict[str, str]] = Field(None, description="Profile -> torch's version in its image, where "
                                                                 "it differs.")

    @field_validator("version")
    @classmethod
    def _version(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and not _TORCH_VERSION.fullmatch(value):
            raise ValueError(f"{value!r} is not a torch version (2.5.1)")
        return value

    @field_validator("profiles")
    @classmethod
    def _versions(cls, value: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
        for name, version in (value or {}).items():
            if not re.fullmatch(NAME_PATTERN, name):
                raise ValueError(f"{name!r} is not a profile name")
            if not _TORCH_VERSION.fullmatch(version):
                raise ValueError(f"{name}: {version!r} is not a torch version (2.5.1)")
        return value


class ClusterFactsFile(_Strict):
    """One ``_cluster-facts.yaml``: every key optional."""

    description: Optional[str] = Field(None, description="What the facts describe, and when they were measured.")
    node_start: Optional[Span] = Field(None, description="A node scaled up to Ready, in seconds (every pool).")
    image_pull: Optional[Span] = Field(None, description="The task image pulled on a node that lacks it, in "
                                                         "seconds (every pool).")
    node_pools: Optional[Dict[str, NodePool]] = Field(None, description="Node pools by name.")
    nodes: Optional[str] = Field(None, description="A file of `kubectl get nodes -o json`, beside this one.")
    shm_headroom: Optional[Union[str, int]] = Field(
        None, description="The memory a container must keep beside a memory-backed /dev/shm of its own: a Kubernetes "
                          "quantity (8Gi), or a percentage of its memory limit (\"25%\"). Default: 0.")
    kueue: Optional[Kueue] = Field(None, description="What Kueue does, when it queues the jobs.")
    flyte: Optional[Flyte] = Field(None, description="The Flyte deployment's settings.")
    torch: Optional[Torch] = Field(None, description="The torch in the task images.")
    max_hang: Optional[int] = Field(None, ge=1, le=MAX_SECONDS,
                                    description="The longest a hung collective may hold a job's nodes before torch ends "
                                                "it, restarts included, in seconds: the platform's bound.")
    fabric_labels: Optional[Dict[str, str]] = Field(
        None, description="Node labels that mark an RDMA fabric no device plugin announces (RoCE through the host's "
                          "network), each with the profile that asks for it: label -> profile name (fabric-roce).")

    @field_validator("fabric_labels")
    @classmethod
    def _fabric_labels(cls, value: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
        for label, profile in (value or {}).items():
            if (problem := qualified_name_problem(label)) is not None:
                raise ValueError(f"{label!r} is not a label name: {problem}")
            if not re.fullmatch(NAME_PATTERN, profile):
                raise ValueError(f"{label}: {profile!r} is not a profile name")
        return value


class ClusterFacts:
    """A facts file as read: its validated data, and where each fact is written.

    Attributes:
        file: The file.
        data: The facts as plain data, as written (absent keys absent).
        document: The parsed file, for :meth:`location`.
    """

    def __init__(self, file: str, data: dict[str, Any], document: Document,
                 kueue_config: KueueConfig | None = None, notes: list[Finding] | None = None) -> None:
        self.file, self.data, self.document = file, data, document
        self.kueue_config = kueue_config
        self.notes = notes or []

    def beside(self, *path: str, what: str, how: str, inputs: Inputs | None = None) -> str:
        """The file the fact at ``path`` names, a path relative to this file's folder and inside it (a planted facts
        file reads no file elsewhere).

        Args:
            what: What the file is (``node list``), for the messages.
            how: How to make it (``kubectl get nodes -o json``).

        Raises:
            ProfileError: an absolute path, one with ``..``, or no such file, at the fact's line.
        """
        named = self.get(*path)
        key = ".".join(path)
        if os.path.isabs(named) or ".." in re.split(r"[\\/]", named):
            raise ProfileError([Finding(self.location(*path), key, f"`{shown(named, 60)}` is not a path inside the "
                                        f"facts file's folder: name the {what} relative to it, without `..`")])
        file = os.path.join(os.path.dirname(self.file), named)
        present = inputs.look(file) if inputs is not None else (True if os.path.exists(file) else None)
        if present is None:
            raise ProfileError([Finding(self.location(*path), key, f"no {what} at {file}: save it there with "
                                        f"`{how}`, or remove `{path[-1]}`")])
        return file

    def get(self, *path: str) -> Any:
        """The fact at ``path`` (``"kueue", "wait_for_pods_ready", "timeout"``), or ``None`` when it is not stated."""
        return value_at(self.data, path)

    def location(self, *path: str | int) -> Location:
        """Where the fact at ``path`` is written (``FILE:LINE:COLUMN``)."""
        return self.document.location(tuple(path))

    def span(self, what: str, pool: str | None = None) -> tuple[dict[str, int], tuple[str, ...]]:
        """``node_start`` or ``image_pull`` for ``pool`` (its own, else the cluster's): ``({"typical"?, "worst"?},
        the path it is written at)``; ``({}, ())`` when neither is stated."""
        if pool is not None and self.get("node_pools", pool, what) is not None:
            return dict(self.get("node_pools", pool, what)), ("node_pools", pool, what)
        if self.get(what) is not None:
            return dict(self.get(what)), (what,)
        return {}, ()

    def torch_version(self, profile: str) -> tuple[str | None, tuple[str, ...]]:
        """The torch version of ``profile``'s image, and the path it is written at (``(None, ())`` when unknown)."""
        own = self.get("torch", "profiles", profile)
        if own is not None:
            return own, ("torch", "profiles", profile)
        version = self.get("torch", "version")
        return (version, ("torch", "version")) if version is not None else (None, ())


def load_facts(file: str, inputs: Inputs | None = None) -> ClusterFacts:
    """Read and validate a cluster facts file; ``inputs`` records it.

    Raises:
        ProfileError: the file cannot be read or parsed, or a fact is unknown or of the wrong type or range, each at
            its ``FILE:LINE:COLUMN``.
    """
    document = parse_bytes(read_bytes(file, inputs), file)
    data = document.data
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ProfileError([Finding(document.location(()), "", "the cluster's facts must be a mapping (keys among "
                                    f"{', '.join(ClusterFactsFile.model_fields)})")])
    found: dict[str, Finding] = {}
    try:
        ClusterFactsFile.model_validate(data)
    except ValidationError as e:
        for err in e.errors(include_url=False):
            finding = pydantic_finding(document, err, None, ClusterFactsFile)
            found[finding.path] = finding
    for name, pool in (data.get("node_pools") or {}).items() if isinstance(data.get("node_pools"), dict) else ():
        allocatable = pool.get("allocatable") if isinstance(pool, dict) else None
        for resource, amount in allocatable.items() if isinstance(allocatable, dict) else ():
            # a node's status as the API server keeps it (ValidateNodeResources), as a node list's is checked
            named = qualified_name_problem(resource) if isinstance(resource, str) else "it is not text"
            problem = (f"{shown(repr(resource), 80)} is not a resource name: {named}" if named is not None else
                       quantity_problem(amount) or resource_value_problem(resource, amount))
            if problem is not None:
                path = ("node_pools", name, "allocatable", resource)
                found[format_path(path)] = Finding(document.location(path, key=named is not None),
                                                   shown(format_path(path), 200), problem)
    headroom = data.get("shm_headroom")
    if headroom is not None and "shm_headroom" not in found and shm_headroom_problem(headroom) is not None:
        found["shm_headroom"] = Finding(document.location(("shm_headroom",)), "shm_headroom",
                                        shm_headroom_problem(headroom) or "")
    if found:
        raise ProfileError(sorted_findings(found.values()))
    facts = ClusterFacts(file, data, document)
    if facts.get("kueue", "config") is not None:
        config = facts.beside("kueue", "config", what="Kueue configuration", how=KUEUE_CONFIG_COMMAND, inputs=inputs)
        facts.kueue_config = load_kueue_config(config, inputs)
        timeout_required(facts.kueue_config, facts.get("kueue", "version"))
    if facts.get("kueue", "wait_for_pods_ready") is not None:
        facts.notes.append(Finding(facts.location("kueue", "wait_for_pods_ready"), "kueue.wait_for_pods_ready",
                                   "the short form kueue.wait_for_pods_ready is deprecated: state Kueue's own "
                                   "configuration, `kueue: {config: FILE}` (and `version`)", "note", "facts"))
    return facts


def shm_headroom_problem(value: Any) -> str | None:
    """What is wrong with a ``shm_headroom`` fact (a quantity, or a whole percentage from 0% to 100%), or ``None``."""
    if isinstance(value, str) and value.endswith("%"):
        return None if _PERCENT.fullmatch(value) else f"{value!r} is not a percentage from 0% to 100%"
    return quantity_problem(value)
