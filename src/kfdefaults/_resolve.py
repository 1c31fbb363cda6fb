"""From a profile name to one merged profile: find its definitions, expand ``extends``, merge the layers.

The steps, in order:

1. :class:`Catalog` lists the profile files of every folder of every layer and knows which file defines
   which name, reading files only to find a ``name:`` that differs from the file stem.
2. :meth:`Catalog.definition` parses and validates one file into a :class:`Definition`.
3. :func:`expand` turns a name into the ordered list of :class:`Fragment` to apply: for each layer that defines
   it, the definition's parents (each fully layered, in order) and then its own body.
4. :func:`merge_fragments` folds the fragments: the ``elastic`` sections key by key, the pod templates with
   :func:`kfdefaults.strategic_merge_patch`.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Iterable, Mapping

from ._errors import Finding, Location, ProfileError
from ._layers import LAYERS, Folder, discover_folders, layer_sources
from ._source import Document, parse_bytes, read_bytes, read_document

PathT = tuple


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
        locations: For task-layer fragments: dotted path -> label of where the value came from.
    """

    __slots__ = ("profile", "layer", "source", "document", "description", "elastic", "pod_template",
                 "primary_container_name", "locations")

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

    def __repr__(self) -> str:
        return f"Fragment({self.profile!r}, layer={self.layer!r}, source={self.source!r})"

    def replace(self, **changes: Any) -> Fragment:
        """A copy with some attributes changed."""
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return Fragment(**values)

    def location(self, file_path: PathT, *, key: bool = False) -> Location:
        """Where the value at ``file_path`` (a path in the profile file's shape) was written."""
        if self.document is not None:
            return self.document.location(file_path, key=key)
        dotted = ".".join(str(p) for p in file_path if not isinstance(p, int))
        while dotted:
            if dotted in self.locations:
                return Location(self.locations[dotted])
            dotted = dotted.rpartition(".")[0]
        return Location(self.source)


def _dotted(path: PathT) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


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


def _validate_body(
    doc: Document,
    data: Any,
    layer: str,
    kubernetes_version: str | None = None,
    *,
    warnings: list[Finding] | None = None,
) -> tuple[Any, list[Finding]]:
    """Validate a profile body: the pydantic models, then :func:`kfdefaults._validate.check_body`
    (``rdzv_configs`` key by key, the PodSpec fragment against the strict Kubernetes schema).

    Args:
        doc: The parsed file; findings carry its positions.
        data: The body.
        layer: The layer, named in findings.
        kubernetes_version: Kubernetes minor version of the schema for ``pod_template.spec``.
        warnings: If given, the warnings found are appended to it.

    Returns:
        ``(body, errors)``: the validated :class:`~kfdefaults._model.ProfileFile` and ``[]``, or ``None`` and every
        error found, in file order.
    """
    from pydantic import ValidationError

    from ._model import ProfileFile
    from ._validate import check_body, sorted_findings

    if not isinstance(data, dict) or not data:
        kinds = {str: "a string", int: "a number", float: "a number", bool: "a boolean", list: "a list"}
        what = "empty" if not data else kinds.get(type(data), f"a {type(data).__name__}")
        return None, [Finding(doc.location(()), "", "a profile must be a mapping that says something (keys among "
                              f"name, description, extends, elastic, pod_template); this file is {what}", layer=layer)]
    findings = check_body(doc, data, layer, kubernetes_version)
    try:
        body = ProfileFile.model_validate(data)
    except ValidationError as e:
        body = None
        by_path: dict[str, Finding] = {}
        for err in e.errors(include_url=False):
            finding = _finding_from_pydantic(doc, err, layer)
            by_path[finding.path] = finding  # one per value: of a union's members, the last one pydantic tried
        findings += by_path.values()
    findings = sorted_findings(findings)
    errors = [f for f in findings if f.severity == "error"]
    if warnings is not None:
        warnings.extend(f for f in findings if f.severity != "error")
    return (None if errors else body), errors


