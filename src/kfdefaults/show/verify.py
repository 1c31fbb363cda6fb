"""A live Pod or PyTorchJob compared with what its profile renders now: every value the profile sets that the live
object lacks or holds otherwise.

Only what the merged profile sets is compared: a live pod holds far more (the API server's defaults, Flyte's
environment, the cluster PodTemplate's additions), and none of that is a difference. The comparison walks the
merged profile, leaf by leaf as ``render --explain`` names them (:mod:`kfdefaults.merge.leaves`):

* a mapping key is looked up in the live mapping; labels and annotations in the pod template's ``metadata``;
* an item of a list with a patch merge key (``containers``, ``env``, ``volumes``, ``volumeMounts``...; the
  schema's ``x-kubernetes-patch-merge-key``, :class:`kfdefaults.smp.schema.SchemaType`) is found by that key, the
  last of two of one key as Kubernetes takes it; the profile's primary container is the live container of its
  name, else ``pytorch`` (the name Flyte's PyTorch plugin gives it in a PyTorchJob). An item the live list lacks is
  one difference, at the item;
* an item of an atomic list (``tolerations``, ``args``) must be in the live list, anywhere (the cluster appends
  its own): the live item holds every value of the profile's item, compared by these same rules;
* a Kubernetes quantity compares by value (``1000m`` is ``1``, ``8`` is ``"8"``, ``1024Mi`` is ``1Gi``: the API server
  stores it in its canonical form); anything else as :func:`kfdefaults.merge.leaves.same` compares values (``30`` is
  ``30.0``, ``"8"`` is not ``8`` where the schema says string, ``true`` is not ``1``);
* an empty mapping (``emptyDir: {}``) asks for a mapping there; an empty list asks for nothing (the cluster may add
  to any list).

The elastic settings are compared twice: with the settings registered with the task, which the primary container
carries in ``KFDEFAULTS_ELASTIC`` (:mod:`kfdefaults.runtime`), and, for a PyTorchJob, with the fields of the job they
decide (``spec.elasticPolicy``, ``spec.runPolicy``, the ``Worker`` replicas: :mod:`kfdefaults.backend.elastic_config`).

A task's receipt (``kind: Receipt``) is compared by :mod:`.verify_receipt`: what its pod had, and the settings it
was registered with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..backend.elastic_config import JOB_FIELDS, job_fields
from ..errors import Finding, Location, ProfileError
from ..k8s.quantity import quantity_problem, quantity_value
from ..merge.leaves import merge_key_of, profile_leaves, same, schema_field
from ..merge.origins import DEFAULT_LAYER, Origin
from ..merge.provenance import provenance
from ..merge.result import Resolved
from ..paths import PathT, Select, format_path
from ..settings import RUNTIME_ENV
from ..smp.schema import schema_type
from .diff import ABSENT
from .leaves import tree_order
from .live import RECEIPT_KIND, LiveObject, LiveTemplate, Registered, receipt_registered, registered_settings
from .live import provenance as stamped_by
from .verify_receipt import receipt_differences


@dataclass
class Mismatch:
    """One value the profile sets now that the live object lacks or holds otherwise.

    Attributes:
        path: The path as ``render --explain`` names it (``pod_template.spec.tolerations[1]``, ``elastic.nnodes``).
        live: The live value, or :data:`~kfdefaults.show.diff.ABSENT`.
        now: The value the profile gives now, or ``ABSENT`` (a registered setting the profile no longer has).
        set_by: Who sets the value now (layer, ``FILE:LINE``), ``None`` when it is absent now.
        replica: The PyTorchJob replica (``Worker``) whose pod template differs; ``None`` for a Pod or the job.
        live_path: Where the live value is when it is not at the pod template's own path: ``KFDEFAULTS_ELASTIC``,
            ``spec.elasticPolicy.maxReplicas``.
        removed_by: When ``now`` is absent because a layer removed the value: who did.
    """

    path: PathT
    live: Any
    now: Any
    set_by: Origin | None
    replica: str | None = None
    live_path: str | None = None
    removed_by: Origin | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "replica"?, "live_path"?, "live"?, "now"?, "set_by"?, "removed_by"?}``: a side's value is left
        out where it is absent."""
        out: dict[str, Any] = {"path": format_path(self.path)}
        for key, value in (("replica", self.replica), ("live_path", self.live_path)):
            if value is not None:
                out[key] = value
        for key, value in (("live", self.live), ("now", self.now)):
            if value is not ABSENT:
                out[key] = value
        for key, origin in (("set_by", self.set_by), ("removed_by", self.removed_by)):
            if origin is not None:
                out[key] = origin.to_dict()
        return out


