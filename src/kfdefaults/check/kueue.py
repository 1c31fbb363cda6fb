"""What Kueue does to a job on the cluster the facts describe: its PodsReady clocks, the requeue backoff, whether it
manages the job at all; each value with where it comes from.

Three ways the facts state Kueue (:mod:`kfdefaults.validate.facts`):

* ``kueue: {config: FILE}``: Kueue's own Configuration document (:mod:`kfdefaults.validate.kueue_config`), each
  field written there taken from its line, each other field defaulted as the release's ``defaults.go`` does
  (:mod:`.kueue_defaults`: the API version decides where it can, ``kueue.version`` where it cannot);
* ``kueue: {version: "0.19"}`` alone: the configuration of that release's chart as installed (``v1beta2`` from
  0.15, no ``waitForPodsReady`` block), its integrations unknown;
* ``kueue: {wait_for_pods_ready: {enable, timeout}}`` (seconds): the older short form, read as a ``v1beta1``
  block; deprecated for ``config``.

Whether Kueue manages the job is decided as its job reconciler does (``pkg/controller/jobframework/reconciler.go``,
v0.19.2): the job's kind must be among ``integrations.frameworks`` (``kubeflow.org/pytorchjob`` for a PyTorchJob,
``jobset.x-k8s.io/jobset`` for a JobSet, ``pod`` for a plain pod); then a ``kueue.x-k8s.io/queue-name`` label on
the job, or ``manageJobsWithoutQueueName: true`` (and a namespace ``managedJobsNamespaceSelector`` matches).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backend.registered import is_multi_node
from ..errors import Finding
from ..merge.origins import pod_leaf, written_by
from ..merge.result import Resolved
from ..targets import CLUSTERED
from ..validate.kueue_config import go_duration, kueue_release
from . import kueue_defaults as kd
from .clock import CLOCKS, FACTS_LAYER, Clock, Source

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..validate.facts import ClusterFacts
    from ..validate.kueue_config import KueueConfig

CONFIG_LAYER = "kueue config"
"""The layer name of a value Kueue's Configuration document states."""

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
DISABLE_GATE = "DisableWaitForPodsReady"
"""The feature gate that turns ``waitForPodsReady`` off in Kueue 0.19 (``pkg/features/kube_features.go``)."""

_RQ = "waitForPodsReady.requeuingStrategy."


@dataclass(frozen=True)
class Value:
    """One of Kueue's settings as the cluster has it.

    Attributes:
        value: Seconds, a bool, a list, or ``None`` (off; for a limit: none).
        known: Whether it is known.
        source: Where it is written, or the default it is (:class:`.clock.Source`).
        note: What else to know (each release's default when the release is unknown).
    """

    value: Any
    known: bool
    source: Source
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "known": self.known, "source": self.source.to_dict(), "note": self.note or None}


@dataclass(frozen=True)
class Kueue:
    """Kueue on the cluster: its release, its configuration's API version, and the settings a job meets.

    Attributes:
        release: ``"0.19"``, or ``None`` when the facts do not say.
        api: ``v1beta1`` or ``v1beta2`` (the short form reads as ``v1beta1``).
        config: The configuration file, or ``None``.
        pods_ready, recovery: ``waitForPodsReady.timeout`` and ``recoveryTimeout``, seconds (``None``: off).
        block_admission: ``waitForPodsReady.blockAdmission``.
        backoff_base, backoff_max, backoff_limit: the requeuing strategy (seconds, seconds, a count or ``None``:
            requeued forever).
        frameworks: ``integrations.frameworks`` (``None``: unknown).
        without_queue_name: ``manageJobsWithoutQueueName``.
    """

    release: Value
    api: str
    config: str | None
    pods_ready: Value
    recovery: Value
    block_admission: Value
    backoff_base: Value
    backoff_max: Value
    backoff_limit: Value
    frameworks: Value
    without_queue_name: Value


