"""Every clock of a distributed task, with its value for a merged profile on a cluster, and where that value is set.

The model behind ``kfdefaults timeline`` and the clock lints (:mod:`.clock_lints`), and the one a reader of torch's
logs can ask "which setting is that, and where": :func:`clocks` gives each :class:`Clock` (seconds; a value no
layer set is the named default of the SDK's plugin, of torch by release (:mod:`.torch_defaults`), of Kueue by release (:mod:`.kueue`)),
:func:`.start.starts` how late a node can start on the cluster (its facts: :mod:`kfdefaults.validate.facts`).

What each clock bounds follows ``docs/timeouts.md`` (torch 2.13's source) and what the clocks did when torch ran
(``docs/clocks-measured.md``).
"""

from __future__ import annotations

from typing import Any, Iterable

from ..backend.elastic_config import nnodes_range
from ..backend.registered import is_multi_node
from ..merge.origins import pod_leaf, written_by
from ..merge.result import Resolved
from ..paths import format_path
from ..targets import CLUSTERED, FLYTE2
from . import torch_defaults
from .clock import CLOCKS, FACTS_LAYER, Clock, Source  # noqa: F401 (what the clocks are made of, said here too)
from .kueue import kueue_clocks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..validate.facts import ClusterFacts


def _profile(resolved: Resolved, path: tuple, default: str) -> Source:
    setter = written_by(resolved.fragments, path)
    if setter is None:
        return Source(default=default)
    return Source(setter.origin.location, setter.origin.layer)


def _plugin_default(resolved: Resolved, key: str) -> str:
    return f"{resolved.target.elastic_class} default ({key})"


def primary_env(resolved: Resolved) -> dict[str, dict[str, Any]]:
    """The primary container's ``env`` entries by name."""
    spec = (resolved.pod_template_spec or {}).get("spec") or {}
    for container in spec.get("containers") or []:
        if isinstance(container, dict) and container.get("name") == resolved.primary_container_name:
            return {e.get("name"): e for e in container.get("env") or [] if isinstance(e, dict)}
    return {}


def env_path(resolved: Resolved, name: str) -> tuple:
    """The leaf path of the primary container's variable ``name``'s value."""
    return pod_leaf(["spec", "containers", ("name", resolved.primary_container_name), "env", ("name", name), "value"])


def env_value(resolved: Resolved, name: str) -> tuple[str | None, Source | None]:
    """The primary container's variable ``name`` (``None`` when unset or from ``valueFrom``), and where it is set."""
    entry = primary_env(resolved).get(name)
    if entry is None or not isinstance(entry.get("value"), str):
        return None, None
    return entry["value"].strip(), _profile(resolved, env_path(resolved, name), "")


def _rdzv(resolved: Resolved, key: str, version: str | None) -> Clock:
    rdzv = resolved.elastic_settings.get("rdzv_configs") or {}
    value = rdzv.get(key) if isinstance(rdzv, dict) else None
    path = ("elastic", "rdzv_configs", key)
    if value is None:
        value = torch_defaults.RDZV_DEFAULTS[key]
        source = Source(default=torch_defaults.label(key, version))
    elif key in (resolved.target.defaults.get("rdzv_configs") or {}) and written_by(resolved.fragments, path) is None:
        source = Source(default=_plugin_default(resolved, f"rdzv_configs.{key}"))
    else:
        source = _profile(resolved, path, _plugin_default(resolved, f"rdzv_configs.{key}"))
    return Clock(key, int(value), True, source, format_path(path), CLOCKS[key][0])


def _facts_clock(name: str, facts: ClusterFacts | None, path: tuple[str, ...], setting: str) -> Clock:
    value = facts.get(*path) if facts is not None else None
    if value is None:
        return Clock(name, None, False, Source(default=f"unknown: the facts do not state {'.'.join(path)}"), setting,
                     CLOCKS[name][0])
    return Clock(name, int(value), True, Source(facts.location(*path), FACTS_LAYER), setting,  # type: ignore[union-attr]
                 CLOCKS[name][0])