def _finding_from_pydantic(doc: Document, err: Mapping[str, Any], layer: str) -> Finding:
    loc = tuple(err["loc"])
    # pydantic puts the union member it tried (``int``, ``str``, ``function-before[...]``) into ``loc``: keep the
    # parts that are keys or indices of the data, which a user's key such as ``int`` or ``a[b`` also is
    path_parts: list[Any] = []
    node = doc.data
    for part in loc:
        if isinstance(node, dict) and part in node or isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path_parts.append(part)
            node = node[part]
    path = tuple(path_parts)
    kind = err.get("type", "")
    msg = err.get("msg", "invalid value")
    if kind == "extra_forbidden":
        from ._suggest import ELASTIC_SYNONYMS, unknown_key_message

        key = path[-1] if path else loc[-1]
        known = _known_keys(path[:-1])
        synonyms = ELASTIC_SYNONYMS if path[:-1] == ("elastic",) else None
        message = unknown_key_message(str(key), known, synonyms=synonyms)
        section = _section_of(str(key)) if len(path) == 1 else None
        if section is not None:
            message = f"unknown field `{key}`; did you mean `{section}.{key}`?"
        return Finding(doc.location(path, key=True), _dotted(path), message, layer=layer)
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    value = err.get("input")
    scalar = not isinstance(value, (dict, list))  # a container's text may be long: never printed
    said = scalar and (f"got {value}" in msg or f"got {value!r}" in msg or msg.startswith(repr(value)))
    if kind not in ("missing",) and scalar and not said:
        msg = f"{msg} (got {value!r})"
    if kind in ("int_type", "float_type") and isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        msg = f"{msg}; write it without quotes"
    if kind == "string_type" and isinstance(value, (bool, int, float)):
        written = doc.plain_text.get(path, str(value).lower() if isinstance(value, bool) else str(value))
        msg = f'{msg}; quote it: "{written}"'
    return Finding(doc.location(path), _dotted(path), msg, layer=layer)


def _section_of(key: str) -> str | None:
    """The section a top-level key belongs in, for ``--set nnodes=2``: ``elastic``, ``pod_template``..."""
    from ._model import ElasticSection, PodTemplateSection

    if key in ElasticSection.model_fields:
        return "elastic"
    if key in PodTemplateSection.model_fields:
        return "pod_template"
    from ._k8s_schema import SchemaLookupError, schema_type

    try:
        schema_type("PodSpec").lookup_struct(key)
    except (SchemaLookupError, ValueError):
        return None
    return "pod_template.spec"


def _known_keys(path: PathT) -> list[str]:
    from ._model import ElasticSection, PodTemplateSection, ProfileFile, RunPolicySection

    models = {(): ProfileFile, ("elastic",): ElasticSection, ("pod_template",): PodTemplateSection,
              ("elastic", "run_policy"): RunPolicySection}
    model = models.get(tuple(path))
    return list(model.model_fields) if model else []


def fragment_from_body(name: str, layer: str, source: str, body: Any, document: Document | None) -> Fragment:
    """Build a :class:`Fragment` from a validated :class:`~kfdefaults._model.ProfileFile`."""
    raw_elastic = body.elastic.model_dump(exclude_unset=True) if body.elastic else {}
    pod_section = body.pod_template.model_dump(exclude_unset=True) if body.pod_template else None
    patch, primary = pod_template_patch(pod_section)
    description = body.description
    if description is None and "description" in body.model_fields_set:
        description = ""  # `description: null` deletes the description below, like any null
    return Fragment(name, layer, source, document, description, raw_elastic, patch, primary)


def _profile_file_names(folder: str) -> list[str]:
    """The names of the entries directly in ``folder`` named like profile files, sorted; no ``stat`` per entry.

    Every such entry counts, a broken symbolic link or a folder named ``x.yaml`` too: loading it then fails with
    a located error, where leaving it out would hide a profile without a word.
    """
    from ._source import PROFILE_SUFFIXES

    try:
        with os.scandir(folder) as entries:
            return sorted(e.name for e in entries if e.name.endswith(PROFILE_SUFFIXES) and not e.name.startswith("."))
    except OSError:
        return []


