"""torch's own defaults for the clocks of a distributed task, by torch release: the one table kfdefaults keeps.

Which default applies depends on the torch in the task's image (the cluster's facts say which:
``torch.version``, ``torch.profiles``; :meth:`kfdefaults.validate.facts.ClusterFacts.torch_version`). Each row
says from which release a default holds and where torch sets it:

* The process group's default timeout (``init_process_group`` without ``timeout=``,
  ``_get_default_timeout`` in ``torch/distributed/distributed_c10d.py``): 30 minutes for every backend up to torch
  2.1 (``default_pg_timeout``, ``torch/distributed/constants.py``); from 2.2, 10 minutes for ``backend="nccl"``
  (``default_pg_nccl_timeout``, ``kProcessGroupNCCLDefaultTimeout``: pytorch/pytorch#110947), still 30 for any
  other backend and for none (``init_process_group()`` without a backend is ``undefined``, 30 minutes, even when
  NCCL then runs the GPU collectives).
* NCCL's heartbeat monitor (``TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC``, ``ProcessGroupNCCL``'s heartbeat monitor):
  none before torch 2.2, where the ``TORCH_NCCL_*`` names came (the older ``NCCL_ASYNC_ERROR_HANDLING``,
  ``NCCL_BLOCKING_WAIT`` still read there, with a deprecation warning); 10 minutes in 2.2 to 2.4
  (pytorch/pytorch#116267 raised the first value, 2 minutes, to 10); 8 minutes from 2.5 (pytorch/pytorch#133028).
* The agent's rendezvous store shared with the workers (``TORCH_DISABLE_SHARE_RDZV_TCP_STORE`` turns it off):
  from torch 2.5 (pytorch/pytorch#128096; the restarts it breaks: pytorch/pytorch#135712); measured with 2.13 in
  ``docs/clocks-measured.md``.
* ``init_process_group``'s NCCL default read at call time, so that Flyte 2's ``nccl_collective_timeout_sec`` (and
  kfdefaults' own for flytekit) can change it: from torch 2.2, where ``_get_default_timeout`` reads the module's
  ``default_pg_nccl_timeout``; before, the default was bound when torch was imported.

* The rendezvous clocks (``read_timeout`` 60 s: ``_create_tcp_store`` in
  ``torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py``; ``join_timeout`` 600 s,
  ``last_call_timeout`` 30 s, ``close_timeout`` 30 s: ``RendezvousTimeout._DEFAULT_TIMEOUTS`` in
  ``dynamic_rendezvous.py``): read and measured in torch 2.13, the same since the c10d rendezvous came (torch 1.9);
  :data:`RDZV_DEFAULTS`.

A default is labelled with the release it is taken for (:func:`label`): the facts' ``torch.version``, else the
torch installed beside kfdefaults, said to be assumed (:func:`taken_for`).
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

MEASURED = "2.13"
"""The torch release whose source was read and whose clocks were run for real (``docs/clocks-measured.md``)."""



class Default(NamedTuple):
    """A default of torch's, as one release range sets it.

    Attributes:
        value: Seconds, or ``None`` where the release has no such clock.
        since: The first release it holds for (``"0"``: every one kfdefaults knows).
        source: The file and function of torch that sets it, and the change that made it so.
    """

    value: int | None
    since: str
    source: str


_PG_OTHER = [Default(1800, "0", "constants.py default_pg_timeout")]
_PG_NCCL = [
    Default(1800, "0", "constants.py default_pg_timeout, one for every backend"),
    Default(600, "2.2", "constants.py default_pg_nccl_timeout; pytorch#110947"),
]
_HEARTBEAT = [
    Default(None, "0", "no heartbeat monitor before torch 2.2"),
    Default(600, "2.2", "ProcessGroupNCCL heartbeat monitor; pytorch#116267"),
    Default(480, "2.5", "ProcessGroupNCCL heartbeat monitor; pytorch#133028"),
]
_RDZV = {"read_timeout": Default(60, "0", "c10d_rendezvous_backend.py _create_tcp_store"),
         **{f"{name}_timeout": Default(seconds, "0", "dynamic_rendezvous.py RendezvousTimeout")
            for name, seconds in (("join", 600), ("last_call", 30), ("close", 30))}}
_STATIC = [Default(600, "0", "static_tcp_rendezvous.py _default_timeout_seconds")]
TABLE = {"pg_timeout_nccl": _PG_NCCL, "pg_timeout_other": _PG_OTHER, "nccl_heartbeat": _HEARTBEAT,
         "static_timeout": _STATIC, **{name: [row] for name, row in _RDZV.items()}}
"""Default -> its values by release, oldest first."""

RDZV_DEFAULTS = {name: row.value for name, row in _RDZV.items()}
"""The c10d rendezvous' defaults in seconds (``rdzv_configs`` key -> seconds)."""

