"""The one result type: :class:`Resolved`, a profile merged across its layers, as plain data.

The merge builds it layer by layer (:func:`kfdefaults.merge.step.merge_step` takes one and gives the next),
the provenance replays those steps, the printers and the checks read it, and the SDK adapters turn it into their
objects. Nothing here imports an SDK: :attr:`Resolved.elastic` and :attr:`Resolved.pod_template` ask the
:class:`SdkObjects` the pipeline that made it was given.
"""

from __future__ import annotations

import copy
import hashlib
import json
import marshal
from typing import Any, Protocol

from ..errors import KfdefaultsError
from ..targets import FLYTEKIT, Target
from .primary import DEFAULT_PRIMARY_CONTAINER_NAME


def copy_plain(value: Any) -> Any:
    """A deep copy of plain data (dicts, lists, strings, numbers, booleans, ``None``), as ``copy.deepcopy`` makes
    it, several times faster: through :mod:`marshal`, which writes these types in C and keeps dict order. Anything
    marshal does not take (a subclass of ``str``, another object) is copied by ``copy.deepcopy``."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return copy.deepcopy(value)


class SdkObjects(Protocol):
    """Builds an SDK's objects from a :class:`Resolved` profile (:mod:`kfdefaults.flytekit.objects`,
    :mod:`kfdefaults.flyte2.objects`)."""

    def elastic(self, resolved: Resolved) -> Any:
        """The SDK's ``Elastic`` task config with the merged settings."""
        ...

    def pod_template(self, resolved: Resolved) -> Any:
        """The SDK's ``PodTemplate`` with the merged pod spec, labels and annotations."""
        ...

    def running_a_task(self) -> bool:
        """Whether this process runs a task in a Flyte container, known the way the SDK knows it (the settings
        registered with the task are read there, and only there: :mod:`kfdefaults.runtime`)."""
        ...


