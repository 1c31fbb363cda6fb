"""The SDKs a profile is built for (*targets*), as plain data: what differs between flytekit, Flyte 2's PyTorch plugin
and Flyte 2's clustered tasks (a JobSet).

One profile serves every SDK; what differs is the layer below every profile (each plugin's ``Elastic``
defaults), which ``elastic`` settings each plugin honours, and where its objects come from. Everything here is
data and the standard library, so that ``render --target flyte2`` imports no SDK; a test compares the defaults
with the installed plugins (tests/test_targets.py).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any, Mapping

from .errors import KfdefaultsError
from .settings import TARGET_ENV

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:  # the manifest is a later step of the flow, only passed through here
    from .inputs import Inputs

ELASTIC_KEYS = ("nnodes", "nproc_per_node", "start_method", "rdzv_backend", "monitor_interval", "max_restarts",
                "rdzv_configs", "run_policy", "nccl_heartbeat_timeout_sec", "nccl_async_error_handling",
                "nccl_collective_timeout_sec", "nccl_enable_monitoring", "cluster_max_restarts",
                "restart_on_host_maintenance")
"""Every key of a profile's ``elastic`` section, in output order (the plugins' order, Flyte 2's additions, then
the clustered tasks' own)."""

INT32_MAX = 2**31 - 1
"""The largest value of ``nnodes``, ``nproc_per_node``, ``max_restarts`` and the run policy's numbers, written or
worked out (``nproc_per_node: auto``): the kubeflow PyTorchJob fields and flyteidl's messages they become are
int32, and a larger value fails serialization (``render --as flyte``) or the job."""

OFF = "off"
"""The value of an ``elastic`` setting where the plugin gives ``None`` a meaning (:attr:`Target.off`): the plugin
gets ``None`` (``nccl_heartbeat_timeout_sec: off`` sets no TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, so torch's own default
applies), over every lower layer and the plugin's default; ``null`` instead deletes, and the default comes back."""

NCCL_ENV = {
    "nccl_heartbeat_timeout_sec": "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
    "nccl_async_error_handling": "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "nccl_collective_timeout_sec": "FLYTE_NCCL_COLLECTIVE_TIMEOUT_SEC",
    "nccl_enable_monitoring": "TORCH_NCCL_ENABLE_MONITORING",
}
"""Flyte 2's NCCL settings -> the environment variable its plugin sets from each, in the pod's main process and
only when the variable is unset (``flyteplugins.pytorch.task.TorchFunctionTask.pre``)."""


