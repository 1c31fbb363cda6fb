"""Errors for a merged profile whose pod the API server rejects because its layers crossed: the API server's own
cross-field rules on what profiles set, each located at the value of the layer that made the values cross and
naming the place of the other.

The rules are those of k8s.io/kubernetes ``pkg/apis/core/validation/validation.go``, for every container, init
container and ephemeral container of the pod:

* ``validateResourceRequirements`` (called by ``ValidateContainerResourceRequirements``), per resource of
  ``requests``: a request above its limit ("must be less than or equal to cpu limit of 2"); for a resource that may
  not be overcommitted (``helper.IsOvercommitAllowed``: extended resources such as ``nvidia.com/gpu``, and
  hugepages), a request other than its limit ("must be equal to nvidia.com/gpu limit of 4") or without a limit
  ("Limit must be set for non overcommitable resources"; except a GPU request of the primary container or an init
  container, to which Flyte's backend gives a limit equal to the request: ``ApplyResourceOverrides``, modelled in
  :mod:`kfdefaults.backend.container`). Quantities compare by value, as ``Quantity.Cmp`` does
  (:func:`kfdefaults.k8s.quantity.quantity_value`: ``1000m`` is ``1``). A limit without a request is no crossing:
  the API server's defaulting gives the request the limit's value (``SetDefaults_Pod``, pkg/apis/core/v1/defaults.go).
* ``validateEnvVarValueFrom`` (called by ``ValidateEnv``), per environment variable: a ``valueFrom`` beside a
  non-empty ``value`` ("may not be specified when `value` is not empty"), and a ``valueFrom`` with more than one
  source ("may not have more than one field specified at a time") or none ("must specify one of: `fieldRef`,
  `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"). Strategic merge patch makes them from two layers:
  the env items of one name merge key by key, so a lower layer's ``value`` stays beside a higher layer's
  ``valueFrom``.

A single file can break these rules too; the error is then at its line, as for any other.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import Finding, Location, sorted_findings
from ..k8s.names import overcommit_allowed
from ..k8s.quantity import quantity_value
from ..k8s.resources import GPU_RESOURCE
from ..paths import PathT, Select, format_path
from ..merge.origins import pod_leaf
from ..merge.provenance import Setter, provenance, where
from .merged import deletion

CONTAINER_FIELDS = ("containers", "initContainers", "ephemeralContainers")
"""The PodSpec lists whose items ``validateResourceRequirements`` and ``ValidateEnv`` check."""

VALUE_FROM_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
"""The sources of an ``EnvVarSource``, as ``validateEnvVarValueFrom`` counts them."""


class _Checker:
    def __init__(self, merged: Any) -> None:
        self.merged = merged
        self.findings: list[Finding] = []

    def at(self, steps: Sequence[Any], *, removal: bool = False) -> Setter | None:
        """Who set (with ``removal``: who last removed) the value at ``steps``, a PodTemplateSpec path
        (:mod:`kfdefaults.merge.provenance`); asked only when a rule is broken."""
        record = provenance(self.merged)
        return record.remover(pod_leaf(steps)) if removal else record.setter(pod_leaf(steps))

    def error(self, steps: Sequence[Any], message: str, top: Setter | None) -> None:
        """An error at ``top`` (the layer that made the values cross), named by the path of ``steps``."""
        location = top.origin.location if top is not None else Location(f"<profile {self.merged.name}>")
        self.findings.append(Finding(location, format_path(pod_leaf(steps)), message, "error",
                                     top.origin.layer if top is not None else None))

    def resources(self, container: dict[str, Any], base: list[Any], limit_filled: bool) -> None:
        """``limit_filled``: Flyte's backend gives this container's GPU request a limit (primary and init
        containers)."""
        resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
        requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
        limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
        for name, request in requests.items():
            wanted = quantity_value(request) if request is not None else None
            if wanted is None:
                continue  # unset, or not a quantity: the file's own check says so
            request_steps, limit_steps = base + ["resources", "requests", name], base + ["resources", "limits", name]
            limit = limits.get(name)
            if limit is None:
                if not overcommit_allowed(name) and not (limit_filled and name == GPU_RESOURCE):
                    self.no_limit(name, request, request_steps, limit_steps)
                continue
            bound = quantity_value(limit)
            if bound is None or (wanted <= bound if overcommit_allowed(name) else wanted == bound):
                continue
            by_request, by_limit = self.at(request_steps), self.at(limit_steps)
            limit_crossed = by_limit is not None and (by_request is None or by_limit.index > by_request.index)
            above = wanted > bound
            told = (f"limit {limit} is {'below' if above else 'above'} the request {request} set at {where(by_request)}"
                    if limit_crossed else
                    f"request {request} is {'above' if above else 'below'} the limit {limit} set at {where(by_limit)}")
            if overcommit_allowed(name):
                go = f"must be less than or equal to {name} limit of {limit}"
            else:
                go = f"must be equal to {name} limit of {limit}"
                told += f": {name} cannot be overcommitted, so its request and limit must be equal"
            self.error(limit_steps if limit_crossed else request_steps,
                       f"{told}; the API server rejects the pod (validateResourceRequirements: \"{go}\")",
                       by_limit if limit_crossed else by_request)

    def no_limit(self, name: str, request: Any, request_steps: list[Any], limit_steps: list[Any]) -> None:
        """A request of a resource that may not be overcommitted, without a limit: none was written, or a higher
        layer removed it (``null``, ``delete = [...]``, ``$patch``)."""
        by_request, removed_by = self.at(request_steps), self.at(limit_steps, removal=True)
        go = "the API server rejects the pod (validateResourceRequirements: \"Limit must be set for non overcommitable " \
             "resources\")"
        if removed_by is not None and (by_request is None or removed_by.index > by_request.index):
            self.error(limit_steps, f"removes the {name} limit, leaving the request {request} set at "
                       f"{where(by_request)} without one: {name} cannot be overcommitted; {go}; delete the request "
                       "here too, or set the limit to the request", removed_by)
            return
        self.error(request_steps, f"request {request} without a limit: {name} cannot be overcommitted; {go}; write "
                   "the limit (a limit alone is enough: the request defaults to it)", by_request)

    def env(self, container: dict[str, Any], base: list[Any]) -> None:
        for entry in container.get("env") or []:
            if not isinstance(entry, dict) or entry.get("valueFrom") is None:
                continue
            steps = base + ["env", ("name", entry.get("name"))]
            value_from = entry["valueFrom"] if isinstance(entry["valueFrom"], dict) else {}
            sources = [k for k in VALUE_FROM_SOURCES if value_from.get(k) is not None]
            by_value_from = self.at(steps + ["valueFrom"])
            if not sources:
                self.error(steps + ["valueFrom"], "`valueFrom` names no source: the API server rejects the pod "
                           "(validateEnvVarValueFrom: \"must specify one of: `fieldRef`, `resourceFieldRef`, "
                           "`configMapKeyRef` or `secretKeyRef`\")", by_value_from)
            elif isinstance(entry.get("value"), str) and entry["value"]:
                by_value = self.at(steps + ["value"])
                value_crossed = by_value is not None and (by_value_from is None or by_value.index > by_value_from.index)
                told = (f"`value` beside the `valueFrom` set at {where(by_value_from)}" if value_crossed
                        else f"`valueFrom` beside the `value` set at {where(by_value)}")
                other = pod_leaf(steps + ["valueFrom" if value_crossed else "value"])
                self.error(steps + ["value" if value_crossed else "valueFrom"],
                           f"{told}: the API server rejects the pod (validateEnvVarValueFrom: \"may not be specified "
                           f"when `value` is not empty\"); to replace the other one, delete it here: "
                           f"{deletion([other], by_value, by_value_from)}", by_value if value_crossed else by_value_from)
            elif len(sources) > 1:
                setters = [self.at(steps + ["valueFrom", k]) for k in sources]
                top = max(range(len(sources)), key=lambda i: setters[i].index if setters[i] else -1)
                listed = ", ".join(f"`{k}` ({where(s)})" for k, s in zip(sources, setters))
                lower = [pod_leaf(steps + ["valueFrom", k]) for i, k in enumerate(sources) if i != top]
                self.error(steps + ["valueFrom", sources[top]],
                           f"`valueFrom` has {len(sources)} sources: {listed}; the API server rejects the pod "
                           "(validateEnvVarValueFrom: \"may not have more than one field specified at a time\"); "
                           f"to replace the other one, delete it here: {deletion(lower, *setters)}", setters[top])


def api_server_errors(merged: Any) -> list[Finding]:
    """The merged pod template against the API server's cross-field rules (this module's docstring).

    Args:
        merged: A :class:`kfdefaults.Resolved` (its ``name``, ``pod_template_spec``, ``primary_container_name``
            and ``fragments``).

    Returns:
        Errors, each at the value of the highest layer involved (``FILE:LINE:COLUMN``, or a task-layer label) and
        naming the other value's place; ``[]`` when the pod passes.
    """
    checker = _Checker(merged)
    spec = (merged.pod_template_spec or {}).get("spec") or {}
    primary = merged.primary_container_name
    for field in CONTAINER_FIELDS:
        for container in spec.get(field) or []:
            if isinstance(container, dict):
                base = ["spec", field, ("name", container.get("name"))]
                filled = field == "initContainers" or (field == "containers" and container.get("name") == primary)
                checker.resources(container, base, filled)
                checker.env(container, base)
    return sorted_findings(checker.findings)
