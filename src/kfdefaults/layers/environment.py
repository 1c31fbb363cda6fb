"""Folders in an environment variable (``KFDEFAULTS_PLATFORM_PATH``, ``KFDEFAULTS_TEAM_PATH``)."""

from __future__ import annotations

import os
from typing import Mapping

from .folder import Folder


class EnvSource:
    """Folders in ``variable``, separated by ``os.pathsep``; empty entries are skipped."""

    def __init__(self, layer: str, variable: str, environ: Mapping[str, str]) -> None:
        self.layer, self.variable, self.environ = layer, variable, environ

    def folders(self) -> list[Folder]:
        value = self.environ.get(self.variable, "")
        return [Folder(p, self.layer, self.variable) for p in value.split(os.pathsep) if p.strip()]