@dataclass
class Report:
    """What ``verify`` found for one live object.

    Attributes:
        obj: The live object.
        profile: The profile it was compared with.
        named_by: What named the profile (``--profile``, its annotation, ``KFDEFAULTS_ELASTIC``).
        target: The SDK the profile was resolved for.
        digest_live: The ``kfdefaults.io/digest`` annotation, ``None`` when absent.
        digest_now: :meth:`kfdefaults.Resolved.digest` of the profile now, its file layers only (no ``--set``).
        lock: The ``kfdefaults.io/lock`` annotation, ``None`` when absent.
        mismatches: The differences, in output order.
        notes: What could not be compared, and why.
        task: The task layer recorded in the object that the profile was compared with: leaf path -> value.
    """

    obj: LiveObject
    profile: str
    named_by: str
    target: str
    digest_live: str | None
    digest_now: str
    lock: str | None
    mismatches: list[Mismatch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    task: dict[PathT, Any] = field(default_factory=dict)

    @property
    def digest_differs(self) -> bool:
        return self.digest_live is not None and self.digest_live != self.digest_now

    @property
    def equal(self) -> bool:
        """Whether nothing differs: no mismatch, and the digest annotation (when there is one) is the digest now."""
        return not self.mismatches and not self.digest_differs


class ProfileNow:
    """A profile as it renders now, ready to compare live objects with (a file of many pods of one job resolves and
    explains it once).

    Args:
        resolved: The profile resolved now, the task layer (the one the object records, ``--set``) included.
        digest: The digest of the profile now, without the task layer (what the annotation records).
        task: The elastic task layer the object records, as ``Elastic(...)``'s overrides
            (:func:`kfdefaults.receipt.expect.recorded_task`): said in the report, for a reader to see what was
            taken as the task's own.
        notes: What the report notes of it.
    """

    def __init__(self, resolved: Resolved, digest: str, task: dict[str, Any] | None = None,
                 notes: list[str] | None = None) -> None:
        self.resolved = resolved
        self.digest = digest
        self.task = profile_leaves({"elastic": task}) if task else {}
        self.notes = notes or []
        self.origins = _Origins(resolved)


def verify_object(obj: LiveObject, profile: str, named_by: str, now: ProfileNow) -> Report:
    """Compare a live object with a profile as it renders now.

    Args:
        obj: The live Pod or PyTorchJob (:func:`kfdefaults.show.live.live_objects`).
        profile: The profile's name.
        named_by: What named it, for the output.
        now: The profile now.

    Raises:
        ProfileError: the primary container's ``KFDEFAULTS_ELASTIC`` is not what kfdefaults writes.
    """
    resolved, origins = now.resolved, now.origins
    digest_live, lock = stamped_by(obj)
    report = Report(obj, profile, named_by, resolved.target.name, digest_live, now.digest, lock, [], list(now.notes),
                    now.task)
    if obj.kind == RECEIPT_KIND:
        differences, report.notes = receipt_differences(obj, resolved)
        report.mismatches += [Mismatch(path, live, value, origins.of(path), None, f"receipt: {what}")
                              for path, live, value, what in differences]
        report.mismatches += registered_mismatches(receipt_registered(obj), resolved, origins)
        if digest_live is None:
            report.notes.append("the receipt names no kfdefaults.io/digest: compared value by value only")
        return report
    if obj.kind == "PyTorchJob":
        report.mismatches += job_mismatches(obj, resolved, origins)
    for template in obj.templates:
        replica = template.replica
        report.mismatches += _TemplateComparison(resolved, obj, template, origins).run()
        registered = registered_settings(obj, template, resolved.primary_container_name)
        where = f" of {replica}" if replica else ""
        if registered is None:
            report.notes.append(f"the primary container{where} has no {RUNTIME_ENV}: the elastic settings it was "
                                "registered with are not in the pod")
            continue
        if registered.target not in (None, resolved.target.name):
            report.notes.append(f"the pod{where} was registered for {registered.target}, compared with the profile "
                                f"resolved for {resolved.target.name} (--target {registered.target})")
        report.mismatches += registered_mismatches(registered, resolved, origins, replica)
    if digest_live is None:
        report.notes.append("no kfdefaults.io/digest annotation: compared value by value only")
    return report


class _Origins:
    """Who sets each value of the profile now, and who removed what (:mod:`kfdefaults.merge.provenance`)."""

    def __init__(self, resolved: Resolved) -> None:
        self.record = provenance(resolved)
        self.removed = {e.path: e.removed_by for e in self.record.removed if e.items is None}

    def of(self, path: PathT) -> Origin | None:
        """Who set the value at ``path`` (a leaf, or a list item: where the highest layer that set a value of it
        wrote the item), the ``default`` layer included."""
        found = self.record.setter(path, defaults=True)
        return found.origin if found is not None else None


def equal_values(profile: Any, live: Any, schema: Any = None) -> bool:
    """Whether a live scalar is the profile's: a quantity by value, else as :func:`kfdefaults.merge.leaves.same`
    says; ``schema`` is the field's :class:`~kfdefaults.smp.schema.SchemaType`."""
    if live is ABSENT:
        return False
    if schema is not None and schema.name == "Quantity":
        a, b = quantity_value(profile), quantity_value(live)
        if a is not None and b is not None:
            return a == b
    return same(profile, live)


class _TemplateComparison:
    """One pod template of the profile (metadata and PodSpec) against one live pod template."""

    def __init__(self, resolved: Resolved, obj: LiveObject, template: LiveTemplate, origins: _Origins) -> None:
        self.resolved, self.obj, self.template, self.origins = resolved, obj, template, origins
        self.spec_schema = schema_type("PodSpec", resolved.kubernetes_version)
        self.primary = resolved.primary_container_name
        found = template.primary_container(self.primary)
        self.live_primary = found[1].get("name") if found is not None else self.primary
        self.out: list[Mismatch] = []

    def run(self) -> list[Mismatch]:
        pod = self.resolved.pod_template_spec
        metadata = pod.get("metadata") or {}
        for part in ("labels", "annotations"):
            live = self.template.metadata.get(part, ABSENT)
            for key, value in (metadata.get(part) or {}).items():
                self._node(value, live.get(key, ABSENT) if isinstance(live, dict) else ABSENT,
                           ("pod_template", part, key), None)
        self._node(pod.get("spec") or {}, self.template.spec, ("pod_template", "spec"), self.spec_schema,
                   at=self.template.path + ("spec",))
        return self.out

    def _add(self, path: PathT, live: Any, now: Any) -> None:
        self.out.append(Mismatch(path, live, now, self.origins.of(path), self.template.replica))

    def _node(self, profile: Any, live: Any, path: PathT, schema: Any, skip: str | None = None,
              at: tuple | None = None) -> None:
        """Compare ``profile`` with ``live``; ``at`` is where ``live`` is in the document (``None`` when absent).

        Raises:
            ProfileError: a live quantity the profile's is compared with is not one kfdefaults reads (4,300 digits,
                an exponent outside int32: :func:`kfdefaults.k8s.quantity.quantity_problem`), at its place.
        """
        if isinstance(profile, dict):
            if not profile:
                if not (isinstance(live, dict) or (live is ABSENT and schema is not None and schema.kind == "map")):
                    self._add(path, live, profile)
                return
            if live is not ABSENT and not isinstance(live, dict):
                self._add(path, live, profile)
                return
            for key, sub in profile.items():
                if key == skip:
                    continue
                child, meta = schema_field(schema, key)
                live_sub = live.get(key, ABSENT) if isinstance(live, dict) else ABSENT
                sub_at = at + (key,) if at is not None and live_sub is not ABSENT else None
                if isinstance(sub, list):
                    self._list(sub, live_sub, path + (key,), child, meta, sub_at)
                else:
                    self._node(sub, live_sub, path + (key,), child, at=sub_at)
        elif isinstance(profile, list):
            self._list(profile, live, path, None, None, at)
        elif schema is not None and schema.name == "Quantity" and at is not None and quantity_problem(live):
            raise ProfileError([Finding(self.obj.document.location(at), format_path(at), str(quantity_problem(live)))])
        elif not equal_values(profile, live, schema):
            self._add(path, live, profile)

    def _list(self, items: list, live: Any, path: PathT, schema: Any, meta: Any, at: tuple | None = None) -> None:
        if not items:
            return  # an empty list asks for nothing: the cluster may add to any list
        if live is not ABSENT and not isinstance(live, list):
            self._add(path, live, items)
            return
        live_items = live if isinstance(live, list) else []
        elem = schema.items() if schema is not None and schema.kind == "slice" else None
        key = merge_key_of(items, meta)
        by_text: dict[str, int] = {}  # the live items by a text merge key (a name, a path), the last of each
        for i, candidate in enumerate(live_items if key is not None else ()):
            if isinstance(candidate, dict) and type(candidate.get(key)) is str:
                by_text[candidate[key]] = i
        for index, item in enumerate(items):
            if key is None:
                if not any(self._covers(item, candidate, elem, at + (i,) if at is not None else None)
                           for i, candidate in enumerate(live_items)):
                    self._add(path + (index,), ABSENT, item)
                continue
            wanted = item[key]
            if path == ("pod_template", "spec", "containers") and wanted == self.primary:
                wanted = self.live_primary
            if type(wanted) is str:  # same() holds a text only to the same text: found in one lookup
                last = by_text.get(wanted)
            else:
                last = next((i for i in reversed(range(len(live_items))) if isinstance(live_items[i], dict)
                             and equal_values(wanted, live_items[i].get(key, ABSENT))), None)
            if last is None:
                self._add(path + (Select(key, item[key]),), ABSENT, item)
            else:
                self._node(item, live_items[last], path + (Select(key, item[key]),), elem, skip=key,
                           at=at + (last,) if at is not None else None)

    def _covers(self, item: Any, candidate: Any, schema: Any, at: tuple | None) -> bool:
        """Whether a live item of an atomic list holds every value of the profile's item."""
        saved, self.out = self.out, []
        try:
            self._node(item, candidate, (), schema, at=at)
            return not self.out
        finally:
            self.out = saved


def registered_mismatches(registered: Registered, resolved: Resolved, origins: _Origins,
                          replica: str | None = None) -> list[Mismatch]:
    """The elastic settings registered with the task (``KFDEFAULTS_ELASTIC``) against the settings now, leaf by leaf,
    both ways: a setting registered that the profile no longer has is a difference too."""
    live = profile_leaves({"elastic": registered.elastic})
    now = profile_leaves({"elastic": resolved.elastic_settings})
    out = []
    for path in tree_order(set(live) | set(now), list(now) + list(live)):
        a, b = live.get(path, ABSENT), now.get(path, ABSENT)
        if b is not ABSENT and equal_values(b, a):
            continue
        out.append(Mismatch(path, a, b, origins.of(path) if b is not ABSENT else None, replica, RUNTIME_ENV,
                            origins.removed.get(path) if b is ABSENT else None))
    return out


def job_mismatches(obj: LiveObject, resolved: Resolved, origins: _Origins) -> list[Mismatch]:
    """The fields of a PyTorchJob that the elastic settings decide (:data:`~kfdefaults.backend.elastic_config.JOB_FIELDS`)
    against what the settings now make of them."""
    expected = job_fields(resolved.elastic_settings)
    out = []
    for job_path, setting in JOB_FIELDS:
        if job_path not in expected:
            continue
        live: Any = obj.data
        for part in job_path:
            live = live.get(part, ABSENT) if isinstance(live, dict) else ABSENT
        if equal_values(expected[job_path], live):
            continue
        origin = origins.of(setting) or _fixed_origin(resolved, setting)
        out.append(Mismatch(setting, live, expected[job_path], origin, None, format_path(job_path)))
    return out


def _fixed_origin(resolved: Resolved, setting: PathT) -> Origin:
    """The origin of a setting no layer sets because the SDK fixes it (flytekit's ``rdzv_backend``: ``c10d``)."""
    key = str(setting[-1])
    value = resolved.target.fixed.get(key)
    return Origin(DEFAULT_LAYER, f"{resolved.target.name} default",
                  Location(f"{resolved.target.elastic_class} ({key} is always {value})"))
