"""``kfdefaults verify`` printed: plain text (one block per live object, one line per difference) or JSON."""

from __future__ import annotations

import sys
from typing import Any, Sequence

from ..escape import printable
from ..paths import format_path
from .diff import ABSENT
from .leaves import format_value
from .output import output_encoding, to_json
from .verify import Mismatch, Report

_SHORT = 12
"""Hex digits of a digest that the text shows (JSON shows the whole digest)."""


def short_digest(digest: str) -> str:
    """``sha256:394b9906c2c6…``: enough to tell two digests apart by eye."""
    algorithm, _, hexdigits = digest.partition(":")
    return f"{algorithm}:{hexdigits[:_SHORT]}…" if len(hexdigits) > _SHORT else digest


def report_lines(report: Report) -> list[str]:
    """One report as text::

        PyTorchJob train-x: profile gpu-large (from ...), 2 differences (live -> now)
          the job was made from gpu-large sha256:394b9906c2c6…; it renders sha256:0c1d2e3f4a5b… now
          elastic.max_restarts (spec.elasticPolicy.maxRestarts): 3 -> 1  team team/gpu-large.yaml:4
          Worker: pod_template.spec.tolerations[1]: (absent) -> {...}  platform platform/gpu-large.yaml:12
          note: ...

    Values are written as :func:`kfdefaults.show.leaves.format_value` writes them; ``(absent)`` where a side has
    none; each line ends with who sets the value now (``LAYER FILE:LINE``), or who removed it.
    """
    obj = report.obj
    count = len(report.mismatches)
    named = f"profile {report.profile} (from {report.named_by})"
    if report.equal:
        head = f"{obj.label}: {named}, {short_digest(report.digest_now)}: no differences"
    else:
        what = f"{count} difference{'s' * (count != 1)} (live -> now)" if count else "no value differs"
        head = f"{obj.label}: {named}, {what}"
    lines = [head]
    if report.task:
        where = "receipt" if obj.kind == "Receipt" else "KFDEFAULTS_ELASTIC"
        lines.append(f"  with the task layer its {where} records: "
                     + ", ".join(f"{format_path(path)}={format_value(value)}" for path, value in report.task.items()))
    if report.digest_differs:
        noun = "job" if obj.kind == "PyTorchJob" else "pod"
        assert report.digest_live is not None
        lines.append(f"  the {noun} was made from {report.profile} {short_digest(report.digest_live)}; it renders "
                     f"{short_digest(report.digest_now)} now")
    lines += ["  " + mismatch_line(m) for m in report.mismatches]
    lines += [f"  note: {note}" for note in report.notes]
    return lines


def mismatch_line(m: Mismatch) -> str:
    """``[REPLICA: ]PATH[ (LIVE PATH)]: LIVE -> NOW  LAYER FILE:LINE``."""
    head = f"{m.replica}: " if m.replica else ""
    where = f" ({m.live_path})" if m.live_path else ""
    text = f"{head}{format_path(m.path)}{where}: {_value(m.live)} -> {_value(m.now)}"
    if m.set_by is not None:
        text += f"  {m.set_by.layer} {m.set_by.where}"
    elif m.removed_by is not None:
        text += f"  removed by {m.removed_by.layer} {m.removed_by.where}"
    return text


def _value(value: Any) -> str:
    return "(absent)" if value is ABSENT else format_value(value)


def report_document(report: Report) -> dict[str, Any]:
    """The JSON form of one report: ``{"kind", "name", "source", "replicas", "profile", "named_by", "target",
    "digest": {"live", "now", "lock"}, "equal", "task": {path: value}, "differences": [...], "notes": [...]}``."""
    obj = report.obj
    loc = obj.location()
    return {"kind": obj.kind, "name": obj.name, "source": {"file": loc.file, "line": loc.line},
            "replicas": [t.replica for t in obj.templates if t.replica is not None], "profile": report.profile,
            "named_by": report.named_by, "target": report.target,
            "digest": {"live": report.digest_live, "now": report.digest_now, "lock": report.lock},
            "equal": report.equal, "task": {format_path(path): value for path, value in report.task.items()},
            "differences": [m.to_dict() for m in report.mismatches], "notes": report.notes}


def show_reports(reports: Sequence[Report], output: str) -> int:
    """Print the reports as ``text`` or ``json``.

    Returns:
        The exit status: 0 when nothing differs in any of them, 1 when something does.
    """
    equal = all(r.equal for r in reports)
    if output == "json":
        document = {"equal": equal, "objects": [report_document(r) for r in reports]}
        sys.stdout.write(to_json(document, encoding=output_encoding()))
    else:
        for report in reports:
            for line in report_lines(report):
                sys.stdout.write(printable(line) + "\n")
    return 0 if equal else 1
