"""The memory a container keeps beside a memory-backed ``/dev/shm`` of its own: the facts' ``shm_headroom``.

Pages written to a memory-backed ``emptyDir`` (``medium: Memory``, the usual ``/dev/shm``) are charged to the memory
cgroup of the container that writes them (Kubernetes docs, Volumes: emptyDir; the kernel's memory cgroup counts
tmpfs pages as shared memory of the writer), so a ``/dev/shm`` as large as the container's memory limit leaves the
training process nothing once DataLoader workers fill it, and the container is OOM-killed. How much the workload
needs beside it is the platform's knowledge: ``shm_headroom`` in the cluster's facts (:mod:`kfdefaults.validate.facts`),
a quantity (``8Gi``) or a percentage of the memory limit (``25%``). Without it the headroom is 0: only a
``sizeLimit`` above the memory limit is warned about (:func:`kfdefaults.check.merged.check_merged`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, NamedTuple

from ..errors import Location
from ..k8s.quantity import quantity_value


class ShmHeadroom(NamedTuple):
    """The memory a container keeps beside its memory-backed ``/dev/shm``: the facts' ``shm_headroom``.

    Attributes:
        written: As written (``8Gi``, ``25%``).
        at: Where (``FILE:LINE:COLUMN``).
    """

    written: str
    at: Location

    def of(self, memory: Fraction) -> Fraction:
        """The headroom for a container of ``memory`` bytes' limit: the quantity, or the percentage of it."""
        if self.written.endswith("%"):
            return memory * int(self.written[:-1]) / 100
        return quantity_value(self.written) or Fraction(0)


def shm_headroom(facts: Any) -> ShmHeadroom | None:
    """The facts' ``shm_headroom`` (:class:`~kfdefaults.validate.facts.ClusterFacts`), or ``None`` (then 0: only a
    ``sizeLimit`` above the memory limit is warned about)."""
    value = facts.get("shm_headroom") if facts is not None else None
    return None if value is None else ShmHeadroom(str(value), facts.location("shm_headroom"))
