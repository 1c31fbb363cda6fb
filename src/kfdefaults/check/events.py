"""The vocabulary of a timeline (:mod:`.timeline`): an :class:`Event` on the time axis (a clock that fires, a node
that starts), and a :class:`Scenario`, one way things go, with its first clock, outcome and worst case."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Event:
    """Something that happens at a time: a node starting, a clock firing.

    Attributes:
        at: ``(earliest, latest)`` seconds; ``None`` when unknown (an unstated fact).
        who: The node(s) it happens to, or ``the job``.
        clock: The clock that fires (a name of :data:`.clock.CLOCKS`), or ``None`` for a start.
        what: What happens.
        error: What is raised or done (``RendezvousTimeoutError``), or ``None``.
        message: The message the user sees, or ``None``.
        fails: The job (or that node) fails here.
        certain: ``False`` where it may or may not happen (a store host starting between one and four
            ``read_timeout``).
    """

    at: tuple[float, float] | None
    who: str
    clock: str | None
    what: str
    error: str | None = None
    message: str | None = None
    fails: bool = False
    certain: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"at": None if self.at is None else {"earliest": self.at[0], "latest": self.at[1]}, "who": self.who,
                "clock": self.clock, "what": self.what, "error": self.error, "message": self.message,
                "fails": self.fails, "certain": self.certain}


@dataclass
class Scenario:
    """One way things go: its events in time order, the first clock to fire, and the worst case to a clean failure.

    Attributes:
        key: ``start-cold-worker``, ``start-cold-host``, ``never-worker``, ``never-host``, ``lost-peer``,
            ``hung-collective``.
        title: What happens, in a line.
        events: In time order.
        outcome: ``runs`` (no clock fires), ``fails`` (a clean failure), ``hangs`` (nothing ends it) or ``unknown``.
        worst: Seconds to the clean failure at worst, or ``None``.
        notes: What else to know.
    """

    key: str
    title: str
    events: list[Event]
    outcome: str
    worst: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def first(self) -> Event | None:
        """The first clock to fire (a certain event first where two may come at once)."""
        fired = [e for e in self.events if e.clock is not None and e.at is not None]
        return min(fired, key=lambda e: (e.at[0], not e.certain), default=None)  # type: ignore[index]

    def to_dict(self) -> dict[str, Any]:
        first = self.first
        return {"key": self.key, "title": self.title, "outcome": self.outcome, "worst": self.worst,
                "first": None if first is None else first.to_dict(), "events": [e.to_dict() for e in self.events],
                "notes": self.notes}
