"""The receipt: in the pod, before the workers start, what the pod actually has against what was registered.

What changes a pod after registration is what no preview sees: the cluster's default PodTemplate, Kueue's
admission, an admission policy, a resource override at run time. When a task on a profile runs in a Flyte pod,
its task (:mod:`kfdefaults.flytekit.task`, :mod:`kfdefaults.flyte2.task`) calls :func:`take_receipt` before the
plugin launches torch's agent: it reads the pod (:mod:`.probe`), compares it with what registration wrote down
(:mod:`.expect`, carried in ``KFDEFAULTS_ELASTIC``; :mod:`.compare`), and prints one line per difference, with its
likely cause and the profile line it departs from, then the whole receipt as one line of JSON
(:mod:`.document`), which ``kfdefaults why`` and ``kfdefaults verify`` read back.

It never fails the task, unless the profile's pod annotation ``kfdefaults.io/receipt: strict`` asks it to: then a
difference stops the task before its workers start. ``kfdefaults.io/receipt: off`` turns it off.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping, TextIO

from ..errors import ReceiptError
from ..escape import printable
from .compare import compare
from .document import PREFIX, receipt_document, receipt_lines
from .probe import Places, observe

__all__ = ["ReceiptError", "receipt_html", "take_receipt"]


def take_receipt(registered: Mapping[str, Any] | None, task: str, launch: Mapping[str, Any] | None = None, *,
                 environ: Mapping[str, str] | None = None, places: Places = Places(),
                 out: TextIO | None = None) -> dict[str, Any] | None:
    """Take this pod's receipt and print it on ``out`` (standard error: the task's log).

    Args:
        registered: What registration put in the pod (``KFDEFAULTS_ELASTIC``: ``{"key", "target", "profile",
            "elastic", "pod"}``); ``None`` outside a pod that runs on registered settings: no receipt.
        task: The task's name, for the log.
        launch: What the plugin will launch torch with (:func:`kfdefaults.receipt.compare.compare`).
        environ: The environment (default: the process's).
        places: Where the pod is read (:class:`~kfdefaults.receipt.probe.Places`).
        out: Where the lines go (default: standard error).

    Returns:
        The receipt, or ``None`` (none to take, ``kfdefaults.io/receipt: off``, or it could not be taken: the
        reason is printed, and the task goes on).

    Raises:
        ReceiptError: the receipt has differences and the profile asks for ``kfdefaults.io/receipt: strict``.
    """
    if registered is None:
        return None
    stream = out if out is not None else sys.stderr
    try:
        policy = (registered.get("pod") or {}).get("policy", "report")
        if policy == "off":
            return None
        pod = registered.get("pod") or {}
        observed = observe(os.environ if environ is None else environ, names=list(pod.get("env") or {}),
                           places=places)
        differences, notes = compare(registered, observed, launch)
        if not pod:
            notes.append("the task registered no pod facts (registered by an older kfdefaults): only the elastic "
                         "settings are compared")
        receipt = receipt_document(registered, observed, launch, task, differences, notes)
        for line in receipt_lines(receipt):
            stream.write(line + "\n")
        stream.flush()
    except Exception as e:  # never fatal: a receipt that cannot be taken says so, and the task runs
        stream.write(printable(f"{PREFIX} could not be taken: {type(e).__name__}: {e}") + "\n")
        stream.flush()
        return None
    if policy == "strict" and differences:
        count = len(differences)
        raise ReceiptError(f"{count} difference{'s' * (count != 1)} between this pod and what task {task} registered "
                           f"(profile {registered.get('profile')!r} asks for kfdefaults.io/receipt: strict): the task "
                           f"stops before its workers start; the receipt above says what differs", receipt)
    return receipt


def receipt_html(receipt: Mapping[str, Any]) -> str:
    """The receipt as a Flyte Deck (flytekit) or report tab (Flyte 2) shows it: its lines, then its JSON, escaped
    for HTML."""
    import html
    import json

    lines = receipt_lines(receipt)[:-1]
    body = json.dumps(receipt, indent=1, sort_keys=True, ensure_ascii=True, default=str)
    return (f"<pre>{html.escape(chr(10).join(lines))}</pre>\n<details><summary>receipt (JSON)</summary>"
            f"<pre>{html.escape(body)}</pre></details>")
