"""How late a node of the cluster starts: the one home of the start times that ``timeline``, ``why`` and
``validate``'s clock lints judge a profile's clocks against.

A cold node (one the autoscaler adds, without the task's image) starts its pod ``node_start`` (a scale-up to
Ready) plus ``image_pull`` after a hot one (up, the image cached, which starts it at once). Each figure is the
pool's own where the cluster's facts state one (``node_pools.NAME.node_start``), else the cluster's
(:meth:`~kfdefaults.validate.facts.ClusterFacts.span`). Which pool: ``--pool``, else the one the profile fits, else
the slowest to start of those it fits, else the cluster's figures (:func:`choose_pool`); :func:`cold_start` does
both, from the pools a profile fits (:meth:`kfdefaults.pipeline.Pipeline.cold_start` works those out).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import Location

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..validate.facts import ClusterFacts

__all__ = ["ColdStart", "Span", "choose_pool", "cold_start", "starts"]


class Span:
    """How late a node can start, as ``typical`` and ``worst`` seconds, with the facts behind each.

    Attributes:
        typical: Seconds, or ``None`` (unknown).
        worst: Seconds, or ``None`` (unknown).
        complete: Every part is stated; ``False`` when only some are (then the figures are at least these).
        parts: ``(fact, {"typical"?, "worst"?}, Location)`` of each fact summed (``node_start``, ``image_pull``).
        missing: The facts not stated.
    """

    def __init__(self, parts: list[tuple[str, dict[str, int], Location]], missing: list[str]) -> None:
        self.parts, self.missing = parts, missing
        self.complete = not missing
        self.typical = self._sum("typical")
        self.worst = self._sum("worst")

    def _sum(self, key: str) -> int | None:
        values = [p[1].get(key) for p in self.parts]
        if not values or any(v is None for v in values):
            return None
        return sum(v for v in values if v is not None)

    def text(self, key: str) -> str:
        """``2100 s``, ``at least 1500 s`` (a part unstated), or ``unknown``."""
        value = getattr(self, key)
        if value is None:
            return "unknown"
        return f"{value} s" if self.complete else f"at least {value} s"

    def described(self, key: str) -> str:
        """``2100 s (node_start worst 1500 s at FILE:LINE:COLUMN; image_pull worst 600 s at FILE:LINE:COLUMN)``:
        the figure and each fact it sums (:meth:`sources`)."""
        return f"{self.text(key)} {self.sources(key)}"

    def sources(self, key: str) -> str:
        """``(node_start worst 1500 s at FILE:LINE:COLUMN; image_pull worst 600 s at FILE:LINE:COLUMN)``: each fact
        summed, where it is written, and those not stated."""
        parts = [f"{name} {key} {values.get(key)} s at {at}" for name, values, at in self.parts]
        missing = f"; {' and '.join(self.missing)} not stated" if self.missing else ""
        return f"({'; '.join(parts)}{missing})"

    def to_dict(self) -> dict[str, Any]:
        return {"typical": self.typical, "worst": self.worst, "complete": self.complete, "missing": self.missing,
                "parts": [{"fact": name, **values, "at": {"file": at.file, "line": at.line, "column": at.column}}
                          for name, values, at in self.parts]}


def starts(facts: ClusterFacts | None, pool: str | None = None) -> Span:
    """How late a cold node starts after a hot one: ``node_start`` plus ``image_pull``, each ``pool``'s own where
    it states one, else the cluster's."""
    parts, missing = [], []
    for fact in ("node_start", "image_pull"):
        values, path = facts.span(fact, pool) if facts is not None else ({}, ())
        if path:
            parts.append((fact, values, facts.location(*path)))  # type: ignore[union-attr]
        else:
            missing.append(fact)
    return Span(parts, missing)


def choose_pool(facts: ClusterFacts | None, fitting: list[str] | None, asked: str | None = None
                ) -> tuple[str | None, str]:
    """Which pool's start times apply, and why: ``asked`` (``--pool``); else the one pool the profile fits
    (:mod:`.fit`: ``fitting`` names them, ``None`` when no pools are known), or the slowest to start of several
    (one whose start the facts do not fully state may be the slowest: it is chosen, and its start is unknown, never
    guessed from the others'); else the cluster's own ``node_start`` and ``image_pull`` (``(None, why)``)."""
    if asked is not None:
        return asked, "--pool"
    if fitting is None:
        return None, "no node pools known"
    if not fitting:
        return None, "it fits no pool"
    if len(fitting) == 1:
        return fitting[0], "the one pool it fits"
    spans = {name: starts(facts, name) for name in fitting}
    unstated = [name for name in fitting if not spans[name].complete or spans[name].worst is None]
    if unstated:
        return (max(unstated, key=lambda name: spans[name].worst or 0),
                f"of the pools it fits, {', '.join(fitting)}, one whose start the facts do not state, which may be "
                "the slowest")
    slowest = max(fitting, key=lambda name: spans[name].worst or 0)
    return slowest, f"the slowest to start of the pools it fits: {', '.join(fitting)}"


class ColdStart(NamedTuple):
    """How late a cold node starts, and on which pool's figures.

    Attributes:
        span: The figures (:func:`starts`).
        pool: ``(pool name or None for the cluster's figures, why that pool)`` (:func:`choose_pool`).
    """

    span: Span
    pool: tuple[str | None, str]

    @property
    def whose(self) -> str:
        """``pool h100's`` or ``the cluster's``."""
        return f"pool {self.pool[0]}'s" if self.pool[0] else "the cluster's"


def cold_start(facts: ClusterFacts | None, fitting: list[str] | None, asked: str | None = None) -> ColdStart:
    """The start times of a cold node for a profile that fits the pools ``fitting`` (``None``: no pools known),
    or on the pool ``asked``: :func:`choose_pool`, then :func:`starts`."""
    pool = choose_pool(facts, fitting, asked)
    return ColdStart(starts(facts, pool[0]), pool)
