"""Every setting kfdefaults reads from the environment, in one place.

========================== =====================================================================================
variable                   effect
========================== =====================================================================================
KFDEFAULTS_PLATFORM_PATH   platform-layer folders, an ``os.pathsep`` list (:mod:`kfdefaults.layers`)
KFDEFAULTS_TEAM_PATH       team-layer folders, likewise
KFDEFAULTS_NO_ENTRY_POINTS a yes/no flag: ignore the platform folders of installed packages
KFDEFAULTS_CLUSTER_TEMPLATE
                           the cluster's default PodTemplate manifest, or ``none`` (:mod:`kfdefaults.layers.cluster`)
KFDEFAULTS_CLUSTER_FACTS   the cluster's facts (node pools, start times, Kueue, torch), or ``none``
                           (:mod:`kfdefaults.validate.facts`)
KFDEFAULTS_CACHE_DIR       where the cache lives (default ``$XDG_CACHE_HOME/kfdefaults``, ``~/.cache/kfdefaults``)
KFDEFAULTS_NO_CACHE        a yes/no flag: no cache, no replay of a render, no in-process memo
KFDEFAULTS_DEBUG           a yes/no flag: print the traceback of an internal error
KFDEFAULTS_TARGET          the SDK to render and validate for when ``--target`` is not given: ``flytekit`` or
                           ``flyte2`` (:mod:`kfdefaults.targets`; default: the installed one)
KFDEFAULTS_ELASTIC         set by kfdefaults in a registered task's primary container: the settings resolved at
                           registration (:mod:`kfdefaults.runtime`), read only while a task runs in a
                           Flyte container; never set by hand
KFDEFAULTS_PROFILES        set by :func:`kfdefaults.carry_profiles` in a parent task's container (a ``@dynamic``, a
                           Flyte 2 task that calls others): the profiles of the tasks it compiles or submits, as
                           registration read them (:mod:`kfdefaults.runtime.carry`); read only in a Flyte container
KFDEFAULTS_PODINFO         in a pod: the folder of a downward API volume holding the pod's ``labels`` and
                           ``annotations`` files, which the receipt compares (default ``/etc/podinfo``;
                           :mod:`kfdefaults.receipt.probe`)
========================== =====================================================================================
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: settings are read on the fastest paths
if TYPE_CHECKING:
    from typing import Mapping

PLATFORM_ENV = "KFDEFAULTS_PLATFORM_PATH"
TEAM_ENV = "KFDEFAULTS_TEAM_PATH"
NO_ENTRY_POINTS_ENV = "KFDEFAULTS_NO_ENTRY_POINTS"
CLUSTER_TEMPLATE_ENV = "KFDEFAULTS_CLUSTER_TEMPLATE"
CLUSTER_FACTS_ENV = "KFDEFAULTS_CLUSTER_FACTS"
CACHE_DIR_ENV = "KFDEFAULTS_CACHE_DIR"
NO_CACHE_ENV = "KFDEFAULTS_NO_CACHE"
DEBUG_ENV = "KFDEFAULTS_DEBUG"
TARGET_ENV = "KFDEFAULTS_TARGET"
NO_PROFILE = "(no profile)"
"""The profile of an ``Elastic(...)`` without ``profile=`` in a project that names no ``default_profile``: no
file layer defines it, so only the plugin's defaults, the cluster's template and the task layer make it."""
RUNTIME_ENV = "KFDEFAULTS_ELASTIC"
CARRIED_ENV = "KFDEFAULTS_PROFILES"
PODINFO_ENV = "KFDEFAULTS_PODINFO"

_OFF = frozenset({"", "0", "false", "no", "off", "n", "f"})
"""Values that leave a flag off, compared case-insensitively: unset and empty, and the usual spellings of no."""


def flag(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment variable ``name`` turns its setting on.

    Any value but an empty one, ``0``, ``false``, ``no``, ``off``, ``n`` or ``f`` (any case, spaces ignored)
    turns it on, so that ``KFDEFAULTS_NO_CACHE=false`` means what it says.
    """
    environ = os.environ if environ is None else environ
    return environ.get(name, "").strip().lower() not in _OFF
