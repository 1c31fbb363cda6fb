"""Live objects, as ``kubectl get pod NAME -o yaml`` or ``kubectl get pytorchjob NAME -o yaml`` prints them: their
pod templates, which profile made them, and the elastic settings they were registered with. And a task's receipt
(:mod:`kfdefaults.receipt`, ``kind: Receipt``), what its pod had when it started: a live object without a pod
template, whose profile, target, digest and registered settings it names itself.

A file holds one object, a ``kind: List`` of them (``kubectl get pods -o yaml``), or several YAML documents.
A Pod has one pod template (its own ``metadata`` and ``spec``); a PyTorchJob one per replica spec
(``spec.pytorchReplicaSpecs.Worker.template``, ``Master``). Everything is plain data with positions
(:class:`~kfdefaults.read.Document`), so that a bad manifest is reported at ``FILE:LINE:COLUMN``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..errors import Finding, Location, ProfileError, shown
from ..k8s.provenance import DIGEST_ANNOTATION, LOCK_ANNOTATION, PROFILE_ANNOTATION
from ..paths import format_path
from ..read import Document
from ..receipt.document import KIND as RECEIPT_KIND
from ..receipt.document import first_receipt, receipt_problem, receipts_in
from ..settings import RUNTIME_ENV

KINDS = ("Pod", "PyTorchJob", RECEIPT_KIND)
"""The kinds ``verify`` compares."""

PYTORCH_CONTAINER = "pytorch"
"""The name Flyte's PyTorch plugin gives the primary container in a PyTorchJob (:mod:`kfdefaults.backend.registered`)."""


@dataclass
class LiveTemplate:
    """One pod template of a live object.

    Attributes:
        replica: The replica type (``Worker``, ``Master``) of a PyTorchJob's template; ``None`` for a Pod.
        path: Where the template (the mapping holding ``metadata`` and ``spec``) is in the document.
        metadata: Its ``metadata`` (``{}`` when absent).
        spec: Its PodSpec.
    """

    replica: str | None
    path: tuple
    metadata: dict[str, Any]
    spec: dict[str, Any]

    @property
    def annotations(self) -> dict[str, Any]:
        value = self.metadata.get("annotations")
        return value if isinstance(value, dict) else {}

    def primary_container(self, profile_primary: str) -> tuple[int, dict[str, Any]] | None:
        """``(index, container)`` of the container that runs the task: the one named like the profile's primary
        container, else ``pytorch`` (the name Flyte's PyTorch plugin gives it in a PyTorchJob); ``None`` if none."""
        containers = self.spec.get("containers")
        if not isinstance(containers, list):
            return None
        for name in (profile_primary, PYTORCH_CONTAINER):
            for i, container in enumerate(containers):
                if isinstance(container, dict) and container.get("name") == name:
                    return i, container
        return None


@dataclass
class LiveObject:
    """A Pod or a PyTorchJob read from a manifest.

    Attributes:
        kind: ``Pod`` or ``PyTorchJob``.
        name: ``metadata.name`` (``""`` when absent, as in a rendered preview).
        document: The document it was read from, for positions.
        path: Where the object is in the document (``()``, or ``("items", 3)`` in a ``kind: List``).
        templates: Its pod templates, in the order of the manifest.
    """

    kind: str
    name: str
    document: Document
    path: tuple
    templates: list[LiveTemplate] = field(default_factory=list)

    @property
    def data(self) -> dict[str, Any]:
        node: Any = self.document.data
        for part in self.path:
            node = node[part]
        return node

    @property
    def annotations(self) -> dict[str, Any]:
        metadata = self.data.get("metadata")
        value = metadata.get("annotations") if isinstance(metadata, dict) else None
        return value if isinstance(value, dict) else {}

    @property
    def label(self) -> str:
        """How output names it: ``Pod train-x-worker-0``, ``PyTorchJob train-x``, ``Receipt of task wf.train``, or
        ``PyTorchJob at FILE:LINE``."""
        if self.kind == RECEIPT_KIND:
            return f"Receipt of task {self.name} at {self.where()}"
        return f"{self.kind} {self.name}" if self.name else f"{self.kind} at {self.where()}"

    def location(self, *path: Any, key: bool = False) -> Location:
        """Where the value at ``path`` (relative to the object) is written."""
        return self.document.location(self.path + tuple(path), key=key)

    def where(self, *path: Any) -> str:
        loc = self.location(*path)
        return f"{loc.file}:{loc.line}"

    def annotation(self, name: str) -> str | None:
        """An annotation of a pod template (the first that has it), else of the object; ``None`` when absent."""
        for template in self.templates:
            value = template.annotations.get(name)
            if isinstance(value, str):
                return value
        value = self.annotations.get(name)
        return value if isinstance(value, str) else None


