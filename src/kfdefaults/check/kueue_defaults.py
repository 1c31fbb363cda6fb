"""Kueue's defaults for the fields of its Configuration that decide a job's clocks, by API version and release:
the one table kfdefaults keeps of them (as :mod:`.torch_defaults` is torch's).

Each row says from which Kueue release a default holds, the tag whose ``apis/config/<version>/defaults.go`` was
read for it, and the Go name that sets it; ``tests/test_kueue_defaults.py`` holds the table to the values read
at those tags. What the table says, release by release:

* ``v1beta1`` (Kueue 0.13 and on; still read by 0.19): ``waitForPodsReady`` is off unless ``enable: true``
  (``WaitForPodsReady{Enable: false}``); enabled, ``timeout`` is 5 minutes (``defaultPodsReadyTimeout``) and
  ``blockAdmission`` true (``&cfg.WaitForPodsReady.Enable``). ``recoveryTimeout`` takes ``timeout``'s value from
  0.16; before, no default (then no recovery clock: ``pkg/controller/core/core.go`` keeps one only when set and
  above 0).
* ``v1beta2`` (Kueue 0.15 and on): no ``enable``. In 0.15 to 0.18 the block's presence turns it on, and its
  ``timeout`` has no default (``validateWaitForPodsReady``, ``pkg/config/validation.go``: "must be specified");
  from 0.19 it is on when absent too, with a 30-minute ``timeout`` (``DefaultWaitForPodsReadyTimeout``), off only
  with the feature gate ``DisableWaitForPodsReady`` (``pkg/util/waitforpodsready/waitforpodsready.go``).
  ``blockAdmission`` is false; ``recoveryTimeout`` takes ``timeout``'s value from 0.16 (not in 0.15), ``0s``
  turns that clock off.
* Both: an evicted workload is requeued after a backoff of 60 s (``DefaultRequeuingBackoffBaseSeconds``),
  doubling to at most 3600 s (``DefaultRequeuingBackoffMaxSeconds``), with no limit (``backoffLimitCount`` has no
  default: requeued forever); ``integrations.frameworks`` left empty is ``batch/job`` alone
  (``defaultJobFrameworkName``); ``manageJobsWithoutQueueName`` is false (a Go ``bool``'s zero value,
  ``configuration_types.go``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..validate.kueue_config import OLDEST_RELEASE

OLDEST, NEWEST = OLDEST_RELEASE, "0.19"
"""The Kueue releases whose defaults were read; a newer release is taken as :data:`NEWEST` (and said so)."""

TIMEOUT = "timeout"
"""A default that is ``waitForPodsReady.timeout``'s own value (``recoveryTimeout`` from 0.16)."""


class Default(NamedTuple):
    """A default of Kueue's, as one API version sets it from a release on.

    Attributes:
        value: Seconds, a bool, a list, :data:`TIMEOUT`, or ``None`` where there is no default.
        since: The first release it holds for.
        tag: The tag whose file was read for it.
        source: The file and the Go name (or statement) that sets it.
    """

    value: Any
    since: str
    tag: str
    source: str


def _d(value: Any, since: str, tag: str, api: str, name: str) -> Default:
    return Default(value, since, tag, f"apis/config/{api}/defaults.go {name}")


