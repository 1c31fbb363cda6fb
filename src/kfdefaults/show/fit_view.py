"""``kfdefaults fit`` printed: a summary table (rich on a terminal, plain text when piped) that fits in 80 columns,
then each pool's reasons and figures, every one with the ``FILE:LINE:COLUMN`` it comes from; or JSON."""

from __future__ import annotations

import textwrap
from fractions import Fraction
from typing import Any

from ..check.fit_causes import Origin, other_kinds, pending_lines
from ..check.fit_report import Figure, FitReport, JudgedPod, PoolFit
from ..errors import Location, relative_path
from ..escape import printable
from ..k8s.quantity import decimal_text as number
from ..k8s.quantity import quantity_text
from .output import output_encoding, to_json

COLUMNS = ("pool", "fits", "nodes", "pods/node", "at worst")

MAX_NAMED = 3
"""Most node names a line of a pool names (``h100-c, h100-d, h100-e and 1,997 more``)."""


def where(location: Location | None) -> str:
    """``FILE:LINE:COLUMN``, the file relative to the working folder when it is under it."""
    return "-" if location is None else str(location._replace(file=relative_path(location.file)))


def origin_text(origin: Origin | None) -> str:
    """``LAYER FILE:LINE:COLUMN`` of where the profile writes a value; ``nothing in the profile`` when it does not."""
    return "nothing in the profile" if origin is None else f"{origin.layer} {where(origin.location)}"


def _figure(figure: Figure | None, unit: str = "") -> str:
    """``VALUE UNIT (SETTING, LAYER FILE:LINE:COLUMN)``; ``unknown``."""
    if figure is None:
        return "unknown"
    layer = f"{figure.layer} " if figure.layer else ""
    return f"{figure.value}{unit} ({figure.what}, {layer}{where(figure.at)})"


def money(value: Fraction) -> str:
    """A cost with two decimals (``8496.00``), in the currency of the price."""
    return f"{float(value):.2f}"


def _nodes_cell(verdict: PoolFit) -> str:
    need = "-" if verdict.needed is None else (str(verdict.needed[0]) if verdict.needed[0] == verdict.needed[1]
                                               else f"{verdict.needed[0]}-{verdict.needed[1]}")
    pending = f", {verdict.pending} Pending" if verdict.pending else ""
    return f"{need} of {'?' if verdict.have is None else verdict.have.value}{pending}"


def _worst_cell(verdict: PoolFit) -> str:
    held = verdict.reserve
    if held is None:
        return "-"
    if held.node_hours is None:
        return f"{held.nodes} node{'s' * (held.nodes != 1)}, no deadline"
    parts = [f"{number(held.node_hours)} node-h"]
    if held.gpus:
        parts.append(f"{number(held.gpu_hours or 0)} GPU-h")
    if held.cost is not None:
        parts.append(money(held.cost))
    return ", ".join(parts)


def summary_rows(report: FitReport) -> list[tuple[str, ...]]:
    """One row per pool: name, ``yes``/``no``, the nodes needed (``MIN-MAX``) of the most that take a pod (and the
    pods that stay Pending), pods per node, what the job holds at worst (node-hours, GPU-hours, the cost in the
    price's currency)."""
    return [(v.pool.name, "yes" if v.fits else "no", _nodes_cell(v), str(v.per_node) if v.per_node else "-",
             _worst_cell(v)) for v in report.pools]


def head_lines(report: FitReport) -> list[str]:
    """What was judged: the pod, its requests, ``nnodes`` and the deadline, each with where it is set."""
    pod = report.pod
    judged = (f"the pod Flyte's backend builds (the cluster's PodTemplate {where(Location(pod.template or ''))})"
              if pod.source == "backend" else "the merged profile's pod (no cluster template)")
    lines = [f"{report.profile} ({report.target}): {judged}"]
    requests = {name: f"{name} {quantity_text(amount, name)} ({origin_text(pod.origins.get(name))})"
                for name, amount in pod.requests.items()}
    for name, (origin, counts) in report.pool_counts().items():  # `auto`: each pool's count
        per_pool = ", ".join(f"{pool} {'none' if n is None else quantity_text(n, name)}" for pool, n in counts.items())
        requests[name] = f"{name} auto: {per_pool} ({origin_text(origin)})"
    requests = [requests[name] for name in sorted(requests)] or ["nothing"]
    lines.append("  requests: " + "; ".join(requests))
    low, high = report.replicas
    pods = str(low) if low == high else f"{low} to {high}"
    lines.append(f"  pods: {pods} of the {report.created} it creates, nnodes "
                 f"{_figure(report.replicas_at) if report.replicas_at else '1 (the default)'}")
    lines.append(f"  deadline: {_figure(report.deadline, ' s')}")
    return lines + topology_lines(report)


