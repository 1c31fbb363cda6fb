"""The pod spec a task on a profile registers, as far as the profile decides it, without importing an SDK.

The flytekit adapter builds a task's pod template from :func:`registered_pod_spec`, then flytekit fills the
primary container's image, command, args, environment and resources in place; nothing else changes
(``tests/test_backend_registered.py`` serializes real tasks and checks it). The checks of
:mod:`.checks` read the same spec, so that what ``validate`` and ``render`` check is what the task registers.
"""

from __future__ import annotations

import copy
from typing import Any

from ..merge.result import Resolved

JSON = dict

PYTORCH_CONTAINER = "pytorch"
"""The container a PyTorchJob runs (``kubeflowv1.PyTorchJobDefaultContainerName``): Flyte's PyTorch plugin gives
this name to the first container named like the primary (``common.OverridePrimaryContainerName``)."""


def primary_first(spec: JSON, primary: str) -> JSON:
    """``spec`` with its primary container first among its containers, in place; the primary is added (named
    only) when there is none, where flytekit would append it.

    Flyte's PyTorch plugin gives the worker name (``_F_WN``, ``FLYTE_INTERNAL_WORKER_NAME``) to whichever
    container is first in the worker's pod (``pytorch.go`` ``updateEnvVars``): with a sidecar listed first, the
    sidecar would get it and the training container would not.
    """
    containers: list[Any] = list(spec.get("containers") or [])
    first = [c for c in containers if isinstance(c, dict) and c.get("name") == primary][:1] or [{"name": primary}]
    spec["containers"] = first + [c for c in containers if c is not first[0]]
    return spec


def registered_pod_spec(resolved: Resolved) -> JSON:
    """The merged profile's pod spec as a task registers it (before flytekit fills the primary container in).

    Returns:
        A new PodSpec (plain data, camelCase): the profile's, its primary container first.
    """
    return primary_first(copy.deepcopy(resolved.pod_spec), resolved.primary_container_name)


def is_multi_node(elastic: JSON) -> bool:
    """Whether the task runs as a PyTorchJob: flytekitplugins-kfpytorch gives a plain pod for ``nnodes == 1``
    only (the int; kfdefaults reads an all-digit string such as ``"1"`` as its int)."""
    return elastic.get("nnodes", 1) != 1
