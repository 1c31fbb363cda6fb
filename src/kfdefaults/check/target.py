"""A merged profile against the SDK it is resolved for (:mod:`kfdefaults.targets`).

One set of profile files serves flytekit, Flyte 2 and its clustered tasks. A setting the target's plugin cannot
honour is an error, never dropped: ``start_method: fork`` on Flyte 2 (its plugin always spawns), an ``nccl_*``
setting or an ``rdzv_backend`` other than c10d on flytekit (its plugin has no such field and always uses c10d); on
clustered tasks a range of nodes, more than the backend's 100000 replicas, rendezvous settings, a value of one of
the eight variables the backend writes into the primary container (:func:`kfdefaults.backend.jobset.torchrun_env`).
Each error is located at the value of the highest layer that set it, and names the target.

On Flyte 2, what render shows must also be what the pod gets where the plugin's own rules would silently
differ; those are warnings: a container environment variable that overrides an ``nccl_*`` setting, and an
``nccl_*: false`` that does not turn anything off.
"""

from __future__ import annotations

from typing import Any

from ..backend.elastic_config import nnodes_range
from ..errors import Finding, Location, sorted_findings
from ..merge.provenance import provenance
from ..paths import Select, format_path
from ..targets import CLUSTERED, FLYTE2, NCCL_ENV, OFF, TARGETS, Target
from ..validate.reserved import reserved_reason

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


def _unhonoured(target: Target, key: str, value: Any, sub: str | None = None) -> str:
    """Why ``elastic.KEY: value`` (``elastic.KEY.SUB``'s value) cannot run on ``target``, and what to write instead."""
    if sub is not None and key in target.why_fixed:
        return (f"`{key}.{sub}: {_yaml(value)}` cannot run on {target.title}: {target.why_fixed[key]} (target "
                f"{target.name}); delete it for these tasks (`{key}: null` in a higher layer)")
    if key in target.choices:
        *others, last = target.choices[key]
        return (f"`{key}: {value}` cannot run on {target.title}: {target.elastic_class} takes "
                f"{', '.join(others)} or {last} (target {target.name})")
    if key in target.why_fixed:
        return (f"`{key}: {_yaml(value)}` cannot run on {target.title}: {target.why_fixed[key]} (target "
                f"{target.name}); write `{key}: {target.fixed[key]}`, or delete it for these tasks (`{key}: null` in "
                "a higher layer)")
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
        # a section's keys each at its own line: rdzv_configs.join_timeout, not the section
        subs = list(value) if isinstance(value, dict) and value else [None]
        for sub in subs:
            path = ("elastic", key) if sub is None else ("elastic", key, sub)
            location, layer = _located(merged, path)
            message = _unhonoured(target, key, value if sub is None else value[sub], sub)
            findings.append(Finding(location, format_path(path), message, layer=layer))
    findings += _shape_errors(merged)
    if target is CLUSTERED:
        findings += _overwritten_env(merged)
    if target is FLYTE2:
        findings += _flyte2_warnings(merged)
    return sorted_findings(findings)


def _shape_errors(merged: Any) -> list[Finding]:
    """A range of nodes where the target runs a fixed number, more nodes than it runs, and ``run_policy`` keys it
    has no field for, each at its line."""
    target: Target = merged.target
    elastic = merged.elastic_settings
    found: list[tuple[tuple, str]] = []
    nnodes = elastic.get("nnodes", 1)
    low, high = nnodes_range(nnodes)
    if target.fixed_nodes and low != high:
        found.append((("elastic", "nnodes"), f'`nnodes: "{nnodes}"` cannot run on {target.title}: they have a fixed '
                      f"number of replicas, every pod started together, restarted together, with no elastic range "
                      f"(target {target.name}); write `nnodes: {high}`"))
    if high > target.max_nodes:
        found.append((("elastic", "nnodes"), f"{target.title} run at most {target.max_nodes} nodes: the backend "
                      f"refuses more replicas (maxReplicasForNaming, flyteplugins .../k8s/clustered/util.go: their "
                      f"pod names would not fit 63 characters) (target {target.name})"))
    policy = elastic.get("run_policy")
    for key in policy if isinstance(policy, dict) and target.run_policy is not None else ():
        if key not in target.run_policy:
            found.append((("elastic", "run_policy", key), f"`run_policy.{key}` cannot run on {target.title}: "
                          f"{target.elastic_class} has no such field, only {', '.join(target.run_policy)} (target "
                          f"{target.name}); delete it for these tasks (`{key}: null` in a higher layer)"))
    out = []
    for path, message in found:
        location, layer = _located(merged, path)
        out.append(Finding(location, format_path(path), message, layer=layer))
    return out


def _overwritten_env(merged: Any) -> list[Finding]:
    """A primary container variable that Flyte's clustered plugin writes over, from whichever layer sets it."""
    from ..backend.jobset import clustered_custom, torchrun_env  # lazy: the JobSet's model, clustered tasks only

    plugin = {e["name"]: e for e in torchrun_env(clustered_custom(merged.elastic_settings))}
    primary = merged.primary_container_name
    findings = []
    for container in ((merged.pod_template_spec or {}).get("spec") or {}).get("containers") or []:
        if not isinstance(container, dict) or container.get("name") != primary:
            continue
        for entry in container.get("env") or []:
            name = entry.get("name") if isinstance(entry, dict) else None
            if name not in plugin or reserved_reason(name) is not None:  # MASTER_PORT: refused in every file
                continue
            path = ("pod_template", "spec", "containers", Select("name", primary), "env", Select("name", name))
            location, layer = _located(merged, path + ("value",) if "value" in entry else path)
            theirs = plugin[name].get("value") or f"the downward API's {plugin[name]['valueFrom']['fieldRef']['fieldPath']}"
            instead = f"; set `elastic.{ENV_SETTING[name]}` instead" if name in ENV_SETTING else ""
            findings.append(Finding(location, format_path(path), (
                f"`{name}` is overwritten in every pod of a clustered task: Flyte's clustered plugin sets {name}="
                f"{theirs} in the primary container (runtime_torch.go, injectTorchRunEnv: its entry replaces this "
                f"one), so this value never counts{instead}"), layer=layer))
    return findings


ENV_SETTING = {"NNODES": "nnodes", "NPROC_PER_NODE": "nproc_per_node", "RDZV_BACKEND": "rdzv_backend",
               "JOBSET_MAX_RESTARTS": "cluster_max_restarts"}
"""The variables of :func:`~kfdefaults.backend.jobset.torchrun_env` a profile setting decides."""


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