def topology_lines(report: FitReport) -> list[str]:
    """The domains of the topology level (:attr:`FitReport.topology`): the level, where it is asked, then each
    domain's nodes that take a pod and the pods they hold, and whether one holds the job."""
    fitted = report.topology
    if fitted is None:
        return []
    level = fitted.asked
    said = ("given with --topology" if level.kind == "given"
            else f"{level.kind}, {level.annotation} at {where(level.at)}")
    lines = [f"  topology: {level.level} ({said}): {fitted.verdict}"]
    lines += [f"    {d.name}: {len(d.nodes)} node{'s take' if len(d.nodes) != 1 else ' takes'} a pod, {d.pods} "
              f"pod{'s' * (d.pods != 1)} ({named(d.nodes)})" for d in fitted.domains]
    if fitted.without:
        lines.append(f"    without the label: {len(fitted.without)} node{'s' * (len(fitted.without) != 1)} "
                     f"({named(fitted.without)})")
    return lines


def _topology_data(report: FitReport) -> dict[str, Any] | None:
    fitted = report.topology
    if fitted is None:
        return None
    level = fitted.asked
    return {"level": level.level, "kind": level.kind, "annotation": level.annotation,
            "set_at": _location_data(level.at), "holds_job": fitted.holds, "nodes_needed": fitted.needed,
            "verdict": fitted.verdict, "domains": [{"name": d.name, "nodes": len(d.nodes), "pods": d.pods,
                                                     "node_names": d.nodes} for d in fitted.domains],
            "nodes_without_level": fitted.without}


def pool_lines(verdict: PoolFit, report: FitReport) -> list[str]:
    """A pool's verdict in full: each reason with where the profile asks it, where the pool refuses it and the rule
    it follows (the scheduler's Go file and function), the nodes, its nodes that take no pod and why, the pods that
    stay Pending and what they hold, what the job holds at worst, the resources the pool leaves unchecked, the fabric
    it offers that the job does not ask for (:attr:`PoolFit.fabric`), its notes."""
    pool = verdict.pool
    lines = [f"{pool.name} ({where(pool.location())}): {'fits' if verdict.fits else 'does not fit'}"]
    for cause in verdict.causes:
        lines.append(f"  {cause.reason}: {cause.detail}")
        lines.append(f"    profile: {origin_text(cause.profile)}; pool: {where(cause.pool)}")
        lines.append(f"    rule: {cause.source}")
    if verdict.per_node:
        needed = verdict.needed or (0, 0)
        have = "an unknown number" if verdict.have is None else f"at most {verdict.have.value} ({where(verdict.have.at)})"
        nodes = (f"{needed[0]} node{'s' * (needed[0] != 1)}" if needed[0] == needed[1]
                 else f"{needed[0]} to {needed[1]} nodes")  # a fixed nnodes needs one number of nodes
        lines.append(f"  {verdict.per_node} pod{'s' * (verdict.per_node != 1)} per node: {nodes}; the pool has {have} "
                     "that take one")
    kinds = other_kinds(verdict)
    if kinds:
        count = sum(len(k.nodes) for k in kinds)
        lines.append(f"  {count} of its {len(pool.nodes)} nodes take{'s' * (count == 1)} no pod of the job:")
        lines += [f"    {named(k.nodes)}: {'; '.join(k.reasons)} ({where(k.at)})" for k in kinds]
    if verdict.pending:
        lines.append(f"  Pending: {verdict.pending} of the job's {report.created} pods find no node")
        lines += [f"    {line}" for line in pending_lines(report, verdict)]
    held = verdict.reserve
    if held is not None and held.deadline is not None:
        hours = Fraction(held.deadline.value, 3600)
        text = f"  at worst: {held.nodes} nodes x {number(hours)} h = {number(held.node_hours or 0)} node-hours"
        if held.gpus:
            text += f", {number(held.gpus)} GPUs x {number(hours)} h = {number(held.gpu_hours or 0)} GPU-hours"
        if held.cost is not None and held.price is not None:
            text += (f"; {number(held.node_hours or 0)} x {held.price.value} per node-hour ({where(held.price.at)}) = "
                     f"{money(held.cost)}")
        lines.append(text)
    for resource in (r for r in pool.unknown if r in report.pod.requests):
        lines.append(f"  {resource}: not stated by the pool, not checked")
    if verdict.fabric is not None:
        gap = verdict.fabric
        lines.append(f"  warning: {gap.message(pool.name)}")
        lines.append(f"    profile: {origin_text(gap.profile)}; pool: {where(gap.pool)}"
                     + (f"; named a fabric: {where(gap.named_by)}" if gap.named_by is not None else ""))
    lines += [f"  note: {note}" for note in pool.notes]
    return lines


