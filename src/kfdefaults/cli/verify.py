"""``kfdefaults verify FILE``: a live Pod or PyTorchJob compared with what its profile renders now."""

from __future__ import annotations

import argparse
from typing import Any

from .common import (
    add_cluster_template,
    add_kubernetes_version,
    add_layer_options,
    add_sets,
    add_target,
    err,
    layer_arguments,
    parser,
    task_layer,
)
from .common import run as run_body

_DESCRIPTION = """\
Compare a live Pod or PyTorchJob, or a task's receipt, with what its profile renders now: every value the profile
sets that the live object lacks or holds otherwise, with the file and line that set it now.

  kubectl get pod NAME -o yaml | kfdefaults verify -
  kubectl get pytorchjob NAME -o yaml > job.yaml; kfdefaults verify job.yaml --team team
  kubectl logs POD -c pytorch | kfdefaults verify -

FILE holds a Pod, a PyTorchJob, a kind: List of them or several YAML documents; or a receipt (kind: Receipt, the
JSON a task on a profile prints when it starts), or a task's log that carries one. The profile is --profile, else
the receipt's or the kfdefaults.io/profile annotation, else the one KFDEFAULTS_ELASTIC names; the target is
--target, else the receipt's or the one KFDEFAULTS_ELASTIC names, else the default.

Exit status: 0 nothing differs, 1 something differs, or the file or a profile is bad (a message on standard error)."""


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, _DESCRIPTION)
    p.add_argument("file", metavar="FILE", help="The manifest (kubectl get ... -o yaml or -o json); - for standard input.")
    p.add_argument("--profile", metavar="NAME", default=None,
                   help="Compare with this profile, whatever the kfdefaults.io/profile annotation says.")
    add_layer_options(p)
    add_sets(p, "Task-layer value (repeatable), as in render: what the task itself set (Elastic(nnodes=2) is "
                "elastic.nnodes=2).")
    add_target(p)
    add_cluster_template(p)
    add_kubernetes_version(p)
    p.add_argument("-o", "--output", choices=["text", "json"], default="text",
                   help="text (the default) or json, for scripts.")
    return p


def run(args: argparse.Namespace) -> int:
    return run_body(lambda: _verify(args))


def _verify(args: argparse.Namespace) -> int:
    import json

    from ..pipeline import Pipeline
    from ..receipt.expect import recorded_task
    from ..show.live import first_registered, profile_of
    from ..show.verify import verify_object
    from ..show.verify_view import short_digest, show_reports
    from ..targets import SETTLED

    layers = layer_arguments(build("kfdefaults verify"), args)
    objects, log_notes = _objects(args.file)
    pipelines: dict[str | None, Any] = {}
    profiles: dict[tuple[str, str, str], Any] = {}
    reports, assumed = [], ""

    def pipeline_for(target: str | None) -> Any:  # one per target: None is the project's, or the default
        if target not in pipelines:
            pipelines[target] = Pipeline.discover(  # the lock's changes are differences here
                **layers, kubernetes_version=args.kubernetes_version, target=target,
                cluster_template=args.cluster_template, use_lock=False)
        return pipelines[target]

    def compare(obj: Any, name: str, named_by: str, pipeline: Any) -> Any:
        registered = first_registered(obj)
        overrides, labels, void = recorded_task(registered.recorded if registered is not None else {})
        key = (pipeline.target.name, name, json.dumps(overrides, sort_keys=True))
        if key not in profiles:
            profiles[key] = _resolve_for(obj, name, named_by,
                                         lambda: _profile_now(pipeline, name, args.sets, overrides, labels))
        report = verify_object(obj, name, named_by, profiles[key])
        report.notes += [void] if void else []
        return report

    for obj in objects:
        name, named_by = profile_of(obj, args.profile)
        asked = _target(args, obj)
        pipeline = pipeline_for(asked)
        report = compare(obj, name, named_by, pipeline)
        if asked is None and not assumed and pipeline.target_why not in SETTLED:
            assumed = _assumed(report, lambda other: compare(obj, name, named_by, pipeline_for(other)), pipeline)
        report.notes += log_notes  # the log's other marker lines: a receipt log holds one object
        lock_now = _lock_digest(pipeline)
        if report.lock is not None and lock_now is None:
            report.notes.append(f"made in a project with a kfdefaults.lock ({short_digest(report.lock)}), and none is "
                                "found from here: run verify in that project's folder, whose layers made the pod")
        elif report.lock is not None and report.lock != lock_now:
            report.notes.append(f"made under kfdefaults.lock {short_digest(report.lock)}; the project's "
                                f"kfdefaults.lock is {short_digest(lock_now)} now")
        reports.append(report)
    if assumed:
        err(assumed)
    return show_reports(reports, args.output)


