"""Step 5, check: a merged profile (:class:`~kfdefaults.merge.result.Resolved`) -> its errors and warnings.

What no single file can say, once the layers are merged: settings that break together at run time
(:mod:`.merged`), a list replaced whole (:mod:`.replaced`), what the target SDK cannot honour (:mod:`.target`), deprecated profiles (:mod:`.deprecation`),
what Flyte's backend would break in the pod (:mod:`.backend`), and folders that hold no profile
(:mod:`.folders`). Each check is located at the value, layer and line that makes the problem.
"""

from __future__ import annotations

from typing import Collection

from ..backend.cluster import ClusterTemplate
from ..errors import Finding
from ..merge.result import Resolved
from .apiserver import api_server_errors
from .backend import backend_errors, backend_warnings
from .deprecation import deprecations
from .merged import check_merged
from .replaced import replaced_lists
from .target import check_target


def errors(resolved: Resolved) -> list[Finding]:
    """What stops a merged profile: a setting its target's plugin cannot honour (:func:`.target.check_target`),
    what the API server rejects (:func:`.apiserver.api_server_errors`) and, for flytekit, a pod Flyte's backend
    would build with two containers of one name (:func:`.backend.backend_errors`); each at the line that set it."""
    found = [f for f in check_target(resolved) if f.severity == "error"] + api_server_errors(resolved)
    if resolved.target.name == "flytekit":
        found += backend_errors(resolved)
    return found


def warnings(resolved: Resolved, cluster: ClusterTemplate | None, own_files: Collection[str] = ()) -> list[Finding]:
    """What a merged profile should not do, unsorted: settings that break together (:func:`.merged.check_merged`),
    a list a layer replaces whole, dropping items of the list below it (:func:`.replaced.replaced_lists`),
    a deprecated profile or parent (:func:`.deprecation.deprecations`; one declared by ``own_files``, the files
    ``validate`` was given, is a note), the target's warnings and, for flytekit, what the cluster's PodTemplate
    would break in it (:func:`.backend.backend_warnings`)."""
    found = check_merged(resolved) + replaced_lists(resolved) + deprecations(resolved, own_files)
    found += [f for f in check_target(resolved) if f.severity != "error"]
    if resolved.target.name == "flytekit":
        found += backend_warnings(resolved, cluster)
    return found
