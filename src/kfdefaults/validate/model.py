"""The profile file format as pydantic models.

One model describes one file, where every key is optional and ``null`` means "delete what a lower layer
set". The PodSpec fragment stays plain data here: it is checked against the Kubernetes schema by
:mod:`kfdefaults.validate.podspec` and merged by the strategic merge engine.

Unknown keys anywhere in these sections are errors (``extra="forbid"``), and values are not coerced
(``strict=True``): ``nproc_per_node: "8"`` is an error, not an 8.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import shown
from ..layers import NAME_PATTERN
from ..targets import INT32_MAX

_INT32 = INT32_MAX

_MIN_MAX = re.compile(r"([0-9]+)\s*:\s*([0-9]+)")  # spaces around ":" are read as torch reads them (int(" 4"))


def _bounded_int(digits: str) -> int:
    """ASCII ``digits`` as an int, or ``_INT32 + 1`` when there are more than an int32 holds (before ``int()``,
    which refuses more than 4,300 digits): the range checks then say what is wrong."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 10 else _INT32 + 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class RunPolicySection(_Strict):
    """``elastic.run_policy``: fields of ``flytekitplugins.kfpytorch.RunPolicy`` and of Flyte 2's
    ``flyteplugins.pytorch.RunPolicy`` (the PyTorchJob run policy; the same four fields)."""

    clean_pod_policy: Optional[Literal["none", "running", "all"]] = Field(
        None, description="Which pods to delete when the job ends: none, running or all."
    )
    # flyteidl's kubeflow RunPolicy message holds the three numbers as int32: a larger one fails serialization
    ttl_seconds_after_finished: Optional[int] = Field(
        None, ge=0, le=_INT32, description="Seconds after the job finishes before it is deleted (a clustered task's "
        "JobSet too)."
    )
    active_deadline_seconds: Optional[int] = Field(
        None, gt=0, le=_INT32, description="Seconds the job may run before it is terminated."
    )
    backoff_limit: Optional[int] = Field(None, ge=0, le=_INT32, description="Retries before the job is marked failed.")

    @field_validator("clean_pod_policy", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v


def _count_or_word(v: Any, word: str, kind: str) -> Any:
    """``v`` if ``None``, ``word`` or an int in 1..2^31-1; else a ``ValueError`` saying it should be ``kind``."""
    if v is None or v == word and isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        if not 1 <= v <= _INT32:
            raise ValueError(f"Input should be greater than or equal to 1 (and at most {_INT32}), or {word}")
        return v
    hint = "; write it without quotes" if isinstance(v, str) and v.strip().isdigit() else ""
    raise ValueError(f"Input should be {kind}{hint}")


def _count_or_word_schema(word: str) -> dict[str, Any]:
    """The JSON Schema of what :func:`_count_or_word` accepts: an int in 1..2^31-1, ``word`` or null."""
    return {"anyOf": [{"type": "integer", "minimum": 1, "maximum": _INT32}, {"const": word}, {"type": "null"}]}


class ElasticSection(_Strict):
    """``elastic``: fields of ``flytekitplugins.kfpytorch.Elastic`` and of Flyte 2's ``flyteplugins.pytorch.Elastic``,
    snake_case as in the plugins. A file may hold the settings of either SDK; a setting that the SDK a profile is
    resolved for cannot honour is an error then, at its line."""

    nnodes: Optional[Union[int, str]] = Field(
        None,
        description='Number of nodes (an int >= 1), or a range "MIN:MAX" with 1 <= MIN <= MAX. '
        "1 runs in a single pod; anything else is a PyTorchJob.",
        json_schema_extra={
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": _INT32},
                # 1 <= MIN: no 0 and no leading-zero 0; MIN <= MAX is beyond a pattern (``validate`` checks it)
                {"type": "string", "pattern": r"^\s*(0*[1-9][0-9]*|0*[1-9][0-9]*\s*:\s*0*[1-9][0-9]*)\s*$"},
                {"type": "null"},
            ]
        },
    )
    nproc_per_node: Optional[Union[int, Literal["auto"]]] = Field(
        None,
        description="Worker processes per node (one per GPU), or auto: the merged GPU limit of the primary container, "
        "else its CPU request (at least 1), worked out when the profile is rendered.",
        json_schema_extra=_count_or_word_schema("auto"),
    )
    start_method: Optional[Literal["spawn", "fork"]] = Field(
        None, description="How torch elastic starts worker processes. flytekit only: Flyte 2 always spawns."
    )
    rdzv_backend: Optional[Literal["c10d", "etcd", "etcd-v2", "static"]] = Field(
        None, description="The torch elastic rendezvous backend. Flyte 2 only: flytekit always uses c10d, which "
        "is also Flyte 2's default; clustered tasks take static (their default) or c10d.",
    )
    monitor_interval: Optional[Union[int, float]] = Field(
        None, gt=0, le=86400, allow_inf_nan=False, description="Seconds between checks of the worker processes."
    )
    max_restarts: Optional[int] = Field(None, ge=0, le=_INT32, description="Worker group restarts before the task fails.")
    rdzv_configs: Optional[Dict[str, Any]] = Field(
        None,
        description="Rendezvous settings passed to torch elastic; timeouts in whole seconds. "
        "c10d reads join_timeout (not timeout).",
    )
    run_policy: Optional[RunPolicySection] = Field(None, description="PyTorchJob run policy.")
    # Flyte 2's plugin sets an environment variable of the pod's main process from each (only when unset)
    nccl_heartbeat_timeout_sec: Optional[Union[int, Literal["off"]]] = Field(
        None, description="Flyte 2 only: TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, seconds before NCCL's heartbeat monitor "
        "kills a worker whose watchdog is stuck (Flyte 2's default: 300); off sets no variable: torch's own default.",
        json_schema_extra=_count_or_word_schema("off"),
    )
    nccl_async_error_handling: Optional[bool] = Field(
        None, description="Flyte 2 only: true sets TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (torch elastic sets it in "
        "every worker anyway); false sets nothing.",
    )
    nccl_collective_timeout_sec: Optional[Union[int, Literal["off"]]] = Field(
        None, description="Seconds, the default timeout of a process group created with backend nccl and no "
        "timeout= (init_process_group and every collective on it): Flyte 2's plugin sets it in each worker "
        "(FLYTE_NCCL_COLLECTIVE_TIMEOUT_SEC), kfdefaults does for flytekit; unset or off: torch's (600 s from 2.2).",
        json_schema_extra=_count_or_word_schema("off"),
    )
    nccl_enable_monitoring: Optional[bool] = Field(
        None, description="Flyte 2 only: true sets TORCH_NCCL_ENABLE_MONITORING=1 (the default); false sets "
        "nothing, which leaves torch's default (on).",
    )

    # Flyte 2's clustered tasks only: the JobSet's failure policy (flyte.clustered.ClusterFailurePolicy)
    cluster_max_restarts: Optional[int] = Field(
        None, ge=0, le=_INT32, description="Clustered tasks only: times the whole JobSet is recreated (every pod) "
        "after a worker fails, before the attempt fails (ClusterFailurePolicy.max_restarts; default 0).",
    )
    restart_on_host_maintenance: Optional[bool] = Field(
        None, description="Clustered tasks only: a JobSet that failed because worker 0 was evicted (host "
        "maintenance) is retried as a system error, using none of the task's retries (ClusterFailurePolicy; "
        "default false).",
    )

    @field_validator("monitor_interval", mode="before")
    @classmethod
    def _finite(cls, v: Any) -> Any:
        if isinstance(v, float) and v != v or v in (float("inf"), float("-inf")):
            raise ValueError(f"monitor_interval must be a finite number of seconds, got {v}")
        return v

    @field_validator("nnodes", mode="before")
    @classmethod
    def _nnodes(cls, v: Any) -> Any:
        if v is None:
            return v
        if isinstance(v, bool):
            raise ValueError('nnodes must be an int >= 1 or "MIN:MAX"')
        if isinstance(v, int) or isinstance(v, str) and v.strip().isascii() and v.strip().isdigit():
            n = v if isinstance(v, int) else _bounded_int(v.strip())
            if not 1 <= n <= _INT32:
                raise ValueError(f"nnodes must be between 1 and {_INT32} (a PyTorchJob's replicas, a JobSet's "
                                 f"parallelism: int32), got {shown(v.strip()) if isinstance(v, str) else v}")
            return n
        if isinstance(v, str):
            text = v.strip()
            m = _MIN_MAX.fullmatch(text)
            if not m:
                raise ValueError(f'nnodes must be an int >= 1 or "MIN:MAX" (like "1:4"), got {shown(repr(v))}')
            lo, hi = _bounded_int(m.group(1)), _bounded_int(m.group(2))
            if not 1 <= lo <= hi <= _INT32:
                raise ValueError(f'nnodes "{shown(text)}" needs 1 <= MIN <= MAX <= {_INT32}')
            if lo == hi == 1:
                return 1  # "1:1" is one node: a plain pod, not a PyTorchJob of one replica
            return f"{lo}:{hi}"
        raise ValueError(f'nnodes must be an int >= 1 or "MIN:MAX", got {type(v).__name__}')

    @field_validator("nproc_per_node", mode="before")
    @classmethod
    def _nproc(cls, v: Any) -> Any:
        return _count_or_word(v, "auto", "a valid integer or auto")

    @field_validator("nccl_heartbeat_timeout_sec", "nccl_collective_timeout_sec", mode="before")
    @classmethod
    def _seconds_or_off(cls, v: Any) -> Any:
        return _count_or_word(v, "off", "a whole number of seconds or off (torch's own default)")

    # ``rdzv_configs`` keys and values are checked one by one, each at its own position, by
    # kfdefaults.validate.rdzv.check_rdzv_configs (called wherever a profile body is validated).