_B1, _B2 = "v1beta1", "v1beta2"
TABLE: dict[tuple[str, str], list[Default]] = {
    (_B1, "waitForPodsReady"): [_d(False, "0.13", "v0.13.0", _B1, "WaitForPodsReady{Enable: false}")],
    (_B1, "waitForPodsReady.timeout"): [_d(300, "0.13", "v0.13.0", _B1, "defaultPodsReadyTimeout")],
    (_B1, "waitForPodsReady.recoveryTimeout"): [_d(None, "0.13", "v0.15.0", _B1, "(no default before 0.16)"),
                                                _d(TIMEOUT, "0.16", "v0.16.0", _B1, "RecoveryTimeout")],
    (_B1, "waitForPodsReady.blockAdmission"): [_d(True, "0.13", "v0.13.0", _B1, "BlockAdmission")],
    (_B2, "waitForPodsReady"): [_d(False, "0.15", "v0.15.0", _B2, "(no WaitForPodsReady default before 0.19)"),
                                _d(True, "0.19", "v0.19.0", _B2, "WaitForPodsReady{}")],
    (_B2, "waitForPodsReady.timeout"): [_d(None, "0.15", "v0.18.6", _B2, "(no default before 0.19)"),
                                        _d(1800, "0.19", "v0.19.0", _B2, "DefaultWaitForPodsReadyTimeout")],
    (_B2, "waitForPodsReady.recoveryTimeout"): [_d(None, "0.15", "v0.15.0", _B2, "(no default in 0.15)"),
                                                _d(TIMEOUT, "0.16", "v0.16.0", _B2, "RecoveryTimeout")],
    (_B2, "waitForPodsReady.blockAdmission"): [_d(False, "0.15", "v0.15.0", _B2, "BlockAdmission")],
    **{(api, key): [_d(value, since, tag, api, name)] for api, since, tag in ((_B1, "0.13", "v0.13.0"),
                                                                             (_B2, "0.15", "v0.15.0"))
       for key, value, name in (
           ("waitForPodsReady.requeuingStrategy.backoffBaseSeconds", 60, "DefaultRequeuingBackoffBaseSeconds"),
           ("waitForPodsReady.requeuingStrategy.backoffMaxSeconds", 3600, "DefaultRequeuingBackoffMaxSeconds"),
           ("waitForPodsReady.requeuingStrategy.backoffLimitCount", None, "(no default: requeued forever)"),
           ("integrations.frameworks", ["batch/job"], "defaultJobFrameworkName"))},
    **{(api, "manageJobsWithoutQueueName"): [Default(False, since, "v0.19.2",
                                                     f"apis/config/{api}/configuration_types.go "
                                                     "ManageJobsWithoutQueueName")]
       for api, since in ((_B1, "0.13"), (_B2, "0.15"))},
}
"""(API version, field) -> its defaults by release, oldest first."""

CHART_WITHOUT_PYTORCHJOB = "0.19"
"""From this release, Kueue's chart leaves ``kubeflow.org/pytorchjob`` out of ``integrations.frameworks``
(commented out in ``charts/kueue/values.yaml`` at v0.19.0; listed at v0.14.8 and v0.18.6)."""

def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def newer(version: str) -> bool:
    """Whether ``version`` is newer than every release whose defaults were read."""
    return _key(version) > _key(NEWEST)


def at_least(version: str | None, since: str) -> bool | None:
    """Whether release ``version`` is ``since`` or later; ``None`` when it is unknown."""
    return None if version is None else _key(version) >= _key(since)


def default(api: str, field: str, version: str | None) -> Default | None:
    """The default of ``field`` for a document of ``api`` on Kueue ``version``; ``None`` when the release is unknown
    and the releases disagree (:func:`history` says how), or the API version is too new for that release."""
    rows = TABLE[(api, field)]
    if version is None:
        return rows[0] if len(rows) == 1 else None
    fitting = [r for r in rows if _key(r.since) <= _key(version)]
    return fitting[-1] if fitting else None


def history(api: str, field: str) -> str:
    """Each release's default of ``field``: ``off before 0.19 (...), 1800 s from 0.19 (...)``."""
    return "; ".join(f"{_text(r.value)} from Kueue {r.since}" + (f" ({r.source})" if r.value is not None else "")
                     for r in TABLE[(api, field)])


def chart_text(version: str | None) -> str:
    """What the chart of Kueue ``version`` integrates of ``kubeflow.org/pytorchjob``, as a clause."""
    if version is None:
        return (f"; Kueue's chart lists kubeflow.org/pytorchjob before {CHART_WITHOUT_PYTORCHJOB} and leaves it out "
                "from then on")
    if at_least(version, CHART_WITHOUT_PYTORCHJOB):
        return f"; Kueue {version}'s chart leaves kubeflow.org/pytorchjob out"
    return f"; Kueue {version}'s chart lists kubeflow.org/pytorchjob"


def _text(value: Any) -> str:
    if value is None:
        return "off"
    if value is TIMEOUT:
        return "the timeout's value"
    return f"{value} s" if isinstance(value, int) and not isinstance(value, bool) else str(value).lower()


def label(version: str | None, api: str, field: str) -> str:
    """``Kueue 0.19 default, apis/config/v1beta2/defaults.go`` (the Go name where it helps)."""
    row = default(api, field, version)
    taken = f"Kueue {version}" if version and not newer(version) else \
        f"Kueue {NEWEST} (the newest release read; the cluster runs {version})" if version else "Kueue"
    return f"{taken} default, {row.source if row else f'apis/config/{api}/defaults.go'}"