class Target:
    """One SDK that kfdefaults builds tasks for.

    Attributes:
        name: ``flytekit`` or ``flyte2``, as ``render --target`` takes it.
        title: How messages name the SDK.
        elastic_class: The plugin's ``Elastic``, as messages and ``--explain`` name it.
        pod_template_class: The SDK's ``PodTemplate``, likewise.
        defaults: The plugin's ``Elastic`` defaults: the layer below every profile. A key a layer deletes
            (``null``) comes back as this default; a key absent here has no default value (it is not set).
        kfdefaults_defaults: Keys of :attr:`defaults` that the plugin requires and kfdefaults fills in.
        settings: The ``elastic`` keys that are fields of the plugin's ``Elastic``.
        fixed: Keys that are not fields of the plugin's ``Elastic`` but that the SDK fixes, with the one value it
            runs with: a profile may write that value, and no other.
        applied: Keys that are not fields of the plugin's ``Elastic`` and that kfdefaults applies itself
            (flytekit's ``nccl_collective_timeout_sec``: :mod:`kfdefaults.flytekit.collective`).
        modules: The modules whose presence means the SDK is installed.
        extra: The extra of the ``kfdefaults`` package that installs the SDK (``pip install 'kfdefaults[EXTRA]'``).
        off: Keys whose ``None`` the plugin reads as "leave torch's own default": a profile writes them
            :data:`OFF`, and ``Elastic(key=None)`` means the same.
        adapter: The subpackage of kfdefaults that builds the SDK's objects and tasks (its ``preview`` module
            serializes a task: :mod:`kfdefaults.runtime.preview`); the target's name unless given.
        why_fixed: Why each key of :attr:`fixed` has its one value, where the SDK has a field that does not reach
            the run (said in the error).
        choices: The values a setting may take on this target, where fewer than the profile format allows.
        max_nodes: The most nodes a task may have; ``fixed_nodes``: ``nnodes`` must be one number, not a range.
        run_policy: The ``run_policy`` keys the target honours (``None``: all of them).
    """

    # a plain class, not a dataclass: importing dataclasses (and inspect) would cost every render 25 ms
    __slots__ = ("name", "title", "elastic_class", "pod_template_class", "defaults", "settings", "fixed", "modules",
                 "extra", "kfdefaults_defaults", "applied", "off", "adapter", "why_fixed", "choices", "max_nodes",
                 "fixed_nodes", "run_policy")

    def __init__(self, *, name: str, title: str, elastic_class: str, pod_template_class: str,
                 defaults: Mapping[str, Any], settings: tuple[str, ...], fixed: Mapping[str, Any],
                 modules: tuple[str, ...], extra: str, kfdefaults_defaults: frozenset[str] = frozenset(),
                 applied: tuple[str, ...] = (), off: tuple[str, ...] = (), adapter: str | None = None,
                 why_fixed: Mapping[str, str] | None = None, choices: Mapping[str, tuple[str, ...]] | None = None, max_nodes: int = INT32_MAX,
                 fixed_nodes: bool = False, run_policy: tuple[str, ...] | None = None) -> None:
        self.name = name
        self.title = title
        self.elastic_class = elastic_class
        self.pod_template_class = pod_template_class
        self.defaults = defaults
        self.settings = settings
        self.fixed = fixed
        self.modules = modules
        self.extra = extra
        self.kfdefaults_defaults = kfdefaults_defaults
        self.applied = applied
        self.off = off
        self.adapter = adapter or name
        self.why_fixed = why_fixed or {}
        self.choices = choices or {}
        self.max_nodes, self.fixed_nodes, self.run_policy = max_nodes, fixed_nodes, run_policy

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Target({self.name!r})"

    def honours(self, key: str, value: Any) -> bool:
        """Whether the SDK runs with ``elastic.KEY: value`` as written."""
        if key in self.choices and value not in self.choices[key]:
            return False
        if key in self.settings or key in self.applied:
            return value != OFF or key in self.off
        return key in self.fixed and value == self.fixed[key]

    def default_label(self, key: str) -> str:
        """What ``--explain`` names as the source of the default of ``elastic.KEY``."""
        if key in self.kfdefaults_defaults:
            return f"kfdefaults default for {self.name} ({key}: {self.elastic_class} requires it)"
        return f"{self.elastic_class} default ({key})"


FLYTEKIT = Target(
    name="flytekit",
    title="flytekit",
    elastic_class="flytekitplugins.kfpytorch.Elastic",
    pod_template_class="flytekit.PodTemplate",
    defaults={
        "nnodes": 1,
        "nproc_per_node": 1,
        "start_method": "spawn",
        "monitor_interval": 5,
        "max_restarts": 0,
        "rdzv_configs": {"timeout": 900, "join_timeout": 900},
    },
    settings=("nnodes", "nproc_per_node", "start_method", "monitor_interval", "max_restarts", "rdzv_configs",
              "run_policy"),
    # flytekitplugins.kfpytorch launches torch elastic with rdzv_backend="c10d", always
    fixed={"rdzv_backend": "c10d"},
    # the plugin passes no timeout to init_process_group: kfdefaults sets its NCCL default in the workers
    applied=("nccl_collective_timeout_sec",),
    off=("nccl_collective_timeout_sec",),
    modules=("flytekit", "flytekitplugins.kfpytorch"),
    extra="flytekit",
)
"""flytekit 1.16 with ``flytekitplugins-kfpytorch`` 1.16: ``@task(task_config=kfdefaults.Elastic(...))``."""