def named(nodes: list[str]) -> str:
    """Node names, at most :data:`MAX_NAMED` of them: ``a, b, c and 1,997 more``."""
    more = len(nodes) - MAX_NAMED
    return ", ".join(nodes[:MAX_NAMED]) + (f" and {more:,} more" if more > 0 else "")


def _location_data(location: Location | None) -> dict[str, Any] | None:
    return None if location is None else {"file": location.file, "line": location.line, "column": location.column}


def _origin_data(origin: Origin | None) -> dict[str, Any] | None:
    return None if origin is None else {"layer": origin.layer, "path": origin.path, **_location_data(origin.location)}


def _figure_data(figure: Figure | None) -> dict[str, Any] | None:
    if figure is None:
        return None
    return {"value": figure.value, "from": figure.what, "layer": figure.layer, "at": _location_data(figure.at)}


def _pool_data(v: PoolFit, pod: JudgedPod) -> dict[str, Any]:
    held = v.reserve
    reserve = None if held is None else {
        "pods": held.pods, "nodes": held.nodes, "gpus": float(held.gpus),
        "node_hours": None if held.node_hours is None else float(held.node_hours),
        "gpu_hours": None if held.gpu_hours is None else float(held.gpu_hours),
        "price_per_node_hour": _figure_data(held.price),
        "cost": None if held.cost is None else round(float(held.cost), 2)}
    return {
        "name": v.pool.name, "at": _location_data(v.pool.location()),
        "source": "+".join(s for s, on in (("nodes", v.pool.listed is not None), ("facts", v.pool.facts is not None)) if on),
        "fits": v.fits, "schedulable": v.schedulable,
        "requests": {n: quantity_text(a, n) for n, a in sorted((v.pod or pod).requests.items())},
        "reasons": [{"plugin": c.plugin, "reason": c.reason, "detail": c.detail, "profile": _origin_data(c.profile),
                     "pool": _location_data(c.pool), "rule": c.source} for c in v.causes],
        "preferences": [p for verdict in v.verdicts for p in verdict.preferences],
        "pods_per_node": v.per_node,
        "nodes_needed": None if v.needed is None else {"min": v.needed[0], "max": v.needed[1]},
        "nodes_max": _figure_data(v.have), "usable_nodes": v.usable,
        "nodes_taking_none": [{"nodes": k.nodes, "reasons": list(k.reasons), "at": _location_data(k.at)}
                              for k in other_kinds(v)],
        "pending": v.pending, "reserves": reserve, "unchecked": list(v.pool.unknown), "notes": list(v.pool.notes),
        "warnings": [] if v.fabric is None else [{
            "message": v.fabric.message(v.pool.name), "offered": list(v.fabric.offered), "profile":
            _origin_data(v.fabric.profile), "pool": _location_data(v.fabric.pool),
            "named_by": _location_data(v.fabric.named_by)}]}


