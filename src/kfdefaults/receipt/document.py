"""The receipt as a document: its JSON (``kind: Receipt``), its lines in the task's log, and the marker line that
carries the whole document in the log, read back by ``kfdefaults why`` and ``kfdefaults verify``.

In the log, every line of the receipt starts with ``kfdefaults receipt:``; the last one is the marker,
``KFDEFAULTS_RECEIPT {...}``: the document as one line of JSON, every character outside ASCII escaped, so that no
log reader splits or alters it.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from ..errors import Finding, Location, ProfileError
from ..escape import printable

KIND = "Receipt"
API_VERSION = "kfdefaults.io/v1"
MARKER = "KFDEFAULTS_RECEIPT"
"""The word that starts the log line carrying a receipt's JSON."""

PREFIX = "kfdefaults receipt:"
"""What every human line of a receipt starts with."""

MAX_RECEIPT = 1 << 20
"""Characters of one marker line read at most: a receipt is a few kilobytes."""


def receipt_document(registered: Mapping[str, Any], observed: Mapping[str, Any], launch: Mapping[str, Any] | None,
                     task: str, differences: list[dict[str, Any]], notes: list[str]) -> dict[str, Any]:
    """The receipt: ``{"apiVersion", "kind", "task", "profile", "target", "key", "digest", "lock", "policy",
    "registered": {"elastic", "pod"}, "observed", "launch", "differences", "notes"}``.

    ``digest`` and ``lock`` are the ``kfdefaults.io/digest`` and ``kfdefaults.io/lock`` annotations the task
    registered (:mod:`kfdefaults.k8s.provenance`), ``None`` when it registered none.
    """
    pod = registered.get("pod") or {}
    annotations = pod.get("annotations") or {}

    def annotation(name: str) -> str | None:
        entry = annotations.get(name)
        return entry.get("value") if isinstance(entry, Mapping) else None

    return {"apiVersion": API_VERSION, "kind": KIND, "task": task, "profile": registered.get("profile"),
            "target": registered.get("target"), "key": registered.get("key"),
            "digest": annotation("kfdefaults.io/digest"), "lock": annotation("kfdefaults.io/lock"),
            "policy": pod.get("policy", "report"),
            "registered": {"elastic": registered.get("elastic") or {}, "pod": pod or None},
            "observed": dict(observed), "launch": dict(launch) if launch is not None else None,
            "differences": differences, "notes": notes}


def receipt_lines(receipt: Mapping[str, Any]) -> list[str]:
    """The receipt as the task's log shows it: a head line, one line per difference, one per note, then the marker
    line with the whole document; each line :func:`~kfdefaults.escape.printable`."""
    digest = receipt.get("digest")
    short = f", {digest[:19]}…" if isinstance(digest, str) else ""
    head = (f"{PREFIX} task {receipt.get('task')} on profile {receipt.get('profile')} ({receipt.get('target')}"
            f"{short})")
    found = receipt.get("differences") or []
    count = len(found)
    lines = [f"{head}: " + (f"{count} difference{'s' * (count != 1)} from what was registered" if count
                            else "no differences from what was registered")]
    lines += [f"{PREFIX}   {difference_line(d)}" for d in found]
    lines += [f"{PREFIX}   note: {n}" for n in receipt.get("notes") or []]
    lines = [printable(line) for line in lines]
    lines.append(f"{MARKER} " + json.dumps(receipt, ensure_ascii=True, sort_keys=True, separators=(",", ":"),
                                           default=str))
    return lines


def difference_line(d: Mapping[str, Any]) -> str:
    """``WHAT: OBSERVED in the pod, REGISTERED registered (PATH, SET_BY); likely: CAUSE``."""
    where = ", ".join(str(x) for x in (d.get("path"), d.get("set_by")) if x)
    shown = (lambda v: "(none)" if v is None else v)
    return (f"{d.get('what')}: {shown(d.get('observed'))} in the pod, {shown(d.get('registered'))} registered"
            f"{f' ({where})' if where else ''}; likely: {d.get('cause')}")


def receipts_in(lines: Iterable[tuple[int, str]], file: str) -> list[tuple[int, dict[str, Any]]]:
    """The receipts carried by marker lines among ``lines`` (``(line number, text)``), in order.

    Raises:
        ProfileError: a marker line whose JSON is not a receipt, at ``FILE:LINE:COLUMN``.
    """
    out = []
    for number, text in lines:
        at = text.find(MARKER + " {")
        if at < 0:
            continue
        column = at + len(MARKER) + 2
        body = text[at + len(MARKER) + 1:]
        if len(body) > MAX_RECEIPT:
            raise ProfileError([Finding(Location(file, number, column), "", f"a {MARKER} line longer than "
                                        f"{MAX_RECEIPT} characters: not a receipt kfdefaults wrote")])
        try:
            data, _ = json.JSONDecoder().raw_decode(body)
        except (ValueError, RecursionError) as e:
            raise ProfileError([Finding(Location(file, number, column), "", f"the {MARKER} line holds no JSON "
                                        f"receipt ({printable(str(e))})")]) from None
        problem = receipt_problem(data)
        if problem:
            raise ProfileError([Finding(Location(file, number, column), "", problem)])
        out.append((number, data))
    return out


def receipt_problem(data: Any) -> str | None:
    """Why ``data`` is not a receipt kfdefaults wrote, or ``None``."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        return f"not a receipt: a receipt is a JSON object with kind {KIND!r}"
    registered = data.get("registered")
    if not isinstance(registered, dict) or not isinstance(registered.get("elastic"), dict):
        return "a receipt without the registered elastic settings (registered.elastic)"
    if registered.get("pod") is not None and not isinstance(registered.get("pod"), dict):
        return "registered.pod must be an object"
    for key in ("observed", "launch"):
        if data.get(key) is not None and not isinstance(data.get(key), dict):
            return f"{key} must be an object"
    if not isinstance(data.get("differences", []), list) or not all(isinstance(d, dict) for d in data.get("differences", [])):
        return "differences must be a list of objects"
    for key in ("profile", "target", "digest", "lock", "task"):
        if data.get(key) is not None and not isinstance(data.get(key), str):
            return f"{key} must be a string"
    return None
