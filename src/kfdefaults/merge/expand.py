"""A profile name -> the fragments that make it, lowest first: for each layer that defines it, its ``extends``
parents (each fully layered, in order), then its own body; the task layer last."""

from __future__ import annotations

from typing import Protocol

from ..errors import Finding, Location, ProfileError
from ..layers import FOLDER_LAYERS, Catalog
from ..validate.fragment import Definition, Fragment
from ..validate.suggest import closest


def _extends_location(definition: Definition, parent: str) -> Location:
    """Where ``parent`` is written in the definition's ``extends`` (the list item, when a list)."""
    data = definition.document.data
    raw = data.get("extends") if isinstance(data, dict) else None
    if isinstance(raw, list) and parent in raw:
        return definition.document.location(("extends", raw.index(parent)))
    return definition.document.location(("extends",))


MAX_EXTENDS_DEPTH = 32
"""Deepest ``extends`` chain: a profile, its parent, the parent's parent... (a few in practice)."""

MAX_FRAGMENTS = 256
"""Most fragments one profile may expand to (each layer's definition and every parent, fully layered)."""


class Definitions(Protocol):
    """Where :func:`expand` finds definitions: the pipeline's catalog and loader."""

    catalog: Catalog
    expanded: dict[str, list[Fragment]]
    """Profiles already expanded, by name (a parent reached by several paths is expanded once)."""

    def definition(self, name: str, layer: str) -> Definition | None:
        """The definition of ``name`` in ``layer``, or ``None``.

        Raises:
            ProfileError: two files of the layer define it, or the file is invalid.
        """
        ...


def _expanded_parent(source: Definitions, name: str, stack: tuple[tuple[str, str], ...]) -> list[Fragment]:
    """:func:`expand` of a parent, remembered: a parent reached by several paths is read once."""
    if name not in source.expanded:
        source.expanded[name] = expand(source, name, None, stack)
    return source.expanded[name]


def expand(source: Definitions, name: str, task: Fragment | None = None,
           _stack: tuple[tuple[str, str], ...] = ()) -> list[Fragment]:
    """The fragments that make up profile ``name``, lowest first.

    For each layer that defines ``name``: the definition's parents, each expanded across all layers, in
    the order ``extends`` lists them, then the definition's own body. ``task`` (the task layer) comes last.

    Raises:
        ProfileError: the profile is defined nowhere, a parent is unknown, ``extends`` forms a cycle,
            or a file is invalid.
    """
    catalog = source.catalog
    fragments: list[Fragment] = []
    found = False
    for layer in FOLDER_LAYERS:
        definition = source.definition(name, layer)
        if definition is None:
            continue
        found = True
        for parent in definition.parents:
            chain = [n for n, _ in _stack] + [name]
            if parent in chain:
                files = " -> ".join(f"{n} ({f})" for n, f in _stack + ((name, definition.file),))
                raise ProfileError([Finding(_extends_location(definition, parent), "extends",
                                            f"`extends` forms a cycle: {files} -> {parent}", layer=layer)])
            if not catalog.layers_defining(parent):
                hint = closest(parent, [n for n in catalog.names() if n != name])
                raise ProfileError([Finding(_extends_location(definition, parent), "extends",
                                            f"unknown parent profile {parent!r}" + (f"; did you mean {hint!r}?" if hint else "")
                                            + f" (extended by {definition.file})", layer=layer)])
            if len(_stack) + 1 >= MAX_EXTENDS_DEPTH:
                raise ProfileError([Finding(_extends_location(definition, parent), "extends",
                                            f"`extends` chains more than {MAX_EXTENDS_DEPTH} profiles deep", layer=layer)])
            fragments.extend(_expanded_parent(source, parent, _stack + ((name, definition.file),)))
            if len(fragments) > MAX_FRAGMENTS:
                raise ProfileError([Finding(_extends_location(definition, parent), "extends",
                                            f"`extends` expands {name!r} to more than {MAX_FRAGMENTS} fragments (a parent "
                                            "reached by several paths is applied once for each)", layer=layer)])
        fragments.append(definition.fragment)
    if not found:
        hint = closest(name, catalog.names())
        hint_text = f"; did you mean {hint!r}?" if hint else ""
        raise ProfileError([Finding(Location("kfdefaults"), "", f"no profile named {name!r}{hint_text} "
                                    f"(searched {catalog.searched()})")])
    if task is not None:
        fragments.append(task)
    return fragments
