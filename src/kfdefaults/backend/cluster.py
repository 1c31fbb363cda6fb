"""The cluster's default PodTemplate, read with positions: what Flyte's backend lays under every task's pod.

The file is a v1 PodTemplate manifest, as ``kubectl get podtemplate NAME -o yaml`` prints it (JSON is YAML too).
Only its ``template`` counts: the backend uses ``template.metadata`` and ``template.spec``, never the object's
own name or namespace. It is checked as Go's decoder would read it: a value of the wrong shape (a list where an
object belongs) is an error at its ``FILE:LINE:COLUMN``; unknown fields are ignored, as Go ignores them.
"""

from __future__ import annotations

from typing import Any

from .. import cache
from ..inputs import Inputs
from ..errors import Finding, Location, ProfileError
from ..k8s.quantity import quantity_problem
from ..layers import ClusterTemplatePath
from ..paths import format_path
from ..read import Document, parse_bytes, read_bytes
from .gojson import JSON, decode
from .kinds import Kind, fields
from .template_merge import template_containers_for

LAYER = "cluster"
"""The layer name of what the cluster's PodTemplate does, in messages and in ``--explain``."""


class ClusterTemplate:
    """The cluster's default PodTemplate.

    Attributes:
        path: The file.
        origin: What named it (``--cluster-template``, ``KFDEFAULTS_CLUSTER_TEMPLATE``, a pyproject.toml, a
            platform folder).
        document: The parsed file, for positions.
        manifest: The manifest as plain data.
        spec: ``template.spec`` as the backend reads it (:func:`~.gojson.decode`).
    """

    def __init__(self, path: str, origin: str, document: Document) -> None:
        self.path, self.origin, self.document = path, origin, document
        self.manifest: JSON = document.data
        self.spec: JSON = (decode(self.manifest, "PodTemplate").get("template") or {}).get("spec") or {}

    def __repr__(self) -> str:
        return f"ClusterTemplate({self.path!r})"

    @property
    def raw_spec(self) -> JSON:
        """``template.spec`` as written (plain data, ``{}`` when absent)."""
        template = self.manifest.get("template")
        spec = template.get("spec") if isinstance(template, dict) else None
        return spec if isinstance(spec, dict) else {}

    def location(self, *path: Any, key: bool = False) -> Location:
        """Where the value at ``template.spec.<path>`` is written (keys and list indices)."""
        return self.document.location(("template", "spec") + tuple(path), key=key)

    def layers_for(self, field: str, name: str, primary: str) -> list[tuple[int, JSON]]:
        """``(index in template.spec.<field>, container)`` of the template containers the backend lays under the
        task container ``name`` (:func:`~.template_merge.template_containers_for`), lowest first."""
        containers = [c for c in self.raw_spec.get(field) or [] if isinstance(c, dict)]
        chosen = template_containers_for(containers, name, primary if field == "containers" else "",
                                         init=field == "initContainers")
        return [(next(i for i, c in enumerate(self.raw_spec[field]) if c is container), container) for container in chosen]


def load_cluster_template(found: ClusterTemplatePath, inputs: Inputs | None = None) -> ClusterTemplate:
    """Read and check the cluster's PodTemplate file; ``inputs`` records it.

    Raises:
        ProfileError: the file cannot be read or parsed, is not a v1 PodTemplate, or holds a value of the wrong
            shape for its field, located at ``FILE:LINE:COLUMN``.
    """
    raw = read_bytes(found.path, inputs)
    entry_key = cache.key(raw, "cluster template")
    stored = cache.load(entry_key)
    document = Document.from_json(found.path, stored) if isinstance(stored, dict) else None
    if document is None:
        document = parse_bytes(raw, found.path)
        findings = _manifest_problems(document)
        if findings:
            raise ProfileError(findings)
        cache.store(entry_key, document.to_json())
    return ClusterTemplate(found.path, found.origin, document)


def _manifest_problems(document: Document) -> list[Finding]:
    data = document.data
    where = f"the cluster's PodTemplate (named by {document.file})"
    if not isinstance(data, dict) or data.get("kind") != "PodTemplate":
        found = data.get("kind") if isinstance(data, dict) else type(data).__name__
        return [Finding(document.location(("kind",) if isinstance(data, dict) and "kind" in data else ()), "kind",
                        f"{where} must be a v1 PodTemplate manifest (kubectl get podtemplate NAME -o yaml), "
                        f"not {found!r}", layer=LAYER)]
    problems: list[Finding] = []
    _shape(document, data, ("struct", "PodTemplate"), (), problems)
    return problems[:20]


def _shape(document: Document, value: Any, kind: Kind, path: tuple, problems: list[Finding]) -> None:
    """A value that Go's decoder would refuse for its field: an object, list or map of the wrong kind, or a
    quantity ``resource.Quantity`` cannot read or kfdefaults does not (:func:`~kfdefaults.k8s.quantity.quantity_problem`:
    4,300 digits, an exponent apimachinery wraps)."""
    if value is None:
        return
    tag = kind[0]
    if tag == "quantity":
        problem = quantity_problem(value)
        if problem is not None:
            problems.append(Finding(document.location(path), format_path(path), problem, layer=LAYER))
        return
    expected = {"struct": dict, "map": dict, "slice": list}.get(tag if tag != "ptr" else kind[1][0])
    if tag == "ptr":
        _shape(document, value, kind[1], path, problems)
        return
    if expected is not None and not isinstance(value, expected):
        what = "an object" if expected is dict else "a list"
        problems.append(Finding(document.location(path), format_path(path),
                                f"must be {what} (Kubernetes {kind[1] if tag == 'struct' else tag}), not {value!r}",
                                layer=LAYER))
        return
    if tag == "struct":
        for name, k in fields(kind[1]):
            if name in value:
                _shape(document, value[name], k, path + (name,), problems)
    elif tag == "slice":
        for i, item in enumerate(value):
            _shape(document, item, kind[1], path + (i,), problems)
    elif tag == "map":
        for key, item in value.items():
            _shape(document, item, kind[1], path + (key,), problems)
