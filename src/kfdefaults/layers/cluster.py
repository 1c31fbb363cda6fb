"""Where the cluster's default PodTemplate is found: the template Flyte's backend lays under every task's pod.

Flyte's backend merges the PodTemplate named by propeller's ``default-pod-template-name`` into every task's pod
(:mod:`kfdefaults.backend`), so what kfdefaults previews depends on it. It is named once, the first of these
that names one winning:

========================================  ===============================================================
``--cluster-template FILE``                the command line (``render``, ``validate``)
``KFDEFAULTS_CLUSTER_TEMPLATE``            the environment (a path)
``[tool.kfdefaults] cluster_template``     the nearest ``pyproject.toml``, relative to it
``_cluster-template.yaml``                 a file of that name in a platform folder: the platform layer names
                                           its cluster's template beside its profiles
========================================  ===============================================================

The value ``none`` (flag or variable) means the cluster has no default PodTemplate, whatever the later sources
say. The file is the manifest as ``kubectl get podtemplate NAME -o yaml`` prints it.
"""

from __future__ import annotations

import os
from typing import Mapping, NamedTuple, Sequence

from ..errors import Finding, Location, ProfileError
from ..inputs import Inputs
from ..settings import CLUSTER_TEMPLATE_ENV
from .folder import Folder
from .pyproject import Project

CLUSTER_TEMPLATE_FILE = "_cluster-template.yaml"
"""The name of the cluster's default PodTemplate in a platform folder; never a profile (a profile name starts with
a letter or a digit)."""

NONE = "none"
"""The value of ``--cluster-template`` or ``KFDEFAULTS_CLUSTER_TEMPLATE`` that says: no cluster template."""


class ClusterTemplatePath(NamedTuple):
    """The file holding the cluster's default PodTemplate.

    Attributes:
        path: The file.
        origin: What named it, for messages: ``--cluster-template``, ``KFDEFAULTS_CLUSTER_TEMPLATE``, a
            ``pyproject.toml``, a platform folder.
    """

    path: str
    origin: str


def find_cluster_template(
    explicit: str | None,
    platform_folders: Sequence[Folder],
    *,
    environ: Mapping[str, str] | None = None,
    project: Project | None = None,
    flag: str = "--cluster-template",
    inputs: Inputs | None = None,
) -> ClusterTemplatePath | None:
    """The cluster's default PodTemplate file, from the sources in the order above; ``None`` when none names one.

    Args:
        explicit: The ``--cluster-template`` value, if given.
        platform_folders: The platform layer's folders, lowest priority first.
        environ: The environment (default ``os.environ``).
        project: The project whose ``pyproject.toml`` may name the template; ``None``: none read.
        flag: What gave ``explicit``, for messages.
        inputs: Records the variable read and the platform folders' templates looked for.

    Raises:
        ProfileError: ``[tool.kfdefaults] cluster_template`` is not a string, or two platform folders hold a
            ``_cluster-template.yaml`` (a layer names one cluster).
    """
    inputs = Inputs() if inputs is None else inputs
    if environ is None:
        inputs.env(CLUSTER_TEMPLATE_ENV)
    environ = os.environ if environ is None else environ
    for value, origin in ((explicit, flag), (environ.get(CLUSTER_TEMPLATE_ENV, "").strip() or None, CLUSTER_TEMPLATE_ENV)):
        if value is not None:
            return None if value.strip().lower() == NONE else ClusterTemplatePath(os.fspath(value), origin)
    if project is not None:
        named, found = _from_pyproject(project)
        if named:
            return found
    candidates = [ClusterTemplatePath(os.path.join(f.path, CLUSTER_TEMPLATE_FILE), f"platform folder {f.path} (from {f.origin})")
                  for f in platform_folders if inputs.look(os.path.join(f.path, CLUSTER_TEMPLATE_FILE)) is not None]
    if len(candidates) > 1:
        raise ProfileError([Finding(Location(c.path, 1, 1), "", f"two platform folders hold the cluster's PodTemplate: "
                                    f"{', '.join(x.path for x in candidates)}; keep one (a layer describes one cluster)",
                                    layer="platform") for c in candidates[1:]])
    return candidates[0] if candidates else None


def _from_pyproject(project: Project) -> tuple[bool, ClusterTemplatePath | None]:
    """Whether the project's pyproject.toml names the cluster's template (``none`` names no template), and the file."""
    if "cluster_template" not in project.section:
        return False, None
    value = project.section["cluster_template"]
    if not isinstance(value, str) or not value.strip():
        raise ProfileError([Finding(project.location("cluster_template"), "tool.kfdefaults.cluster_template",
                                    "must be the path of a PodTemplate manifest (kubectl get podtemplate NAME -o yaml), "
                                    "relative to this file")])
    if value.strip().lower() == NONE:
        return True, None
    return True, ClusterTemplatePath(project.resolve(value), project.pyproject or "pyproject.toml")
