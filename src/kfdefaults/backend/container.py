"""What Flyte's backend does to each container before the template merge: environment and resources.

Restated from flyteplugins v1.16.8 ``pluginmachinery/flytek8s``: ``container_helper.go``
(``AddFlyteCustomizationsToContainerWithPodTemplate``, lines 374-446; resources, lines 29-222 and 310-362) and
``k8s_resource_adds.go`` (``DecorateEnvVars``, lines 134-163). Every container gets this, sidecars included.
"""

from __future__ import annotations

import re
from typing import Any

from .config import BackendConfig, ExecutionContext
from .gojson import JSON, is_zero_quantity, parse_quantity
from .template_merge import (
    DEFAULT_INIT_TEMPLATE,
    DEFAULT_TEMPLATE,
    PRIMARY_INIT_TEMPLATE,
    PRIMARY_TEMPLATE,
)


def _env_var(name: str, value: str) -> JSON:
    return {"name": name, "value": value} if value != "" else {"name": name}


def decorate_env_vars(container: JSON, ctx: ExecutionContext, cfg: BackendConfig, task_id: JSON | None,
                      include_console_url: bool) -> None:
    """``DecorateEnvVars``: Flyte's variables appended after the container's own ``env``, in Go's order.

    The execution's variables and the configuration's ``default-env-vars`` are Go maps, iterated in random
    order; they are sorted here.
    """
    tid = task_id or {}
    env = list(container.get("env") or [])
    if ctx.workflow_id:
        env.append(_env_var("FLYTE_INTERNAL_EXECUTION_WORKFLOW", ctx.workflow_id))
    env += [_env_var("FLYTE_INTERNAL_EXECUTION_ID", ctx.execution_name),
            _env_var("FLYTE_INTERNAL_EXECUTION_PROJECT", ctx.project),
            _env_var("FLYTE_INTERNAL_EXECUTION_DOMAIN", ctx.domain)]
    if cfg.flyte2:  # the pod's name, flyte v2's k8s_resource_adds.go
        env.append({"name": "_F_PN", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
    env.append(_env_var("FLYTE_ATTEMPT_NUMBER", str(ctx.attempt)))
    if include_console_url and ctx.console_url:
        url = ctx.console_url.rstrip("/")
        env.append(_env_var("FLYTE_EXECUTION_URL", f"{url}/projects/{ctx.project}/domains/{ctx.domain}/executions/"
                                                   f"{ctx.execution_name}/nodeId/{ctx.unique_node_id}/nodes"))
    task_values = [ctx.task_project or tid.get("project", ctx.project), ctx.task_domain or tid.get("domain", ctx.domain),
                   tid.get("name", ctx.task_name), tid.get("version", ctx.task_version)]
    env += [_env_var(f"FLYTE_INTERNAL_TASK_{key}", value) for key, value in zip(("PROJECT", "DOMAIN", "NAME", "VERSION"), task_values)]
    if cfg.flyteplugins_patch <= 1 or cfg.flyte2:
        env += [_env_var(f"FLYTE_INTERNAL_{key}", value) for key, value in zip(("PROJECT", "DOMAIN", "NAME", "VERSION"), task_values)]
    if cfg.literal_offloading and not cfg.flyte2:
        low, high = cfg.literal_offloading
        if low > 0:
            env.append(_env_var("_F_L_MIN_SIZE_MB", str(low)))
        if high > 0:
            env.append(_env_var("_F_L_MAX_SIZE_MB", str(high)))
    env += [_env_var(k, ctx.environment[k]) for k in sorted(ctx.environment)]
    env += [_env_var(k, cfg.default_env_vars[k]) for k in sorted(cfg.default_env_vars)]
    container["env"] = env
    env_from = list(container.get("envFrom") or [])
    env_from += [{"secretRef": {"name": name, "optional": True}} for name in cfg.default_env_from_secrets]
    env_from += [{"configMapRef": {"name": name, "optional": True}} for name in cfg.default_env_from_config_maps]
    if env_from:
        container["envFrom"] = env_from


def _render(values: list[str], render: dict[str, str] | None) -> list[str]:
    """``{{.input}}``-style templates in command and args (``template.Render``, plain substitutions only)."""
    if not render:
        return values
    out = []
    for v in values:
        for key, replacement in render.items():
            v = re.sub(r"\{\{\s*" + re.escape(key) + r"\s*\}\}", lambda _: replacement, v, flags=re.IGNORECASE)
        out.append(v)
    return out


def _requirements(resources: JSON | None) -> JSON:
    resources = resources or {}
    return {"limits": dict(resources.get("limits") or {}), "requests": dict(resources.get("requests") or {})}


def _min_if_set(value: str | None, limit: str | None) -> str | None:
    if is_zero_quantity(value) or is_zero_quantity(limit):
        return value
    assert value is not None and limit is not None
    return limit if parse_quantity(value) > parse_quantity(limit) else value


def _adjust(name: str, res: JSON, platform: JSON, assign_if_unset: bool) -> None:
    """``adjustResourceRequirement``: the zero Quantity is written back when unset."""
    request, limit = res["requests"].get(name), res["limits"].get(name)
    if assign_if_unset:
        if is_zero_quantity(request):
            request = limit if not is_zero_quantity(limit) else platform["requests"].get(name)
        if is_zero_quantity(limit):
            limit = request
    platform_limit = platform["limits"].get(name)
    request = _min_if_set(request, platform_limit)
    limit = _min_if_set(limit, platform_limit)
    request = _min_if_set(request, limit)
    res["requests"][name] = request if request is not None else "0"
    res["limits"][name] = limit if limit is not None else "0"


def apply_resource_overrides(resources: JSON | None, platform: JSON | None, cfg: BackendConfig,
                             assign_if_unset: bool) -> JSON:
    """``ApplyResourceOverrides``: ``cpu`` and ``memory`` always end up in both requests and limits (``"0"`` when
    unset and not assigned); a request is at most its limit; both at most the platform's limit.

    With ``assign_if_unset`` (primary and init containers), an unset request takes the limit, else the
    platform's default request (``1`` CPU and ``1Gi``, config.go), and an unset limit the request.
    """
    res = _requirements(resources)
    plat = _requirements(platform)
    plat["requests"].setdefault("cpu", cfg.default_cpu_request)
    plat["requests"].setdefault("memory", cfg.default_memory_request)
    _adjust("cpu", res, plat, assign_if_unset)
    _adjust("memory", res, plat, assign_if_unset)
    for name in ("ephemeral-storage", cfg.gpu_resource_name):
        if name in res["requests"] or name in res["limits"]:
            _adjust(name, res, plat, assign_if_unset)
    return res


def template_resources(template_spec: JSON | None, container: JSON, init: bool, cfg: BackendConfig) -> JSON:
    """``ExtractContainerResourcesFromPodTemplate``: the resources of the template container of the task
    ``container``'s name, else of its ``primary`` (``primary-init``), else of its ``default`` (``default-init``), for
    every container; none in flyte v2, which takes no resources from the template here."""
    if template_spec is None or cfg.flyte2:
        return {}
    name = container.get("name", "")
    candidates = template_spec.get("initContainers" if init else "containers") or []
    wanted = (name, PRIMARY_INIT_TEMPLATE, DEFAULT_INIT_TEMPLATE) if init else (name, PRIMARY_TEMPLATE, DEFAULT_TEMPLATE)
    for want in wanted:
        for c in candidates:
            if c.get("name", "") == want:
                return c.get("resources") or {}
    return {}


def customize_container(c: JSON, ctx: ExecutionContext, cfg: BackendConfig, task_id: JSON | None,
                        include_console_url: bool, primary_or_init: bool, tpl_resources: JSON | None) -> None:
    """``AddFlyteCustomizationsToContainerWithPodTemplate`` for one container, in place.

    Args:
        primary_or_init: The primary container and init containers merge resources (mode ``MergeExisting``:
            execution overrides per key, template values for missing keys, platform defaults assigned); other
            containers only keep theirs in the platform's range (``EnsureExistingResourcesInRange``).
        tpl_resources: :func:`template_resources` of the container.
    """
    for key in ("command", "args"):
        if c.get(key):
            c[key] = _render(c[key], ctx.render)
    decorate_env_vars(c, ctx, cfg, task_id, include_console_url)
    res = _requirements(c.get("resources"))
    for part in ("requests", "limits"):  # SanitizeGPUResourceRequirements
        if "gpu" in res[part]:
            res[part][cfg.gpu_resource_name] = res[part].pop("gpu")
    template = _requirements(tpl_resources)
    if primary_or_init:
        overrides = _requirements(ctx.override_resources)
        for part in ("limits", "requests"):  # MergeResources: a nil map is replaced, not merged
            res[part] = dict(overrides[part]) if not res[part] else {**res[part], **overrides[part]}
    for part in ("limits", "requests"):  # MergeResourcesIfMissing
        for k, v in template[part].items():
            res[part].setdefault(k, v)
    res = apply_resource_overrides(res, ctx.platform_resources, cfg, primary_or_init)
    new: dict[str, Any] = {part: res[part] for part in ("limits", "requests") if res[part]}
    if (c.get("resources") or {}).get("claims"):
        new["claims"] = c["resources"]["claims"]
    c["resources"] = new