def fit_document(report: FitReport) -> dict[str, Any]:
    """The JSON form: ``{"profile", "target", "fits", "pod": {"source", "template", "requests", "requested_at"},
    "nnodes": {"min", "max", "set_at"}, "deadline": FIGURE | null, "pools": [...]}``, each pool with its
    ``reasons`` (``plugin``, ``reason``, ``detail``, ``profile`` and ``pool`` locations, the ``rule`` it follows),
    ``requests`` (the pod's as judged there: a device count written ``auto``, ``"auto"`` in ``pod``, is the
    pool's), ``pods_per_node``, ``nodes_needed``, ``nodes_max``, ``nodes_taking_none`` (nodes of the pool that take no pod,
    and why), ``pending`` (pods of the ``pods_created`` that find no node), ``reserves`` (nodes, GPUs, node- and
    GPU-hours, cost) and ``warnings`` (the fabric the job does not ask for: ``message``, ``offered``, the
    ``profile`` and ``pool`` locations, ``named_by``); ``topology`` (``null`` unless a level is asked or given):
    ``level``, ``kind``, ``annotation``, ``set_at``, ``holds_job``, ``nodes_needed``, ``verdict``, ``domains``
    (``name``, ``nodes``, ``pods``, ``node_names``) and ``nodes_without_level``."""
    pod, autos = report.pod, report.pool_counts()
    requests = {n: quantity_text(a, n) for n, a in pod.requests.items()} | {n: "auto" for n in autos}
    origins = {n: _origin_data(pod.origins.get(n)) for n in pod.requests} | {
        n: _origin_data(origin) for n, (origin, _) in autos.items()}
    return {
        "profile": report.profile, "target": report.target, "fits": report.fits,
        "pod": {"source": pod.source, "template": pod.template, "requests": dict(sorted(requests.items())),
                "requested_at": dict(sorted(origins.items()))},
        "nnodes": {"min": report.replicas[0], "max": report.replicas[1], "set_at": _figure_data(report.replicas_at)},
        "pods_created": report.created,
        "deadline": _figure_data(report.deadline),
        "topology": _topology_data(report),
        "pools": [_pool_data(v, pod) for v in report.pools]}


def text_table(rows: list[tuple[str, ...]]) -> list[str]:
    """The summary as plain text: columns padded to their widest cell, two spaces apart."""
    widths = [max(len(r[i]) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS) - 1)]
    return ["  ".join([cell.ljust(w) for cell, w in zip(row, widths)] + [row[-1]]).rstrip() for row in [COLUMNS, *rows]]


def print_fit_table(report: FitReport, width: int | None = None) -> None:
    """On a terminal: the summary as a rich table (its last column wraps to keep within ``width``, the terminal's),
    then the details, each line wrapped at the width."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    encoding = output_encoding()
    console = Console(highlight=False, width=width)
    table = Table(title=Text(printable(f"{report.profile}: {'fits' if report.fits else 'fits no pool'}", encoding)),
                  title_justify="left")
    for column in COLUMNS:
        table.add_column(column, no_wrap=column not in ("nodes", "at worst"), overflow="fold")
    for row, verdict in zip(summary_rows(report), report.pools):
        style = "green" if verdict.fits else "red"
        table.add_row(Text(printable(row[0], encoding)), Text(row[1], style=style),
                      *(Text(printable(c, encoding)) for c in row[2:]))
    console.print(table)
    for line in [*head_lines(report), *(line for v in report.pools for line in ["", *pool_lines(v, report)])]:
        indent = " " * (len(line) - len(line.lstrip(" ")) + 4)  # a wrapped line hangs under its own
        for part in textwrap.wrap(printable(line, encoding), console.width, subsequent_indent=indent,
                                  break_long_words=False, break_on_hyphens=False) or [""]:
            console.print(Text(part), soft_wrap=True)


def show_fit(report: FitReport, output: str) -> int:
    """Print ``report``: ``table`` (rich, for a terminal), ``text`` (plain) or ``json``.

    Returns:
        The exit status: 0 when a pool fits, 1 when none does (as ``diff`` exits 1 on differences) or when no domain
        of the topology level the profile requires holds the job (Kueue never admits it).
    """
    import sys

    if output == "table":
        print_fit_table(report)
    elif output == "json":
        sys.stdout.write(to_json(fit_document(report), encoding=output_encoding()))
    else:
        encoding = output_encoding()
        lines = text_table(summary_rows(report)) + [""] + head_lines(report)
        lines += [line for v in report.pools for line in ["", *pool_lines(v, report)]]
        sys.stdout.write("".join(printable(line, encoding) + "\n" for line in lines))
    required = report.topology is not None and report.topology.asked.kind == "required"
    return 0 if report.fits and not (required and not report.topology.holds) else 1
