"""``kubectl patch --local --type strategic`` as an oracle for strategic merge patch.

The differential tests compare :func:`kfdefaults.strategic_merge_patch` with what kubectl does to the same
(original, patch) pair. Starting kubectl costs about 80 ms, while patching one more object costs next to
nothing, so :func:`kubectl_apply` batches: kubectl applies *one* patch to every object of a ``v1 List`` in a
single process, so cases that share a patch go to kubectl together.

How kubectl reports a List whose items partly fail (found by experiment with kubectl v1.32):

* It goes on after a failed item: every item that patches cleanly is printed to stdout, in input order, as
  a stream of JSON documents (not as a List); the failed ones are simply left out.
* The errors go to stderr once every item has been tried, in input order, one message per failed item. A
  single error is printed as ``error: MESSAGE``; several are printed as bare messages, one after another.
  A message can span several lines (the ``$setElementOrder`` mismatch does).
* The exit status is 1 if any item failed, 0 otherwise.
* Except when the merge panics (Go's ``hash of unhashable type``, for a ``$setElementOrder`` list of objects
  where the field's items are compared as values): the process dies with status 2 and a stack trace, and
  the items after that one are never tried. Then every missing item is run again on its own.

So each case is attributed by its object name (``case-N``), which the patch cannot change because it only
touches ``template``: a printed object is a success, a missing one a failure. The error *text* is
attributed without a rerun when that can be done without doubt (see :func:`_split_messages`); otherwise
the failed items are run again one by one. Which cases fail never depends on the error text.

Numbers (also found by experiment): kubectl reads the object, prints it as JSON again and patches that,
while the patch file is patched as written. apimachinery's JSON decoder makes a number an int64 when its
text parses as one and a float64 otherwise, so an original's ``80.0`` (printed back as ``80``) is an int64
while a patch's ``80.0`` is a float64, and Go compares the two types apart: a patch item with
``containerPort: 80.0`` matches neither ``80`` nor ``80.0`` in the original, and ``[1, 2]`` merged with
``[2.0]`` fails with ``list element types are not identical``. The cases keep such numbers as they are.

Comparison goes through :func:`canonical`: the JSON text of both results, numbers included. kubectl prints
an integral float64 as an integer (``80.0`` as ``80``, ``2**64`` as ``18446744073709552000``); the engine
returns what kubectl prints, and a result that prints a number otherwise is a divergence.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

#: The kinds of document a case can be: what the original and the patch are.
KINDS = ("PodTemplateSpec", "PodSpec", "Container")

#: Most objects sent to one kubectl process; bounds the size of an argument file and of a rerun.
MAX_BATCH = 256

#: Seconds one kubectl process may take.
KUBECTL_TIMEOUT = 120

@dataclass(frozen=True)
class Outcome:
    """What applying one patch to one original gave.

    Attributes:
        ok: Whether the patch applied.
        result: The patched document (of the case's kind) when ``ok``, else ``None``.
        error: The error message when not ``ok``, else ``None``.
    """

    ok: bool
    result: Any = None
    error: str | None = None


def kubectl_binary() -> str:
    """Return the kubectl to run: ``$KUBECTL`` if set, else ``kubectl`` from ``PATH``.

    Raises:
        FileNotFoundError: If there is no kubectl.
    """
    path = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not path:
        raise FileNotFoundError("kubectl not found (set KUBECTL or put kubectl on PATH)")
    return path


def kubectl_available() -> bool:
    """Return whether a kubectl can be run (for skipping tests on machines without one)."""
    try:
        kubectl_binary()
    except FileNotFoundError:
        return False
    return True


# --------------------------------------------------------------------------------------------------------
# Wrapping a case into a PodTemplate and back.
# --------------------------------------------------------------------------------------------------------


def _check_container_case(original: Any, patch: Any) -> None:
    """Check that a Container case can be sent to kubectl faithfully.

    A container is patched inside ``spec.containers`` as the only item of the original list and the only
    item of the patch list. The list merge then does exactly one merge of the two maps, the same merge as
    patching the container on its own, provided that the patch item matches the original item by merge key
    and carries no ``$patch`` (in a list item ``$patch`` means something else: delete the item, replace the
    list).

    Raises:
        ValueError: If the case cannot be wrapped faithfully.
    """
    name = original.get("name") if isinstance(original, dict) else None
    if not isinstance(name, str) or not isinstance(patch, dict) or patch.get("name") != name:
        raise ValueError("a Container case needs the same string 'name' in the original and the patch")
    if "$patch" in patch:
        raise ValueError("a Container case's patch cannot carry '$patch'")


def wrap(kind: str, original: Any, patch: Any) -> tuple[Any, dict]:
    """Return the ``template`` of the PodTemplate and the kubectl patch for one case.

    Args:
        kind: One of :data:`KINDS`.
        original: The original document of that kind.
        patch: The strategic merge patch of that kind.

    Returns:
        ``(template, kubectl_patch)``: the value of the PodTemplate's ``template`` field and the patch to
        give kubectl, which patches the PodTemplate.

    Raises:
        ValueError: If ``kind`` is unknown, or a Container case cannot be wrapped faithfully.
    """
    if kind == "PodTemplateSpec":
        return original, {"template": patch}
    if kind == "PodSpec":
        return {"spec": original}, {"template": {"spec": patch}}
    if kind == "Container":
        _check_container_case(original, patch)
        return {"spec": {"containers": [original]}}, {"template": {"spec": {"containers": [patch]}}}
    raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")


def unwrap(kind: str, obj: dict) -> Any:
    """Return the document of ``kind`` from a PodTemplate that kubectl printed.

    A missing ``template`` (or ``spec``) is read as ``{}``: the engine returns a dict for every document,
    while kubectl leaves an absent field absent. Nothing else is changed.

    Raises:
        ValueError: If a Container case did not come back as exactly one container.
    """
    template = obj.get("template", {})
    if kind == "PodTemplateSpec":
        return template
    spec = template.get("spec", {}) if isinstance(template, dict) else template
    if kind == "PodSpec":
        return spec
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list) or len(containers) != 1:
        raise ValueError(f"a Container case came back as {containers!r}")
    return containers[0]


# --------------------------------------------------------------------------------------------------------
# Running kubectl.
# --------------------------------------------------------------------------------------------------------


def _object_name(index: int) -> str:
    return f"case-{index}"


def _parse_stream(text: str) -> list[Any]:
    """Parse a stream of JSON documents as kubectl prints them for ``-o json``."""
    decoder = json.JSONDecoder()
    docs, pos = [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return docs
        doc, pos = decoder.raw_decode(text, pos)
        docs.append(doc)


def _strip_error(stderr: str) -> str:
    text = stderr.strip()
    return text[len("error: ") :] if text.startswith("error: ") else text


#: The first line of the one kubectl message known to span lines, and how many lines it has.
_MULTILINE_MESSAGES = {"The order in patch list:": 4}


def _split_messages(stderr: str, count: int) -> list[str] | None:
    """Split the stderr of a List with ``count`` (at least 2) failed items into one message per item.

    The messages are printed one after another in input order, each on one line except the
    ``$setElementOrder`` mismatch, which has four and a newline of its own (so an empty line follows it
    when it is not last). The text is cut into messages by that
    rule, and if that does not give ``count`` messages, but the text is one block of lines repeated
    ``count`` times (a patch that every original fails on alike), the block is each item's message.

    Returns:
        The messages, or ``None`` if they cannot be told apart for sure.
    """
    lines = stderr.strip("\n").split("\n")
    messages, i = [], 0
    while i < len(lines):
        size = _MULTILINE_MESSAGES.get(lines[i], 1)
        messages.append("\n".join(lines[i : i + size]))
        i += size
        if size > 1 and i < len(lines) and not lines[i]:
            i += 1  # that message ends in a newline of its own
    if len(messages) == count:
        return messages
    if len(lines) % count == 0:
        size = len(lines) // count
        blocks = {"\n".join(lines[j * size : (j + 1) * size]) for j in range(count)}
        if len(blocks) == 1:
            return [blocks.pop()] * count
    return None


def _run_kubectl(templates: Sequence[Any], patch: dict, kubectl: str) -> subprocess.CompletedProcess:
    """Run one ``kubectl patch --local`` over a List of PodTemplates whose templates are ``templates``."""
    items = [
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": _object_name(i)}, "template": t}
        for i, t in enumerate(templates)
    ]
    with tempfile.TemporaryDirectory(prefix="smp-oracle-") as tmp:
        base_path = os.path.join(tmp, "base.json")
        patch_path = os.path.join(tmp, "patch.json")
        # JSON, never YAML: kubectl reads YAML as YAML 1.1, where `y`, `on` and `no` are booleans.
        with open(base_path, "w", encoding="utf-8") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f, allow_nan=False)
        with open(patch_path, "w", encoding="utf-8") as f:
            json.dump(patch, f, allow_nan=False)
        return subprocess.run(
            [kubectl, "patch", "--local", "-f", base_path, "--type", "strategic", "--patch-file", patch_path,
             "-o", "json"],
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=KUBECTL_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )


def _run_batch(templates: Sequence[Any], patch: dict, kubectl: str) -> list[tuple[bool, Any]]:
    """Apply ``patch`` to each template with one kubectl process (more only to attribute errors).

    Returns:
        One ``(ok, printed PodTemplate or error message)`` per template, in order.

    Raises:
        RuntimeError: If kubectl's output does not fit what it is known to do.
    """
    proc = _run_kubectl(templates, patch, kubectl)
    names = {_object_name(i) for i in range(len(templates))}
    printed: dict[str, dict] = {}
    for doc in _parse_stream(proc.stdout):
        name = doc.get("metadata", {}).get("name") if isinstance(doc, dict) else None
        if name in printed or name not in names:
            raise RuntimeError(f"unexpected object in kubectl output: {doc!r}")
        printed[name] = doc
    failed = [i for i in range(len(templates)) if _object_name(i) not in printed]
    if "panic: " in proc.stderr:
        pass  # exit status 2 and the items after the panic missing; handled below
    elif (proc.returncode == 0) != (not failed):
        raise RuntimeError(
            f"kubectl exited {proc.returncode} with {len(failed)} of {len(templates)} objects missing; "
            f"stderr: {proc.stderr!r}"
        )
    errors: dict[int, str] = {}
    panicked = "panic: " in proc.stderr and len(templates) > 1
    if panicked:
        # A panic (hash of an unhashable value, say) ends the whole process: the items after the one that
        # panicked were never tried. Ask again, one at a time.
        messages = None
    else:
        messages = _split_messages(proc.stderr, len(failed)) if len(failed) > 1 else [_strip_error(proc.stderr)]
    if failed and messages is not None:
        errors.update(zip(failed, messages))
    elif failed:
        # Messages of several lines that differ, or a panic: ask again, one at a time.
        for i in failed:
            [(ok, value)] = _run_batch([templates[i]], patch, kubectl)
            if ok and not panicked:
                raise RuntimeError(f"kubectl failed item {i} in a List but not on its own")
            if ok:
                printed[_object_name(i)] = value
            else:
                errors[i] = value
    return [(True, printed[_object_name(i)]) if i not in errors else (False, errors[i])
            for i in range(len(templates))]


def kubectl_apply(
    cases: Sequence[tuple[Any, Any]],
    kind: str = "PodTemplateSpec",
    *,
    workers: int = 2,
) -> list[Outcome]:
    """Apply each case's patch to its original with ``kubectl patch --local --type strategic``.

    Cases that share a patch (equal as JSON text, so ``1``, ``1.0`` and ``true`` stay apart) go to one
    kubectl process as a List; the processes run on a pool of ``workers`` threads.

    Args:
        cases: ``(original, patch)`` pairs, each a document of ``kind``.
        kind: What the documents are: ``"PodTemplateSpec"``, ``"PodSpec"`` or ``"Container"`` (see
            :func:`wrap` for what a Container case must satisfy).
        workers: How many kubectl processes to run at once.

    Returns:
        One :class:`Outcome` per case, in order; a successful one carries the patched document of ``kind``.

    Raises:
        ValueError: If a case cannot be sent to kubectl faithfully.
        RuntimeError: If kubectl behaves in a way this module does not know.
    """
    kubectl = kubectl_binary()
    groups: dict[str, tuple[dict, list[int], list[Any]]] = {}
    for index, (original, patch) in enumerate(cases):
        template, wrapped_patch = wrap(kind, original, patch)
        key = json.dumps(wrapped_patch, sort_keys=True, allow_nan=False)
        group = groups.setdefault(key, (wrapped_patch, [], []))
        group[1].append(index)
        group[2].append(template)

    jobs = []
    for wrapped_patch, indices, templates in groups.values():
        for start in range(0, len(indices), MAX_BATCH):
            jobs.append((wrapped_patch, indices[start : start + MAX_BATCH], templates[start : start + MAX_BATCH]))

    outcomes: list[Outcome | None] = [None] * len(cases)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [(indices, pool.submit(_run_batch, templates, p, kubectl)) for p, indices, templates in jobs]
        for indices, future in futures:
            for index, (ok, value) in zip(indices, future.result()):
                outcomes[index] = Outcome(True, result=unwrap(kind, value)) if ok else Outcome(False, error=value)
    return outcomes  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------------------
# Comparing outcomes.
# --------------------------------------------------------------------------------------------------------


def canonical(value: Any) -> str:
    """Return a text that is equal for two documents exactly when kubectl would print them alike.

    Unlike ``==`` on Python values, this keeps ``true`` apart from ``1``, ``1`` apart from ``"1"`` and ``1``
    apart from ``1.0`` (which kubectl never prints: it prints ``1``).

    Raises:
        ValueError: For a NaN or infinite float, which is not JSON.
    """
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


def same_outcome(a: Outcome, b: Outcome) -> bool:
    """Return whether two outcomes agree: both failed, or both succeeded with the same document.

    Error messages are not compared: only where kubectl fails has to match.
    """
    if a.ok != b.ok:
        return False
    if not a.ok:
        return True
    try:
        return canonical(a.result) == canonical(b.result)
    except (TypeError, ValueError):  # a result that is not JSON data differs from anything kubectl prints
        return False


# --------------------------------------------------------------------------------------------------------
# The engine side and the comparison of both.
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Divergence:
    """A case where the engine and kubectl disagree.

    Attributes:
        index: Position of the case in the list compared.
        original: The original document.
        patch: The patch.
        kubectl: What kubectl did.
        engine: What the engine did.
    """

    index: int
    original: Any
    patch: Any
    kubectl: Outcome
    engine: Outcome

    def to_json(self) -> dict:
        """Return the divergence as JSON data, for printing and for files."""

        def side(o: Outcome) -> dict:
            return {"ok": o.ok, "result": o.result} if o.ok else {"ok": False, "error": o.error}

        return {"original": self.original, "patch": self.patch, "kubectl": side(self.kubectl),
                "engine": side(self.engine)}


def engine_apply(
    cases: Sequence[tuple[Any, Any]],
    kind: str = "PodTemplateSpec",
    engine: Callable[..., Any] | None = None,
) -> list[Outcome]:
    """Apply each case with the engine, ``kfdefaults.strategic_merge_patch`` unless ``engine`` is given.

    The engine gets deep copies, so a case is never changed under the caller. A ``MergeError`` is a failed
    outcome; any other exception is a failed outcome too, with the exception's type in the message, so
    that it shows up as a divergence from kubectl's success rather than ending the run.
    """
    from kfdefaults import MergeError, strategic_merge_patch

    engine = engine or strategic_merge_patch
    outcomes = []
    for original, patch in cases:
        try:
            result = engine(copy.deepcopy(original), copy.deepcopy(patch), kind=kind)
        except MergeError as exc:
            outcomes.append(Outcome(False, error=str(exc)))
        except Exception as exc:  # noqa: BLE001 - reported as a divergence, with its type
            outcomes.append(Outcome(False, error=f"engine crashed: {type(exc).__name__}: {exc}"))
        else:
            outcomes.append(Outcome(True, result=result))
    return outcomes


def find_divergences(
    cases: Sequence[tuple[Any, Any]],
    kind: str = "PodTemplateSpec",
    *,
    workers: int = 2,
    kubectl_outcomes: Sequence[Outcome] | None = None,
    engine: Callable[..., Any] | None = None,
) -> tuple[list[Outcome], list[Divergence]]:
    """Run every case through kubectl and the engine and return where they disagree.

    Args:
        cases: ``(original, patch)`` pairs of ``kind``.
        kind: What the documents are.
        workers: How many kubectl processes to run at once.
        kubectl_outcomes: kubectl's outcomes if already known (to time both sides apart).
        engine: The engine to compare (see :func:`engine_apply`).

    Returns:
        ``(kubectl outcomes, divergences)``.
    """
    expected = list(kubectl_outcomes) if kubectl_outcomes is not None else kubectl_apply(cases, kind, workers=workers)
    actual = engine_apply(cases, kind, engine)
    divergences = [
        Divergence(i, original, patch, exp, act)
        for i, ((original, patch), exp, act) in enumerate(zip(cases, expected, actual))
        if not same_outcome(exp, act) or act.error and act.error.startswith("engine crashed:")
    ]
    return expected, divergences


def kubectl_varies(original: Any, patch: Any, kind: str = "PodTemplateSpec", copies: int = 40) -> bool:
    """Return whether kubectl gives this case different outcomes from run to run.

    Go visits the keys of a map in random order, and for a few patches the order decides the outcome
    (see ``smp_strategies``). The case is sent ``copies`` times in one List, and each item is patched
    with a fresh iteration order.
    """
    outcomes = kubectl_apply([(original, patch)] * copies, kind)
    return len({(o.ok, canonical(o.result) if o.ok else None) for o in outcomes}) > 1


# --------------------------------------------------------------------------------------------------------
# Shrinking a divergence to a small case.
# --------------------------------------------------------------------------------------------------------


def _smaller(value: Any) -> list[Any]:
    """Return copies of ``value`` with one map key or one list item removed, at any depth."""
    out: list[Any] = []
    if isinstance(value, dict):
        for key in value:
            out.append({k: v for k, v in value.items() if k != key})
        for key, sub in value.items():
            out.extend({**value, key: smaller} for smaller in _smaller(sub))
    elif isinstance(value, list):
        for i in range(len(value)):
            out.append(value[:i] + value[i + 1 :])
        for i, sub in enumerate(value):
            out.extend(value[:i] + [smaller] + value[i + 1 :] for smaller in _smaller(sub))
    return out


def _signature(d: Divergence) -> tuple:
    crashed = bool(d.engine.error and d.engine.error.startswith("engine crashed:"))
    return d.kubectl.ok, d.engine.ok, crashed


def shrink(divergence: Divergence, kind: str = "PodTemplateSpec", *, workers: int = 2, chunk: int = 16) -> Divergence:
    """Shrink a divergence greedily to a case that no single removal keeps diverging.

    A smaller case is kept when it still diverges the same way (who fails, and whether the engine
    crashed). The original is shrunk first, all candidates of a round in one kubectl process since they
    share the patch; then the patch, ``chunk`` candidates at a time.

    Args:
        divergence: The case to shrink.
        kind: What the documents are.
        workers: How many kubectl processes to run at once.
        chunk: Patch candidates tried per step.

    Returns:
        The smallest divergence found (``index`` is kept from ``divergence``).
    """
    current = divergence
    wanted = _signature(divergence)

    def first_diverging(candidates: list[tuple[Any, Any]]) -> Divergence | None:
        usable = []
        for case in candidates:
            try:
                wrap(kind, *case)
            except ValueError:
                continue
            usable.append(case)
        if not usable:
            return None
        _, found = find_divergences(usable, kind, workers=workers)
        for d in found:
            if _signature(d) == wanted:
                return Divergence(divergence.index, d.original, d.patch, d.kubectl, d.engine)
        return None

    progress = True
    while progress:
        progress = False
        smaller = first_diverging([(o, current.patch) for o in _smaller(current.original)])
        if smaller is not None:
            current, progress = smaller, True
            continue
        candidates = [(current.original, p) for p in _smaller(current.patch)]
        for start in range(0, len(candidates), chunk):
            smaller = first_diverging(candidates[start : start + chunk])
            if smaller is not None:
                current, progress = smaller, True
                break
    return current
