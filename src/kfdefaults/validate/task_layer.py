"""The task layer -> a validated :class:`~.fragment.Fragment`: ``Elastic(...)`` keyword arguments,
``@task(pod_template=...)`` and ``--set``, validated as a profile file is, each value named by what set it."""

from __future__ import annotations

import math
from typing import Any, Mapping

from ..errors import Finding, Location, PathError, ProfileError
from ..paths import format_path, parse_path
from ..read import MAX_DEPTH, Document
from ..read.document import MAX_INT_DIGITS
from .fragment import Fragment, fragment_from_body

TASK_SOURCE = "overrides"


def _shape_problems(overrides: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What makes task-layer data unreadable before any validation: dotted keys, nesting, cycles.

    Files are held to :data:`kfdefaults.read.MAX_DEPTH` levels and integers of at most
    :data:`~kfdefaults.read.document.MAX_INT_DIGITS` digits by their reader; data from Python is held to the same
    here (a dictionary that contains itself would otherwise nest without end).
    """
    problems = []
    for key in overrides:
        head, dot, rest = key.partition(".") if isinstance(key, str) else ("", "", "")
        if dot and head in ("elastic", "pod_template"):
            problems.append((key, f"unknown field `{key}`: overrides are nested mappings, "
                                  f"write {{{head!r}: {{{rest!r}: ...}}}}"))
    stack: list[tuple[Any, tuple]] = [(overrides, ())]
    while stack:
        value, path = stack.pop()
        if len(path) >= MAX_DEPTH:
            problems.append(("", f"values nest deeper than {MAX_DEPTH} levels (or a value contains itself)"))
            break
        if isinstance(value, Mapping):
            for key, item in value.items():
                if _huge(key):
                    problems.append((format_path(path), _too_many_digits(key)))
                else:
                    stack.append((item, path + (key,)))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, path + (i,)) for i, v in enumerate(value))
        elif _huge(value):
            problems.append((format_path(path), _too_many_digits(value)))
    return problems


def _huge(value: Any) -> bool:
    """An int of more than :data:`~kfdefaults.read.document.MAX_INT_DIGITS` digits: a file cannot hold one, and
    Python converts none of more than 4,300 digits to text, which every message about it would."""
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**MAX_INT_DIGITS


def _too_many_digits(value: int) -> str:
    digits = int(value.bit_length() * math.log10(2)) + 1
    return (f"an integer of about {digits:,} digits; no profile value is that large (at most {MAX_INT_DIGITS} digits "
            "are read, as in a file)")


def task_fragment(
    name: str,
    overrides: Mapping[str, Any] | None,
    *,
    source: str = TASK_SOURCE,
    labels: Mapping[str, str] | None = None,
    kubernetes_version: str | None = None,
) -> Fragment | None:
    """The task layer as a :class:`~.fragment.Fragment`, validated like a profile file.

    Args:
        name: The profile the task layer applies to.
        overrides: A mapping in the shape of a profile file (``{"elastic": {...}, "pod_template": {...}}``).
        source: What to name as the origin of these values in messages and ``--explain``.
        labels: Dotted key -> origin label, for values with their own origin (each ``--set``).
        kubernetes_version: Kubernetes minor version of the schema the PodSpec fragment is checked against.

    Returns:
        The fragment, its :attr:`~.fragment.Fragment.warnings` those of a file holding the same values, located
        at ``source`` (or the label of the value); ``None`` for no overrides.

    Raises:
        ProfileError: the overrides do not validate, or set ``name`` or ``extends`` (which belong to files);
            locations name ``source``.
        TypeError: ``overrides`` is not a mapping.
    """
    if not overrides:
        return None
    if not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a mapping in the shape of a profile file, not {type(overrides).__name__}")
    file_only = [k for k in ("name", "extends", "locked", "deprecated") if k in overrides]
    if file_only:
        raise ProfileError([Finding(Location(task_label(k, labels or {}) or source), k,
                                    f"`{k}` belongs to a profile file; the task layer sets `elastic` and `pod_template`"
                                    + (" (a lock holds against the task layer, which can lock nothing)" if k == "locked" else ""),
                                    layer="task") for k in file_only])
    problems = _shape_problems(overrides)
    if problems:
        raise ProfileError([Finding(Location(task_label(path, labels or {}) or source), path, message, layer="task")
                            for path, message in problems])
    # lazy: the validation machinery (pydantic and the section models) costs about a quarter of a second to
    # import, which a task without a task layer does not need
    from .body import validate_body

    allowed = {k: v for k, v in overrides.items()}
    doc = Document(source, allowed)
    warnings: list[Finding] = []  # kept, as a file's are: `timeout` without `join_timeout` warns from here too
    body, findings = validate_body(doc, allowed, "task", kubernetes_version, warnings=warnings)
    for f in findings + warnings:
        f.location = Location(task_label(f.path, labels or {}) or source)
    if findings:
        raise ProfileError(findings)
    fragment = fragment_from_body(name, "task", source, body, None)
    fragment.locations = dict(labels or {})
    fragment.warnings = warnings
    return fragment


def task_label(path: str, labels: Mapping[str, str]) -> str | None:
    """The origin label of a task-layer value at the written ``path`` (``--set KEY=VALUE``, ``Elastic(key=...)``).

    ``labels`` maps keys as given (``pod_template.spec.containers[name=primary].image``) or with their list
    selectors dropped (``pod_template.spec.containers.image``) to labels. The longest key that ``path``
    starts with wins, so a value set as a whole mapping is named by the ``--set`` that set the mapping.
    """
    try:
        parts = parse_path(path, positions=True)
    except PathError:
        return labels.get(path)
    prefixes = [parts[:n] for n in range(len(parts), 0, -1)]
    for candidate in prefixes:
        for key in (format_path(candidate), format_path([p for p in candidate if isinstance(p, str)])):
            if key in labels:
                return labels[key]
    # a value a --set wrote below ``path`` or beside it in the same list item (an unknown key ``labels`` from
    # ``--set labels.a=b``; the merge key ``containers[name=].name`` of ``--set containers[name=].image=x``)
    for candidate in prefixes:
        if candidate is not parts and isinstance(candidate[-1], str):
            continue
        written = format_path(candidate)
        below = sorted(label for key, label in labels.items()
                       if key.startswith(written + ".") or key.startswith(written + "["))
        if below:
            return below[0]
    return None
