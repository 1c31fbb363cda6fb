"""What a profile's ``elastic`` settings become in the PyTorchJob: ``spec.elasticPolicy``, ``spec.runPolicy`` and the
number of ``Worker`` replicas, importing no SDK.

Two steps, restated:

* the plugin registers a ``DistributedPyTorchTrainingTask`` as the task's ``custom`` (flytekitplugins-kfpytorch
  ``PytorchElasticFunctionTask.get_custom``, flyteplugins.pytorch ``TorchFunctionTask.custom_config``: the same
  message): ``elasticConfig`` from ``nnodes`` (torch's ``parse_min_max_nnodes``), ``nproc_per_node``,
  ``max_restarts`` and the rendezvous backend (``c10d``, which flytekit fixes), ``runPolicy`` from ``run_policy``,
  ``workerReplicas.replicas`` the maximum number of nodes;
* the backend turns it into the job (:func:`.pytorchjob.elastic_policy`, :func:`.pytorchjob.run_policy`).

``tests/test_verify.py`` compares :func:`registered_custom` with the ``custom`` real tasks register.
"""

from __future__ import annotations

from typing import Any, Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from .gojson import JSON

JOB_FIELDS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("spec", "elasticPolicy", "minReplicas"), ("elastic", "nnodes")),
    (("spec", "elasticPolicy", "maxReplicas"), ("elastic", "nnodes")),
    (("spec", "elasticPolicy", "rdzvBackend"), ("elastic", "rdzv_backend")),
    (("spec", "elasticPolicy", "nProcPerNode"), ("elastic", "nproc_per_node")),
    (("spec", "elasticPolicy", "maxRestarts"), ("elastic", "max_restarts")),
    (("spec", "runPolicy", "cleanPodPolicy"), ("elastic", "run_policy", "clean_pod_policy")),
    (("spec", "runPolicy", "ttlSecondsAfterFinished"), ("elastic", "run_policy", "ttl_seconds_after_finished")),
    (("spec", "runPolicy", "activeDeadlineSeconds"), ("elastic", "run_policy", "active_deadline_seconds")),
    (("spec", "runPolicy", "backoffLimit"), ("elastic", "run_policy", "backoff_limit")),
    (("spec", "pytorchReplicaSpecs", "Worker", "replicas"), ("elastic", "nnodes")),
)
"""Each field of a PyTorchJob that the elastic settings decide -> the setting that decides it (a path of the
profile, as ``render --explain`` names it)."""

_CLEAN_POD = {"none": None, "running": "CLEANPOD_POLICY_RUNNING", "all": "CLEANPOD_POLICY_ALL"}
"""``run_policy.clean_pod_policy`` -> the protobuf enum name; ``none`` is the enum's zero, which protobuf JSON leaves out."""


def nnodes_range(nnodes: Any) -> tuple[int, int]:
    """``(min, max)`` nodes, as torch's ``parse_min_max_nnodes(str(nnodes))`` reads them: ``"1:4"`` -> ``(1, 4)``,
    ``2`` or ``"2"`` -> ``(2, 2)``.

    Raises:
        ValueError: not ``N`` or ``MIN:MAX`` (a validated profile always is).
    """
    parts = str(nnodes).split(":")
    if len(parts) == 1:
        return int(parts[0]), int(parts[0])
    if len(parts) == 2:
        return int(parts[0]), int(parts[1])
    raise ValueError(f"nnodes={nnodes!r} is neither N nor MIN:MAX")


def registered_custom(settings: Mapping[str, Any]) -> JSON:
    """The ``custom`` a multi-node task registers for ``settings`` (:attr:`kfdefaults.Resolved.elastic_settings`),
    in protobuf JSON as ``MessageToDict`` writes it: fields at their zero value (``0``, ``""``, the ``NONE`` clean
    pod policy) left out.

    Returns:
        ``{"elasticConfig": {...}, "runPolicy"?: {...}, "workerReplicas": {"replicas": max}}``.
    """
    low, high = nnodes_range(settings.get("nnodes", 1))
    elastic = {"rdzvBackend": settings.get("rdzv_backend", "c10d"), "minReplicas": low, "maxReplicas": high,
               "nprocPerNode": settings.get("nproc_per_node", 1), "maxRestarts": settings.get("max_restarts", 0)}
    custom: JSON = {"elasticConfig": _without_zeros(elastic)}
    policy = settings.get("run_policy")
    if policy:
        custom["runPolicy"] = _without_zeros({
            "cleanPodPolicy": _CLEAN_POD.get(str(policy.get("clean_pod_policy") or "none").lower()),
            "ttlSecondsAfterFinished": policy.get("ttl_seconds_after_finished"),
            "activeDeadlineSeconds": policy.get("active_deadline_seconds"),
            "backoffLimit": policy.get("backoff_limit"),
        })
    custom["workerReplicas"] = _without_zeros({"replicas": high})
    return custom


def _without_zeros(message: JSON) -> JSON:
    return {k: v for k, v in message.items() if v not in (None, 0, "")}


def job_fields(settings: Mapping[str, Any]) -> dict[tuple[str, ...], Any]:
    """The fields of the PyTorchJob that ``settings`` decide, as the backend writes them from
    :func:`registered_custom`: ``spec.elasticPolicy`` (its five fields, zeros written), ``spec.runPolicy`` (with a
    ``run_policy``: ``cleanPodPolicy`` always, the numbers when not zero) and ``Worker`` replicas.

    Returns:
        Job path (as in :data:`JOB_FIELDS`) -> value.
    """
    # lazy: the backend's PyTorchJob model, which the checks of every render (nnodes_range) do not need
    from .pytorchjob import elastic_policy, run_policy

    custom = registered_custom(settings)
    spec: JSON = {"elasticPolicy": elastic_policy(custom["elasticConfig"]),
                  "runPolicy": run_policy(custom["runPolicy"]) if "runPolicy" in custom else {},
                  "pytorchReplicaSpecs": {"Worker": {"replicas": int(custom["workerReplicas"].get("replicas", 0))}}}
    out: dict[tuple[str, ...], Any] = {}
    for job_path, _ in JOB_FIELDS:
        node: Any = {"spec": spec}
        for part in job_path:
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            out[job_path] = node
    return out
