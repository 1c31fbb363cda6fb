"""``kfdefaults why LOG``: the known failures of distributed training in a log, each answered with the profile keys
that govern it, their values, who set them, and what to change."""

from __future__ import annotations

import argparse
from typing import Any

from .common import add_kubernetes_version, add_layer_options, add_sets, add_target, discover, parser
from .common import run as run_body

_DESCRIPTION = """\
Read a task's log, an exception or kubectl describe output, recognise the known failures of distributed training
in it, and answer each with the profile key that governs it, its value, the layer and FILE:LINE that set it, and
what to change it to.

  kubectl logs POD -c pytorch | kfdefaults why -
  kfdefaults why task.log --profile gpu-large --team team

Values come from the receipt the task printed in the log (its KFDEFAULTS_RECEIPT line), else from the
KFDEFAULTS_ELASTIC that kubectl describe shows, else from the profile as it renders now: --profile, else the pod's
kfdefaults.io/profile annotation in the log. A log of no known failure says so; nothing is guessed.

Exit status: 0 a failure was recognised, 1 none was, or the log or a profile is bad (a message on standard error)."""


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, _DESCRIPTION)
    p.add_argument("file", metavar="LOG", help="The log (a file, or - for standard input).")
    p.add_argument("--profile", metavar="NAME", default=None,
                   help="The profile the task ran on, where the log carries no receipt.")
    add_layer_options(p)
    add_sets(p, "Task-layer value (repeatable), as in render: what the task itself set.")
    add_target(p)
    p.add_argument("--facts", default=None, metavar="FILE",
                   help="The cluster's facts (_cluster-facts.yaml: node start and image pull times, Kueue); 'none' "
                        "for none. Default: as render finds them.")
    add_kubernetes_version(p)
    p.add_argument("-o", "--output", choices=["text", "json"], default="text", help="text (the default) or json.")
    return p


def run(args: argparse.Namespace) -> int:
    return run_body(lambda: _why(args))


def _why(args: argparse.Namespace) -> int:
    from ..why import Cluster, answers_for, recognise, values_in_log
    from ..why.logtext import read_log

    log = read_log(args.file)
    values, named, notes = values_in_log(log)
    recognised = recognise(log.lines)
    cluster = None
    if recognised:  # the cluster's facts, and the profile where the log carries no values
        pipeline = _pipeline(args, values)
        name = args.profile if values is None and args.profile else named
        named_by = "--profile" if name is args.profile else (
            "the receipt" if values is not None else "the log's kfdefaults.io/profile annotation")
        resolved = _profile_now(args, pipeline, name, named_by, log, notes) if name else None
        if values is None and resolved is not None:
            values = _values_now(resolved, name, named_by)
        facts = pipeline.facts
        if values is not None and facts is not None:
            values.torch = facts.torch_version(values.profile or name or "")[0]
        cluster = Cluster(facts, _cold_start(pipeline, resolved, notes) if facts is not None else None,
                          _fabric_offers(pipeline, resolved) if facts is not None else [])
    answers = answers_for(recognised, values, cluster)
    notes += _fabric_notes(log, recognised, answers)
    if values is not None and args.profile and values.source.startswith(("the receipt", "the settings registered")):
        notes.append("--profile is read only where the log carries no receipt and no KFDEFAULTS_ELASTIC: the log says "
                     "what the task ran with")
    return _show(log, answers, values, notes, args.output)


def _fabric_offers(pipeline: Any, resolved: Any) -> list:
    """What the pools the profile fits offer of a fabric (all the cluster's pools where the profile is not known):
    ``(text, device or None)`` each (:func:`kfdefaults.check.fit_causes.fabric_offer`)."""
    from ..check.fit_causes import fabric_offer
    from ..show.fit_view import where

    pools = pipeline.pools or []
    if resolved is not None and pools:
        pools = [v.pool for v in pipeline.fit(resolved).pools if v.fits]
    offers = [(p, fabric_offer(p, p.node, pipeline.facts)) for p in pools]
    return [(f"{o.offer(p.name)} ({where(o.pool)})", o.resource) for p, o in offers if o is not None]