class _Reader:
    """The settings of one way of stating Kueue: a field written (in the config or the short form), else its
    default for the release."""

    def __init__(self, facts: ClusterFacts, config: KueueConfig | None, api: str, version: str | None) -> None:
        self.facts, self.config, self.api, self.version = facts, config, api, version
        self.short = facts.get("kueue", "wait_for_pods_ready")

    def written(self, field: str) -> tuple[bool, Any, Source]:
        path = tuple(field.split("."))
        if self.config is not None:
            if self.config.has(*path):
                return True, self.config.get(*path), Source(self.config.location(*path), CONFIG_LAYER)
            return False, None, Source()
        if field == "waitForPodsReady" and self.short is not None:
            return True, self.short, Source(self.facts.location("kueue", "wait_for_pods_ready"), FACTS_LAYER)
        short = {"waitForPodsReady.enable": "enable", "waitForPodsReady.timeout": "timeout"}.get(field)
        if short is not None and self.short is not None and short in self.short:
            at = self.facts.location("kueue", "wait_for_pods_ready", short)
            return True, self.short[short], Source(at, FACTS_LAYER)
        return False, None, Source()

    def default(self, field: str) -> Value:
        row = kd.default(self.api, field, self.version)
        if row is None:
            if self.version is not None:  # an API version the release does not read: said at the release
                return Value(None, False, Source(default=f"Kueue {self.version} does not read {self.api}"))
            return Value(None, False, Source(default="unknown: the facts do not state kueue.version"),
                         kd.history(self.api, field))
        at = self.anchor() if field in ("waitForPodsReady.timeout", "waitForPodsReady.recoveryTimeout") else Source()
        return Value(row.value, True, Source(at.location, at.layer, kd.label(self.version, self.api, field)))

    def anchor(self) -> Source:
        """The line that turns ``waitForPodsReady`` on (``enable``, else the block), where a default of it sits."""
        for field in ("waitForPodsReady.enable", "waitForPodsReady"):
            stated, _, at = self.written(field)
            if stated:
                return at
        return Source()

    def value(self, field: str) -> Value:
        stated, value, source = self.written(field)
        return Value(value, True, source) if stated else self.default(field)