FLYTE2 = Target(
    name="flyte2",
    title="Flyte 2",
    elastic_class="flyteplugins.pytorch.Elastic",
    pod_template_class="flyte.PodTemplate",
    defaults={
        "nnodes": 1,
        "nproc_per_node": 1,
        "rdzv_backend": "c10d",
        "monitor_interval": 3,
        "max_restarts": 3,
        "rdzv_configs": {"timeout": 900, "join_timeout": 900},
        "nccl_heartbeat_timeout_sec": 300,
        "nccl_async_error_handling": False,
        "nccl_enable_monitoring": True,
    },
    kfdefaults_defaults=frozenset({"nnodes", "nproc_per_node"}),
    settings=("nnodes", "nproc_per_node", "rdzv_backend", "monitor_interval", "max_restarts", "rdzv_configs",
              "run_policy", "nccl_heartbeat_timeout_sec", "nccl_async_error_handling", "nccl_collective_timeout_sec",
              "nccl_enable_monitoring"),
    # flyteplugins.pytorch builds torch's LaunchConfig without start_method: torch's default, spawn
    fixed={"start_method": "spawn"},
    # flyteplugins.pytorch.task.TorchFunctionTask.pre sets the variable only for a value that is not None
    off=("nccl_heartbeat_timeout_sec", "nccl_collective_timeout_sec"),
    choices={"rdzv_backend": ("c10d", "etcd", "etcd-v2")},
    modules=("flyte", "flyteplugins.pytorch"),
    extra="flyte2",
)
"""Flyte 2 (``flyte`` 2.12 with ``flyteplugins-pytorch`` 2.12): ``TaskEnvironment(plugin_config=kfdefaults.flyte2.Elastic(...))``.

``nccl_collective_timeout_sec`` has no default value (``None``: the plugin leaves torch's own in place)."""

CLUSTERED = Target(
    name="clustered",
    title="Flyte 2 clustered tasks",
    elastic_class="flyte.clustered.ClusteredTaskEnvironment",
    pod_template_class="flyte.PodTemplate",
    defaults={"nnodes": 1, "nproc_per_node": 1, "rdzv_backend": "static", "max_restarts": 0,
              "cluster_max_restarts": 0, "restart_on_host_maintenance": False},
    kfdefaults_defaults=frozenset({"nnodes", "nproc_per_node"}),
    # nnodes -> replicas, rdzv_backend and max_restarts -> TorchRun, cluster_max_restarts and
    # restart_on_host_maintenance -> ClusterFailurePolicy, run_policy.ttl_seconds_after_finished -> the JobSet's
    settings=("nnodes", "nproc_per_node", "rdzv_backend", "run_policy", "cluster_max_restarts",
              "restart_on_host_maintenance"),
    choices={"rdzv_backend": ("static", "c10d")},
    run_policy=("ttl_seconds_after_finished",),
    fixed_nodes=True,
    max_nodes=100000,  # maxReplicasForNaming, flyteplugins/go/tasks/plugins/k8s/clustered/util.go
    # the `clustered` launcher execs torchrun with --nnodes, --nproc-per-node, --node-rank, --rdzv-backend, --rdzv-id
    # and --rdzv-endpoint only (flyte/_bin/clustered.py, flyte 2.12.1): torchrun's defaults for the rest
    fixed={"start_method": "spawn", "monitor_interval": 0.1, "max_restarts": 0, "rdzv_configs": {}},
    why_fixed={
        "start_method": "the clustered launcher runs torchrun without --start-method (flyte/_bin/clustered.py): "
                        "torchrun's default, spawn",
        "monitor_interval": "the clustered launcher runs torchrun without --monitor-interval "
                            "(flyte/_bin/clustered.py): torchrun's default, 0.1 s",
        "max_restarts": "TorchRun(max_restarts=...) reaches no pod: the backend does not read it and the clustered "
                        "launcher runs torchrun without --max-restarts (flyte/_bin/clustered.py), so torchrun's "
                        "default 0 applies; the JobSet's restarts are elastic.cluster_max_restarts",
        "rdzv_configs": "ClusteredTaskEnvironment has no field for rendezvous settings and the clustered launcher "
                        "runs torchrun without --rdzv-conf (flyte/_bin/clustered.py): the static rendezvous (the "
                        "default) has no join_timeout and waits torch's 600 s for every node; c10d runs on torch's "
                        "defaults (join_timeout 600 s)",
    },
    modules=("flyte", "flyte.clustered"),
    extra="flyte2",
    adapter="flyte2",
)
"""Flyte 2's clustered tasks (``flyte`` 2.12's ``flyte.clustered``): ``kfdefaults.flyte2.ClusteredTaskEnvironment``,
a JobSet built by the backend's ``clustered`` plugin (flyteorg/flyte ``flyteplugins/go/tasks/plugins/k8s/clustered``,
:mod:`kfdefaults.backend.jobset`)."""

