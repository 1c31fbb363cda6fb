"""``kfdefaults why``: a failure's log answered with the profile keys that govern it.

A task log, an exception or ``kubectl describe`` output is read (:mod:`.logtext`), the known failures of distributed
training are recognised in it (:mod:`.failures`: never guessed, an unknown log says so), and each is answered with
the settings that govern it, their values and who set them (:mod:`.values`: from the receipt the task printed when
the log carries it, :mod:`kfdefaults.receipt`; else from the settings registered with the pod; else from the
profile as it renders now), and what to change (:mod:`.answers`). :mod:`.view` prints it.
"""

from __future__ import annotations

from typing import Any

from ..errors import shown
from ..receipt.document import first_receipt, receipts_in
from .answers import Answer, Cluster, answer, fabric_context
from .failures import Found, recognise
from .logtext import LogText
from .values import Values, annotations_in, registered_in

__all__ = ["Cluster", "answers_for", "recognise", "values_in_log"]


def values_in_log(log: LogText) -> tuple[Values | None, str | None, list[str]]:
    """The values the log itself carries, best first: its first receipt (:func:`~kfdefaults.receipt.document.
    first_receipt`: a later one, or a marker line that holds none, is only noted), else the registered
    ``KFDEFAULTS_ELASTIC``.

    Returns:
        ``(values or None, the profile the log names or None, notes)``.
    """
    first, notes = first_receipt(*receipts_in(log.lines, log.file))
    if first is not None:
        line, receipt = first
        digest, profile = receipt.get("digest"), receipt.get("profile")
        source = (f"the receipt in the log (line {line}): profile {shown(str(profile), 60)} ({shown(str(receipt.get('target')), 20)})"
                  + (f", registered {shown(str(digest), 80)}" if digest else ""))
        registered = {**receipt["registered"], "target": receipt.get("target")}
        return (Values(registered, receipt.get("observed") or {}, source, profile,
                       receipt.get("differences") or []), profile, notes)
    registered = registered_in(log.lines)
    profile, _ = annotations_in(log.lines)
    if registered is not None:
        line, data = registered
        name = data.get("profile") if isinstance(data.get("profile"), str) else profile
        return Values(data, {}, f"the settings registered with the pod (KFDEFAULTS_ELASTIC, line {line})", name), name, notes
    return None, profile, notes


def answers_for(found: list[Found], values: Values | None, cluster: Cluster | None = None) -> list[Answer]:
    """Each failure recognised in a log (:func:`~kfdefaults.why.failures.recognise`), answered with ``values`` and
    what the ``cluster`` says (its facts, a cold node's start: :class:`~kfdefaults.why.answers.Cluster`). A fabric
    failure NCCL logs on any machine without a fabric (:attr:`~kfdefaults.why.failures.Failure.fabric`) is answered
    only where the profile asks for a fabric or the cluster's pools offer one
    (:func:`~kfdefaults.why.answers.fabric_context`)."""
    expected = bool(fabric_context(values, cluster))
    return [answer(f, values, cluster) for f in found if expected or not f.failure.fabric]
