"""A :class:`~kfdefaults.ProfileError` raised into a flytekit task module, shown by ``pyflyte`` as its message.

``pyflyte`` loads a task module inside its click command; whatever that raises reaches
``flytekit.clis.sdk_in_container.utils.pretty_print_exception``, which prints a rich traceback of every frame
between the user's line and the ``raise`` (frames of modules named ``importlib``, ``click``, ``rich_click`` and
``flytekit`` left out, kfdefaults' own kept: about 85 lines, the message at the bottom). It re-raises a
``click.ClickException`` instead, for click to show as click shows a usage error: ``ClickException.show``
(rich-click's ``rich_format_error``) prints the message alone, in an ``Error`` panel, and exits 1.

So at the places where the user's code calls into this adapter (``Elastic(...)``, the ``@task`` that defines the
task, a node's ``with_overrides``), a :class:`~kfdefaults.ProfileError` leaves as :class:`ProfileError` here: the
same findings, a subclass of both, so ``except kfdefaults.ProfileError`` catches it as before, its message first
(with the user's line that raised it), and no frame of kfdefaults. Elsewhere (``python wf.py``, a notebook) it is an
exception as any other, whose traceback ends at the adapter's entry point: the frames below it are cut, and the one
left sets rich's ``_rich_traceback_omit`` (``rich.traceback.Traceback.extract`` leaves such a frame out).
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, TypeVar

import click

from .. import errors
from ..runtime import SDK_PACKAGES

F = TypeVar("F", bound=Callable[..., Any])


class ProfileError(errors.ProfileError, click.ClickException):
    """:class:`kfdefaults.ProfileError` as a ``click.ClickException``: click (``pyflyte``) shows its message alone.

    Args:
        findings: The findings of the error raised inside kfdefaults.
        where: ``FILE:LINE`` of the user's code that called in (the ``Elastic(...)`` or ``@task`` line), or ``""``.
    """

    exit_code = 1

    def __init__(self, findings: list[errors.Finding], where: str = "") -> None:
        errors.ProfileError.__init__(self, findings)
        self.where = where

    def format_message(self) -> str:
        """The findings, one a line, then the user's line that raised them."""
        return str(self) + (f"\n(raised at {self.where})" if self.where else "")


def shown_to_the_task_module(function: F) -> F:
    """Wrap an entry point of the adapter (a method the user's code calls) so that a ProfileError leaves it as
    :class:`ProfileError`, located at the user's line, its traceback starting at this entry point."""

    @functools.wraps(function)
    def entry(*args: Any, **kwargs: Any) -> Any:
        _rich_traceback_omit = True  # noqa: F841  (read by rich.traceback from the frame's locals)
        try:
            return function(*args, **kwargs)
        except errors.ProfileError as e:
            raise ProfileError(e.findings, getattr(e, "where", "") or _users_line()) from None

    return entry  # type: ignore[return-value]


def _users_line() -> str:
    """``FILE:LINE`` of the first frame outside kfdefaults and the SDK (the user's ``@task`` or ``Elastic`` line)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__", "").split(".")[0] not in SDK_PACKAGES:
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return ""
