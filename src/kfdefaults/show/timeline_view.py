"""``kfdefaults timeline`` printed: the clocks with where each is set, how late a cold node starts, then each scenario
as a picture of its events on one time axis, all within 80 columns (a terminal's width when wider is not asked
for); or JSON (:meth:`kfdefaults.check.timeline.Timeline.to_dict`)."""

from __future__ import annotations

import textwrap
from typing import Any

from ..check.clocks import Clock
from ..check.timeline import Event, Scenario, Timeline
from ..escape import printable
from .fit_view import where
from .output import output_encoding, to_json

WIDTH = 80
"""Columns of the text output."""

AXIS = 20
"""Columns of a scenario's time axis."""


def _unit(value: float) -> tuple[float, str]:
    return (1, "s") if value < 600 else (60, "min") if value < 7200 else (3600, "h")


def _number(value: float, scale: float) -> str:
    text = f"{value / scale:.1f}"
    return text[:-2] if text.endswith(".0") else text


def seconds(value: float | None) -> str:
    """``90 s``, ``17 min``, ``2.5 h``; ``?`` when unknown."""
    if value is None:
        return "?"
    scale, unit = _unit(value)
    return f"{_number(value, scale)} {unit}"


def when(event: Event) -> str:
    """``300 s``, ``60-240 s``, ``28-28.1 min`` (one unit, the larger's); ``?`` when unknown."""
    if event.at is None:
        return "?"
    low, high = event.at
    scale, unit = _unit(high)
    a, b = _number(low, scale), _number(high, scale)
    return f"{a} {unit}" if a == b else f"{a}-{b} {unit}"


def source_text(clock: Clock) -> str:
    """Where a clock's value is set: ``LAYER FILE:LINE:COLUMN`` (the file relative to here), else the default."""
    s = clock.source
    if s.location is not None:
        text = f"{s.layer + ' ' if s.layer else ''}{where(s.location)}"
        return text + (f" ({s.default})" if s.default else "")
    return s.default or "unknown"


def _wrap(line: str, width: int, indent: int) -> list[str]:
    """``line`` wrapped at ``width``, its control characters escaped first (a name's line break or tab is shown, not
    taken for a space by the wrapping)."""
    return textwrap.wrap(printable(line), width, subsequent_indent=" " * indent, break_long_words=False,
                         break_on_hyphens=False) or [""]


def head_lines(t: Timeline, width: int = WIDTH) -> list[str]:
    """What is judged: the profile, nodes, torch, the collectives' backend, the pool, the cold start, the clocks."""
    low, high = t.nnodes
    nn = str(low) if low == high else f"{low}:{high}"
    torch_clock = t.torch or "unknown"
    lines = [f"{t.profile} ({t.target}): nnodes {nn}; torch {torch_clock}; collectives {t.backend} (the pod "
             f"{'requests' if t.backend == 'nccl' else 'requests no'} GPUs)"]
    lines.append(f"start times: {'pool ' + t.pool[0] if t.pool[0] else 'the cluster'}'s ({t.pool[1]})")
    lines.append(f"a cold node starts {t.start.text('typical')} (typical), {t.start.text('worst')} (worst) after a "
                 "hot one:")
    for name, values, at in t.start.parts:
        lines.append(f"  {name} {values.get('typical', '?')} / {values.get('worst', '?')} s ({where(at)})")
    lines += [f"  {name}: unknown (not in the facts)" for name in t.start.missing]
    if t.kueue is not None:  # whether Kueue queues the job, and why (its release and configuration named there)
        lines.append(f"Kueue: {t.kueue['why']}")
    lines += ["", "clocks (seconds; where each is set):"]
    for c in t.clocks:
        lines.append(f"  {c.name:<24}{c.text:>8}  {source_text(c)}")
        if c.note:
            lines.append(f"    {c.note}")
    return [part for line in lines for part in _wrap(line, width, 4)]


def _bar(event: Event, end: float) -> str:
    cells = [" "] * AXIS
    if event.at is not None and end > 0:
        low = min(AXIS - 1, int(event.at[0] / end * (AXIS - 1) + 0.5))
        high = min(AXIS - 1, int(event.at[1] / end * (AXIS - 1) + 0.5))
        for i in range(low, high + 1):
            cells[i] = "="
        cells[low] = "*"
    return "|" + "".join(cells) + "|"


def event_text(event: Event) -> str:
    text = f"{event.who}: {event.what}"
    if event.clock:
        text = f"{event.clock}: " + text
    if event.error:
        text += f" -> {event.error}" + (f": {event.message}" if event.message else "")
    if not event.certain:
        text += " (may not happen)"
    return text


def scenario_lines(s: Scenario, width: int = WIDTH) -> list[str]:
    """A scenario: its title, each event on the time axis (``*`` when it starts, ``=`` as long as it may take; ``>``
    marks the first clock to fire), the first clock, the outcome and the worst case to a clean failure."""
    timed = [e.at[1] for e in s.events if e.at is not None]
    end = max(timed, default=0)
    label = seconds(end)
    lines = [f"{s.title} [{s.key}]", f"   0{label:>{AXIS - 1}}"]
    first = s.first
    indent = AXIS + 5 + 12
    for e in s.events:
        mark = ">" if e is first else " "
        row = f"{mark} {_bar(e, end)} {when(e):<11} {event_text(e)}"
        lines += _wrap(row, width, indent)
    if first is not None:
        lines += _wrap(f"  first: {first.clock} at {when(first)}, on {first.who}"
                       + (f" ({first.error})" if first.error else ""), width, 4)
    outcome = {"runs": "no clock ends it: the job runs", "hangs": "nothing ends it but a deadline",
               "unknown": "unknown (a fact or default is unknown)"}.get(s.outcome)
    lines += _wrap("  outcome: " + (outcome or f"fails; worst case to a clean failure: {seconds(s.worst)}"), width, 4)
    lines += [part for note in s.notes for part in _wrap(f"  note: {note}", width, 4)]
    return lines


def timeline_lines(t: Timeline, width: int = WIDTH) -> list[str]:
    """The whole timeline as text lines of at most ``width`` columns (a word longer than that stays whole)."""
    lines = head_lines(t, width)
    if t.nnodes[1] == 1:
        lines += ["", *_wrap("one node: no rendezvous to wait for (the rendezvous clocks do not apply)", width, 4)]
    for s in t.scenarios:
        lines += ["", *scenario_lines(s, width)]
    return lines


def timeline_document(t: Timeline) -> dict[str, Any]:
    """The JSON form (:meth:`~kfdefaults.check.timeline.Timeline.to_dict`): ``profile``, ``target``, ``nnodes``,
    ``pool``, ``torch``, ``backend``, ``start`` (the facts summed), ``clocks`` (each with ``seconds``, ``source``:
    layer and ``file``/``line``/``column``, or the named ``default``) and ``scenarios`` (each with its ``first``
    clock, ``events`` with ``at.earliest``/``at.latest`` seconds, ``outcome`` and ``worst``)."""
    return t.to_dict()


def show_timeline(t: Timeline, output: str, width: int | None = None) -> int:
    """Print ``t``: ``text`` (80 columns, or ``width``) or ``json``. Returns 0."""
    import sys

    encoding = output_encoding()
    if output == "json":
        sys.stdout.write(to_json(timeline_document(t), encoding=encoding))
        return 0
    sys.stdout.write("".join(printable(line, encoding) + "\n" for line in timeline_lines(t, width or WIDTH)))
    return 0
