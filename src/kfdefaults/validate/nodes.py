"""A cluster's nodes, as ``kubectl get nodes -o json`` prints them, read from a file or standard input, each
problem at its ``FILE:LINE:COLUMN``.

The file holds a ``List`` (or ``NodeList``) of Nodes, or one Node; ``-o yaml`` is read too. JSON is read by
Python's :mod:`json` and checked in about 0.15 s for a thousand nodes (15 MiB, measured on a loaded 2-core host),
and a position in it is found when asked for (:class:`kfdefaults.read.json_positions.JsonDocument`); YAML is read
by the YAML reader of record (:func:`kfdefaults.read.parse_yaml_documents`, about 4.5 s per MiB), up to 1 MiB.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

from ..errors import Finding, Location, ProfileError, shown
from ..inputs import Inputs
from ..k8s.nodes import NodeProblem, node_problems
from ..paths import format_path
from ..read import MANIFEST_BUDGET, Document, decode_text, parse_yaml_documents, read_input
from ..read.files import read_regular_file
from ..read.json_positions import JsonDocument

NODE_LIST_MAX_BYTES = 64 << 20
"""The largest JSON node list read (64 MiB: about 2,000 nodes of 30 KiB, most of it ``status.images``). A YAML
list keeps :data:`~kfdefaults.read.MANIFEST_BUDGET` (1 MiB)."""

MAX_LISTED_NODES = 20_000
"""Most nodes a node list may hold: more than any cluster kubectl lists in :data:`NODE_LIST_MAX_BYTES` (Kubernetes
supports clusters of 5,000 nodes, GKE of 15,000; a node kubectl prints is 2 KiB or more without its images). Each
node is checked and grouped, some 0.2 ms: 64 MiB of tiny nodes took two minutes and 1.4 GB of memory."""

LIST_KINDS = ("List", "NodeList")


class NodeList:
    """The nodes of a file, and where each was written.

    Attributes:
        file: The file (``-``: standard input).
        nodes: The nodes, in the order of the file, as plain data (each as ``kubectl get nodes -o json`` prints an
            item).
        document: The parsed file, for :meth:`location`.
        is_list: Whether the file holds a list (``items``), rather than one Node.
    """

    def __init__(self, file: str, nodes: list[dict[str, Any]], document: Document | JsonDocument,
                 is_list: bool) -> None:
        self.file, self.nodes, self.document, self.is_list = file, nodes, document, is_list
        self._index = {id(n): i for i, n in enumerate(nodes)}

    def __repr__(self) -> str:
        return f"NodeList({self.file!r}, {len(self.nodes)} nodes)"

    def location(self, node: dict[str, Any], *path: str | int) -> Location:
        """Where ``path`` (``"status", "allocatable", "nvidia.com/gpu"``) of ``node``, one of :attr:`nodes`, is
        written: ``FILE:LINE:COLUMN``."""
        return self.document.location((("items", self._index[id(node)]) if self.is_list else ()) + path)


def read_nodes(file: str, inputs: Inputs | None = None, *, pipe: bool = True) -> NodeList:
    """The nodes of ``file`` (``-`` for standard input, or a pipe), checked by
    :func:`kfdefaults.k8s.nodes.node_problems`; ``inputs`` records a regular file's bytes.

    Args:
        file: The node list.
        inputs: Records the file read.
        pipe: Whether ``file`` may be standard input or a pipe (``--nodes``, the command line's); ``False`` for a
            file a repository names (the facts' ``nodes``), which must be a regular file, as a profile must: a
            pipe or a device there is refused without waiting on it, and ``-`` is a file of that name.

    Raises:
        ProfileError: the file cannot be read, is not JSON or YAML, holds no Node, or a node is not one, each
            problem at its ``FILE:LINE:COLUMN``.
    """
    raw = _read(file, inputs) if pipe else read_regular_file(file, NODE_LIST_MAX_BYTES, "node list", inputs)
    text = decode_text(raw, file)
    document: Document | JsonDocument
    if text.lstrip().startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise _error(Location(file, e.lineno, e.colno), (), f"not JSON: {e.msg}") from None
        except (ValueError, RecursionError) as e:  # an integer of thousands of digits, nesting past Python's stack
            raise _error(Location(file, 1, 1), (), f"not a node list: {e}") from None
        document = JsonDocument(file, text, data)
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
        raise ProfileError([Finding(document.location(p.path, key=p.key), shown(format_path(p.path), 200), p.message)
                            for p in problems])
    return NodeList(file, nodes, document, isinstance(data, dict) and data.get("kind") in LIST_KINDS)


def _read(file: str, inputs: Inputs | None) -> bytes:
    """A regular file's bytes, recorded in ``inputs``; standard input's or a pipe's (``<(kubectl get nodes -o
    json)``) as they come, which no manifest can record."""
    try:
        regular = file != "-" and stat.S_ISREG(os.stat(file).st_mode)
    except (OSError, ValueError):
        regular = False
    if regular:
        return read_regular_file(file, NODE_LIST_MAX_BYTES, "node list", inputs)
    return read_input(file, NODE_LIST_MAX_BYTES)


def _items(data: Any) -> tuple[list[dict[str, Any]], list[NodeProblem]]:
    """The nodes of the document, and its problems (their paths from the document's root)."""
    if isinstance(data, dict) and data.get("kind") in LIST_KINDS:
        items = data.get("items")
        if not isinstance(items, list):
            return [], [NodeProblem(("items",) if "items" in data else (), "a List holds its nodes in `items`")]
        if not items:
            return [], [NodeProblem(("items",), "the list holds no Node: is `kubectl get nodes` looking at the "
                                                "right cluster?")]
        if len(items) > MAX_LISTED_NODES:
            return [], [NodeProblem(("items", MAX_LISTED_NODES), f"more than {MAX_LISTED_NODES:,} nodes: kfdefaults "
                                    "reads a node list of at most that many, more than any cluster has")]
        problems = [NodeProblem(("items", i) + p.path, p.message, p.key) for i, item in enumerate(items)
                    for p in node_problems(item)]
        return items, problems or _duplicates(items)
    if isinstance(data, dict) and "kind" not in data and "items" in data:
        return [], [NodeProblem((), "a node list says `kind: List`: give the output of `kubectl get nodes -o json`")]
    return [data], node_problems(data)


def _duplicates(items: list[dict[str, Any]]) -> list[NodeProblem]:
    """A node named like an earlier one, at its name: the API server keeps one Node per name (a second create is
    ``AlreadyExists``, k8s.io/apiserver pkg/registry/generic/registry/store.go ``Create``), so such a list is two
    lists joined, or an edit."""
    first: dict[str, int] = {}
    found = []
    for i, item in enumerate(items):
        name = item["metadata"]["name"]
        if name in first:
            found.append(NodeProblem(("items", i, "metadata", "name"), f"a second node named {shown(name, 60)!r} (the "
                                     f"first is items[{first[name]}]): the API server keeps one Node per name; give "
                                     "one `kubectl get nodes -o json`"))
        else:
            first[name] = i
    return found


def _error(location: Location, path: tuple, message: str) -> ProfileError:
    return ProfileError([Finding(location, format_path(path), message)])