TARGETS: dict[str, Target] = {t.name: t for t in (FLYTEKIT, FLYTE2, CLUSTERED)}
"""Every target by name, the default first."""


def target_named(name: str | Target) -> Target:
    """The target called ``name`` (a :class:`Target` is returned as it is).

    Raises:
        KfdefaultsError: no target has that name.
    """
    if isinstance(name, Target):
        return name
    found = TARGETS.get(name)
    if found is None:
        raise KfdefaultsError(f"no target named {name!r}: one of {', '.join(TARGETS)}")
    return found


def installed(target: Target, inputs: Inputs | None = None) -> bool:
    """Whether every module of the target's SDK can be imported (found without importing it); ``inputs`` records
    the modules looked for."""
    for module in target.modules:
        if inputs is not None:
            inputs.module(module)
        try:
            if importlib.util.find_spec(module) is None:
                return False
        except (ImportError, ValueError):
            return False
    return True


PROJECT_TARGET = "[tool.kfdefaults] target"
"""The reason :func:`default_target` gives for the target the project's ``pyproject.toml`` states."""

SETTLED = ("given", TARGET_ENV, PROJECT_TARGET, "the installed SDK")
"""The reasons of :func:`default_target` (and ``"given"``: asked for by name) that settle the target: nothing
needs saying about it. Any other reason is an assumption (both SDKs installed, or neither)."""


def default_target(environ: Mapping[str, str] | None = None, inputs: Inputs | None = None,
                   project: Any = None) -> tuple[Target, str]:
    """The target when none is asked for, and why: ``(target, reason)``.

    ``KFDEFAULTS_TARGET`` if set; else the ``project``'s ``[tool.kfdefaults] target``
    (:meth:`kfdefaults.layers.Project.target`); else the SDK that is installed; flytekit when both are, or neither
    (the default of kfdefaults 0.1, whose profiles were written for it). A reason of :data:`SETTLED` settles it.

    Raises:
        KfdefaultsError: ``KFDEFAULTS_TARGET`` names no target.
        ProfileError: the project's ``target`` names none (located in its ``pyproject.toml``).
    """
    if environ is None and inputs is not None:
        inputs.env(TARGET_ENV)
    environ = os.environ if environ is None else environ
    chosen = environ.get(TARGET_ENV, "").strip()
    if chosen:
        return target_named(chosen), TARGET_ENV
    stated = project.target() if project is not None else None
    if stated is not None:
        return TARGETS[stated], PROJECT_TARGET
    kit, two = installed(FLYTEKIT, inputs), installed(FLYTE2, inputs)
    if two and not kit:
        return FLYTE2, "the installed SDK"
    if kit and not two:
        return FLYTEKIT, "the installed SDK"
    return FLYTEKIT, "flytekit and flyte are both installed" if kit else "no Flyte SDK is installed"


SDK_PACKAGES = {
    "flytekit": ("flytekit", "flytekitplugins.kfpytorch", "flyteidl", "google.protobuf", "kubernetes"),
    "flyte2": ("flyte", "flyteplugins.pytorch", "flyteidl2", "google.protobuf", "kubernetes"),
    "clustered": ("flyte", "flyteidl2", "google.protobuf", "kubernetes"),
}
"""The packages whose code makes each target's TaskTemplate (``render --as flyte`` depends on them)."""