class Resolved:
    """A profile merged across its layers.

    Attributes:
        name: The profile name.
        description: Its description (from the highest layer that gives one), or ``None``.
        elastic_settings: The effective ``Elastic`` settings as plain data, the target plugin's defaults filled
            in: ``{"nnodes": 1 | "MIN:MAX", "nproc_per_node": int, "start_method": "spawn" | "fork",
            "monitor_interval": seconds, "max_restarts": int, "rdzv_configs": {key: value},
            "run_policy": {...}}`` (``run_policy`` only when set) for flytekit; for Flyte 2 ``rdzv_backend`` and
            the ``nccl_*`` settings instead of ``start_method`` (see :mod:`kfdefaults.targets`).
        pod_template_spec: The merged PodTemplateSpec as plain data (``{"metadata": {...}, "spec": {...}}``).
        primary_container_name: Name of the container that runs the task.
        fragments: What was merged, lowest layer first (who set what: :func:`kfdefaults.merge.provenance.provenance`,
            worked out from them when first asked, and kept with the profile).
        target: The SDK it was resolved for (:mod:`kfdefaults.targets`): its plugin's defaults lie below every
            layer.
        kubernetes_version: The Kubernetes minor version whose schema merged it (``None``: kfdefaults' default).
    """

    _FIELDS = ("name", "description", "elastic_settings", "pod_template_spec", "primary_container_name",
               "fragments", "sdk", "target", "kubernetes_version")
    __slots__ = _FIELDS + ("provenance_memo",)

    def __init__(self, name: str, description: str | None, elastic_settings: dict[str, Any],
                 pod_template_spec: dict[str, Any], primary_container_name: str, fragments: list[Any],
                 sdk: SdkObjects | None = None, target: Target = FLYTEKIT, kubernetes_version: str | None = None) -> None:
        self.name = name
        self.description = description
        self.elastic_settings = elastic_settings
        self.pod_template_spec = pod_template_spec
        self.primary_container_name = primary_container_name
        self.fragments = fragments
        self.sdk = sdk
        self.target = target
        self.kubernetes_version = kubernetes_version
        self.provenance_memo: Any = None  # kept by kfdefaults.merge.provenance.provenance

    @classmethod
    def initial(cls, name: str, sdk: SdkObjects | None = None, target: Target = FLYTEKIT,
                kubernetes_version: str | None = None) -> Resolved:
        """What lies below every layer: the target plugin's ``Elastic`` defaults, an empty pod template, the
        SDK's default primary container name (``primary`` in both)."""
        return cls(name, None, copy.deepcopy(dict(target.defaults)), {}, DEFAULT_PRIMARY_CONTAINER_NAME, [], sdk,
                   target, kubernetes_version)

    def replace(self, **changes: Any) -> Resolved:
        """A shallow copy with some attributes changed (who set what is worked out again when asked)."""
        values = {field: getattr(self, field) for field in self._FIELDS}
        values.update(changes)
        return Resolved(**values)

    def __repr__(self) -> str:
        return f"Resolved(name={self.name!r}, target={self.target.name!r}, layers={[f.layer for f in self.fragments]})"

    def copy(self) -> Resolved:
        """A copy whose settings and pod template can be changed without changing this one (fragments shared)."""
        return self.replace(elastic_settings=copy_plain(self.elastic_settings),
                            pod_template_spec=copy_plain(self.pod_template_spec))

    def digest(self) -> str:
        """What this profile gives a pod, as ``sha256:<64 hex digits>``: the SHA-256 of the canonical JSON
        (sorted keys, no spaces, UTF-8) of the target's name, the elastic settings, the PodTemplateSpec and the
        primary container's name. The description and where values came from do not count, nor any machine path:
        the same profile gives the same digest on every machine. ``kfdefaults.lock`` records it, and the
        registered pod carries it (:data:`kfdefaults.k8s.provenance.DIGEST_ANNOTATION`)."""
        text = json.dumps([self.target.name, self.elastic_settings, self.pod_template_spec, self.primary_container_name],
                          sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    @property
    def labels(self) -> dict[str, str]:
        """The merged pod labels (``pod_template.labels`` of every layer), a new dict."""
        return dict(self.pod_template_spec.get("metadata", {}).get("labels") or {})

    @property
    def annotations(self) -> dict[str, str]:
        """The merged pod annotations (``pod_template.annotations`` of every layer), a new dict."""
        return dict(self.pod_template_spec.get("metadata", {}).get("annotations") or {})

    @property
    def pod_spec(self) -> dict[str, Any]:
        """The merged PodSpec as plain data (camelCase, as in a manifest), a copy."""
        return copy_plain(self.pod_template_spec.get("spec") or {})

    def to_dict(self) -> dict[str, Any]:
        """The merged profile as plain data, in the shape of a profile file.

        Returns:
            ``{"name", "description", "elastic": {...}, "pod_template": {"primary_container_name",
                "labels", "annotations", "spec"}}``; ``description`` is omitted when there is none.
        """
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        out["elastic"] = copy.deepcopy(self.elastic_settings)
        pod: dict[str, Any] = {"primary_container_name": self.primary_container_name}
        if self.labels:
            pod["labels"] = self.labels
        if self.annotations:
            pod["annotations"] = self.annotations
        pod["spec"] = self.pod_spec
        out["pod_template"] = pod
        return out

    def pod_template_manifest(self, name: str | None = None) -> dict[str, Any]:
        """A Kubernetes ``v1 PodTemplate`` manifest of the merged pod template, as plain data.

        Named by a task's ``pod_template_name``, such a PodTemplate is merged into the task's pod by Flyte's
        backend, which keeps of its containers only ``primary`` (laid under the task's primary container) and
        ``default`` (under every container), and adds its lists to the task's: a renamed primary container,
        sidecars and init containers are dropped, and a task that uses the same profile through
        ``kfdefaults.Elastic`` gets every list item twice (docs/backend.md, ``pod_template_name``).

        Args:
            name: ``metadata.name`` of the PodTemplate; defaults to the profile name.
        """
        template: dict[str, Any] = {}
        metadata = {k: v for k, v in (("labels", self.labels), ("annotations", self.annotations)) if v}
        if metadata:
            template["metadata"] = metadata
        template["spec"] = self.pod_spec
        return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name or self.name}, "template": template}

    def _sdk(self) -> SdkObjects:
        if self.sdk is None:
            raise KfdefaultsError(f"profile {self.name!r} was resolved without an SDK: use kfdefaults.resolve() "
                                  "for the SDK's objects")
        return self.sdk

    @property
    def elastic(self) -> Any:
        """The target plugin's ``Elastic`` with the merged settings: a ``flytekitplugins.kfpytorch.Elastic``
        (``increase_shared_mem=False``: the profile owns ``/dev/shm``), or a ``flyteplugins.pytorch.Elastic``.

        Imports the SDK.
        """
        return self._sdk().elastic(self)

    @property
    def pod_template(self) -> Any:
        """The SDK's ``PodTemplate`` (``flytekit.PodTemplate`` or ``flyte.PodTemplate``) whose ``pod_spec`` is a
        ``kubernetes.client.V1PodSpec``. Imports the SDK."""
        return self._sdk().pod_template(self)

    def v1_pod_template(self, name: str | None = None) -> Any:
        """A ``kubernetes.client.V1PodTemplate`` of the merged pod template (for ``kubectl apply``).

        What Flyte's backend keeps of it as a ``pod_template_name`` is said at :meth:`pod_template_manifest`.
        Imports the kubernetes client (the ``kubernetes`` extra, ``pip install 'kfdefaults[kubernetes]'``).

        Raises:
            KfdefaultsError: the kubernetes client is not installed.
        """
        manifest = self.pod_template_manifest(name)
        manifest["template"]["spec"].setdefault("containers", [])  # required by the client's model
        from ..k8s.models import to_k8s_model  # lazy: the kubernetes client's models, only for this object

        return to_k8s_model(manifest, "V1PodTemplate")