TORCH_NCCL_NAMES_SINCE = "2.2"
"""The ``TORCH_NCCL_*`` variables (and the heartbeat monitor) exist from this release; before, torch reads
``NCCL_ASYNC_ERROR_HANDLING`` and ``NCCL_BLOCKING_WAIT`` and ignores the ``TORCH_NCCL_*`` names."""

NCCL_DEFAULT_PATCHABLE_SINCE = "2.2"
"""From this release ``init_process_group`` reads ``default_pg_nccl_timeout`` when called (``_get_default_timeout``)."""

SHARED_STORE_SINCE = "2.5"
"""From this release the agent's rendezvous store is the workers' (pytorch/pytorch#128096)."""


def release(version: str | None) -> tuple[int, int] | None:
    """``"2.5.1+cu121"`` -> ``(2, 5)``; ``None`` for no version or one that does not start with two numbers."""
    found = re.match(r"([0-9]+)\.([0-9]+)", version or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


def at_least(version: str | None, since: str) -> bool | None:
    """Whether torch ``version`` is ``since`` or newer; ``None`` when the version is unknown."""
    have = release(version)
    if since == "0":
        return True
    return None if have is None else have >= (release(since) or (0, 0))


def default(name: str, version: str | None) -> Default | None:
    """The default ``name`` (a key of :data:`TABLE`) of torch ``version``; ``None`` when the version is unknown and
    the releases disagree (every release's value is then in :func:`history`)."""
    rows = TABLE[name]
    if release(version) is None:
        return rows[0] if len(rows) == 1 else None
    found = rows[0]
    for row in rows:
        if at_least(version, row.since):
            found = row
    return found


def history(name: str) -> str:
    """Every release's value of ``name``: ``"1800 s up to 2.1, 600 s from 2.2"``."""
    rows = TABLE[name]
    parts = []
    for i, row in enumerate(rows):
        value = "none" if row.value is None else f"{row.value} s"
        nxt = rows[i + 1].since if i + 1 < len(rows) else None
        if row.since == "0":
            parts.append(f"{value} before {nxt}" if nxt else f"{value} in every release")
        else:
            parts.append(f"{value} from {row.since}")
    return ", ".join(parts)


def taken_for(version: str | None) -> tuple[str, str | None]:
    """The torch release whose defaults apply, and why it is assumed (``None``: it is not, ``version`` is the
    facts'): ``version``, else the torch installed here (its distribution's metadata: torch is not imported), else
    :data:`MEASURED`."""
    if version:
        return version, None
    local = _local()
    if local is None:
        return MEASURED, f"torch {MEASURED} assumed (no torch here, and the facts state no torch.version)"
    return local, f"the local torch {local} assumed (the facts state no torch.version)"


@functools.lru_cache(maxsize=1)
def _local() -> str | None:
    from importlib import metadata  # lazy: only where the facts state no torch

    try:
        return metadata.version("torch")
    except (metadata.PackageNotFoundError, ValueError):
        return None


def label(name: str, version: str | None) -> str:
    """How a default of ``name`` is named: ``torch 2.5.1 default (dynamic_rendezvous.py RendezvousTimeout)``, with
    the release :func:`taken_for` gives; ``torch default (...); the local torch 2.13.0 assumed (...)`` when the
    facts state none; ``torch default: none before 2.2, ...`` (:func:`history`) when that release is not known."""
    release_, assumed = taken_for(version)
    found = default(name, release_)
    if found is None:
        return f"torch default: {history(name)}"
    if assumed is None:
        return f"torch {release_} default ({found.source})"
    return f"torch default ({found.source}); {assumed}"
