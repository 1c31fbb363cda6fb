"""The project a pipeline reads, and what it says: its ``pyproject.toml`` found by the one rule of every command, its
``kfdefaults.lock``; and how a step that may fail is read on by ``validate``."""

from __future__ import annotations

import os
from typing import Any, Sequence

from ..errors import Finding, ProfileError
from ..inputs import Inputs
from ..layers import NO_PROJECT, Project
from ..lock import LOCK_FILE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ..lock import Lock


def or_report(errors: list[Finding] | None, function: Any, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``; with ``errors`` given, a ``ProfileError`` it raises is added to them and the
    answer is ``None`` (``validate`` reports every broken source and reads the rest)."""
    try:
        return function(*args, **kwargs)
    except ProfileError as e:
        if errors is None:
            raise
        errors.extend(e.findings)
        return None


def find_project(project: Project | Sequence[str] | None, pyproject: bool = True,
                 inputs: Inputs | None = None) -> Project:
    """The project a pipeline reads: the one rule of every command (docs/layers.md, "The project").

    The project is the ``pyproject.toml`` in the working directory or the closest folder above it, unless one is
    named (``--project DIR``: DIR's, or the closest above DIR; ``Elastic(...)``: the calling module's folder, then
    the working directory). Nothing else brings a project: a ``--platform`` or ``--team`` folder inside another
    project does not make that project's ``[tool.kfdefaults]`` or ``kfdefaults.lock`` count.

    Args:
        project: The project, or the folders it is looked for from, in order; ``None``: the working directory.
        pyproject: ``False`` reads no project (``NO_PROJECT``).
        inputs: Records where it was looked for.
    """
    if not pyproject:
        return NO_PROJECT
    if isinstance(project, Project):
        if inputs is not None:
            inputs.update(project.inputs)
        return project
    return Project.find(list(project) if project is not None else [os.getcwd()], inputs)


def project_lock(project: Project, inputs: Inputs | None = None) -> Lock | None:
    """The project's ``kfdefaults.lock``, beside its ``pyproject.toml``, if it has one; ``inputs`` records it.

    Raises:
        ProfileError: the file is broken.
    """
    path = os.path.join(project.root, LOCK_FILE) if project.root else None
    if path is None:
        return None
    present = inputs.look(path) is not None if inputs is not None else os.path.lexists(path)
    if not present:
        return None
    from ..lock import read_lock  # lazy: the reader of the lock (tomllib, its checks), only where there is one

    return read_lock(path, inputs)


def profiles_in_use(project: Project, lock: Lock | None, index: dict[str, dict[str, list[str]]]) -> set[str]:
    """The profiles a project defines or uses, whose warnings ``validate`` reports: those a layer above the builtin
    one defines (``index``: :meth:`kfdefaults.layers.catalog.Catalog.index`), those its ``kfdefaults.lock`` holds, and
    those an ``Elastic(profile="...")`` call of its code names (:func:`kfdefaults.lock.scan.profiles_used`). A
    builtin profile counts through them: a warning at its line is one a profile in use inherits. A project that
    defines and names none uses the builtin profiles as they are: all of them, then."""
    used = {name for layer, names in index.items() if layer != "builtin" for name in names}
    used |= set(lock.profiles) if lock is not None else set()
    if project.root is not None:
        from ..lock.scan import profiles_used  # lazy: the walk of the project's code, only where there is one

        used |= {use.profile for use in profiles_used(project.root) if use.profile}
    return used or {name for names in index.values() for name in names}
