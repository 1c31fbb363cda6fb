"""Step 5, check: a merged profile (:class:`~kfdefaults.merge.result.Resolved`) -> its errors and warnings.

What no single file can say, once the layers are merged: settings that break together at run time
(:mod:`.merged`), a list replaced whole (:mod:`.replaced`), what the target SDK cannot honour (:mod:`.target`),
deprecated profiles (:mod:`.deprecation`), what Flyte's backend would break in the pod (:mod:`.backend`), folders
that hold no profile (:mod:`.folders`), and, with the cluster's node pools, whether its pods schedule on them
(:mod:`.fit`, :mod:`.fit_causes`). Each check is located at the value, layer and line that makes the problem.
"""

from __future__ import annotations

from typing import Any, Collection, Sequence

from ..errors import Finding
from ..merge.result import Resolved
from .apiserver import api_server_errors
from .backend import backend_errors, backend_warnings
from .deprecation import deprecations
from .merged import check_merged
from .replaced import replaced_lists
from .shm import shm_headroom
from .target import check_target

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from ..backend.cluster import ClusterTemplate


def errors(resolved: Resolved, facts: Any = None) -> list[Finding]:
    """What stops a merged profile: a setting its target's plugin cannot honour (:func:`.target.check_target`),
    what the API server rejects (:func:`.apiserver.api_server_errors`), for flytekit a pod Flyte's backend
    would build with two containers of one name (:func:`.backend.backend_errors`) and, with the cluster's
    ``facts``, a deadline that ends the job before a cold node is up (:func:`.clock_lints.clock_errors`); each at
    the line that set it."""
    found = [f for f in check_target(resolved) if f.severity == "error"] + api_server_errors(resolved)
    if resolved.target.name == "flytekit":
        found += backend_errors(resolved)
    if facts is not None:
        # lazy: the clocks, the timeline and their lints cost about 30 ms to import, which a render without the
        # cluster's facts does not pay
        from .clock_lints import clock_errors

        found += clock_errors(resolved, facts)
    return found


def warnings(resolved: Resolved, cluster: ClusterTemplate | None, own_files: Collection[str] = (), *,
             pools: Sequence[Any] | None = None, facts: Any = None) -> list[Finding]:
    """What a merged profile should not do, unsorted: settings that break together (:func:`.merged.check_merged`,
    a ``/dev/shm`` that leaves less memory than the facts' ``shm_headroom``), a list a layer replaces whole,
    dropping items of the list below it (:func:`.replaced.replaced_lists`), a deprecated profile or parent
    (:func:`.deprecation.deprecations`; one declared by ``own_files``, the files ``validate`` was given, is a
    note), the target's warnings, for flytekit what the cluster's PodTemplate would break in it
    (:func:`.backend.backend_warnings`), and, with the cluster's ``pools``
    (:class:`~kfdefaults.validate.pools.Pool`), a profile that fits none or leaves pods Pending
    (:func:`.fit_causes.fit_warnings`), a Kueue topology request it cannot have (:func:`.topology.topology_warnings`),
    and with the cluster's ``facts`` the clocks that disagree with its start times, Kueue, its deadlines, its
    ``max_hang`` and its torch (:func:`.clock_lints.clock_warnings`, in the pool the profile fits).

    Args:
        facts: The cluster's facts (:class:`~kfdefaults.validate.facts.ClusterFacts`), or ``None``.
    """
    # the cluster's template volumes are the pod's too (Flyte's backend adds them): a mount of one is not missing
    provided = ({v.get("name") for v in cluster.raw_spec.get("volumes") or [] if isinstance(v, dict)}
                if cluster is not None and resolved.target.name == "flytekit" else set())
    found = check_merged(resolved, shm_headroom(facts), provided) + replaced_lists(resolved)
    found += deprecations(resolved, own_files)
    found += [f for f in check_target(resolved) if f.severity != "error"]
    if resolved.target.name == "flytekit":
        found += backend_warnings(resolved, cluster)
    fitting = None
    report = None
    if pools:
        # lazy: the fit check (the scheduler's filters, the pools, the PyTorchJob's model) costs about 25 ms to
        # import, which a render without node pools does not pay
        from .fit import fit
        from .fit_causes import fit_warnings, misfit_warning

        report = fit(resolved, pools, cluster=cluster, facts=facts)
        found += fit_warnings(report, resolved)
        if facts is not None and facts.get("kueue") is not None and not report.fits:
            from .kueue import requeue_loop  # lazy: Kueue's settings, only where the facts state Kueue

            found += [f for f in [requeue_loop(misfit_warning(report, resolved), resolved, facts)] if f is not None]
        fitting = [v.pool.name for v in report.pools if v.fits]
    if any(key.startswith("kueue.x-k8s.io/podset-") for key in resolved.annotations):
        from .topology import topology_warnings  # lazy: only a profile that asks Kueue for a topology

        found += topology_warnings(resolved, report)
    if facts is not None:
        # lazy: about 30 ms to import (see errors()), only where the cluster states its facts
        from .clock_lints import clock_warnings
        from .start import choose_pool

        found += facts.notes + clock_warnings(resolved, facts, choose_pool(facts, fitting)[0])
    return found
