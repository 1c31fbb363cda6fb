"""``kfdefaults why`` printed: one block per recognised failure, or JSON.

Text::

    kfdefaults why: job.log: 1 known failure; values from the receipt in the log (line 3): profile gpu-large (flytekit)
    rendezvous timeout: not every node joined within join_timeout
      line 44: torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError
      elastic.rdzv_configs.join_timeout = 900  (team profiles/gpu-large.yaml:6)
      elastic.nnodes = 4  (platform acme-profiles 1.2.0 gpu-large.yaml:3)
      change: raise join_timeout above 1320 s, ...

Every line quoted from the log, and every value, is :func:`~kfdefaults.escape.printable` and cut at
:data:`QUOTE` characters: a log's control characters cannot reach the terminal.
"""

from __future__ import annotations

from typing import Any

from ..escape import printable
from .answers import Answer
from .logtext import LogText
from .values import Setting, Values

QUOTE = 200
"""Characters of a log line quoted at most."""


def _quote(text: str) -> str:
    text = text.strip()
    return text if len(text) <= QUOTE else text[:QUOTE] + "…"


def setting_line(s: Setting, known: bool) -> str:
    """``KEY = VALUE  (SET_BY)[; the pod had OBSERVED]``, or ``KEY: unset (DEFAULT)``."""
    if not known:
        text = f"{s.key}: value unknown (no receipt in the log: give --profile NAME)"
    elif s.value is None:
        text = f"{s.key}: unset ({s.default})" if s.default else f"{s.key}: unset"
    else:
        text = f"{s.key} = {s.value}" + (f"  ({s.set_by})" if s.set_by else "")
    if s.observed is not None and known:
        text += f"; the pod had {s.observed}"
    return text


def text_lines(log: LogText, answers: list[Answer], values: Values | None, notes: list[str]) -> list[str]:
    """The answers as text (the module's docstring), each line printable."""
    count = len(answers)
    head = f"kfdefaults why: {log.file}: "
    if not answers:
        lines = [head + "no known failure of distributed training in this log: nothing is guessed (kfdefaults why "
                 "knows rendezvous timeouts and closes, the store's connection, /dev/shm, NCCL and gloo timeouts, "
                 "failed workers, OOMKilled, Kueue's PodsReady eviction and NCCL off the fabric)"]
    else:
        source = f"; values from {values.source}" if values is not None and values.known else "; no values: give --profile NAME"
        lines = [head + f"{count} known failure{'s' * (count != 1)}{source}"]
    known = values is not None and values.known
    for a in answers:
        lines.append(a.found.failure.title)
        lines += [f"  line {n}: {_quote(t)}" for n, t in a.found.evidence]
        lines += [f"  {setting_line(s, known)}" for s in a.settings]
        lines += [f"  change: {c}" for c in a.change]
    lines += [f"note: {n}" for n in notes + log.notes]
    return [printable(line) for line in lines]


def document(log: LogText, answers: list[Answer], values: Values | None, notes: list[str]) -> dict[str, Any]:
    """The answers as JSON: ``{"file", "values": {"source", "profile"} | null, "failures": [{"name", "title",
    "evidence": [{"line", "text"}], "settings": [{"key", "value", "set_by", "default", "observed"}], "change": [...]}],
    "notes": [...]}``."""
    known = values is not None and values.known
    return {
        "file": log.file,
        "values": {"source": values.source, "profile": values.profile} if known and values is not None else None,
        "failures": [{"name": a.found.failure.name, "title": a.found.failure.title,
                      "evidence": [{"line": n, "text": t[:4 * QUOTE]} for n, t in a.found.evidence],
                      "settings": [s.to_dict() if known else {"key": s.key} for s in a.settings],
                      "change": a.change} for a in answers],
        "notes": notes + log.notes,
    }