def collective_timeout(resolved: Resolved, version: str | None, version_at: Source) -> tuple[Clock, Clock]:
    """The process group's default timeouts in the workers: for ``backend="nccl"`` (``nccl_collective_timeout_sec``
    where the profile sets it: Flyte 2's plugin, kfdefaults' own for flytekit, :mod:`kfdefaults.flytekit.task`;
    else torch's default of ``version``) and for any other backend or none (torch's). The training code's
    ``timeout=`` wins over both."""
    clocks = []
    for name in ("pg_timeout_nccl", "pg_timeout_other"):
        found = torch_defaults.default(name, version)
        note = "" if version else f"torch's version unknown: {torch_defaults.history(name)}"
        if found is None:
            clocks.append(Clock(name, None, False, Source(default="unknown: the facts do not state torch.version"),
                                "init_process_group(timeout=...)", CLOCKS[name][0], note))
        else:
            label = f"torch {version or 'any'} default ({found.source})"
            clocks.append(Clock(name, found.value, True, Source(default=label), "init_process_group(timeout=...)",
                                CLOCKS[name][0], note))
    set_to = resolved.elastic_settings.get("nccl_collective_timeout_sec")
    if isinstance(set_to, int) and not isinstance(set_to, bool):
        source = _profile(resolved, ("elastic", "nccl_collective_timeout_sec"), "")
        works = torch_defaults.at_least(version, torch_defaults.NCCL_DEFAULT_PATCHABLE_SINCE)
        note = ("applies where the code calls init_process_group(backend='nccl') without timeout="
                if works is not False else
                f"torch {version} ({version_at}) binds its default when imported: nccl_collective_timeout_sec does "
                "nothing there")
        if works is not False:
            clocks[0] = Clock("pg_timeout_nccl", set_to, True, source, "elastic.nccl_collective_timeout_sec",
                              CLOCKS["pg_timeout_nccl"][0], note)
        else:
            clocks[0] = Clock(clocks[0].name, clocks[0].value, True, clocks[0].source, clocks[0].setting,
                              clocks[0].kept_by, note)
    return clocks[0], clocks[1]


def heartbeat(resolved: Resolved, version: str | None) -> Clock:
    """NCCL's heartbeat monitor: ``TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC`` in the primary container, else Flyte 2's
    ``nccl_heartbeat_timeout_sec`` (its plugin sets the variable when unset), else torch's default of ``version``;
    off with ``TORCH_NCCL_ENABLE_MONITORING=0``."""
    setting = "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"
    kept_by = CLOCKS["nccl_heartbeat"][0]
    monitoring, monitoring_at = env_value(resolved, "TORCH_NCCL_ENABLE_MONITORING")
    if monitoring == "0" and monitoring_at is not None:
        return Clock("nccl_heartbeat", None, True, monitoring_at, "TORCH_NCCL_ENABLE_MONITORING", kept_by,
                     "the heartbeat monitor is off")
    value, at = env_value(resolved, setting)
    if value is not None and value.isdigit() and at is not None:
        return Clock("nccl_heartbeat", int(value), True, at, setting, kept_by)
    plugin = resolved.elastic_settings.get("nccl_heartbeat_timeout_sec")
    if resolved.target is FLYTE2 and isinstance(plugin, int) and not isinstance(plugin, bool):
        source = _profile(resolved, ("elastic", "nccl_heartbeat_timeout_sec"),
                          _plugin_default(resolved, "nccl_heartbeat_timeout_sec"))
        return Clock("nccl_heartbeat", plugin, True, source, "elastic.nccl_heartbeat_timeout_sec", kept_by)
    found = torch_defaults.default("nccl_heartbeat", version)
    if found is None:
        return Clock("nccl_heartbeat", None, False, Source(default="unknown: the facts do not state torch.version"),
                     setting, kept_by, f"torch's version unknown: {torch_defaults.history('nccl_heartbeat')}")
    return Clock("nccl_heartbeat", found.value, True, Source(default=f"torch {version} default ({found.source})"),
                 setting, kept_by, "" if found.value is not None else "torch has no heartbeat monitor")