def _assumed(report: Any, compare: Any, pipeline: Any) -> str:
    """The line that says the target was assumed, when the next target's comparison of the same object differs
    from ``report`` (``compare(target name)`` makes it); ``""`` when it is the same."""
    from ..errors import ProfileError
    from ..targets import TARGETS
    from .render import assumed_line

    other = next(t for t in TARGETS if t != pipeline.target.name)
    try:
        theirs = compare(other)
    except ProfileError:
        return assumed_line(pipeline.target, ["an error (the profile does not resolve for it)"], other)
    def seen(r: Any) -> tuple:
        return r.equal, [(m.path, repr(m.live), repr(m.now)) for m in r.mismatches]

    if seen(theirs) == seen(report):
        return ""
    count = len(theirs.mismatches)
    said = f"{count} value{'s' * (count != 1)} differ{'s' * (count == 1)}" if count else "no value differs"
    return assumed_line(pipeline.target, [said + (", the digest differs" if theirs.digest_differs else "")], other)


def _profile_now(pipeline: Any, name: str, sets: list[str], overrides: dict[str, Any], labels: dict[str, str]) -> Any:
    """Profile ``name`` now (:class:`~kfdefaults.show.verify.ProfileNow`), with the task layer the object records
    (``overrides``: :func:`~kfdefaults.receipt.expect.recorded_task`) and ``--set`` over it. A recorded task layer
    that no longer merges (a setting the profile's target refuses now) is left out, and a note says so."""
    from ..errors import ProfileError
    from ..settings import RUNTIME_ENV
    from ..show.verify import ProfileNow

    given = task_layer(pipeline, name, sets)
    digest = pipeline.resolve(name, checked=False).digest()  # what the annotation records: the file layers
    if overrides:
        try:
            recorded = pipeline.task_layer(name, {"elastic": overrides}, source=RUNTIME_ENV, labels=labels)
            return ProfileNow(pipeline.resolve(name, [recorded, given]), digest, overrides)
        except ProfileError as e:
            note = f"the task layer its {RUNTIME_ENV} records does not merge now ({e.findings[0].message}): left out"
            return ProfileNow(pipeline.resolve(name, [given]), digest, notes=[note])
    return ProfileNow(pipeline.resolve(name, [given]), digest)


def _objects(file: str) -> tuple[list[Any], list[str]]:
    """The live objects of ``file`` and notes on reading it: the receipt of a task's log (its first
    ``KFDEFAULTS_RECEIPT`` line that carries one, read as ``kfdefaults why`` reads a log, up to 64 MiB; notes on
    the others), else the manifests of a file of them (up to the manifests' budget:
    :data:`~kfdefaults.read.document.MANIFEST_BUDGET`)."""
    import io

    from ..read.document import MANIFEST_BUDGET
    from ..read.document import error
    from ..read.files import decode_text, read_input
    from ..read.yaml import parse_yaml_documents
    from ..receipt.document import MARKER
    from ..show.live import live_objects, receipt_objects
    from ..why.logtext import read_log

    raw = read_input(file, LOG_LIMIT)
    if (MARKER + " {").encode() in raw:
        log = read_log(file, io.BytesIO(raw))
        objects, notes = receipt_objects(log.lines, file)
        return objects, notes + log.notes
    if len(raw) > MANIFEST_BUDGET.file_bytes:
        raise error(file, 1, 1, f"file is larger than {MANIFEST_BUDGET.file_bytes >> 10} KiB")
    return live_objects(parse_yaml_documents(decode_text(raw, file), file, MANIFEST_BUDGET), file), []


def _resolve_for(obj: Any, name: str, named_by: str, resolve: Any) -> Any:
    """``resolve()``: the profile ``name`` resolved here; for one a receipt names that does not resolve here, an
    error at the receipt's line that says what the receipt itself records.

    Raises:
        ProfileError: the profile does not resolve (located at the receipt where it named the profile).
    """
    from ..errors import Finding, ProfileError, shown

    try:
        return resolve()
    except ProfileError as e:
        if obj.kind != "Receipt" or named_by != "the receipt":
            raise
        count = len(obj.data.get("differences") or [])
        why = shown(str(e.findings[0].message if e.findings else e), 200)
        raise ProfileError([Finding(obj.location(), "", f"profile {shown(name, 60)!r}, which the receipt names, does not "
                                    f"resolve here ({why}); the receipt itself records {count} difference"
                                    f"{'s' * (count != 1)} between the pod and what its task registered (kfdefaults why "
                                    "reads them): run verify in the project that made the task, or give --profile")]) \
            from None


LOG_LIMIT = 64 << 20
"""The bytes of a task's log ``verify`` reads at most (a receipt is near its start)."""


def _lock_digest(pipeline: Any) -> str | None:
    """The digest of the project's ``kfdefaults.lock`` (``None`` without one, or when it is broken)."""
    from ..errors import ProfileError
    from ..pipeline.project import project_lock

    try:
        lock = project_lock(pipeline.project)
    except ProfileError:
        return None
    return lock.digest if lock is not None else None


def _target(args: argparse.Namespace, obj: Any) -> str | None:
    """``--target``, else the target the pod was registered for (``KFDEFAULTS_ELASTIC`` or the receipt), else
    ``None``: the project's, or the default (:attr:`kfdefaults.pipeline.Pipeline.target_why`)."""
    from ..show.live import first_registered
    from ..targets import TARGETS

    if args.target is None:
        registered = first_registered(obj)
        if registered is not None and registered.target in TARGETS:
            return registered.target
    return args.target
