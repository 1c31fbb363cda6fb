"""The receipt as a document: its JSON (``kind: Receipt``), its lines in the task's log, and the marker line that
carries the whole document in the log, read back by ``kfdefaults why`` and ``kfdefaults verify``.

In the log, every line of the receipt starts with ``kfdefaults receipt:``; the last one is the marker,
``KFDEFAULTS_RECEIPT {...}``: the document as one line of JSON, every character outside ASCII escaped, so that no
log reader splits or alters it.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from ..errors import Finding, Location, shown
from ..escape import printable

KIND = "Receipt"
API_VERSION = "kfdefaults.io/v1"
MARKER = "KFDEFAULTS_RECEIPT"
"""The word that starts the log line carrying a receipt's JSON."""

PREFIX = "kfdefaults receipt:"
"""What every human line of a receipt starts with."""

MAX_RECEIPT = 8 << 20
"""Characters of one marker line read at most: a receipt is some kilobytes, up to a few MiB where the pod's
downward API holds large annotations (:data:`~kfdefaults.receipt.probe.MAX_FILE` of them) and its environment long
values."""


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


def receipts_in(lines: Iterable[tuple[int, str]], file: str) -> tuple[list[tuple[int, dict[str, Any]]], list[Finding]]:
    """The receipts carried by marker lines among ``lines`` (``(line number, text)``), in order, and a finding at
    ``FILE:LINE:COLUMN`` for each marker line that carries none (no JSON, not a receipt's shape, longer than
    :data:`MAX_RECEIPT`): a log may hold anything, and one stray line hides no other."""
    out, bad = [], []
    for number, text in lines:
        at = text.find(MARKER + " {")
        if at < 0:
            continue
        column = at + len(MARKER) + 2
        body = text[at + len(MARKER) + 1:]
        problem = None
        if len(body) > MAX_RECEIPT:
            problem = f"a {MARKER} line longer than {MAX_RECEIPT >> 20} MiB: not a receipt kfdefaults wrote"
        else:
            try:
                data, _ = json.JSONDecoder().raw_decode(body)
                problem = receipt_problem(data)
            except (ValueError, RecursionError) as e:
                problem = f"the {MARKER} line holds no JSON receipt ({printable(shown(str(e), 80))})"
        if problem:
            bad.append(Finding(Location(file, number, column), "", problem, "warning"))
        else:
            out.append((number, data))
    return out, bad


MAX_NOTED = 3
"""Lines named at most in a note on the receipts of a log (then how many more)."""


def first_receipt(found: list[tuple[int, dict[str, Any]]], bad: list[Finding]
                  ) -> tuple[tuple[int, dict[str, Any]] | None, list[str]]:
    """The task's own receipt in a log, of what :func:`receipts_in` found there: the first marker line that carries
    one, as ``(line, receipt)`` (``None``: none), and bounded notes on the others.

    A receipt is printed once, when the task starts, before its training does; a later marker line (another
    receipt, a forged one, a pasted one) is never trusted over the first: each is named by its line, at most
    :data:`MAX_NOTED`, and so is each marker line that carries no receipt.
    """
    notes = [f"{f.location}: {f.message}; not read" for f in bad[:MAX_NOTED]]
    if len(bad) > MAX_NOTED:
        notes.append(f"{len(bad) - MAX_NOTED} more {MARKER} lines that carry no receipt; not read")
    if len(found) > 1:
        later = [number for number, _ in found[1:]]
        shown_lines = ", ".join(str(n) for n in later[:MAX_NOTED]) + (f" and {len(later) - MAX_NOTED} more"
                                                                    if len(later) > MAX_NOTED else "")
        differ = sum(1 for _, r in found[1:] if r != found[0][1])
        notes.append(f"{len(later)} later receipt{'s' * (len(later) != 1)} in the log (line{'s' * (len(later) != 1)} "
                     f"{shown_lines}{f'; {differ} of them unlike the first' if differ else ''}) not read: the first, "
                     f"line {found[0][0]}, is the one the task prints when it starts")
    return (found[0] if found else None), notes


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
    for key, shape in (("observed", _OBSERVED), ("differences", _DIFFERENCES)):
        problem = _shape_problem(data.get(key), shape, key)
        if problem:
            return problem
    return pod_problem(registered.get("pod"), "registered.pod")