def torch_version(resolved: Resolved, facts: ClusterFacts | None) -> tuple[str | None, Source]:
    """The torch of the profile's image (the facts' ``torch.profiles`` entry, else ``torch.version``), and where."""
    if facts is None:
        return None, Source(default="unknown: no cluster facts")
    version, path = facts.torch_version(resolved.name)
    if version is None:
        return None, Source(default="unknown: the facts do not state torch.version")
    return version, Source(facts.location(*path), FACTS_LAYER)


def deadline_clock(resolved: Resolved) -> Clock:
    """``elastic.run_policy.active_deadline_seconds`` (a PyTorchJob's only: several nodes); off when unset."""
    policy = resolved.elastic_settings.get("run_policy") or {}
    seconds = policy.get("active_deadline_seconds") if isinstance(policy, dict) else None
    path = ("elastic", "run_policy", "active_deadline_seconds")
    if not isinstance(seconds, int) or seconds <= 0 or not is_multi_node(resolved.elastic_settings):
        return Clock("active_deadline_seconds", None, True, Source(default="not set: no deadline"), format_path(path),
                     CLOCKS["active_deadline_seconds"][0])
    return Clock("active_deadline_seconds", seconds, True, _profile(resolved, path, ""), format_path(path),
                 CLOCKS["active_deadline_seconds"][0])


def clocks(resolved: Resolved, facts: ClusterFacts | None) -> list[Clock]:
    """Every clock of a task on ``resolved``, on the cluster ``facts`` describe (:data:`CLOCKS`' order).

    Args:
        resolved: The merged profile.
        facts: The cluster's facts, or ``None`` (then Kueue, Flyte's timeout and torch's version are unknown).

    Returns:
        One :class:`Clock` per name of :data:`CLOCKS`, each with where its value is set.
    """
    version, version_at = torch_version(resolved, facts)
    target = resolved.target
    monitor = resolved.elastic_settings.get("monitor_interval", target.fixed.get("monitor_interval"))
    default = ("torchrun default (monitor_interval): the clustered launcher passes none" if target is CLUSTERED
               else _plugin_default(resolved, "monitor_interval"))
    monitor_source = _profile(resolved, ("elastic", "monitor_interval"), default)
    nccl, other = collective_timeout(resolved, version, version_at)
    if is_static(resolved):
        rendezvous = [Clock("static_timeout", torch_defaults.TABLE["static_timeout"][0].value, True,
                            Source(default=torch_defaults.label("static_timeout", version)),
                            "none: torchrun --rdzv-conf timeout=..., which the clustered launcher does not pass",
                            CLOCKS["static_timeout"][0])]
    else:
        rendezvous = [_rdzv(resolved, key, version) for key in ("read_timeout", "join_timeout", "last_call_timeout")]
    queued = [Clock("max_queued_time", None, False, Source(default="unknown: set in the task's code, not the profile"),
                    "@env.task(timeout=flyte.Timeout(max_queued_time=...))", CLOCKS["max_queued_time"][0])] \
        if target is CLUSTERED else []
    monitor = monitor if isinstance(monitor, float) and not monitor.is_integer() else \
        int(monitor) if isinstance(monitor, (int, float)) else None
    found = [*rendezvous,
             Clock("monitor_interval", monitor, True, monitor_source, "elastic.monitor_interval",
                   CLOCKS["monitor_interval"][0]),
             nccl, other, heartbeat(resolved, version), deadline_clock(resolved),
             _facts_clock("task_timeout", facts, ("flyte", "task_timeout"), "flyte.task_timeout"), *queued]
    return found + kueue_clocks(resolved, facts)


def is_static(resolved: Resolved) -> bool:
    """Whether the task's nodes meet at torchrun's static rendezvous (a clustered task's default, ``rdzv_backend:
    static``): node 0 hosts a TCPStore that every other node connects to; no round, no ``join_timeout``."""
    return resolved.target is CLUSTERED and resolved.elastic_settings.get("rdzv_backend", "static") == "static"


def by_name(found: Iterable[Clock]) -> dict[str, Clock]:
    """The clocks of :func:`clocks` by name."""
    return {c.name: c for c in found}


def nodes(resolved: Resolved) -> tuple[int, int]:
    """``nnodes`` as ``(min, max)``."""
    return nnodes_range(resolved.elastic_settings.get("nnodes", 1))