def _fabric_notes(log: Any, recognised: list, answers: list) -> list[str]:
    """A note for a fabric failure not claimed (nothing asks for a fabric), and for a log whose NCCL used the
    fabric (:func:`kfdefaults.why.failures.fabric_in_use`) and shows no fabric failure: healthy."""
    from ..why.failures import fabric_in_use

    notes = []
    answered = {a.found.failure.name for a in answers}
    for found in (f for f in recognised if f.failure.fabric and f.failure.name not in answered):
        line = found.evidence[0][0]
        notes.append(f"line {line}: {found.failure.title}; not claimed as a failure: the profile asks for no fabric "
                     "and no pool of the cluster's facts offers one (give --profile NAME, or the facts, to judge it)")
    in_use = fabric_in_use(log.lines)
    if in_use is not None and not any(a.found.failure.name.startswith("fabric-") for a in answers):
        notes.append(f"line {in_use[0]}: NCCL uses the fabric (`{in_use[1]}`): healthy")
    return notes


def _pipeline(args: argparse.Namespace, values: Any) -> Any:
    from ..targets import TARGETS

    target = args.target  # else the log's, else the project's (Pipeline.target_why)
    if args.target is None and values is not None and getattr(values, "target", None) in TARGETS:
        target = TARGETS[values.target]
    return discover(build("kfdefaults why"), args, target=target, use_lock=False)


def _profile_now(args: argparse.Namespace, pipeline: Any, name: str, named_by: str, log: Any, notes: list[str]) -> Any:
    """The profile ``name`` as it renders here with ``--set``; ``None``, with a note, when the log named it and it
    cannot be resolved here (another project's, or broken here): the answer then stands on what the log records."""
    from ..errors import ProfileError, shown
    from ..merge.auto import device_autos
    from ..validate.sets import parse_sets
    from ..why.values import annotations_in

    tree, labels = parse_sets(args.sets, pipeline.kubernetes_version)
    try:
        resolved = pipeline.resolve(name, [pipeline.task_layer(name, tree, source="--set", labels=labels)],
                                    per_pool=True)  # a fabric device's `auto` is the pool's: kept as written
        now = pipeline.resolve(name, per_pool=True).digest()
    except ProfileError as e:
        if named_by == "--profile":
            raise
        notes.append(f"profile {shown(name, 60)} ({named_by}) does not resolve here ({shown(str(e.findings[0]), 200)}): "
                     "the answer stands on what the log records")
        return None
    if device_autos(resolved):  # render works the count out of the pools, or refuses: say so, answer as written
        try:
            pipeline.resolve(name, [pipeline.task_layer(name, tree, source="--set", labels=labels)])
        except ProfileError as e:
            notes.append(f"profile {shown(name, 60)} does not render here: {shown(str(e.findings[0]), 600)}; the "
                         "answer shows its values as written")
    _, digest = annotations_in(log.lines)
    if digest is not None and digest != now:
        notes.append(f"the pod was made from {name} {digest[:19]}…; it renders {now[:19]}… now: the values are today's")
    return resolved


def _values_now(resolved: Any, name: str, named_by: str) -> Any:
    from ..why.values import ProfileValues

    return ProfileValues(resolved, f"profile {name} as it renders now (from {named_by})")


def _cold_start(pipeline: Any, resolved: Any, notes: list[str]) -> Any:
    """How late a cold node starts: on the pool the profile fits (:meth:`~kfdefaults.pipeline.Pipeline.cold_start`,
    the figures ``kfdefaults timeline`` shows), else the cluster's."""
    from ..check.start import cold_start

    if resolved is None:
        return cold_start(pipeline.facts, None)._replace(pool=(None, "the profile is not known here"))
    return pipeline.cold_start(resolved)


def _show(log: Any, answers: list, values: Any, notes: list[str], output: str) -> int:
    import sys

    from ..show.output import output_encoding, to_json
    from ..why.view import document, text_lines

    if output == "json":
        sys.stdout.write(to_json(document(log, answers, values, notes), encoding=output_encoding()))
    else:
        for line in text_lines(log, answers, values, notes):
            sys.stdout.write(line + "\n")
    return 0 if answers else 1