class PodTemplateSection(_Strict):
    """``pod_template``: a flytekit ``PodTemplate``; ``spec`` is a PodSpec fragment in manifest camelCase."""

    primary_container_name: Optional[str] = Field(
        None,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",  # a DNS label; pydantic patterns search, hence ^ and $
        max_length=63,
        description="Name of the container that runs the task (flytekit's default: primary).",
    )
    labels: Optional[Dict[str, Optional[str]]] = Field(None, description="Pod labels.")
    annotations: Optional[Dict[str, Optional[str]]] = Field(None, description="Pod annotations.")
    spec: Optional[Dict[str, Any]] = Field(
        None, description="A Kubernetes PodSpec fragment, merged by strategic merge patch."
    )


class ProfileFile(_Strict):
    """One profile file (YAML or TOML)."""

    name: Optional[str] = Field(
        None, pattern=f"^{NAME_PATTERN}$", description="Profile name: the file's name without its suffix; when given, it must say the same."
    )
    description: Optional[str] = Field(None, description="One line shown by `kfdefaults list`.")
    extends: Optional[Union[str, List[str]]] = Field(
        None, description="Parent profiles, applied first, in order, each fully layered."
    )
    elastic: Optional[ElasticSection] = None
    pod_template: Optional[PodTemplateSection] = None
    locked: Optional[List[str]] = Field(
        None, description="Paths that the layers merged after this profile may not change (a platform's policy): "
        '["pod_template.spec.tolerations", "elastic.rdzv_configs.join_timeout"]. A later layer may write the same '
        "value; any other value, a deletion or a new item is an error at FILE:LINE."
    )
    deprecated: Optional[str] = Field(
        None, min_length=1, description='Marks the profile deprecated, with what to use instead ("use gpu-large-v2"): '
        "render, list, validate and Elastic(...) warn."
    )
    delete: Optional[List[str]] = Field(
        None, description='Paths whose lower-layer values this profile deletes, as null would (TOML has no null): '
        '["elastic.run_policy", "pod_template.spec.containers[name=log-shipper]"].'
    )

    @field_validator("extends")
    @classmethod
    def _extends(cls, v: Any) -> Any:
        parents = [v] if isinstance(v, str) else v or []
        for parent in parents:
            if not re.fullmatch(NAME_PATTERN, parent):
                raise ValueError(f"{parent!r} is not a profile name ([a-z0-9][a-z0-9-]*)")
        twice = sorted({p for p in parents if parents.count(p) > 1})
        if twice:
            raise ValueError(f"{', '.join(repr(p) for p in twice)} listed twice: each parent is applied once, in order")
        return v

    def parents(self) -> list[str]:
        """``extends`` as a list."""
        if self.extends is None:
            return []
        return [self.extends] if isinstance(self.extends, str) else list(self.extends)