def folder_listing(folder: str) -> tuple[tuple[str, int, int], ...]:
    """``(file name, size, mtime_ns)`` of every profile file directly in ``folder``, sorted by name (size and time
    ``-1`` when they cannot be read); what the in-process memo of :func:`discover_and_expand` compares."""
    out = []
    for name in _profile_file_names(folder):
        try:
            st = os.stat(os.path.join(folder, name))
            out.append((name, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((name, -1, -1))
    return tuple(out)


def folder_names(folder: str) -> list[tuple[str, str]]:
    """``(file, profile name)`` for every profile file in ``folder``, in file-name order.

    The file name is the profile name (``gpu-large.yaml`` defines ``gpu-large``), so finding a profile reads
    no file: a folder of a thousand profiles costs one ``scandir``.
    """
    return [(os.path.join(folder, file), profile_name_of(file)) for file in _profile_file_names(folder)]


def profile_name_of(path: str) -> str:
    """The profile a file defines: its name without the suffix (``team/gpu-large.yaml`` -> ``gpu-large``)."""
    return os.path.splitext(os.path.basename(path))[0]


class Catalog:
    """Every profile visible through a set of folders, indexed by name and layer.

    Args:
        folders: The folders of each layer, as :func:`kfdefaults._layers.discover_folders` returns them.
    """

    def __init__(self, folders: Mapping[str, list[Folder]]) -> None:
        self.folders = folders
        self.expanded: dict[str, list[Fragment]] = {}  # parents already expanded, by name
        self._index: dict[str, dict[str, list[str]]] | None = None
        self._definitions: dict[str, Definition] = {}
        self.kubernetes_version: str | None = None
        """Kubernetes minor version of the schema that PodSpec fragments are checked against (default 1.32)."""

    @classmethod
    def discover(
        cls,
        platform: Iterable[str | os.PathLike[str]] = (),
        team: Iterable[str | os.PathLike[str]] = (),
        **kwargs: Any,
    ) -> Catalog:
        """A catalog of every layer source (flags, environment, entry points, pyproject.toml).

        Raises:
            ProfileError: a named folder does not exist, or pyproject.toml's ``[tool.kfdefaults]`` is invalid.
        """
        return cls(discover_folders(layer_sources(platform, team, **kwargs)))

    def index(self) -> dict[str, dict[str, list[str]]]:
        """layer -> profile name -> files defining it (normally one)."""
        if self._index is None:
            index: dict[str, dict[str, list[str]]] = {}
            for layer, folders in self.folders.items():
                names: dict[str, list[str]] = {}
                for folder in folders:
                    for path, name in folder_names(folder.path):
                        names.setdefault(name, []).append(path)
                index[layer] = names
            self._index = index
        return self._index

    def signature(self) -> tuple:
        """What the catalog's answers depend on: each folder's listing (names, sizes, times)."""
        return tuple((folder.path, folder_listing(folder.path)) for folders in self.folders.values() for folder in folders)

    def names(self) -> list[str]:
        """Every profile name of every layer, sorted."""
        return sorted({name for names in self.index().values() for name in names})

    def layers_defining(self, name: str) -> list[str]:
        """The layers that define ``name``, lowest first."""
        return [layer for layer in LAYERS if name in self.index().get(layer, {})]

    def files(self, name: str, layer: str) -> list[str]:
        return self.index().get(layer, {}).get(name, [])

    def definition(self, name: str, layer: str) -> Definition | None:
        """The definition of ``name`` in ``layer``, or ``None`` if the layer has none.

        Raises:
            ProfileError: two files of the layer define the name, or the file is invalid.
        """
        files = self.files(name, layer)
        if not files:
            return None
        if len(files) > 1:
            raise ProfileError(
                [Finding(Location(f, 1, 1), "", f"profile {name!r} is defined twice in the {layer} layer: "
                         f"{', '.join(files)}", layer=layer) for f in files[1:]]
            )
        return self.load(files[0], layer)

    def load(self, file: str, layer: str) -> Definition:
        """Parse and validate one profile file.

        Raises:
            ProfileError: every problem found in the file.
        """
        cached = self._definitions.get(file)
        if cached is not None:
            return cached
        from . import _cache
        from ._k8s_schema import normalize_version

        raw = read_bytes(file)
        from ._source import TOML_SUFFIXES

        # the same bytes are another document in the other format: the suffix chooses the parser
        file_format = "toml" if file.endswith(TOML_SUFFIXES) else "yaml"
        entry_key = _cache.key(raw, "profile", file_format, normalize_version(self.kubernetes_version))
        entry = _cache.load(entry_key)
        definition = _definition_from_entry(entry, file, layer) if entry is not None else None
        stem = profile_name_of(file)
        if definition is None:
            doc = parse_bytes(raw, file)
            warnings: list[Finding] = []
            body, findings = _validate_body(doc, doc.data, layer, self.kubernetes_version, warnings=warnings)
            if findings:
                raise ProfileError(findings)
            definition = Definition(body.name or stem, layer, file, doc, body.parents(),
                                    fragment_from_body(stem, layer, file, body, doc), warnings)
            _check_file_name(definition, stem)
            _cache.store(entry_key, _definition_to_entry(definition))
        else:
            _check_file_name(definition, stem)  # the cache keys a file by its content, not by its name
        self._definitions[file] = definition
        return definition


_EXPANDED: dict[tuple, tuple[tuple, list[Fragment]]] = {}


def discover_and_expand(
    name: str,
    platform: Iterable[str | os.PathLike[str]] = (),
    team: Iterable[str | os.PathLike[str]] = (),
    *,
    kubernetes_version: str | None = None,
) -> list[Fragment]:
    """:func:`expand` over a :meth:`Catalog.discover` catalog, remembered for the rest of the process.

    ``Elastic(profile=...)`` runs at every import of a workflow module, often many times for one profile. The
    answer is kept, keyed by the arguments and everything that names folders (the environment variables, the
    working directory, ``sys.path``), and reused as long as no folder's listing and no pyproject.toml changed
    (a few ``stat`` calls). A package of profiles installed while the process runs is seen by the next process.

    Raises:
        ProfileError: as :meth:`Catalog.discover` and :func:`expand`.
    """
    import sys

    from ._layers import NO_ENTRY_POINTS_ENV, PLATFORM_ENV, TEAM_ENV, nearest_pyproject

    cwd = os.getcwd()
    key = (name, tuple(os.fspath(p) for p in platform), tuple(os.fspath(t) for t in team),
           os.environ.get(PLATFORM_ENV, ""), os.environ.get(TEAM_ENV, ""), os.environ.get(NO_ENTRY_POINTS_ENV, ""),
           cwd, tuple(sys.path), kubernetes_version)

    def pyproject_stamp() -> tuple:
        path = nearest_pyproject(cwd)
        try:
            return (path, os.stat(path).st_mtime_ns) if path else (None,)
        except OSError:
            return (path, None)

    from ._env import flag

    hit = None if flag("KFDEFAULTS_NO_CACHE") else _EXPANDED.get(key)  # no cache: no memo either
    if hit is not None:
        (folders, signature, stamp), fragments = hit
        if stamp == pyproject_stamp() and tuple((f, folder_listing(f)) for f in folders) == signature:
            return fragments
    catalog = Catalog.discover(platform, team, flags=("platform=", "team="))
    catalog.kubernetes_version = kubernetes_version
    fragments = expand(catalog, name)
    signature = catalog.signature()
    _EXPANDED[key] = ((tuple(f for f, _ in signature), signature, pyproject_stamp()), fragments)
    return fragments


def _check_file_name(definition: Definition, stem: str) -> None:
    """The file name is the profile name: it must be one, and a ``name:`` in the file must say the same.

    Raises:
        ProfileError: the stem is not ``[a-z0-9][a-z0-9-]*`` (``gpu_large.yaml`` would silently be another
            profile than the ``gpu-large`` it means to change), or ``name:`` names another profile.
    """
    import re

    from ._layers import NAME_PATTERN

    doc, layer = definition.document, definition.layer
    suffix = os.path.splitext(doc.file)[1]
    if not re.fullmatch(NAME_PATTERN, stem):
        suggestion = re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-")
        hint = f": rename the file to `{suggestion}{suffix}`" if suggestion else ""
        raise ProfileError([Finding(Location(doc.file, 1, 1), "", f"the file name `{stem}` is not a profile name "
                                    f"(lower-case letters, digits and dashes){hint}", layer=layer)])
    if definition.name != stem:
        raise ProfileError([Finding(doc.location(("name",)), "name", f"`{definition.name}` is not the file's name: "
                                    f"kfdefaults finds a profile by its file name; rename the file to "
                                    f"`{definition.name}{suffix}` or remove `name:`", layer=layer)])


def _definition_to_entry(definition: Definition) -> dict[str, Any]:
    """What the cache keeps of a valid file: the parsed document and the validated fragment."""
    fragment = definition.fragment
    return {
        "document": definition.document.to_json(),
        # what the file declares, not the name it was loaded as: another file may hold the same bytes
        "declared_name": definition.document.data.get("name") if isinstance(definition.document.data, dict) else None,
        "parents": definition.parents,
        "description": fragment.description,
        "elastic": fragment.elastic,
        "pod_template": fragment.pod_template,
        "primary_container_name": fragment.primary_container_name,
        "warnings": [[w.location.line, w.location.column, w.path, w.message, w.severity] for w in definition.warnings],
    }


def _definition_from_entry(entry: Any, file: str, layer: str) -> Definition | None:
    """The inverse of :func:`_definition_to_entry`, for ``file`` in ``layer``; ``None`` if the entry is unusable."""
    try:
        doc = Document.from_json(file, entry["document"])
        warnings = [Finding(Location(file, line, column), dotted, message, severity, layer=layer)
                    for line, column, dotted, message, severity in entry["warnings"]]
        stem = profile_name_of(file)
        declared = entry["declared_name"]
        elastic, pod_template, parents = entry["elastic"], entry["pod_template"], list(entry["parents"])
        if not (isinstance(elastic, dict) and isinstance(pod_template, dict) and all(isinstance(p, str) for p in parents)
                and (declared is None or isinstance(declared, str))):
            return None
        fragment = Fragment(stem, layer, file, doc, entry["description"], elastic, pod_template,
                            entry["primary_container_name"])
        return Definition(declared or stem, layer, file, doc, parents, fragment, warnings)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


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


def _expanded_parent(catalog: Catalog, name: str, stack: tuple[tuple[str, str], ...]) -> list[Fragment]:
    """:func:`expand` of a parent, remembered by the catalog: a parent reached by several paths is read once."""
    if name not in catalog.expanded:
        catalog.expanded[name] = expand(catalog, name, None, stack)
    return catalog.expanded[name]


def expand(catalog: Catalog, name: str, task: Fragment | None = None, _stack: tuple[tuple[str, str], ...] = ()) -> list[Fragment]:
    """The fragments that make up profile ``name``, lowest first.

    For each layer that defines ``name``: the definition's parents, each expanded across all layers, in
    the order ``extends`` lists them, then the definition's own body. ``task`` (the task layer) comes last.

    Raises:
        ProfileError: the profile is defined nowhere, a parent is unknown, ``extends`` forms a cycle,
            or a file is invalid.
    """
    fragments: list[Fragment] = []
    found = False
    for layer in LAYERS[:-1]:
        definition = catalog.definition(name, layer)
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
                from ._suggest import closest

                hint = closest(parent, [n for n in catalog.names() if n != name])
                raise ProfileError([Finding(_extends_location(definition, parent), "extends",
                                            f"unknown parent profile {parent!r}" + (f"; did you mean {hint!r}?" if hint else "")
                                            + f" (extended by {definition.file})", layer=layer)])
            if len(_stack) + 1 >= MAX_EXTENDS_DEPTH:
                raise ProfileError([Finding(_extends_location(definition, parent), "extends",
                                            f"`extends` chains more than {MAX_EXTENDS_DEPTH} profiles deep", layer=layer)])
            fragments.extend(_expanded_parent(catalog, parent, _stack + ((name, definition.file),)))
            if len(fragments) > MAX_FRAGMENTS:
                raise ProfileError([Finding(_extends_location(definition, parent), "extends",
                                            f"`extends` expands {name!r} to more than {MAX_FRAGMENTS} fragments (a parent "
                                            "reached by several paths is applied once for each)", layer=layer)])
        fragments.append(definition.fragment)
    if not found:
        from ._suggest import closest

        hint = closest(name, catalog.names())
        hint_text = f"; did you mean {hint!r}?" if hint else ""
        searched = "; ".join(
            f"{layer}: {', '.join(f.path for f in folders) or 'no folder'}" for layer, folders in catalog.folders.items()
        )
        raise ProfileError([Finding(Location("kfdefaults"), "", f"no profile named {name!r}{hint_text} (searched {searched})")])
    if task is not None:
        fragments.append(task)
    return fragments


class Merged:
    """The result of merging fragments, as plain data.

    Attributes:
        name: The profile name.
        description: The description of the highest layer that gives one.
        elastic: Effective ``Elastic`` settings, the plugin's defaults filled in.
        pod_template: The merged PodTemplateSpec (``{"metadata": ..., "spec": ...}``).
        primary_container_name: The primary container's name.
        fragments: What was merged, lowest first.
    """

    __slots__ = ("name", "description", "elastic", "pod_template", "primary_container_name", "fragments")

    def __init__(self, name: str, description: str | None, elastic: dict[str, Any], pod_template: dict[str, Any],
                 primary_container_name: str, fragments: list[Fragment]) -> None:
        self.name = name
        self.description = description
        self.elastic = elastic
        self.pod_template = pod_template
        self.primary_container_name = primary_container_name
        self.fragments = fragments


def merge_fragments(name: str, fragments: list[Fragment], *, kubernetes_version: str | None = None,
                    remember: bool = True) -> Merged:
    """Merge fragments, lowest first.

    The ``elastic`` sections merge key by key over the plugin's defaults (:func:`kfdefaults._model.merge_elastic`);
    pod templates merge with :func:`kfdefaults.strategic_merge_patch` (kind ``PodTemplateSpec``), starting
    from an empty one. One :func:`merge_step` per fragment from :meth:`MergeState.initial`, then
    :func:`fill_plugin_defaults`: :mod:`kfdefaults._explain` replays these same steps for provenance, so
    keep the merge in them.

    ``remember=False`` neither reads nor stores the merge in the cache (``validate`` merges a thousand profiles
    once each: storing them would cost more than it saves).

    Raises:
        ProfileError: a pod template patch that Kubernetes would reject, located in the fragment's file.
    """
    fragments = assign_primary_container(fragments)
    entry_key = _merge_key(fragments, kubernetes_version) if remember else None
    if entry_key is not None:
        from . import _cache

        hit = _cache.load(entry_key)
        if isinstance(hit, dict) and {"description", "elastic", "pod", "primary"} <= set(hit):
            return Merged(name, hit["description"], hit["elastic"], hit["pod"], hit["primary"], fragments)
    state = MergeState.initial()
    for fragment in fragments:
        state = merge_step(state, fragment, kubernetes_version=kubernetes_version)
    _reject_leftover_directives(state.pod, fragments)
    merged = Merged(name, state.description, fill_plugin_defaults(state.elastic), state.pod, state.primary, fragments)
    if entry_key is not None:
        from . import _cache

        _cache.store(entry_key, {"description": merged.description, "elastic": merged.elastic,
                                 "pod": merged.pod_template, "primary": merged.primary_container_name})
    return merged


def _merge_key(fragments: list[Fragment], kubernetes_version: str | None) -> str | None:
    """The cache key of a merge: everything the merge reads from the fragments, in order.

    The merge is a function of these alone (and of kfdefaults' code and the schema version, which every cache
    key holds), so a profile whose files are unchanged is merged once: later runs skip the strategic merge
    patch, deepmerge and their imports. ``None`` when the data is not JSON (only the task layer can hold such
    values, and then the merge reports them).
    """
    import json

    from . import _cache
    from ._k8s_schema import normalize_version

    try:
        text = json.dumps([[f.layer, f.elastic, f.pod_template, f.primary_container_name, f.description]
                           for f in fragments], allow_nan=False, separators=(",", ":"))
        version = normalize_version(kubernetes_version)
    except (TypeError, ValueError):
        return None
    return _cache.key(text.encode(), "merge", version, _deepmerge_stamp())


@functools.lru_cache(maxsize=1)
def _deepmerge_stamp() -> str:
    """The installed deepmerge, which merges the ``elastic`` sections, as its files' sizes and times (found
    without importing it): another deepmerge is another merge key."""
    import importlib.util

    spec = importlib.util.find_spec("deepmerge")
    folder = list(spec.submodule_search_locations or [])[0] if spec and spec.submodule_search_locations else None
    if folder is None:
        return "deepmerge ?"
    parts = []
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(root, name))
                parts.append(f"{os.path.relpath(os.path.join(root, name), folder)} {st.st_size} {st.st_mtime_ns}")
    return "\n".join(sorted(parts))


def _directive_paths(value: Any, field: tuple = (), at: tuple = ()) -> list[tuple[tuple, tuple, str]]:
    """``(field path without list positions, concrete path, key)`` of every ``$``-key in ``value``."""
    found: list[tuple[tuple, tuple, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key.startswith("$"):
                found.append((field, at + (key,), key))
            else:
                found.extend(_directive_paths(item, field + (key,), at + (key,)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(_directive_paths(item, field, at + (i,)))
    return found


def _reject_leftover_directives(pod: dict[str, Any], fragments: list[Fragment]) -> None:
    """A directive left in the merged pod template is an error.

    Strategic merge patch applies ``$patch``, ``$retainKeys`` and the others only where they meet something to
    act on; kubectl copies the rest into the object as data (a ``$patch: delete`` item in a list without a merge
    key, such as ``tolerations``, is added, not deleted). The cluster would then get what the author did not
    mean, silently: the Kubernetes client drops the ``$`` key and keeps the rest of the item.

    Raises:
        ProfileError: located at the highest fragment that writes such a directive at that field.
    """
    leftovers = _directive_paths(pod)
    if not leftovers:
        return
    findings = []
    for field, _, key in leftovers:
        for fragment in reversed(fragments):
            matches = [at for f, at, k in _directive_paths(fragment.pod_template) if f == field and k == key]
            if matches:
                at = matches[0]
                file_path = ("pod_template",) + (at[1:] if at[:1] == ("metadata",) else at)
                findings.append(Finding(
                    fragment.location(file_path, key=True), _dotted(file_path),
                    f"`{key}` has nothing to act on here and would reach the cluster as data: strategic merge patch "
                    f"applies it only to an item of a list merged by key, or to a field that exists below; "
                    f"`{'.'.join(map(str, field))}` is replaced whole or is new at this point (kubectl leaves it in too)",
                    layer=fragment.layer))
                break
    unique = {str(f): f for f in findings}
    raise ProfileError(list(unique.values()) or [Finding(Location("kfdefaults"), "", "a directive is left in the merged pod template")])


DEFAULT_PRIMARY_CONTAINER_NAME = "primary"
"""flytekit's default ``primary_container_name``, in effect until a layer sets one."""


class MergeState:
    """What :func:`merge_fragments` has built after some of the fragments (the layers below the next one).

    Attributes:
        elastic: ``elastic`` settings so far, starting from the plugin's defaults.
        pod: The PodTemplateSpec so far (``{"metadata": ..., "spec": ...}``), starting from ``{}``.
        description: The description so far, ``None`` until a fragment gives one.
        primary: The primary container name so far.
    """

    __slots__ = ("elastic", "pod", "description", "primary")

    def __init__(self, elastic: dict[str, Any], pod: dict[str, Any], description: str | None = None,
                 primary: str = DEFAULT_PRIMARY_CONTAINER_NAME) -> None:
        self.elastic = elastic
        self.pod = pod
        self.description = description
        self.primary = primary

    @classmethod
    def initial(cls) -> MergeState:
        """The state below every layer: the plugin's ``Elastic`` defaults and an empty pod template."""
        import copy

        from ._elastic import PLUGIN_ELASTIC_DEFAULTS

        return cls(copy.deepcopy(PLUGIN_ELASTIC_DEFAULTS), {})


def merge_step(state: MergeState, fragment: Fragment, *, kubernetes_version: str | None = None) -> MergeState:
    """Apply one fragment on top of ``state``: one step of :func:`merge_fragments`.

    Args:
        state: What the fragments below built; not modified.
        fragment: The next fragment, its containers already named as :func:`assign_primary_container` names them.
        kubernetes_version: Kubernetes minor version of the strategic merge patch schema.

    Returns:
        The new state.

    Raises:
        ProfileError: a pod template patch that Kubernetes would reject, located in the fragment's file.
    """
    from ._errors import MergeError
    from ._elastic import merge_elastic
    from ._smp import strategic_merge_patch

    new = MergeState(state.elastic, state.pod, state.description, state.primary)
    if fragment.description is not None:
        new.description = fragment.description or None
    if fragment.primary_container_name is not None:
        new.primary = fragment.primary_container_name
    if fragment.elastic:
        new.elastic = merge_elastic(state.elastic, fragment.elastic)
    if fragment.pod_template:
        try:
            new.pod = strategic_merge_patch(state.pod, fragment.pod_template, kubernetes_version=kubernetes_version)
        except MergeError as e:
            file_path = _file_path_of(e.path)
            raise ProfileError([Finding(fragment.location(file_path), _dotted(file_path) or "pod_template",
                                        e.reason, layer=fragment.layer)]) from None
    return new


def fill_plugin_defaults(elastic: dict[str, Any]) -> dict[str, Any]:
    """``elastic`` with every key a layer deleted (``null``) set back to the plugin's default, in place.

    ``rdzv_configs`` comes back as ``{}``: deleting it means "no rendezvous settings", not the defaults.
    """
    from ._elastic import PLUGIN_ELASTIC_DEFAULTS

    for key, default in PLUGIN_ELASTIC_DEFAULTS.items():
        if key not in elastic:
            elastic[key] = {} if key == "rdzv_configs" else default
    return elastic


PYTORCH_JOB_CONTAINER = "pytorch"
"""The container name a PyTorchJob requires; Flyte's backend gives it to the primary container."""


def assign_primary_container(fragments: list[Fragment]) -> list[Fragment]:
    """Make "the primary container" a role, not a name: name it the same in every fragment.

    Each fragment refers to its primary container by the ``primary_container_name`` in effect for it (its
    own, else the one below it, else flytekit's default ``primary``). The highest layer's name wins; in every
    other fragment, the container holding the primary role is renamed to it before merging, so that a task
    choosing ``primary_container_name="main"`` gets the profile's ``/dev/shm`` mount and GPUs on ``main``, not
    on a stray container called ``primary``. A fragment without its primary container but with a container
    named ``pytorch`` (the name a PyTorchJob gives the primary container) means that one.

    Returns:
        The fragments, the renamed ones replaced by copies (the originals are not changed).
    """
    final = "primary"
    for fragment in fragments:
        if fragment.primary_container_name is not None:
            final = fragment.primary_container_name
    out = []
    view = "primary"
    for fragment in fragments:
        view = fragment.primary_container_name or view
        renamed = _rename_primary(fragment.pod_template, view, final)
        out.append(fragment if renamed is fragment.pod_template else fragment.replace(pod_template=renamed))
    return out


def _rename_primary(patch: dict[str, Any], source: str, target: str) -> dict[str, Any]:
    spec = patch.get("spec") if isinstance(patch, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list):
        return patch
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    if source not in names and PYTORCH_JOB_CONTAINER in names:
        source = PYTORCH_JOB_CONTAINER
    if source == target or source not in names or target in names:
        return patch

    def rename(items: Any) -> Any:
        if not isinstance(items, list):
            return items
        return [dict(c, name=target) if isinstance(c, dict) and c.get("name") == source else c for c in items]

    new_spec = dict(spec, containers=rename(containers))
    order_key = "$setElementOrder/containers"
    if order_key in new_spec:
        new_spec[order_key] = rename(new_spec[order_key])
    return dict(patch, spec=new_spec)


def _file_path_of(smp_path: str) -> PathT:
    """``metadata.labels.team`` (a PodTemplateSpec path) -> ``("pod_template", "labels", "team")``."""
    parts: list[Any] = []
    for part in smp_path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            break  # list items are named by merge key; the list is the best position
        parts.append(part)
    if parts[:1] == ["metadata"]:
        parts = parts[1:]
    return ("pod_template", *parts) if parts else ("pod_template",)
