"""Which profiles a project's code uses: the ``Elastic(profile=...)`` calls of its Python files, read without
importing them."""

from __future__ import annotations

import ast
import os
from typing import Iterator, NamedTuple

from ..errors import ProfileError
from ..read.files import read_regular_file

SKIPPED_FOLDERS = frozenset({"node_modules", "site-packages", "__pycache__", "build", "dist", "venv", "env"})
"""Folders never searched, besides those whose name starts with a dot (``.venv``, ``.git``, ``.tox``)."""


class Use(NamedTuple):
    """One ``Elastic(...)`` call of the project's code.

    Attributes:
        file: The Python file, relative to the project's folder.
        line: Its line.
        column: Its column (1-based).
        profile: The profile name, or ``None`` when it is not written as a string literal.
    """

    file: str
    line: int
    column: int
    profile: str | None


MAX_SOURCE_BYTES = 1 << 20
"""Largest Python file read (1 MiB): a module that calls ``Elastic(...)`` is code; a larger one (generated
data) is skipped, with a warning."""


def profiles_used(root: str, skipped: list[tuple[str, str]] | None = None) -> list[Use]:
    """Every ``Elastic(...)`` call (``Elastic``, ``kfdefaults.Elastic``, ``kfdefaults.flyte2.Elastic``, any
    ``x.Elastic``, and a name it is imported as: ``from kfdefaults import Elastic as E``) in the ``*.py`` files
    under ``root``, in file and line order.

    Only regular files of at most :data:`MAX_SOURCE_BYTES` that mention ``Elastic`` are parsed, each opened
    without waiting (a FIFO in a source folder never blocks the scan). A file that cannot be read, is too large,
    or does not parse (a syntax error, nesting deeper than Python's parser goes) is left out, with the reason
    appended to ``skipped`` as ``(file, reason)``: ``kfdefaults lock`` is not a linter of the project's code, but
    it says which files it could not read.
    """
    out = []
    for path in _python_files(root):
        relative = os.path.relpath(path, root).replace(os.sep, "/")
        try:
            raw = read_regular_file(path, MAX_SOURCE_BYTES, "Python file")
        except ProfileError as e:
            if skipped is not None:
                skipped.append((relative, e.findings[0].message))
            continue
        if b"Elastic" not in raw:
            continue
        try:
            tree = ast.parse(raw, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            if skipped is not None and not isinstance(e, SyntaxError):
                skipped.append((relative, f"Python's parser cannot read it ({type(e).__name__})"))
            continue
        names = _elastic_names(tree)
        for node in ast.walk(tree):
            if _is_elastic_call(node, names):
                found, profile = _profile_of(node)
                if found:
                    out.append(Use(relative, node.lineno, node.col_offset + 1, profile))
    return sorted(out, key=lambda use: (use.file, use.line))


def _python_files(root: str) -> Iterator[str]:
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in SKIPPED_FOLDERS)
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def _elastic_names(tree: ast.AST) -> frozenset[str]:
    """The names ``Elastic`` goes by in a module: itself, and each ``from ... import Elastic as NAME``."""
    return frozenset({"Elastic"} | {alias.asname for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                                    for alias in node.names if alias.name == "Elastic" and alias.asname})


def _is_elastic_call(node: ast.AST, names: frozenset[str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id in names) or (isinstance(func, ast.Attribute) and func.attr == "Elastic")


def _profile_of(call: ast.Call) -> tuple[bool, str | None]:
    """Whether the call names a profile (``Elastic("x")``, ``Elastic(profile=NAME)``), and the name when it is a
    string literal. The plugins' own ``Elastic(nnodes=2)`` names none."""
    value = next((k.value for k in call.keywords if k.arg == "profile"), call.args[0] if call.args else None)
    if value is None or (isinstance(value, ast.Constant) and not isinstance(value.value, str)):
        return False, None
    return True, value.value if isinstance(value, ast.Constant) else None