@dataclass
class Registered:
    """What the primary container's ``KFDEFAULTS_ELASTIC`` says (:meth:`kfdefaults.runtime.ProfileCall.env_value`).

    Attributes:
        profile: The profile of the ``Elastic(profile=...)`` call, or ``None``.
        target: The SDK it was resolved for, or ``None``.
        elastic: The elastic settings resolved at registration.
        recorded: Everything registration wrote there (``key``, ``pod``: :func:`kfdefaults.receipt.expect.recorded_task`
            reads the task layer from it).
    """

    profile: str | None
    target: str | None
    elastic: dict[str, Any]
    recorded: dict[str, Any] = field(default_factory=dict)


def registered_settings(obj: LiveObject, template: LiveTemplate, profile_primary: str | None) -> Registered | None:
    """The settings registered with the task, from the primary container's ``KFDEFAULTS_ELASTIC``; ``None`` when
    it has no such variable. With ``profile_primary`` ``None`` (the profile is not known yet), the first container
    that has the variable.

    Raises:
        ProfileError: the variable holds no JSON object with an ``elastic`` object, at its ``FILE:LINE:COLUMN``.
    """
    if profile_primary is not None:
        found = template.primary_container(profile_primary)
        candidates = [found] if found is not None else []
    else:
        candidates = list(enumerate(template.spec["containers"]))
    for index, container in candidates:
        env = container.get("env")
        for i, var in enumerate(env if isinstance(env, list) else []):
            if isinstance(var, dict) and var.get("name") == RUNTIME_ENV:
                path = template.path[len(obj.path):] + ("spec", "containers", index, "env", i, "value")
                return _registered(obj, path, var.get("value"))
    return None


def _registered(obj: LiveObject, path: tuple, value: Any) -> Registered:
    try:
        data = json.loads(value if isinstance(value, str) else "")
    except ValueError as e:
        raise _bad(obj, path, f"{RUNTIME_ENV} is not JSON ({e})") from None
    except RecursionError:  # deeper than Python's JSON decoder goes: no settings kfdefaults ever wrote
        raise _bad(obj, path, f"{RUNTIME_ENV} nests deeper than JSON settings ever do") from None
    if not isinstance(data, dict) or not isinstance(data.get("elastic"), dict):
        raise _bad(obj, path, f"{RUNTIME_ENV} holds no elastic settings: it is not what kfdefaults registers")
    profile, target = data.get("profile"), data.get("target")
    return Registered(profile if isinstance(profile, str) else None, target if isinstance(target, str) else None,
                      data["elastic"], data)


def first_registered(obj: LiveObject) -> Registered | None:
    """What registration wrote into ``obj``: a receipt's registered settings, else the first pod template's
    ``KFDEFAULTS_ELASTIC`` (:func:`registered_settings`); ``None`` when none has it.

    Raises:
        ProfileError: the variable is not what kfdefaults writes, at its ``FILE:LINE:COLUMN``.
    """
    if obj.kind == RECEIPT_KIND:
        return receipt_registered(obj)
    found = (registered_settings(obj, template, None) for template in obj.templates)
    return next((registered for registered in found if registered is not None), None)


def profile_of(obj: LiveObject, given: str | None) -> tuple[str, str]:
    """``(profile, what named it)``: ``--profile``, else the ``kfdefaults.io/profile`` annotation (a pod template's,
    then the object's), else the profile ``KFDEFAULTS_ELASTIC`` names (pods registered before the annotation).

    Raises:
        ProfileError: none of them names one, at the object's metadata.
    """
    if given:
        return given, "--profile"
    if obj.kind == RECEIPT_KIND and isinstance(obj.data.get("profile"), str):
        return obj.data["profile"], "the receipt"
    found = obj.annotation(PROFILE_ANNOTATION)
    if found is not None:
        return found, f"its {PROFILE_ANNOTATION} annotation"
    registered = first_registered(obj)
    if registered is not None and registered.profile:
        return registered.profile, f"its {RUNTIME_ENV} variable"
    raise _bad(obj, ("metadata",), f"{obj.label} names no profile: no {PROFILE_ANNOTATION} annotation and no "
                                   f"{RUNTIME_ENV} variable; give --profile NAME", key="metadata" in obj.data)


def provenance(obj: LiveObject) -> tuple[str | None, str | None]:
    """``(digest, lock)``: the ``kfdefaults.io/digest`` and ``kfdefaults.io/lock`` annotations (a receipt's
    ``digest`` and ``lock``), ``None`` when absent."""
    if obj.kind == RECEIPT_KIND:
        return obj.data.get("digest"), obj.data.get("lock")
    return obj.annotation(DIGEST_ANNOTATION), obj.annotation(LOCK_ANNOTATION)


