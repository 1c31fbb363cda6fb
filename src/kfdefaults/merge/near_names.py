"""Containers a layer adds by accident: a new container whose name is a near miss of the primary container's
(``primay``, ``Primary``) or of a container the layers below already have.

Strategic merge patch merges ``containers`` by ``name``: an item whose name matches no container below is a new
container. A team file, a ``--set`` or a task that misspells the primary container's name therefore adds a second
container (a sidecar), and what it meant for the primary container (an image, GPUs, an environment variable)
goes to that sidecar instead, silently. :func:`near_miss_containers` makes that an error with the name meant.

A deliberate sidecar is unaffected as long as its name is not a near miss of another container's: ``log-shipper``
beside ``primary`` is fine, and so are siblings numbered or lettered in their last dash-separated part
(``worker-1`` beside ``worker-2``).
"""

from __future__ import annotations

from ..errors import Finding, Location
from ..paths import format_path
from ..validate.fragment import Fragment
from ..validate.task_layer import task_label
from .result import Resolved


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance with adjacent transpositions counted as one edit (optimal string alignment)."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][len(b)]


def is_near_miss(name: str, other: str) -> bool:
    """Whether ``name`` reads as a typo of ``other``: the same but for case, or one edit away (two for names of
    eight characters or more), unless both are numbered or lettered siblings (``worker-1``, ``worker-2``;
    ``sidecar-a``, ``sidecar-b``) or one is three characters or shorter (``app``, ``api``), where one edit makes
    another word."""
    if name == other:
        return False
    if name.lower() == other.lower():
        return True
    if "-" in name and "-" in other and name.rsplit("-", 1)[0] == other.rsplit("-", 1)[0]:
        ends = name.rsplit("-", 1)[1], other.rsplit("-", 1)[1]
        if all(e.isdigit() for e in ends) or all(len(e) <= 2 for e in ends):
            return False  # numbered or lettered siblings: worker-1, worker-2; sidecar-a, sidecar-b
    shortest = min(len(name), len(other))
    if shortest <= 3:
        return False
    return edit_distance(name.lower(), other.lower()) <= (2 if shortest >= 8 else 1)


def near_miss_containers(before: Resolved, fragment: Fragment, primary_names: tuple[str, ...]) -> list[Finding]:
    """Errors for the containers ``fragment`` adds whose names are near misses of a container's below it or of
    the primary container's.

    Args:
        before: The merge of the fragments below ``fragment``.
        fragment: The fragment being merged, its containers named as :func:`~.primary.assign_primary_container`
            names them.
        primary_names: The primary container's names: as this fragment sees it, and as the merge names it.

    Returns:
        One error per such container, at its ``name`` in the fragment (a file's line, or the ``--set`` that
        added it), saying which name was probably meant.
    """
    spec = fragment.pod_template.get("spec") if isinstance(fragment.pod_template, dict) else None
    items = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(items, list):
        return []
    below = [c.get("name") for c in ((before.pod_template_spec.get("spec") or {}).get("containers") or [])
             if isinstance(c, dict) and isinstance(c.get("name"), str)]
    known = list(dict.fromkeys([*primary_names, *below]))
    findings = []
    for index, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or name in below or name in primary_names or item.get("$patch") == "delete":
            continue
        meant = next((other for other in known if is_near_miss(name, other)), None)
        if meant is None:
            continue
        role = "the primary container, which runs the task" if meant in primary_names else "a container of the layers below"
        fields = [k for k in item if k != "name" and not k.startswith("$")]
        carried = f" (its {', '.join(fields)})" if fields else ""
        findings.append(Finding(
            _name_location(fragment, index, name),
            format_path(("pod_template", "spec", "containers", ("name", name))),
            f"adds a new container `{name}`; did you mean `{meant}` ({role})? Containers merge by name, so this "
            f"makes a second container and what is written here{carried} goes to it, not to `{meant}`. A sidecar "
            "meant as one needs a name that is not a near miss of another container's"
            + (f"; or, if `{name}` is the container that runs the task, set primary_container_name: {name}"
               if meant in primary_names and fragment.primary_container_name is not None else ""),
            layer=fragment.layer,
        ))
    return findings


def _name_location(fragment: Fragment, index: int, name: str) -> Location:
    """Where the fragment writes the name of its container ``index``: the file's line, or the ``--set`` (or other
    task-layer source) that selected that container."""
    if fragment.document is not None:
        return fragment.location(("pod_template", "spec", "containers", index, "name"))
    label = task_label(format_path(("pod_template", "spec", "containers", ("name", name), "name")), fragment.locations)
    return Location(label or fragment.source)