def pod_problem(pod: Any, where: str = "pod") -> str | None:
    """Why ``pod`` is not the ``pod`` part of registered settings as :mod:`.expect` writes it, or ``None``
    (``None`` for none: registered by an older kfdefaults)."""
    return _shape_problem(pod, _POD, where)


# What ``kfdefaults why`` and ``kfdefaults verify`` read of a receipt, as the task writes it (:mod:`.expect`,
# :func:`~kfdefaults.receipt.probe.observe`, :func:`~kfdefaults.receipt.compare.difference`): a type (a tuple of
# them), an object of known keys (a dict of their shapes: other keys are not read), or an object of any keys
# (``_Each``) or a list (``_List``) of one shape. ``None`` is allowed wherever a receipt may write it.
class _Each:
    def __init__(self, shape: Any) -> None:
        self.shape = shape


class _List(_Each):
    pass


_TEXT = (str, type(None))
_INT = (int, type(None))
_ENTRY = {"value": (str,), "set_by": _TEXT}
_POD = {"primary": _TEXT, "policy": _TEXT, "pod_memory_limit": _TEXT,
        "shm": {"volume": (str,), "medium": _TEXT, "size_limit": _TEXT, "set_by": _TEXT, "kind": _TEXT},
        "limits": _Each(_ENTRY), "env": _Each(_ENTRY), "labels": _Each(_ENTRY), "annotations": _Each(_ENTRY),
        "fabric": {"devices": _Each(_ENTRY), "ipc_lock": _ENTRY, "host_network": _ENTRY},
        "elastic": _Each(_TEXT)}
_OBSERVED = {"shm": {"path": _TEXT, "mount": (bool, type(None)), "fstype": _TEXT, "size": _INT},
             "memory": {"limit": _INT, "source": _TEXT}, "cpu": {"limit_millis": _INT, "source": _TEXT},
             "gpus": {"devices": _INT, "CUDA_VISIBLE_DEVICES": _TEXT, "NVIDIA_VISIBLE_DEVICES": _TEXT},
             "fabric": {"dev_infiniband": _List((str,)), "dev_infiniband_count": _INT, "sys_infiniband": _List((str,)),
                        "ipc_lock": (bool, type(None)), "memlock": {"soft": _INT, "hard": _INT},
                        "host_network": (bool, type(None))},
             "env": _Each((str,)), "podinfo": {"path": _TEXT, "labels": _Each((str,)), "annotations": _Each((str,))},
             "problems": _List((str,))}
_DIFFERENCES = _List({k: _TEXT for k in ("what", "path", "registered", "observed", "set_by", "cause", "source")})


def _shape_problem(node: Any, shape: Any, where: str) -> str | None:
    """Why ``node`` at ``where`` does not have ``shape``, or ``None``. An object or a list may be ``null`` (absent);
    a key of an object whose shape does not allow ``null`` must be there."""
    if isinstance(shape, tuple):
        if isinstance(node, shape) and not (isinstance(node, bool) and bool not in shape) and (
                isinstance(node, bool) or not isinstance(node, int) or 0 <= node < 1 << 64):
            return None  # every integer a receipt holds is a count or a size in bytes: what a uint64 holds
        names = {str: "a string", int: "an integer from 0 to 2^64 - 1", bool: "true or false", type(None): "null"}
        return printable(f"{where} must be {' or '.join(names[t] for t in shape)}")
    if node is None:
        return None
    if isinstance(shape, _List):
        if not isinstance(node, list):
            return printable(f"{where} must be a list")
        items = [(f"{where}[{i}]", v, shape.shape) for i, v in enumerate(node)]
    elif not isinstance(node, dict):
        return printable(f"{where} must be an object")
    elif isinstance(shape, _Each):
        items = [(f"{where}.{_key(k)}", v, shape.shape) for k, v in node.items()]
    else:
        items = [(f"{where}.{k}", node.get(k), s) for k, s in shape.items()
                 if k in node or (isinstance(s, tuple) and type(None) not in s)]
    for at, value, inner in items:
        problem = _shape_problem(value, inner, at)
        if problem:
            return problem
    return None


def _key(key: str) -> str:
    return key if len(key) <= 60 else key[:60] + "…"
