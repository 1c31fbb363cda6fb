"""A profile's definitions -> the fragments that make it, lowest first: for each layer that defines it, its
``extends`` parents (each fully layered, in order), then its own body. Pure: the pipeline reads the definitions
(:meth:`kfdefaults.pipeline.Pipeline.definitions`) and hands them over."""

from __future__ import annotations

from typing import Mapping, Sequence

from ..errors import Finding, Location, ProfileError
from ..validate.fragment import Definition, Fragment


def extends_location(definition: Definition, parent: str) -> Location:
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


def expand(name: str, definitions: Mapping[str, Sequence[Definition]]) -> list[Fragment]:
    """The fragments that make up profile ``name``, lowest first.

    For each layer that defines ``name`` (its definitions, lowest layer first): the definition's parents, each
    expanded across all layers, in the order ``extends`` lists them, then the definition's own body.

    Args:
        name: The profile.
        definitions: Every profile ``name`` is made of -> its definitions, lowest layer first (the pipeline reads
            them: :meth:`kfdefaults.pipeline.Pipeline.definitions`); every parent named by ``extends`` is there.

    Raises:
        ProfileError: ``extends`` forms a cycle, chains more than :data:`MAX_EXTENDS_DEPTH` profiles deep, or
            expands to more than :data:`MAX_FRAGMENTS` fragments.
    """
    expanded: dict[str, list[Fragment]] = {}
    return _expand(name, definitions, expanded, ())


def _expand(name: str, definitions: Mapping[str, Sequence[Definition]], expanded: dict[str, list[Fragment]],
            stack: tuple[tuple[str, str], ...]) -> list[Fragment]:
    """:func:`expand`, remembering each parent's fragments (a parent reached by several paths is expanded once),
    ``stack`` the chain of ``(profile, file)`` that extends it."""
    if name in expanded:
        return expanded[name]
    fragments: list[Fragment] = []
    for definition in definitions[name]:
        for parent in definition.parents:
            chain = [n for n, _ in stack] + [name]
            if parent in chain:
                files = " -> ".join(f"{n} ({f})" for n, f in stack + ((name, definition.file),))
                raise ProfileError([Finding(extends_location(definition, parent), "extends",
                                            f"`extends` forms a cycle: {files} -> {parent}", layer=definition.layer)])
            if len(stack) + 1 >= MAX_EXTENDS_DEPTH:
                raise ProfileError([Finding(extends_location(definition, parent), "extends",
                                            f"`extends` chains more than {MAX_EXTENDS_DEPTH} profiles deep",
                                            layer=definition.layer)])
            fragments.extend(_expand(parent, definitions, expanded, stack + ((name, definition.file),)))
            if len(fragments) > MAX_FRAGMENTS:
                raise ProfileError([Finding(extends_location(definition, parent), "extends",
                                            f"`extends` expands {name!r} to more than {MAX_FRAGMENTS} fragments (a parent "
                                            "reached by several paths is applied once for each)", layer=definition.layer)])
        fragments.append(definition.fragment)
    expanded[name] = fragments
    return fragments
