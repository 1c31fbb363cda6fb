"""``kfdefaults why``: a failure's log answered with the profile keys that govern it.

A task log, an exception or ``kubectl describe`` output is read (:mod:`.logtext`), the known failures of distributed
training are recognised in it (:mod:`.failures`: never guessed, an unknown log says so), and each is answered with
the settings that govern it, their values and who set them (:mod:`.values`: from the receipt the task printed when
the log carries it, :mod:`kfdefaults.receipt`; else from the settings registered with the pod; else from the
profile as it renders now), and what to change (:mod:`.answers`). :mod:`.view` prints it.
"""

from __future__ import annotations

from typing import Any

from ..receipt.document import receipts_in
from .answers import Answer, answer
from .failures import Found, recognise
from .logtext import LogText
from .values import Values, annotations_in, registered_in

__all__ = ["answers_for", "recognise", "values_in_log"]


def values_in_log(log: LogText) -> tuple[Values | None, str | None, list[str]]:
    """The values the log itself carries, best first: the last receipt, else the registered ``KFDEFAULTS_ELASTIC``.

    Returns:
        ``(values or None, the profile the log names or None, notes)``.

    Raises:
        ProfileError: a receipt line that is not a receipt (located).
    """
    notes: list[str] = []
    found = receipts_in(log.lines, log.file)
    if found:
        line, receipt = found[-1]
        if len(found) > 1:
            notes.append(f"{len(found)} receipts in the log: the last one (line {line}) is read")
        digest = receipt.get("digest")
        source = (f"the receipt in the log (line {line}): profile {receipt.get('profile')} ({receipt.get('target')})"
                  + (f", registered {digest}" if digest else ""))
        registered = {**receipt["registered"], "target": receipt.get("target")}
        return (Values(registered, receipt.get("observed") or {}, source, receipt.get("profile"),
                       receipt.get("differences") or []), receipt.get("profile"), notes)
    registered = registered_in(log.lines)
    profile, _ = annotations_in(log.lines)
    if registered is not None:
        line, data = registered
        name = data.get("profile") if isinstance(data.get("profile"), str) else profile
        return Values(data, {}, f"the settings registered with the pod (KFDEFAULTS_ELASTIC, line {line})", name), name, notes
    return None, profile, notes


def answers_for(found: list[Found], values: Values | None, facts: Any = None) -> list[Answer]:
    """Each failure recognised in a log (:func:`~kfdefaults.why.failures.recognise`), answered with ``values`` and
    the cluster's ``facts``."""
    return [answer(f, values, facts) for f in found]
