"""Which profiles a project's code uses: the ``Elastic(profile=...)`` calls of its Python files, read without
importing them."""

from __future__ import annotations

import ast
import os
from typing import Iterator, NamedTuple

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


def profiles_used(root: str) -> list[Use]:
    """Every ``Elastic(...)`` call (``Elastic``, ``kfdefaults.Elastic``, ``kfdefaults.flyte2.Elastic``, any
    ``x.Elastic``) in the ``*.py`` files under ``root``, in file and line order. A file that does not parse is
    skipped: ``kfdefaults lock`` is not a linter of the project's code."""
    out = []
    for path in _python_files(root):
        try:
            with open(path, "rb") as f:
                tree = ast.parse(f.read(), filename=path)
        except (OSError, SyntaxError, ValueError):
            continue
        relative = os.path.relpath(path, root).replace(os.sep, "/")
        for node in ast.walk(tree):
            if _is_elastic_call(node):
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


def _is_elastic_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "Elastic") or (isinstance(func, ast.Attribute) and func.attr == "Elastic")


def _profile_of(call: ast.Call) -> tuple[bool, str | None]:
    """Whether the call names a profile (``Elastic("x")``, ``Elastic(profile=NAME)``), and the name when it is a
    string literal. The plugins' own ``Elastic(nnodes=2)`` names none."""
    value = next((k.value for k in call.keywords if k.arg == "profile"), call.args[0] if call.args else None)
    if value is None or (isinstance(value, ast.Constant) and not isinstance(value.value, str)):
        return False, None
    return True, value.value if isinstance(value, ast.Constant) else None
