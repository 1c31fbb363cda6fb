"""A merged profile against the SDK it is resolved for (:mod:`kfdefaults.targets`).

One set of profile files serves flytekit and Flyte 2. A setting the target's plugin cannot honour is an error,
never dropped: ``start_method: fork`` on Flyte 2 (its plugin always spawns), an ``nccl_*`` setting or an
``rdzv_backend`` other than c10d on flytekit (its plugin has no such field and always uses c10d). Each error is
located at the value of the highest layer that set it, and names the target.

On Flyte 2, what render shows must also be what the pod gets where the plugin's own rules would silently
differ; those are warnings: a container environment variable that overrides an ``nccl_*`` setting, and an
``nccl_*: false`` that does not turn anything off.
"""

from __future__ import annotations

from typing import Any

from ..errors import Finding, Location, sorted_findings
from ..merge.provenance import provenance
from ..paths import Select, format_path
from ..targets import FLYTE2, NCCL_ENV, OFF, TARGETS, Target

_ENV_INSTEAD = {
    "nccl_heartbeat_timeout_sec": "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
    "nccl_async_error_handling": "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "nccl_enable_monitoring": "TORCH_NCCL_ENABLE_MONITORING",
}
"""NCCL settings that torch itself reads from an environment variable, which a pod template can set for any SDK
(``FLYTE_NCCL_COLLECTIVE_TIMEOUT_SEC`` is read by Flyte 2's plugin only)."""


def _located(merged: Any, path: tuple) -> tuple[Location, str | None]:
    """Where the value at ``path`` was set (:mod:`kfdefaults.merge.provenance`), and its layer."""
    found = provenance(merged).setter(path)
    if found is None:
        return Location(f"<profile {merged.name}>"), None
    return found.origin.location, found.origin.layer


def _unhonoured(target: Target, key: str, value: Any) -> str:
    """Why ``elastic.KEY: value`` cannot run on ``target``, and what to write instead."""
    if key in target.fixed:
        fixed = target.fixed[key]
        return (f"`{key}: {value}` cannot run on {target.title}: {target.elastic_class} has no `{key}` and always "
                f"uses {key} {fixed} (target {target.name}); write `{key}: {fixed}`, or delete it for these tasks "
                f"(`{key}: null` in a higher layer)")
    owners = [t.title for t in TARGETS.values() if t is not target and key in t.settings]
    whose = f"a {' and '.join(owners)} setting" if owners else "not a setting of any SDK"
    instead = f", or set {_ENV_INSTEAD[key]} in the primary container's env, which torch reads under either SDK" \
        if key in _ENV_INSTEAD else ""
    return (f"`{key}` is {whose}: {target.elastic_class} has no such field, so {target.title} would not apply it "
            f"(target {target.name}); delete it for these tasks (`{key}: null` in a higher layer){instead}")


def check_target(merged: Any) -> list[Finding]:
    """Errors and warnings of a merged profile for its target SDK.

    Errors: an ``elastic`` value that the target's plugin cannot honour (:meth:`Target.honours`).
    Warnings, Flyte 2 only (``flyteplugins.pytorch.task.TorchFunctionTask.pre`` sets each variable of
    :data:`~kfdefaults.targets.NCCL_ENV` only when it is unset, and only for a true or numeric setting):

    * a primary container environment variable that overrides an ``nccl_*`` setting with another value: the
      container's value is what torch gets;
    * ``nccl_enable_monitoring: false`` or ``nccl_async_error_handling: false`` written by a layer: the plugin
      then leaves the variable unset, so torch's default (monitoring on) or torch elastic's
      (``TORCH_NCCL_ASYNC_ERROR_HANDLING=1`` in every worker, ``local_elastic_agent.py``) applies.

    Args:
        merged: A :class:`kfdefaults.Resolved` (its ``target``, ``elastic_settings``, ``pod_template_spec``,
            ``primary_container_name``, ``fragments``).

    Returns:
        Findings, each located at the value of the highest layer involved (``FILE:LINE:COLUMN``, or the label
        of a task-layer value).
    """
    target: Target = merged.target
    findings: list[Finding] = []
    elastic = merged.elastic_settings
    for key, value in elastic.items():
        if value is None or target.honours(key, value):
            continue
        location, layer = _located(merged, ("elastic", key))
        findings.append(Finding(location, format_path(("elastic", key)), _unhonoured(target, key, value), layer=layer))
    if target is FLYTE2:
        findings += _flyte2_warnings(merged)
    return sorted_findings(findings)


def _flyte2_warnings(merged: Any) -> list[Finding]:
    elastic = merged.elastic_settings
    spec = (merged.pod_template_spec or {}).get("spec") or {}
    primary = merged.primary_container_name
    env: dict[str, Any] = {}
    for container in spec.get("containers") or []:
        if isinstance(container, dict) and container.get("name") == primary:
            env = {e.get("name"): e for e in container.get("env") or [] if isinstance(e, dict)}
    findings: list[Finding] = []
    for key, variable in NCCL_ENV.items():
        value = elastic.get(key)
        plugin_sets = None if value in (None, False, OFF) else ("1" if value is True else str(value))
        entry = env.get(variable)
        if entry is not None and plugin_sets is not None and entry.get("value") != plugin_sets:
            path = ("pod_template", "spec", "containers", Select("name", primary), "env", Select("name", variable))
            location, layer = _located(merged, path + ("value",) if "value" in entry else path)
            shown = entry.get("value") if "value" in entry else "(from valueFrom)"
            findings.append(Finding(location, format_path(("elastic", key)),
                                    f"the primary container's env {variable}={shown} wins over `{key}: "
                                    f"{_yaml(value)}`: Flyte 2's plugin sets {variable} only when it is unset; "
                                    f"write the one value in one place", "warning", layer))
        elif value is False and variable not in env and any(key in f.elastic for f in merged.fragments):
            found = provenance(merged).setter(("elastic", key))  # asked only where a layer writes the key
            if found is None:
                continue  # the plugin's own default
            effect = ("torch's default applies (monitoring on)" if key == "nccl_enable_monitoring" else
                      "torch elastic sets TORCH_NCCL_ASYNC_ERROR_HANDLING=1 in every worker anyway")
            findings.append(Finding(found.origin.location, format_path(("elastic", key)),
                                    f"`{key}: false` turns nothing off: Flyte 2's plugin then leaves {variable} unset, "
                                    f"and {effect}; to turn it off, set {variable}=0 in the primary container's env",
                                    "warning", found.origin.layer))
    return findings


def _yaml(value: Any) -> str:
    return "true" if value is True else "false" if value is False else str(value)
