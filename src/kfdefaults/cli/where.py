"""``kfdefaults where [NAME]``: every source of every layer, in order, with what each gave; for NAME, the ordered
chain of fragments that make it (the ``pip config debug`` / ``git config --show-origin`` habit)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..errors import ProfileError
from .common import add_layer_options, layer_arguments, out, out_lines, parser, report
from .common import run as run_body


def build(prog: str) -> argparse.ArgumentParser:
    p = parser(prog, "Show where profiles come from: the project (the pyproject.toml every command reads), every\n"
                     "source of every layer, in the order they are read, with the folders each gave and the profiles\n"
                     "in them, and the files that state the cluster (its facts and PodTemplate) with what named them;\n"
                     "with NAME, the files that make NAME, lowest first (the parents of `extends` before the profile,\n"
                     "each layer in turn).")
    p.add_argument("name", metavar="NAME", nargs="?")
    add_layer_options(p)
    p.add_argument("-o", "--output", choices=["text", "json"], default="text", help="text (the default) or json.")
    return p


def run(args: argparse.Namespace) -> int:
    return run_body(lambda: _where(args))


def _where(args: argparse.Namespace) -> int:
    from ..layers import layer_sources
    from ..pipeline import Pipeline
    from ..pipeline.project import find_project
    from ..show.output import output_encoding, to_json

    layers = layer_arguments(build("kfdefaults where"), args)
    start = (layers["project"] or [os.getcwd()])[0]
    layers["project"] = project = find_project(layers["project"])  # the one every command finds, shown
    report_: dict[str, Any] = {
        "project": {"pyproject": project.pyproject, "from": os.path.abspath(start),
                    "named_by": "--project" if args.project else "the working directory"},
        "layers": [{"layer": layer, "sources": [_source(source) for source in sources]}
                   for layer, sources in layer_sources(**layers).items()]}
    report_["cluster"] = _cluster(layers)
    status = 0
    if args.name:
        try:
            fragments = Pipeline.discover(**layers).fragments(args.name)
            report_["profile"] = {"name": args.name, "fragments": [
                {"layer": f.layer, "profile": f.profile, "file": f.source} for f in fragments]}
        except ProfileError as e:
            report(e.findings)
            status = 1
    if args.output == "json":
        out(to_json(report_, encoding=output_encoding()))
    else:
        out_lines(_text(report_))
    return status


def _source(source: Any) -> dict[str, Any]:
    """What one source is and what it gave: its folders, each with its profiles, or why it gave none."""
    from ..read import path_problem

    entry: dict[str, Any] = {"source": describe(source), "folders": []}
    try:
        folders = source.folders()
    except ProfileError as e:  # a broken installed package or pyproject.toml
        entry["error"] = "; ".join(str(f) for f in e.findings)
        return entry
    from ..layers import folder_names

    for folder in folders:
        problem = path_problem(folder.path, "folder")
        item: dict[str, Any] = {"path": folder.path, "origin": folder.origin}
        if problem:
            item["error"] = problem
        else:
            item["profiles"] = [name for _, name in folder_names(folder.path)]
        entry["folders"].append(item)
    return entry


def _cluster(layers: dict[str, Any]) -> dict[str, Any]:
    """The files that state the cluster, as every command finds them when not named (``--facts``,
    ``--cluster-template``): each file and what named it, ``None`` for none, or why it could not be found."""
    from ..errors import ProfileError
    from ..layers import CLUSTER_FACTS, discover_folders, find_platform_file, layer_sources
    from ..layers.cluster import CLUSTER_TEMPLATE, NONE

    found: dict[str, Any] = {}
    project = layers["project"]
    folders = discover_folders(layer_sources(**layers), [], None).get("platform", [])
    for key, kind in (("facts", CLUSTER_FACTS), ("pod_template", CLUSTER_TEMPLATE)):
        try:
            file = find_platform_file(kind, None, folders, project=project)
        except ProfileError as e:  # two platform folders hold one, or pyproject.toml names it wrongly
            found[key] = {"error": "; ".join(str(f) for f in e.findings)}
            continue
        said_none = [origin for value, origin in ((os.environ.get(kind.variable), kind.variable),
                                                  (project.section.get(kind.key), project.pyproject))
                     if isinstance(value, str) and value.strip().lower() == NONE]
        found[key] = ({"file": file.path, "named_by": file.origin} if file is not None else
                      {"file": None, "named_by": said_none[0]} if said_none else None)
    return found


def describe(source: Any) -> str:
    """How a source is named: ``--team``, ``KFDEFAULTS_TEAM_PATH``, ``pyproject.toml above DIR``..."""
    from ..errors import ProfileError
    from ..layers import (
        BuiltinSource,
        DeclaredPlatformSource,
        EntryPointSource,
        EnvSource,
        FlagSource,
        PyprojectSource,
    )
    from ..layers.pyproject import declares_a_folder

    if isinstance(source, BuiltinSource):
        return "kfdefaults' own profiles"
    if isinstance(source, FlagSource):
        return source.flag
    if isinstance(source, EnvSource):
        return source.variable + ("" if source.environ.get(source.variable) else " (not set)")
    if isinstance(source, EntryPointSource):
        return "installed packages (entry-point group kfdefaults.platform)"
    if isinstance(source, PyprojectSource):
        found = source.project.pyproject
        return f"[tool.kfdefaults] team in {found}" if found else "[tool.kfdefaults] team (no project)"
    if isinstance(source, DeclaredPlatformSource):
        found = source.project.pyproject
        if not found:
            return "[tool.kfdefaults] platform (no project)"
        try:
            declared = [entry for _, entry in source.project.paths("platform", "")]
        except ProfileError:
            declared = []
        packages = [entry for entry in declared if not declares_a_folder(source.project, entry)]
        required = (f"; requires the installed packages {', '.join(packages)} (their folders are listed above)"
                    if packages else "")
        return f"[tool.kfdefaults] platform in {found}{required}"
    return type(source).__name__


def _text(data: dict[str, Any]) -> list[str]:
    project = data["project"]
    if project["pyproject"]:
        lines = [f"project: {project['pyproject']} (found from {project['named_by']}, {project['from']}); its "
                 "[tool.kfdefaults] and kfdefaults.lock count"]
    else:
        lines = [f"project: none (no pyproject.toml in {project['from']} or above it; --project DIR names one)"]
    for layer in data["layers"]:
        lines.append(layer["layer"])
        for source in layer["sources"]:
            lines.append(f"  {source['source']}")
            if "error" in source:
                lines.append(f"      error: {source['error']}")
            elif not source["folders"]:
                lines.append("      (no folder)")
            for folder in source["folders"]:
                said = folder.get("error") or _profiles(folder["profiles"])
                lines.append(f"      {_short(folder['path'])}: {said}")
    lines.append("cluster (the files --facts and --cluster-template find when not given)")
    for key, what in (("facts", "facts"), ("pod_template", "PodTemplate (Flyte 1 tasks)")):
        found = data["cluster"][key]
        said = ("none found" if found is None else f"error: {found['error']}" if "error" in found
                else f"none ({found['named_by']} says none)" if found["file"] is None
                else f"{_short(found['file'])} (named by {found['named_by']})")
        lines.append(f"  {what}: {said}")
    profile = data.get("profile")
    if profile:
        lines += ["", f"{profile['name']}, lowest first:"]
        width = max(len(f["profile"]) for f in profile["fragments"])
        for i, fragment in enumerate(profile["fragments"], 1):
            lines.append(f"  {i:>2}  {fragment['layer']:<8}  {fragment['profile']:<{width}}  {_short(fragment['file'])}")
    return lines


def _profiles(names: list[str]) -> str:
    if not names:
        return "no profile files"
    return f"{len(names)} profile{'s' * (len(names) != 1)} ({', '.join(names)})"


def _short(path: str) -> str:
    """A path relative to the working folder where that is shorter."""
    relative = os.path.relpath(path) if os.path.isabs(path) else path
    return relative if len(relative) < len(path) else path