def live_objects(documents: list[Document], file: str) -> list[LiveObject]:
    """Every Pod and PyTorchJob of the documents of ``file``, in order, a ``kind: List`` opened.

    Raises:
        ProfileError: a document is not a Pod, a PyTorchJob or a List of them, or one lacks what every such object
            has (a ``spec`` with ``containers``, a PyTorchJob's replica specs), at its ``FILE:LINE:COLUMN``.
    """
    out: list[LiveObject] = []
    for document in documents:
        data = document.data
        if isinstance(data, dict) and isinstance(data.get("kind"), str) and data["kind"].endswith("List"):
            items = data.get("items")
            if not isinstance(items, list):
                raise ProfileError([Finding(document.location(("items",)), "items", "a List holds its objects in `items`")])
            out += [_object(document, ("items", i)) for i in range(len(items))]
        else:
            out.append(_object(document, ()))
    if not out:
        raise ProfileError([Finding(Location(file, 1, 1), "", "no Pod or PyTorchJob in this file")])
    return out


def _object(document: Document, path: tuple) -> LiveObject:
    node: Any = document.data
    for part in path:
        node = node[part]
    if not isinstance(node, dict):
        raise ProfileError([Finding(document.location(path), format_path(path), "not a Kubernetes object (kubectl get "
                                    "pod NAME -o yaml, kubectl get pytorchjob NAME -o yaml)")])
    kind = node.get("kind")
    metadata = node.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    obj = LiveObject(str(kind), name if isinstance(name, str) else "", document, path)
    if kind not in KINDS:
        where = ("kind",) if "kind" in node else ()
        raise _bad(obj, where, f"verify compares Pods, PyTorchJobs and receipts, not {kind!r}: kubectl get pod NAME -o "
                               "yaml, kubectl get pytorchjob NAME -o yaml, or a task's log with its receipt")
    if metadata is not None and not isinstance(metadata, dict):
        raise _bad(obj, ("metadata",), "metadata must be an object")
    if kind == RECEIPT_KIND:
        problem = receipt_problem(node)
        if problem:
            raise _bad(obj, (), problem)
        obj.name = str(node.get("task") or "")
        return obj
    if kind == "Pod":
        obj.templates.append(_template(obj, None, ()))
        return obj
    replicas = _mapping(obj, ("spec", "pytorchReplicaSpecs"))
    for replica in replicas:
        obj.templates.append(_template(obj, str(replica), ("spec", "pytorchReplicaSpecs", replica, "template")))
    if not obj.templates:
        raise _bad(obj, ("spec", "pytorchReplicaSpecs"), "a PyTorchJob without replica specs")
    return obj


def _template(obj: LiveObject, replica: str | None, at: tuple) -> LiveTemplate:
    node = _mapping(obj, at) if at else obj.data
    metadata = node.get("metadata", {})
    if not isinstance(metadata, dict):
        raise _bad(obj, at + ("metadata",), "metadata must be an object")
    spec = _mapping(obj, at + ("spec",))
    containers = spec.get("containers")
    if not isinstance(containers, list) or not all(isinstance(c, dict) for c in containers):
        raise _bad(obj, at + ("spec", "containers") if "containers" in spec else at + ("spec",),
                   "a pod's spec.containers is a list of containers")
    return LiveTemplate(replica, obj.path + at, metadata, spec)


def _mapping(obj: LiveObject, at: tuple) -> dict[str, Any]:
    node: Any = obj.data
    for i, part in enumerate(at):
        if not isinstance(node, dict) or part not in node:
            raise _bad(obj, at[:i], f"{obj.kind} without {format_path(at)}", key=bool(at[:i]))
        node = node[part]
    if not isinstance(node, dict):
        raise _bad(obj, at, f"{format_path(at)} must be an object")
    return node


def _bad(obj: LiveObject, path: tuple, message: str, *, key: bool = False) -> ProfileError:
    return ProfileError([Finding(obj.location(*path, key=key), format_path(obj.path + tuple(path)), message)])


def receipt_objects(lines: Iterable[tuple[int, str]], file: str) -> tuple[list[LiveObject], list[str]]:
    """The receipt a task's log carries (its first ``KFDEFAULTS_RECEIPT`` line that holds one:
    :func:`kfdefaults.receipt.document.first_receipt`), as a live object located at its line, and notes on the
    log's other marker lines.

    Raises:
        ProfileError: the log's marker lines carry no receipt, at the first one's ``FILE:LINE:COLUMN``.
    """
    found, bad = receipts_in(lines, file)
    first, notes = first_receipt(found, bad)
    if first is None:
        raise ProfileError([Finding(bad[0].location, "", bad[0].message)] if bad else
                           [Finding(Location(file, 1, 1), "", "no receipt in the log")])
    number, data = first
    document = Document(file, data, values={(): (number, 1)})
    return [LiveObject(RECEIPT_KIND, shown(str(data.get("task") or ""), 80), document, ())], notes


def receipt_registered(obj: LiveObject) -> Registered:
    """The settings a receipt says were registered with its task."""
    data = obj.data
    return Registered(data.get("profile"), data.get("target"), data["registered"]["elastic"],
                      {**data["registered"], "key": data.get("key"), "profile": data.get("profile"),
                       "target": data.get("target")})
