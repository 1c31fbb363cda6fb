"""Who set a value of a merged profile: the highest fragment that writes (or removes) it, and where.

The merged checks (:mod:`kfdefaults.check.merged`, :mod:`kfdefaults.check.apiserver`) and ``auto``
(:mod:`.auto`) locate their findings with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import Location
from ..paths import format_path
from ..read import TOML_SUFFIXES

PathT = tuple


def _find_in(data: Any, steps: Sequence[Any], *, removal: bool = False) -> PathT | None:
    """Follow ``steps`` (keys, and ``(merge_key, value)`` selectors for list items) into ``data``.

    Returns:
        The concrete path (keys and list indices) to a non-null value, or ``None``. With ``removal``, the path of
        what removes the value at ``steps`` instead: a ``null`` at it or above it (``delete = [...]`` is read as
        such nulls), a ``$patch: delete`` mapping or list item on the way, or a ``$patch: replace`` mapping
        without the key (the path then ends with ``$patch``); ``None`` when ``data`` removes nothing there.
    """
    path: list[Any] = []
    node = data
    for step in steps:
        if isinstance(step, tuple):
            key, wanted = step
            if not isinstance(node, list):
                return None
            for i, item in enumerate(node):
                if isinstance(item, dict) and item.get(key) == wanted:
                    path.append(i)
                    node = item
                    break
            else:
                return None
            if removal and node.get("$patch") == "delete":
                return tuple(path) + ("$patch",)
        else:
            if not isinstance(node, dict):
                return None
            if removal and node.get("$patch") in ("delete", "replace") and (node["$patch"] == "delete" or step not in node):
                return tuple(path) + ("$patch",)
            if step not in node:
                return None
            path.append(step)
            node = node[step]
            if removal and node is None:
                return tuple(path)
    if removal:
        return None
    return tuple(path) if node is not None else None


@dataclass
class Setter:
    """Which fragment set a merged value, and where."""

    index: int
    layer: str
    location: Location


def setter(fragments: Sequence[Any], section: str, steps: Sequence[Any], *, removal: bool = False) -> Setter | None:
    """Who set a value of a merged profile: the one walk the merged checks share (:mod:`kfdefaults.check.merged`,
    :mod:`kfdefaults.check.apiserver`, ``auto`` in :mod:`.auto`). The highest fragment that sets the value at ``steps`` in its ``elastic`` or ``pod_template`` section (with
    ``removal``: that removes it, :func:`_find_in`).

    ``pod_template`` steps are in PodTemplateSpec shape (``["spec", "containers", ("name", "primary"), ...]``);
    the location is mapped back to the file's shape (``pod_template.spec...``, ``pod_template.labels``).
    """
    for index in range(len(fragments) - 1, -1, -1):
        fragment = fragments[index]
        data = fragment.elastic if section == "elastic" else fragment.pod_template
        found = _find_in(data, steps, removal=removal)
        if found is None:
            continue
        if section == "elastic":
            file_path: PathT = ("elastic",) + found
        elif found[:1] == ("metadata",):
            file_path = ("pod_template",) + found[1:]
        else:
            file_path = ("pod_template",) + found
        return Setter(index, fragment.layer, fragment.location(file_path))
    return None


def where(who: Setter | None) -> str:
    """``[layer] FILE:LINE:COLUMN`` of a setter, for a message that names several places."""
    return f"[{who.layer}] {who.location}" if who else "the defaults"


def deletion(paths: Sequence[Sequence[Any]], *setters: Setter | None) -> str:
    """How to delete ``paths`` in the file that the warning points at (the highest of ``setters``), written
    in that file's format: ``key: null`` in YAML, ``delete = ["..."]`` in TOML (which has no null)."""
    present = [s for s in setters if s is not None]
    top = max(present, key=lambda s: s.index) if present else None
    written = [format_path(tuple(p)) for p in paths]
    if top is not None and top.location.file.endswith(TOML_SUFFIXES):
        return "`delete = [" + ", ".join(f'"{w}"' if '"' not in w else f"'{w}'" for w in written) + "]`"
    return ", ".join(f"`{format_path(tuple(p)[-1:])}: null`" for p in paths) + \
        f" (or `delete: [{', '.join(written)}]`)"
