"""``kfdefaults render NAME``: a profile merged across its layers, as the task will get it."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ..errors import KfdefaultsError
from ..inputs import Inputs
from .common import (
    add_cluster_facts,
    add_cluster_template,
    add_kubernetes_version,
    add_layer_options,
    add_sets,
    add_target,
    err,
    is_terminal,
    layer_arguments,
    out,
    parser,
    report,
)
from .common import run as run_body

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from .replay import Recording


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "Print profile NAME merged across its layers (builtin, platform, team, --set).")
    p.add_argument("name", metavar="NAME")
    add_layer_options(p)
    add_sets(p, "Task-layer value (repeatable): elastic.nnodes=2, "
                "'pod_template.spec.containers[name=primary].image=img:1'.")
    p.add_argument("-o", "--output", choices=["yaml", "json"], default=None,
                   help="yaml (the default) or json; with --explain, the explanation as data.")
    p.add_argument("--as", dest="as_", choices=["profile", "podtemplate", "flyte", "pytorchjob", "jobset"],
                   default="profile",
                   help="profile (the default): the merged profile; podtemplate: a Kubernetes v1 PodTemplate "
                        "manifest (standard error names the containers Flyte's backend drops from it when a task "
                        "names it as pod_template_name: all but primary and default); flyte: the TaskTemplate the "
                        "target SDK registers for a task on the profile; pytorchjob: the PyTorchJob Flyte's backend "
                        "creates from that TaskTemplate (flytekit), the cluster's default PodTemplate merged in; "
                        "jobset: the JobSet it creates for a clustered task (--target clustered), the same way. "
                        "flyte, pytorchjob and jobset define and serialize a real task: they import the SDK, which "
                        "takes a second or more.")
    p.add_argument("--image", metavar="IMAGE", default=None,
                   help="With --as flyte, pytorchjob or jobset: the registration's default image, as pyflyte register "
                        "--image (flytekit) or flyte deploy --image (Flyte 2) give it (default: the SDK's default "
                        "image). A profile's image wins over it; the task's own image argument would win over both.")
    add_target(p)
    add_cluster_template(p)
    add_cluster_facts(p)
    add_kubernetes_version(p)
    p.add_argument("--explain", action="store_true",
                   help="For every leaf: the value, the layer and FILE:LINE that set it, and values a layer removed "
                        "(a table on a terminal, plain text when piped, -o json / -o yaml for scripts).")
    return p


def replayable(args: argparse.Namespace) -> bool:
    """Whether this render may be replayed when its inputs are unchanged (:mod:`.replay`): every render but one
    whose ``--nodes`` is standard input or a pipe, whose bytes no manifest records."""
    return args.nodes is None or os.path.isfile(args.nodes)


def run(args: argparse.Namespace, recording: Recording | None = None) -> int:
    if args.explain and args.as_ != "profile":
        build("kfdefaults render").error(f"--explain shows the merged profile; it does not combine with --as {args.as_}")
    if args.image is not None and args.as_ not in TASK_VIEWS:
        build("kfdefaults render").error("--image is the image of the task that --as flyte serializes")
    return run_body(lambda: _render(args, Inputs() if recording is None else recording.inputs, recording))


def _render(args: argparse.Namespace, inputs: Inputs, recording: Recording | None) -> None:
    from ..pipeline import Pipeline
    from ..show.output import (
        order_k8s,
        order_profile,
        output_encoding,
        to_json,
        to_yaml,
    )
    from ..validate.sets import parse_sets

    output = args.output or "yaml"
    layers = layer_arguments(build("kfdefaults render"), args)
    if args.as_ in TASK_VIEWS and layers["only"]:
        build("kfdefaults render").error(f"--as {args.as_} shows what registering the task gives, which reads every "
                                         "source of each layer: --only-platform / --only-team do not combine with it")
    pipeline = Pipeline.discover(**layers, kubernetes_version=args.kubernetes_version, target=args.target,
                                 cluster_template=args.cluster_template, facts=args.facts, nodes=args.nodes,
                                 inputs=inputs)
    target = pipeline.target
    if args.as_ == "pytorchjob" and target.name != "flytekit":
        raise KfdefaultsError("--as pytorchjob shows what Flyte 1's backend builds from a flytekit task: use "
                              "--target flytekit")
    if args.as_ == "jobset" and target.name != "clustered":
        raise KfdefaultsError("--as jobset shows what Flyte 2's backend builds from a clustered task: use "
                              "--target clustered")
    tree, labels = parse_sets(args.sets, pipeline.kubernetes_version)
    task = pipeline.task_layer(args.name, tree, source="--set", labels=labels)
    resolved = pipeline.resolve(args.name, [task])
    said = target_line(target, pipeline.target_why, resolved, args.as_)
    if said:
        err(said)  # on standard error, as the warnings: the output stays clean
    findings = pipeline.warnings(resolved)
    if args.as_ in TASK_VIEWS:
        report(findings)
        _render_flyte(args, pipeline, tree, output, recording)
        return
    if args.as_ == "podtemplate":
        from ..backend.pod_template_name import SUMMARY, dropped_by_pod_template_name
        from ..errors import sorted_findings

        dropped = dropped_by_pod_template_name(resolved)
        if dropped:
            err(SUMMARY)
        findings = sorted_findings(findings + dropped)
    report(findings)
    if args.explain:
        from ..show.explain_view import show_explain

        show_explain(resolved, args.output or ("table" if is_terminal() else "text"))
        return
    if args.as_ == "podtemplate":
        from ..smp.schema import schema_type

        data = order_k8s(resolved.pod_template_manifest(), schema_type("PodTemplate", pipeline.kubernetes_version))
    else:
        data = order_profile(resolved.to_dict(), pipeline.kubernetes_version)
    encoding = output_encoding()
    out(to_json(data, encoding=encoding) if output == "json" else to_yaml(data, encoding=encoding))


TASK_VIEWS = ("flyte", "pytorchjob", "jobset")
"""The ``--as`` views that define and serialize a real task."""


def target_line(target: Any, why: str, resolved: Any, as_: str) -> str | None:
    """``kfdefaults: target flytekit assumed; ...`` (:func:`assumed_line`), where the target is assumed and the
    choice matters; else ``None``.

    Assumed: nothing stated it (``--target``, ``KFDEFAULTS_TARGET``, the project's ``[tool.kfdefaults] target``),
    and both SDKs are installed, or neither (``why`` is then not one of :data:`~kfdefaults.targets.SETTLED`, and
    :func:`kfdefaults.targets.default_target` takes flytekit). Matters: ``--as flyte`` prints one SDK's
    TaskTemplate, always; the profile (and ``--explain``) where a setting both plugins take (``monitor_interval``,
    ``max_restarts``, ...: :attr:`~kfdefaults.targets.Target.settings`) merges to another value over the other
    plugin's defaults (flytekit's ``monitor_interval`` 5, Flyte 2's 3, where no layer sets it); the line names the
    other target's values. A key only one SDK has (``start_method``, the ``nccl_*`` settings) is
    that SDK's, not a choice the merge makes. ``--as podtemplate`` prints the pod template, which the target does
    not change. The other target's settings are the merge of the same fragments for it
    (:func:`kfdefaults.merge.fold.merge_fragments`, kept in the cache as every merge is).
    """
    from ..targets import SETTLED, TARGETS

    if why in SETTLED or as_ in ("podtemplate", "pytorchjob", "jobset"):
        return None
    if as_ == "flyte":
        return assumed_line(target, [f"its TaskTemplate is {target.name}'s"])
    from ..merge.fold import merge_fragments
    from ..merge.leaves import same

    other = next(t for t in TARGETS.values() if t.name != target.name)
    fragments = [f for f in resolved.fragments if f.layer != "cluster"]
    theirs = merge_fragments(resolved.name, fragments, kubernetes_version=resolved.kubernetes_version,
                             target=other).elastic_settings
    ours = resolved.elastic_settings
    differ = [f"{k} {json.dumps(theirs.get(k))}" for k in target.settings
              if k in other.settings and not same(ours.get(k), theirs.get(k))]
    return assumed_line(target, differ, other.name) if differ else None


def assumed_line(target: Any, differ: list[str], other: str | None = None) -> str:
    """The one line that says ``target`` was assumed, and what ``other`` would give instead (``differ``). At most
    100 characters: two targets differ in at most two defaults of the settings both take (``monitor_interval``,
    ``max_restarts``: :data:`~kfdefaults.targets.FLYTEKIT`, :data:`~kfdefaults.targets.FLYTE2`)."""
    return f"kfdefaults: target {target.name} assumed; {f'{other}: ' if other else ''}{', '.join(differ)} (see --target)"


def _render_flyte(args: argparse.Namespace, pipeline: Any, tree: dict[str, Any], output: str,
                  recording: Recording | None) -> None:
    """``render --as flyte``: define a real task on the profile and print the TaskTemplate the target SDK registers
    (the task's warnings are the profile's, printed as Python warnings by the SDK adapter); ``--as pytorchjob``:
    the PyTorchJob Flyte's backend creates from it (:mod:`kfdefaults.backend.pytorchjob`). What the task depends
    on (the SDK's packages, what its pipeline read) goes into the ``recording``, so that the next run with the same
    inputs is replayed without importing the SDK.

    Importing the SDK takes a second or more: on a terminal, a line on standard error says so meanwhile."""
    from ..pipeline.shared import shared_pipelines
    from ..show.output import output_encoding, to_json, to_yaml
    from ..targets import SDK_PACKAGES

    data, said = _serialize(args, pipeline, tree)
    if recording is not None:
        for module in SDK_PACKAGES[pipeline.target.name]:
            recording.inputs.module(module)
        for shared in shared_pipelines():
            recording.add(shared.inputs)
    for category, message, filename, lineno, finding in said:
        if finding is not None:
            report([finding])  # laid out as every warning of the command line
        elif category == "KfdefaultsWarning":
            err(f"kfdefaults: {message}")
        else:
            err(f"{filename}:{lineno}: {category}: {message}")
    if args.as_ == "pytorchjob":
        data = _pytorch_job(args.name, data, pipeline)
    elif args.as_ == "jobset":
        data = _jobset(data, pipeline)
    encoding = output_encoding()
    out(to_json(data, encoding=encoding) if output == "json" else to_yaml(data, encoding=encoding))


def _serialize(args: argparse.Namespace, pipeline: Any, tree: dict[str, Any]) -> tuple[dict[str, Any], list[list[Any]]]:
    """Define the task and serialize it with the target SDK: ``(TaskTemplate, warnings said meanwhile)``, each
    warning ``[category name, message, filename, lineno, the Finding it says or None]``."""
    import sys
    import warnings

    from ..errors import KfdefaultsWarning
    from ..runtime import PROJECT_FROM
    from ..settings import CLUSTER_TEMPLATE_ENV

    from ..runtime.preview import task_template

    saved = os.environ.get(CLUSTER_TEMPLATE_ENV)
    if args.cluster_template is not None:  # the task is defined as the user's would be: the flag as the variable
        os.environ[CLUSTER_TEMPLATE_ENV] = args.cluster_template
    progress = sys.stderr.isatty()
    if progress:
        sys.stderr.write(f"kfdefaults: loading {pipeline.target.modules[0]} to serialize the task...")
        sys.stderr.flush()
    try:
        with warnings.catch_warnings(record=True) as said:  # which image wins, as registering the task says it
            warnings.simplefilter("always", KfdefaultsWarning)
            # the project of the command line (the working directory's, or --project's), not kfdefaults' own
            project = PROJECT_FROM.set((pipeline.project.root or os.getcwd(),))
            try:
                data = task_template(pipeline.target, args.name, platform=args.platform, team=args.team, overrides=tree, image=args.image)
            finally:
                PROJECT_FROM.reset(project)
    except ImportError as e:  # no SDK, or the plugin imports torch when a task is defined
        raise KfdefaultsError(f"render --as {args.as_} defines a task, which needs {e.name or 'a package'}: {e}") from None
    finally:
        if progress:
            sys.stderr.write("\r\033[K")  # the line is taken away again
        if saved is not None:
            os.environ[CLUSTER_TEMPLATE_ENV] = saved
        else:
            os.environ.pop(CLUSTER_TEMPLATE_ENV, None)
    return data, [["KfdefaultsWarning" if issubclass(w.category, KfdefaultsWarning) else w.category.__name__,
                   str(w.message), w.filename, w.lineno, getattr(w.message, "finding", None)] for w in said]


def _pytorch_job(name: str, task_template: dict[str, Any], pipeline: Any) -> dict[str, Any]:
    from ..backend.pytorchjob import build_pytorch_job
    from ..show.output import order_k8s
    from ..smp.schema import schema_type

    if task_template.get("type") != "pytorch":
        raise KfdefaultsError(f"profile {name!r} runs as one pod (nnodes: 1), not as a PyTorchJob: its task type is "
                              f"{task_template.get('type')!r}; give it several nodes (--set elastic.nnodes=2) to see the job")
    cluster = pipeline.cluster
    job = build_pytorch_job(task_template, cluster.manifest if cluster is not None else None)
    pod_template = schema_type("PodTemplateSpec", pipeline.kubernetes_version)
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        replica["template"] = order_k8s(replica["template"], pod_template)
    return job


def _jobset(task_template: dict[str, Any], pipeline: Any) -> dict[str, Any]:
    """``--as jobset``: the JobSet Flyte 2's backend creates from a clustered task's TaskTemplate
    (:func:`kfdefaults.backend.jobset.build_jobset`), the cluster's default PodTemplate merged in."""
    from ..backend.jobset import POD_TEMPLATE_PATH, build_jobset
    from ..show.output import order_k8s
    from ..smp.schema import schema_type

    cluster = pipeline.cluster
    jobset = build_jobset(task_template, cluster.manifest if cluster is not None else None)
    holder = jobset
    for part in POD_TEMPLATE_PATH[:-1]:
        holder = holder[part]
    holder["template"] = order_k8s(holder["template"], schema_type("PodTemplateSpec", pipeline.kubernetes_version))
    return jobset
