"""What Flyte's backend reads besides the task: its plugin configuration, and what it knows of one execution."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

JSON = dict


@dataclass
class BackendConfig:
    """The parts of flyteplugins' k8s plugin configuration (``plugins.k8s`` in propeller's config) the model reads.

    The defaults are flyteplugins v1.16.8's compiled-in defaults (``pluginmachinery/flytek8s/config/config.go``);
    a cluster's own configuration may differ (default requests, tolerations, node selectors, annotations).

    Attributes:
        flyteplugins_patch: The v1.16.x patch release modelled: 0 to 2 layer a same-named template container
            twice (fixed in v1.16.3), 0 and 1 also add the historic ``FLYTE_INTERNAL_PROJECT`` variables.
        default_cpu_request: The CPU request given to a primary container without one (``1000m``, written ``1``).
        default_memory_request: Likewise for memory (``1024Mi``, written ``1Gi``).
        default_annotations: Added to every pod (``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"``).
        enable_distributed_error_aggregation: Adds ``_F_DES`` beside ``_F_WN`` on the worker's first container.
        flyte2: Model flyte v2's ``flytek8s`` instead (flyteorg/flyte at 6fadb90, the backend of Flyte 2's clustered
            tasks): ``enableServiceLinks: false``, ``_F_PN`` and the historic ``FLYTE_INTERNAL_*`` variables, no
            literal offloading variables, no resources taken from the cluster's template before the platform's
            defaults, init containers kept in range only, node selector requirements added once, and the same-name
            template rule skipping the template's ``default`` and ``primary`` (not the task's primary).
    """

    flyteplugins_patch: int = 8
    flyte2: bool = False
    default_cpu_request: str = "1"
    default_memory_request: str = "1Gi"
    default_annotations: dict[str, str] = field(
        default_factory=lambda: {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"})
    default_labels: dict[str, str] = field(default_factory=dict)
    default_env_vars: dict[str, str] = field(default_factory=dict)
    default_env_from_secrets: list[str] = field(default_factory=list)
    default_env_from_config_maps: list[str] = field(default_factory=list)
    default_tolerations: list[JSON] = field(default_factory=list)
    resource_tolerations: dict[str, list[JSON]] = field(default_factory=dict)
    interruptible_tolerations: list[JSON] = field(default_factory=list)
    interruptible_node_selector: dict[str, str] = field(default_factory=dict)
    interruptible_node_selector_requirement: Optional[JSON] = None
    non_interruptible_node_selector_requirement: Optional[JSON] = None
    default_node_selector: dict[str, str] = field(default_factory=dict)
    default_affinity: Optional[JSON] = None
    default_pod_security_context: Optional[JSON] = None
    default_security_context: Optional[JSON] = None
    default_pod_dns_config: Optional[JSON] = None
    enable_host_networking_pod: Optional[bool] = None
    scheduler_name: str = ""
    gpu_resource_name: str = "nvidia.com/gpu"
    gpu_device_node_label: str = "k8s.amazonaws.com/accelerator"
    gpu_partition_size_node_label: str = "k8s.amazonaws.com/gpu-partition-size"
    gpu_unpartitioned_node_selector_requirement: Optional[JSON] = None
    gpu_unpartitioned_toleration: Optional[JSON] = None
    add_tolerations_for_extended_resources: list[str] = field(default_factory=list)
    enable_distributed_error_aggregation: bool = False
    literal_offloading: Optional[tuple[int, int]] = None


@dataclass
class ExecutionContext:
    """What flytepropeller knows of one execution of the task (``TaskExecutionMetadata``).

    The defaults are placeholders, in angle brackets where a value only exists once the task runs; they show
    where the backend writes such values, not what they will be.

    Attributes:
        render: Values for ``{{.input}}``-style templates in command and args; ``None`` leaves them as written.
        platform_resources: ``{"requests": {...}, "limits": {...}}``: the platform's task resource defaults and
            limits (flyteadmin's task resource attributes).
        override_resources: Execution-level resource overrides.
    """

    project: str = "<project>"
    domain: str = "<domain>"
    execution_name: str = "<execution>"
    attempt: int = 0
    task_project: Optional[str] = None
    task_domain: Optional[str] = None
    task_name: str = "<task>"
    task_version: str = "<version>"
    workflow_id: Optional[str] = None
    console_url: Optional[str] = None
    unique_node_id: str = "n0"
    environment: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    service_account: str = ""
    interruptible: bool = False
    platform_resources: Optional[JSON] = None
    override_resources: Optional[JSON] = None
    namespace: str = ""
    generated_name: str = ""
    render: Optional[dict[str, str]] = None
    extended_resources_override: Optional[Any] = None
