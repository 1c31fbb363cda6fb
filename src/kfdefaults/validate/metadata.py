"""The pod's labels and annotations, checked by the API server's rules (apimachinery ``ValidateLabels`` and
``ValidateAnnotations``)."""

from __future__ import annotations

from typing import Any

from ..errors import Finding
from ..k8s.names import (
    ANNOTATIONS_MAX_BYTES,
    LABEL_VALUE_RULE,
    QUALIFIED_NAME_RULE,
    annotation_key_problem,
    label_value_problem,
    qualified_name_hint,
    qualified_name_problem,
)
from ..k8s.provenance import RECEIPT_ANNOTATION, RECEIPT_POLICIES
from ..paths import format_path, join
from ..read import Document

PathT = tuple


def label_problems(report: Any, key: str, value: Any, path: PathT, name: str, what: str = "label key") -> None:
    """Check one label: the key a qualified name, a string value a valid label value (apimachinery
    ``ValidateLabels``: ``IsQualifiedName`` and ``IsValidLabelValue``); other values are left to the type checks.

    Args:
        report: ``report(path, name, message, key=...)``, as :meth:`FragmentChecker.report`.
        key: The label key.
        value: Its value as written.
        path: Where the label sits in the document (its key is reported at the key, its value at the value).
        name: Its dotted name in messages.
        what: How messages name the key (``"label key"``, ``"node selector key"``).
    """
    problem = qualified_name_problem(key)
    if problem:
        hint = qualified_name_hint(key)
        report(path, name, f"{what} `{key}` is not a valid qualified name: {problem}; a label key is {QUALIFIED_NAME_RULE}"
               + (f"; did you mean `{hint}`?" if hint else ""), key=True)
    if isinstance(value, str):
        problem = label_value_problem(value)
        if problem:
            report(path, name, f"`{value}` is not a valid label value: {LABEL_VALUE_RULE}; {problem}")


def check_pod_metadata(document: Document, pod_template: Any, layer: str | None,
                       path: PathT = ("pod_template",)) -> list[Finding]:
    """Check the pod's ``labels`` and ``annotations`` (``pod_template.labels`` / ``.annotations``) by the API
    server's rules (apimachinery ``ValidateLabels`` and ``ValidateAnnotations``).

    Label keys are qualified names and values valid label values; annotation keys are qualified names once
    lower-cased, values any string (but ``kfdefaults.io/receipt``'s, one of
    :data:`~kfdefaults.k8s.provenance.RECEIPT_POLICIES`), and all keys and values together at most 256 KiB. Keys that are patch
    directives (``$patch``, ``$retainKeys``...) and ``null`` values (deletions) are not names and are skipped;
    values of the wrong type are left to the section model.

    Args:
        document: The parsed profile file (for positions).
        pod_template: The ``pod_template`` section as plain data.
        layer: The file's layer, named in the findings.
        path: Where the section sits in the document.

    Returns:
        One finding per bad key or value, each at the key or value.
    """
    findings: list[Finding] = []
    if not isinstance(pod_template, dict):
        return findings

    def report(where: PathT, name: str, message: str, *, key: bool = False) -> None:
        findings.append(Finding(document.location(where, key=key), name, message, "error", layer))

    base = format_path(path)
    labels = pod_template.get("labels")
    if isinstance(labels, dict):
        for key, value in labels.items():
            if isinstance(key, str) and not key.startswith("$") and value is not None:
                label_problems(report, key, value, path + ("labels", key), join(join(base, "labels"), key))
    annotations = pod_template.get("annotations")
    if isinstance(annotations, dict):
        size = 0
        for key, value in annotations.items():
            if not isinstance(key, str) or key.startswith("$") or value is None:
                continue
            size += len(key.encode("utf-8", "surrogatepass")) + (len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else 0)
            problem = annotation_key_problem(key)
            if problem:
                hint = qualified_name_hint(key)
                report(path + ("annotations", key), join(join(base, "annotations"), key),
                       f"annotation key `{key}` is not a valid qualified name: {problem}; an annotation key is "
                       f"{QUALIFIED_NAME_RULE} (letter case aside)" + (f"; did you mean `{hint}`?" if hint else ""), key=True)
            if key == RECEIPT_ANNOTATION and value not in RECEIPT_POLICIES:
                choices = ", ".join(f"`{k}` ({v})" for k, v in RECEIPT_POLICIES.items())
                report(path + ("annotations", key), join(join(base, "annotations"), key),
                       f"`{value}` is not a receipt policy: {RECEIPT_ANNOTATION} is one of {choices}")
        if size > ANNOTATIONS_MAX_BYTES:
            report(path + ("annotations",), join(base, "annotations"),
                   f"the annotations take {size} bytes; Kubernetes allows at most {ANNOTATIONS_MAX_BYTES} (256 KiB) "
                   "for all of a pod's annotation keys and values together", key=True)
    return findings
