"""The process's shared pipeline: ``Elastic(profile=...)`` runs at every import of a workflow module, often many
times for one profile, and builds its pipeline once for as long as nothing it read changed."""

from __future__ import annotations

import os
import sys
from typing import Sequence

from ..merge.result import SdkObjects
from ..settings import NO_CACHE_ENV, flag
from ..targets import Target, default_target, target_named
from . import Pipeline

_SHARED: dict[tuple, Pipeline] = {}


def shared_pipeline(platform: Sequence[str] = (), team: Sequence[str] = (), *, kubernetes_version: str | None = None,
                    sdk: SdkObjects | None = None, target: Target | str | None = None,
                    project: Sequence[str] = ()) -> Pipeline:
    """The process's pipeline for these folders, built again only when something it read changed.

    The pipeline is kept, keyed by the arguments, the working directory and ``sys.path``, and reused for as long
    as its input manifest says nothing it read changed (:meth:`kfdefaults.inputs.Inputs.changed`: the folders
    listed, the paths looked for, the environment variables read, and the bytes of every file read, the project's
    ``pyproject.toml``, its lock file and the cluster's template among them). ``KFDEFAULTS_NO_CACHE`` builds a
    new one every time.

    ``project`` lists the folders the project's ``pyproject.toml`` is looked for from, first to last
    (``Elastic(...)`` gives the folder of the module that calls it); the working directory is always last.

    Raises:
        ProfileError: as :meth:`Pipeline.discover`.
    """
    starts = (*project, os.getcwd())
    target = default_target()[0] if target is None else target_named(target)
    key = (tuple(platform), tuple(team), starts, tuple(sys.path), kubernetes_version, id(sdk), target.name)
    hit = None if flag(NO_CACHE_ENV) else _SHARED.get(key)
    if hit is not None and hit.inputs.changed() is None:
        return hit
    pipeline = Pipeline.discover(platform, team, kubernetes_version=kubernetes_version, sdk=sdk, target=target,
                                 flags=("platform=", "team="), project=starts)
    pipeline.require_locked = True  # a registration uses the profile: it must have been locked
    _SHARED[key] = pipeline
    return pipeline


def shared_pipelines() -> list[Pipeline]:
    """Every pipeline this process shares (their inputs are what a task defined here depends on)."""
    return list(_SHARED.values())
