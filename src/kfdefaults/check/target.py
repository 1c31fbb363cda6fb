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

from typing import Any, Sequence

from ..errors import Finding, Location, sorted_findings
from ..paths import format_path
from ..targets import FLYTE2, NCCL_ENV, TARGETS, Target

_ENV_INSTEAD = {
    "nccl_heartbeat_timeout_sec": "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
    "nccl_async_error_handling": "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "nccl_enable_monitoring": "TORCH_NCCL_ENABLE_MONITORING",
}
"""NCCL settings that torch itself reads from an environment variable, which a pod template can set for any SDK
(``FLYTE_NCCL_COLLECTIVE_TIMEOUT_SEC`` is read by Flyte 2's plugin only)."""


def _elastic_setter(fragments: Sequence[Any], key: str) -> Any:
    """The highest fragment whose ``elastic`` section sets ``key`` to a value (not ``null``)."""
    for fragment in reversed(fragments):
        if isinstance(fragment.elastic, dict) and fragment.elastic.get(key) is not None:
            return fragment
    return None


def _env_setter(fragments: Sequence[Any], primary: str, name: str) -> tuple[Any, tuple] | tuple[None, None]:
    """The highest fragment that sets environment variable ``name`` of the primary container, and the path of
    that entry's ``value`` in the fragment's file."""
    for fragment in reversed(fragments):
        containers = ((fragment.pod_template or {}).get("spec") or {}).get("containers")
        for i, container in enumerate(containers if isinstance(containers, list) else []):
            if not isinstance(container, dict) or container.get("name") != primary:
                continue
            for j, entry in enumerate(container.get("env") or []):
                if isinstance(entry, dict) and entry.get("name") == name:
                    return fragment, ("pod_template", "spec", "containers", i, "env", j, "value")
    return None, None


def _located(fragment: Any, path: tuple, merged: Any) -> tuple[Location, str | None]:
    if fragment is None:
        return Location(f"<profile {merged.name}>"), None
    return fragment.location(path), fragment.layer


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
        location, layer = _located(_elastic_setter(merged.fragments, key), ("elastic", key), merged)
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
        plugin_sets = None if value is None or value is False else ("1" if value is True else str(value))
        entry = env.get(variable)
        if entry is not None and plugin_sets is not None and entry.get("value") != plugin_sets:
            fragment, path = _env_setter(merged.fragments, primary, variable)
            location, layer = _located(fragment, path or (), merged)
            shown = entry.get("value") if "value" in entry else "(from valueFrom)"
            findings.append(Finding(location, format_path(("elastic", key)),
                                    f"the primary container's env {variable}={shown} wins over `{key}: "
                                    f"{_yaml(value)}`: Flyte 2's plugin sets {variable} only when it is unset; "
                                    f"write the one value in one place", "warning", layer))
        elif value is False and variable not in env:
            fragment = next((f for f in reversed(merged.fragments) if isinstance(f.elastic, dict)
                             and f.elastic.get(key) is False), None)
            if fragment is None:
                continue  # the plugin's own default
            effect = ("torch's default applies (monitoring on)" if key == "nccl_enable_monitoring" else
                      "torch elastic sets TORCH_NCCL_ASYNC_ERROR_HANDLING=1 in every worker anyway")
            findings.append(Finding(fragment.location(("elastic", key)), format_path(("elastic", key)),
                                    f"`{key}: false` turns nothing off: Flyte 2's plugin then leaves {variable} unset, "
                                    f"and {effect}; to turn it off, set {variable}=0 in the primary container's env",
                                    "warning", fragment.layer))
    return findings


def _yaml(value: Any) -> str:
    return "true" if value is True else "false" if value is False else str(value)
