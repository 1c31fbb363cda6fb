"""The exceptions and warnings kfdefaults raises, and the one way a problem is written.

Every error that comes from user input carries where it came from, so that the command line can print
``FILE:LINE:COLUMN: [layer] dotted.path: message`` and Python callers can read the same fields. Paths are
written by :mod:`kfdefaults.paths`. The text of every error, finding and warning is one line a terminal or a log
shows as it is (:func:`kfdefaults.escape.printable`: a key or file name holding ESC or a line break cannot
write to the terminal or forge a line of a CI log); the attributes keep the text as the file wrote it.

Every exception class of kfdefaults is here: the public ones (:class:`KfdefaultsError`, :class:`ProfileError`,
:class:`MergeError`, :class:`KfdefaultsWarning`) and those its steps raise to one another (a path that cannot be
read, a ``--set`` that cannot, a field no profile has, a scalar YAML readers disagree on, what Flyte's backend
refuses, what the schema cannot resolve, where kubectl's Go code would panic or refuses a value). Importing this
module imports nothing else of kfdefaults but :mod:`kfdefaults.escape`.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, NamedTuple

from .escape import printable


class KfdefaultsError(Exception):
    """Base class of every error kfdefaults raises on purpose. Its text is :func:`~kfdefaults.escape.printable`."""

    def __str__(self) -> str:
        return printable(super().__str__())


class KfdefaultsWarning(UserWarning):
    """A choice kfdefaults made for the user that they should know about (``@task(shared_memory=...)`` winning
    over a profile's ``/dev/shm``, say). Its text is :func:`~kfdefaults.escape.printable`, as Python's
    ``warnings`` module prints it.

    Attributes:
        finding: The :class:`Finding` the warning says, when it says one (:meth:`of`): the command line lays it out
            as it lays out its own (``render --as flyte``); ``None`` otherwise.
    """

    finding: Finding | None = None

    @classmethod
    def of(cls, finding: Finding) -> KfdefaultsWarning:
        """The warning that says ``finding``, its text ``str(finding)``."""
        warning = cls(str(finding))
        warning.finding = finding
        return warning

    def __str__(self) -> str:
        return printable(super().__str__())


def caller_stacklevel(skip: Iterable[str]) -> int:
    """The ``stacklevel`` that points a warning at the user's code: the first frame whose module's top-level
    package is not in ``skip`` (kfdefaults and the SDK that called it: the ``@task`` line), counted from the
    caller of :func:`warnings.warn`."""
    import sys

    skipped = set(skip)
    frame, level = sys._getframe(1), 1
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.split(".")[0] not in skipped:
            return level
        frame, level = frame.f_back, level + 1
    return 1


def warn_at(message: str, function: Any) -> None:
    """A :class:`KfdefaultsWarning` located at the definition of ``function`` (the line of its first decorator,
    the ``@task`` line), as a warning raised there would be, once per place and message under Python's default
    filter: an SDK serializes a task far from the user's code."""
    import sys
    import warnings

    code = function.__code__
    module = sys.modules.get(function.__module__)
    registry = vars(module).setdefault("__warningregistry__", {}) if module is not None else None
    warnings.warn_explicit(message, KfdefaultsWarning, code.co_filename, code.co_firstlineno,
                           module=function.__module__, registry=registry)


def shown(text: str, keep: int = 20) -> str:
    """``text`` as a message quotes user input: whole when short, else its first ``keep`` characters and its length
    (``99999999999999999999... (4,400 characters)``), so that a hostile value never fills a terminal or a CI log."""
    return text if len(text) <= keep + 10 else f"{text[:keep]}... ({len(text):,} characters)"


class PathError(ValueError):
    """A dotted path that cannot be read (an empty segment, an unbalanced quote or bracket), or that names nothing
    the step reading it can take (``delete``, ``locked``: :mod:`kfdefaults.validate.deletions`,
    :mod:`kfdefaults.validate.locked`)."""


class SetError(ValueError):
    """A ``--set`` argument that cannot be read (:mod:`kfdefaults.validate.sets`)."""


class FieldError(ValueError):
    """A path that names no field of a profile (``kfdefaults fields``: :mod:`kfdefaults.show.fields`)."""


class AmbiguousScalar(ValueError):
    """A plain YAML scalar that YAML readers disagree on (``0755``) or that no profile holds (a 5,000-digit number)
    (:mod:`kfdefaults.read.scalars`)."""


class BackendError(KfdefaultsError):
    """What Flyte's backend would refuse: the task fails (``BadTaskSpecification`` and the like) with this message
    (:mod:`kfdefaults.backend`)."""


class ReceiptError(KfdefaultsError):
    """A receipt with differences, under a profile that asks for ``kfdefaults.io/receipt: strict``
    (:mod:`kfdefaults.receipt`).

    Attributes:
        receipt: The receipt (:func:`kfdefaults.receipt.document.receipt_document`).
    """

    def __init__(self, message: str, receipt: dict[str, Any]) -> None:
        super().__init__(message)
        self.receipt = receipt


class SchemaLookupError(Exception):
    """A field that the schema cannot resolve (kubectl's ``LookupPatchMetadata*`` errors: :mod:`kfdefaults.smp.schema`)."""


class GoPanic(Exception):
    """Where apimachinery's Go code would panic (kubectl crashes): the engine surfaces it as a :class:`MergeError`
    (:mod:`kfdefaults.smp.goruntime`)."""


class BadValue(Exception):
    """A value kubectl could not read (:mod:`kfdefaults.smp.goruntime`); ``steps`` collects its path, innermost first,
    as it propagates."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.steps: list[str | int] = []


class MergeError(KfdefaultsError, ValueError):
    """A strategic merge patch that Kubernetes rejects.

    Raised by :func:`kfdefaults.strategic_merge_patch` exactly where ``kubectl patch --type strategic``
    fails (an unknown ``$patch`` value, ``$patch: merge`` in a list, a list item without its merge key,
    a ``$retainKeys`` list that omits a key the patch sets, and so on), and for input that is not JSON data.

    Attributes:
        parts: The path of the offending value inside the patched document, as data: keys, and
            :class:`kfdefaults.paths.Select` for list items named by their merge key; ``()`` for the document.
        path: The same path written out (``spec.containers[name=primary].env``: :func:`kfdefaults.paths.format_path`,
            which the engine gives); ``""`` for the document itself.
        reason: The message without the path.
    """

    def __init__(self, parts: Iterable[Any], reason: str, path: str) -> None:
        self.parts = tuple(parts)
        self.path = path
        self.reason = reason
        super().__init__(f"{self.path}: {reason}" if self.path else reason)


class Location(NamedTuple):
    """Where a value was written: a file and a 1-based line and column, or a non-file source.

    Attributes:
        file: Path of the profile file, or a label such as ``--set`` or ``Elastic(nnodes=...)``
            for values that did not come from a file.
        line: 1-based line, 0 when unknown.
        column: 1-based column, 0 when unknown.
    """

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.column or 1}"
        return self.file


class Finding:
    """One problem found in a profile.

    Attributes:
        location: Where the offending value was written.
        path: Dotted path inside the profile (``pod_template.spec.containers[name=primary].image``).
        message: What is wrong and, where possible, how to fix it.
        severity: ``"error"`` or ``"warning"``.
        layer: The layer the file belongs to (``builtin``, ``platform``, ``team``, ``task``), if known.
        details: What the message says more, one sentence each (the figures and where each is written, what it
            holds): the command line prints them after the message, each after ``; ``.
    """

    __slots__ = ("location", "path", "message", "severity", "layer", "details")

    def __init__(self, location: Location, path: str, message: str, severity: str = "error",
                 layer: str | None = None, details: Iterable[str] = ()) -> None:
        self.location = location
        self.path = path
        self.message = message
        self.severity = severity
        self.layer = layer
        self.details = tuple(details)

    def _fields(self) -> tuple:
        return (self.location, self.path, self.message, self.severity, self.layer, self.details)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Finding) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"Finding(location={self.location!r}, path={self.path!r}, message={self.message!r}, "
                f"severity={self.severity!r}, layer={self.layer!r}, details={self.details!r})")

    def head(self) -> str:
        """``FILE:LINE:COLUMN: [layer] path: severity: ``, what the message follows (nothing of an error's)."""
        layer = f"[{self.layer}] " if self.layer else ""
        path = f"{self.path}: " if self.path else ""
        prefix = "" if self.severity == "error" else f"{self.severity}: "
        return f"{self.location}: {layer}{path}{prefix}"

    def __str__(self) -> str:
        """``FILE:LINE:COLUMN: [layer] path: message; detail; ...``, one line, :func:`~kfdefaults.escape.printable`
        (an exception's text, a Python warning, JSON's ``text``, the command line's)."""
        return printable("; ".join((self.head() + self.message, *(d.strip() for d in self.details))))


class ProfileError(KfdefaultsError):
    """One or more problems in profile files, each with its location.

    Its message is complete in its first line (the first problem, and how many more follow), so that the last
    line a traceback prints says it all (under ``pyflyte``, say); each further problem has a line of its own.

    Attributes:
        findings: Every error found (warnings are not included); never empty.
    """

    def __init__(self, findings: list[Finding] | None = None) -> None:
        self.findings: list[Finding] = list(findings or [])
        super().__init__(self.findings)

    def __str__(self) -> str:
        lines = [str(f) for f in self.findings]
        if len(lines) > 1:
            more = len(lines) - 1
            lines[0] += f" (and {more} more problem{'s' * (more != 1)}, below)"
        return "\n".join(lines)


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Findings without repeats, in file, line and column order (the order they were found within a line)."""
    seen: set[tuple[Any, ...]] = set()
    unique: list[Finding] = []
    for f in findings:
        mark = (str(f.location), f.path, f.message, f.severity)
        if mark not in seen:
            seen.add(mark)
            unique.append(f)
    order = {id(f): i for i, f in enumerate(unique)}
    return sorted(unique, key=lambda f: (f.location.file, f.location.line, f.location.column, order[id(f)]))


def once_per_cause(by_profile: dict[str, list[Finding]]) -> list[Finding]:
    """The findings of several profiles, each problem once: findings at one location and path whose messages differ
    only in their figures (the same check, run for two profiles on pools of other start times) are one cause, said
    by the first profile's finding; when it stands for more than one profile, a detail names them."""
    causes: dict[tuple, tuple[Finding, list[str]]] = {}
    for name, findings in by_profile.items():
        for f in findings:
            key = (str(f.location), f.path, f.severity, _FIGURES.sub("#", f.message))
            first, names = causes.setdefault(key, (f, []))
            if name not in names:
                names.append(name)
    out = []
    for f, names in causes.values():
        if len(names) > 1:
            f = Finding(f.location, f.path, f.message, f.severity, f.layer,
                        (*f.details, f"for profiles {', '.join(shown(n, 40) for n in names[:10])}"
                                     + (f" and {len(names) - 10} more" if len(names) > 10 else "")))
        out.append(f)
    return out


_FIGURES = re.compile(r"[0-9]+")


def relative_path(path: str) -> str:
    """``path`` relative to the working folder when it is under it (``platform/h100.yaml``), else as given."""
    here = _working_folder()
    return path[len(here):] if here and path.startswith(here) else path


def relative_text(text: str) -> str:
    """``text`` with every path under the working folder in it written relative to it (a message that names
    ``/home/me/project/platform/h100.yaml:4:11`` names ``platform/h100.yaml:4:11``)."""
    here = _working_folder()
    return text.replace(here, "") if here else text


def _working_folder() -> str | None:
    """The working folder with a trailing separator; ``None`` for the root, or a folder that is gone."""
    try:
        here = os.getcwd()
    except OSError:
        return None
    return None if here == os.sep else here.rstrip(os.sep) + os.sep