def _seconds(value: Any) -> float | int | None:
    """A Go duration or the short form's seconds, as seconds (a whole number as an ``int``)."""
    if isinstance(value, str):
        value = go_duration(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def kueue(facts: ClusterFacts | None) -> Kueue | None:
    """Kueue as the facts state it, every setting defaulted as its release does; ``None`` when they do not state
    Kueue."""
    if facts is None or facts.get("kueue") is None:
        return None
    config = facts.kueue_config
    stated = facts.get("kueue", "version")
    version = kueue_release(stated) if isinstance(stated, str) else None
    release = Value(version, version is not None, Source(facts.location("kueue", "version"), FACTS_LAYER)
                    if version else Source(default="unknown: the facts do not state kueue.version"))
    if config is not None:
        api = config.api_version
    elif facts.get("kueue", "wait_for_pods_ready") is not None:
        api = "v1beta1"
    else:  # the release's chart as installed: its manager config is v1beta2 from 0.15
        api = "v1beta2" if kd.at_least(version, "0.15") else "v1beta1"
    r = _Reader(facts, config, api, version)
    pods_ready = _pods_ready(r)
    recovery = _recovery(r, pods_ready)
    frameworks = r.value("integrations.frameworks")
    if config is not None and not frameworks.value:  # written empty: the default too
        frameworks = r.default("integrations.frameworks")
    elif config is None:
        frameworks = Value(None, False, Source(default="the facts give no Kueue configuration, kueue.config"))
    return Kueue(release, api, config.file if config is not None else None, pods_ready, recovery,
                 r.value("waitForPodsReady.blockAdmission"), r.value(_RQ + "backoffBaseSeconds"),
                 r.value(_RQ + "backoffMaxSeconds"), r.value(_RQ + "backoffLimitCount"), frameworks,
                 r.value("manageJobsWithoutQueueName"))


def _pods_ready(r: _Reader) -> Value:
    """``waitForPodsReady.timeout`` in seconds, ``None`` when Kueue does not wait (the block absent where that is
    off, ``enable: false``, the ``DisableWaitForPodsReady`` gate)."""
    gate = r.config.get("featureGates", DISABLE_GATE) if r.config is not None else None
    if gate is True:
        return Value(None, True, Source(r.config.location("featureGates", DISABLE_GATE), CONFIG_LAYER))  # type: ignore[union-attr]
    block, _, block_at = r.written("waitForPodsReady")
    if r.api == "v1beta1":
        stated, enable, at = r.written("waitForPodsReady.enable")
        if stated and enable is False:
            return Value(None, True, at)
        on = stated or (r.config is None and r.short is not None)  # the short form's block is on unless disabled
        if not on:
            return Value(None, True, r.default("waitForPodsReady").source)
    elif not block:
        on = r.default("waitForPodsReady")
        if on.value is not True:
            return Value(None, on.known, on.source, on.note or ("" if on.known else "on from Kueue 0.19"))
    value = r.value("waitForPodsReady.timeout")
    if r.api == "v1beta2" and value.source.location is not None and _seconds(value.value) == 0:
        value = r.default("waitForPodsReady.timeout")  # 0s is "not set": SetDefaults_Configuration
    if value.value is None and value.known:
        return Value(None, False, block_at, f"Kueue {r.version} requires waitForPodsReady.timeout when the block "
                     "is given (pkg/config/validation.go): its manager does not start")
    return Value(_seconds(value.value), value.known, value.source, value.note)


def _recovery(r: _Reader, pods_ready: Value) -> Value:
    """``recoveryTimeout`` in seconds: written, else the timeout's from 0.16; ``None`` when off (``0s``, unset
    before 0.16, or no PodsReady at all)."""
    if pods_ready.value is None:
        return Value(None, pods_ready.known, pods_ready.source, "no PodsReady timeout, no recovery clock")
    value = r.value("waitForPodsReady.recoveryTimeout")
    if value.value is kd.TIMEOUT:
        return Value(pods_ready.value, True, value.source, "the PodsReady timeout's value")
    seconds = _seconds(value.value)
    return Value(seconds or None, value.known, value.source, value.note)


def job_kind(resolved: Resolved) -> tuple[str, str]:
    """The kind of the job the target creates, and its framework name in ``integrations.frameworks``."""
    if resolved.target is CLUSTERED:
        return "JobSet", "jobset.x-k8s.io/jobset"
    if resolved.target.name == "flytekit" and not is_multi_node(resolved.elastic_settings):
        return "Pod", "pod"
    return "PyTorchJob", "kubeflow.org/pytorchjob"


def manages(k: Kueue, resolved: Resolved) -> tuple[bool | None, str]:
    """Whether Kueue manages the job (``None``: it depends on what the facts do not say), and why, as a sentence."""
    kind, framework = job_kind(resolved)
    name = f"Kueue {k.release.value}" if k.release.value else "Kueue"
    if k.frameworks.value is None:
        chart = "" if framework != "kubeflow.org/pytorchjob" else kd.chart_text(k.release.value)
        return None, f"whether {name} integrates {framework} is unknown: {k.frameworks.source}{chart}"
    if framework not in k.frameworks.value:
        return False, (f"{name}'s configuration does not integrate {framework} ({k.frameworks.source}): this job "
                       f"is not queued; its queue-name label has no effect")
    label = resolved.labels.get(QUEUE_LABEL)
    if label:
        setter = written_by(resolved.fragments, pod_leaf(["metadata", "labels", QUEUE_LABEL]))
        at = f" ({setter.origin.location})" if setter is not None else ""
        return True, f"{name} integrates {framework}; the {kind} is queued in LocalQueue {label}{at}"
    without = k.without_queue_name
    if without.value is True:
        return True, (f"{name} integrates {framework} and manages jobs without a queue-name label ({said(without.source)}"
                      "), where the namespace matches managedJobsNamespaceSelector")
    return None, (f"{name} integrates {framework}; the profile gives no {QUEUE_LABEL} label and "
                  f"manageJobsWithoutQueueName is false ({said(without.source)}): queued only if the execution labels the "
                  f"{kind}")


def said(source: Source) -> str:
    """A value's source in a sentence: the default's name, else its line."""
    return source.default if source.default else str(source)


def _clock(name: str, v: Value, setting: str, note: str = "") -> Clock:
    return Clock(name, v.value, v.known, v.source, setting, CLOCKS[name][0], "; ".join(n for n in (v.note, note) if n))


def kueue_clocks(resolved: Resolved, facts: ClusterFacts | None) -> list[Clock]:
    """Kueue's clocks of a job on ``resolved``: ``kueue_wait`` (``waitForPodsReady.timeout``), ``kueue_recovery``
    (``recoveryTimeout``: a pod replaced once the job ran) and ``kueue_backoff`` (the first requeue's wait, the
    note saying how it grows and when it stops); each off when Kueue does not manage the job."""
    k = kueue(facts)
    names = ("kueue_wait", "kueue_recovery", "kueue_backoff")
    if k is None:
        unknown = Source(default="unknown: the facts do not state kueue")
        return [Clock(n, None, False, unknown, "kueue.config", CLOCKS[n][0]) for n in names]
    managed, why = manages(k, resolved)
    prefix = "kueue.wait_for_pods_ready." if k.config is None and facts.get("kueue", "wait_for_pods_ready") else \
        "waitForPodsReady."  # type: ignore[union-attr]
    if managed is False:
        return [Clock(n, None, True, k.frameworks.source, "integrations.frameworks", CLOCKS[n][0],
                      "Kueue does not queue this job") for n in names]
    maybe = "if Kueue queues the job" if managed is None else ""
    block = k.block_admission
    blocks = (f"blockAdmission {str(block.value).lower()} ({said(block.source)})" if block.known else
              f"blockAdmission unknown ({block.note})") if k.pods_ready.value is not None else ""
    wait = _clock("kueue_wait", k.pods_ready, prefix + "timeout", "; ".join(n for n in (blocks, maybe) if n))
    recovery = _clock("kueue_recovery", k.recovery, "waitForPodsReady.recoveryTimeout")
    if k.pods_ready.value is None:
        backoff = Clock("kueue_backoff", None, k.pods_ready.known, k.pods_ready.source, _RQ + "backoffBaseSeconds",
                        CLOCKS["kueue_backoff"][0], "no PodsReady timeout: no eviction to requeue after")
    else:
        backoff = _clock("kueue_backoff", k.backoff_base, _RQ + "backoffBaseSeconds", requeue_text(k))
    return [wait, recovery, backoff]


def requeue_text(k: Kueue) -> str:
    """How the backoff grows and when it stops: ``doubling to 3600 s (...); requeued forever (...)``."""
    top, limit = k.backoff_max, k.backoff_limit
    grows = f"doubling per eviction to {top.value} s ({said(top.source)})" if top.known else \
        f"to a maximum unknown ({top.note})"
    if not limit.known:
        return f"{grows}; limit unknown ({limit.note})"
    if limit.value is None:
        if limit.source.location is None:
            return f"{grows}; requeued forever (no backoffLimitCount)"
        return f"{grows}; requeued forever: backoffLimitCount null ({limit.source})"
    return f"{grows}; deactivated after {limit.value} requeues ({said(limit.source)})"


def kueue_summary(resolved: Resolved, facts: ClusterFacts | None) -> dict[str, Any] | None:
    """Kueue on the cluster and this job, for ``timeline``: ``release``, ``api_version``, ``config``, ``managed``
    (``true``, ``false``, ``null``: it depends), ``why``, ``block_admission`` and ``requeue`` (``base_seconds``,
    ``max_seconds``, ``limit``, ``forever``), each value with its source; ``None`` when the facts do not state
    Kueue."""
    k = kueue(facts)
    if k is None:
        return None
    managed, why = manages(k, resolved)
    limit = k.backoff_limit
    return {"release": k.release.value, "release_source": k.release.source.to_dict(), "api_version": k.api,
            "config": k.config, "managed": managed, "why": why, "block_admission": k.block_admission.to_dict(),
            "requeue": {"base_seconds": k.backoff_base.to_dict(), "max_seconds": k.backoff_max.to_dict(),
                        "limit": limit.to_dict(), "forever": limit.known and limit.value is None,
                        "text": requeue_text(k)}}


def requeue_loop(misfit: Finding | None, resolved: Resolved, facts: ClusterFacts | None) -> Finding | None:
    """A job that fits no node pool (``misfit``, :func:`.fit_causes.misfit_warning`) under a Kueue that evicts it
    at its PodsReady timeout and requeues it forever: admitted, evicted, requeued after the backoff, admitted
    again, its ClusterQueue's quota held for the timeout of every round. At the profile line that stops the job,
    naming Kueue's lines; ``None`` otherwise."""
    k = kueue(facts)
    if misfit is None or k is None or k.pods_ready.value is None or not k.backoff_limit.known or \
            k.backoff_limit.value is not None or manages(k, resolved)[0] is False:
        return None
    return Finding(misfit.location, misfit.path, f"{misfit.message}, and Kueue evicts it after its PodsReady timeout "
                   f"of {k.pods_ready.value} s ({k.pods_ready.source}) and requeues it ({requeue_text(k)}): "
                   "a loop of admissions that holds its ClusterQueue's quota each round and never runs; make it fit, "
                   "or ask for a backoffLimitCount", "warning", misfit.layer)
