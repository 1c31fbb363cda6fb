"""A cluster's nodes, as ``kubectl get nodes -o json`` prints them, read from a file or standard input, each
problem at its ``FILE:LINE:COLUMN``.

The file holds a ``List`` (or ``NodeList``) of Nodes, or one Node; ``-o yaml`` is read too. JSON is read by
Python's :mod:`json` and checked in about 0.15 s for a thousand nodes (15 MiB, measured on a loaded 2-core host);
the YAML reader of record (:func:`kfdefaults.read.parse_yaml_documents`, about 4.5 s per MiB) reads YAML, and reads a
JSON file again only when a node in it is wrong, to say where.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import Finding, Location, ProfileError
from ..k8s.nodes import NodeProblem, node_problems
from ..paths import format_path
from ..read import MANIFEST_BUDGET, Document, decode_text, parse_yaml_documents, read_input

NODE_LIST_MAX_BYTES = 64 << 20
"""The largest JSON node list read (64 MiB: about 2,000 nodes of 30 KiB, most of it ``status.images``). A YAML
list, and a JSON list whose problems must be located, keep :data:`~kfdefaults.read.MANIFEST_BUDGET` (1 MiB)."""

LIST_KINDS = ("List", "NodeList")


def read_nodes(file: str) -> list[dict[str, Any]]:
    """The nodes of ``file`` (``-`` for standard input), checked by :func:`kfdefaults.k8s.nodes.node_problems`.

    Returns:
        The nodes, in the order of the file, as plain data (each as ``kubectl get nodes -o json`` prints an item).

    Raises:
        ProfileError: the file cannot be read, is not JSON or YAML, holds no Node, or a node is not one, each
            problem at its ``FILE:LINE:COLUMN`` (at ``FILE:1:1``, with the path, in a JSON file over 1 MiB).
    """
    raw = read_input(file, NODE_LIST_MAX_BYTES)
    text = decode_text(raw, file)
    document: Document | None = None
    if text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise _error(Location(file, e.lineno, e.colno), (), f"not JSON: {e.msg}") from None
        except (ValueError, RecursionError) as e:  # an integer of thousands of digits, nesting past Python's stack
            raise _error(Location(file, 1, 1), (), f"not a node list: {e}") from None
    else:
        if len(raw) > MANIFEST_BUDGET.file_bytes:
            raise _error(Location(file, 1, 1), (), "a YAML node list is read up to 1 MiB: give `kubectl get nodes "
                                                   "-o json`")
        documents = parse_yaml_documents(text, file, MANIFEST_BUDGET)
        if len(documents) != 1:
            raise _error(Location(file, 1, 1), (), f"one node list per file, not {len(documents)} documents")
        document = documents[0]
        data = document.data
    nodes, problems = _items(data)
    if problems:
        if document is None and len(raw) <= MANIFEST_BUDGET.file_bytes:
            document = parse_yaml_documents(text, file, MANIFEST_BUDGET)[0]
        raise ProfileError([_finding(document, file, p) for p in problems])
    return nodes


def _items(data: Any) -> tuple[list[dict[str, Any]], list[NodeProblem]]:
    """The nodes of the document, and its problems (their paths from the document's root)."""
    if isinstance(data, dict) and data.get("kind") in LIST_KINDS:
        items = data.get("items")
        if not isinstance(items, list):
            return [], [NodeProblem(("items",) if "items" in data else (), "a List holds its nodes in `items`")]
        if not items:
            return [], [NodeProblem(("items",), "the list holds no Node: is `kubectl get nodes` looking at the "
                                                "right cluster?")]
        return items, [NodeProblem(("items", i) + p.path, p.message, p.key) for i, item in enumerate(items)
                       for p in node_problems(item)]
    if isinstance(data, dict) and "kind" not in data and "items" in data:
        return [], [NodeProblem((), "a node list says `kind: List`: give the output of `kubectl get nodes -o json`")]
    return [data], node_problems(data)


def _finding(document: Document | None, file: str, problem: NodeProblem) -> Finding:
    location = document.location(problem.path, key=problem.key) if document is not None else Location(file, 1, 1)
    return Finding(location, format_path(problem.path), problem.message)


def _error(location: Location, path: tuple, message: str) -> ProfileError:
    return ProfileError([Finding(location, format_path(path), message)])
