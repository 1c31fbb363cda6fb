"""What validation gives the merge: a :class:`Fragment` (one layer's contribution to a profile) and a
:class:`Definition` (one file's definition of a profile, its ``extends`` and warnings)."""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import Finding, Location
from ..paths import format_path, parse_path
from ..read import Document

PathT = tuple


class Lock:
    """One entry of a profile's ``locked`` list: a path that the fragments merged after it may not change.

    Attributes:
        text: The path as written (``pod_template.spec.tolerations``).
        steps: The path read by :func:`kfdefaults.paths.parse_path`: keys, and ``(merge key, value)`` tuples for
            list items (``containers[name=primary]``).
        location: Where the entry is written (``FILE:LINE:COLUMN``).
    """

    __slots__ = ("text", "steps", "location")

    def __init__(self, text: str, steps: list[Any], location: Location) -> None:
        self.text = text
        self.steps = steps
        self.location = location

    def __repr__(self) -> str:
        return f"Lock({self.text!r}, at={str(self.location)!r})"


def locks_of(document: Document, texts: list[str] | None) -> list[Lock]:
    """The :class:`Lock` of each entry of a validated ``locked`` list, located in ``document``."""
    return [Lock(text, parse_path(text, item=True), document.location(("locked", i))) for i, text in enumerate(texts or [])]


class Fragment:
    """One layer's contribution to a profile, ready to merge.

    Attributes:
        profile: The profile name the fragment defines.
        layer: ``builtin``, ``platform``, ``team`` or ``task``.
        source: The file, or for the task layer what set it (``--set``, ``Elastic(...)``, ``@task(pod_template=...)``).
        document: The parsed file, for positions; ``None`` for task-layer fragments.
        description: The ``description`` it sets, if any.
        elastic: Its ``elastic`` section as written (``None`` values delete).
        pod_template: Its pod template as a PodTemplateSpec strategic merge patch
            (``{"metadata": {"labels": ..., "annotations": ...}, "spec": ...}``); ``{}`` when it has none.
        primary_container_name: The name it sets, ``None`` when it sets none.
        locations: For task-layer fragments: written path, list selectors left out -> label of where the value
            came from (``--set KEY=VALUE``, ``Elastic(nnodes=2)``).
        warnings: For task-layer fragments: what their checks warn about, as a file's warnings (a file's are
            its :class:`Definition`'s).
        locks: The paths the file locks (its ``locked`` list): the fragments merged after this one may not change
            them (:mod:`kfdefaults.merge.locks`).
        deprecated: The file's ``deprecated`` text (what to use instead), or ``None``.
    """

    __slots__ = ("profile", "layer", "source", "document", "description", "elastic", "pod_template",
                 "primary_container_name", "locations", "warnings", "locks", "deprecated")

    def __init__(
        self,
        profile: str,
        layer: str,
        source: str,
        document: Document | None,
        description: str | None = None,
        elastic: dict[str, Any] | None = None,
        pod_template: dict[str, Any] | None = None,
        primary_container_name: str | None = None,
        locations: dict[str, str] | None = None,
        warnings: list[Finding] | None = None,
        locks: list[Lock] | None = None,
        deprecated: str | None = None,
    ) -> None:
        self.profile = profile
        self.layer = layer
        self.source = source
        self.document = document
        self.description = description
        self.elastic: dict[str, Any] = {} if elastic is None else elastic
        self.pod_template: dict[str, Any] = {} if pod_template is None else pod_template
        self.primary_container_name = primary_container_name
        self.locations: dict[str, str] = {} if locations is None else locations
        self.warnings: list[Finding] = [] if warnings is None else warnings
        self.locks: list[Lock] = [] if locks is None else locks
        self.deprecated = deprecated

    def __repr__(self) -> str:
        return f"Fragment({self.profile!r}, layer={self.layer!r}, source={self.source!r})"

    def replace(self, **changes: Any) -> Fragment:
        """A copy with some attributes changed."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return Fragment(**values)

    def location(self, file_path: PathT, *, key: bool = False) -> Location:
        """Where the value at ``file_path`` (a path in the profile file's shape) was written: a position in the
        file, or for the task layer the label of what set it (the longest path in :attr:`locations` that
        ``file_path`` starts with, list positions left out), else :attr:`source`."""
        if self.document is not None:
            return self.document.location(file_path, key=key)
        keys = [p for p in file_path if not isinstance(p, int)]
        while keys:
            label = self.locations.get(format_path(keys))
            if label is not None:
                return Location(label)
            keys.pop()
        return Location(self.source)


class Definition:
    """One file's definition of a profile.

    Attributes:
        name: The profile name.
        layer: The layer of the folder the file is in.
        file: The file.
        document: The parsed file.
        parents: Names in ``extends``, in order.
        fragment: The file's own body as a :class:`Fragment`.
        warnings: What the file's checks warn about (the file is valid nonetheless).
    """

    __slots__ = ("name", "layer", "file", "document", "parents", "fragment", "warnings")

    def __init__(self, name: str, layer: str, file: str, document: Document, parents: list[str], fragment: Fragment,
                 warnings: list[Finding] | None = None) -> None:
        self.name = name
        self.layer = layer
        self.file = file
        self.document = document
        self.parents = parents
        self.fragment = fragment
        self.warnings: list[Finding] = [] if warnings is None else warnings

    def __repr__(self) -> str:
        return f"Definition({self.name!r}, layer={self.layer!r}, file={self.file!r})"


def pod_template_patch(section: Mapping[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """Split a profile's ``pod_template`` section into a PodTemplateSpec patch and the primary container name.

    ``labels`` and ``annotations`` go to ``metadata``; ``spec`` stays ``spec``.
    """
    if not section:
        return {}, None
    patch: dict[str, Any] = {}
    metadata = {k: section[k] for k in ("labels", "annotations") if k in section}
    if metadata:
        patch["metadata"] = metadata
    if "spec" in section:
        patch["spec"] = section["spec"]
    return patch, section.get("primary_container_name")


def fragment_from_body(name: str, layer: str, source: str, body: Any, document: Document | None) -> Fragment:
    """Build a :class:`Fragment` from a validated :class:`~kfdefaults.validate.model.ProfileFile`."""
    raw_elastic = body.elastic.model_dump(exclude_unset=True) if body.elastic else {}
    pod_section = body.pod_template.model_dump(exclude_unset=True) if body.pod_template else None
    patch, primary = pod_template_patch(pod_section)
    description = body.description
    if description is None and "description" in body.model_fields_set:
        description = ""  # `description: null` deletes the description below, like any null
    locks = locks_of(document, body.locked) if document is not None else []
    return Fragment(name, layer, source, document, description, raw_elastic, patch, primary,
                    locks=locks, deprecated=body.deprecated)
