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
from ..settings import CLUSTER_FACTS_ENV, CLUSTER_TEMPLATE_ENV
from .folder import Folder
from .pyproject import Project

CLUSTER_TEMPLATE_FILE = "_cluster-template.yaml"
"""The name of the cluster's default PodTemplate in a platform folder; never a profile (a profile name starts with
a letter or a digit)."""

FACTS_FILES = ("_cluster-facts.yaml", "_cluster-facts.yml", "_cluster-facts.toml")
"""The names of the cluster's facts in a platform folder (:mod:`kfdefaults.validate.facts`); never profiles."""

KUEUE_CONFIG_FILES = ("_kueue-config.yaml", "_kueue-config.yml")
"""The names under which a platform folder holds Kueue's Configuration, which the facts' ``kueue.config`` names
(:mod:`kfdefaults.validate.kueue_config`); never profiles."""

CLUSTER_FILES = (CLUSTER_TEMPLATE_FILE, *FACTS_FILES)
"""The files a platform folder may hold that state its cluster rather than profiles."""

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


class PlatformFile(NamedTuple):
    """What a platform states about its cluster in a file of its own: which file, found where, and how it is named.

    Attributes:
        what: What the file holds, for messages (``the cluster's PodTemplate``).
        names: Its names in a platform folder.
        flag: The command line's option.
        variable: The environment variable.
        key: The key of ``[tool.kfdefaults]``.
    """

    what: str
    names: tuple[str, ...]
    flag: str
    variable: str
    key: str


CLUSTER_TEMPLATE = PlatformFile("the cluster's PodTemplate", (CLUSTER_TEMPLATE_FILE,), "--cluster-template",
                                CLUSTER_TEMPLATE_ENV, "cluster_template")
CLUSTER_FACTS = PlatformFile("the cluster's facts", FACTS_FILES, "--facts", CLUSTER_FACTS_ENV, "cluster_facts")


def find_cluster_template(explicit: str | None, platform_folders: Sequence[Folder], *,
                          environ: Mapping[str, str] | None = None, project: Project | None = None,
                          flag: str = "--cluster-template", inputs: Inputs | None = None) -> ClusterTemplatePath | None:
    """The cluster's default PodTemplate file (:func:`find_platform_file` of :data:`CLUSTER_TEMPLATE`)."""
    return find_platform_file(CLUSTER_TEMPLATE._replace(flag=flag), explicit, platform_folders, environ=environ,
                              project=project, inputs=inputs)


def find_platform_file(
    kind: PlatformFile,
    explicit: str | None,
    platform_folders: Sequence[Folder],
    *,
    environ: Mapping[str, str] | None = None,
    project: Project | None = None,
    inputs: Inputs | None = None,
) -> ClusterTemplatePath | None:
    """The file of ``kind``, from the sources in the order above; ``None`` when none names one.

    Args:
        kind: Which file (:data:`CLUSTER_TEMPLATE`, :data:`CLUSTER_FACTS`).
        explicit: The command line's value, if given.
        platform_folders: The platform layer's folders, lowest priority first.
        environ: The environment (default ``os.environ``).
        project: The project whose ``pyproject.toml`` may name the file; ``None``: none read.
        inputs: Records the variable read and the platform folders' files looked for.

    Raises:
        ProfileError: ``[tool.kfdefaults]`` names it with something other than a path, or two platform folders
            hold one (a layer describes one cluster).
    """
    inputs = Inputs() if inputs is None else inputs
    if environ is None:
        inputs.env(kind.variable)
    environ = os.environ if environ is None else environ
    for value, origin in ((explicit, kind.flag), (environ.get(kind.variable, "").strip() or None, kind.variable)):
        if value is not None:
            return None if value.strip().lower() == NONE else ClusterTemplatePath(os.fspath(value), origin)
    if project is not None:
        named, found = _from_pyproject(project, kind)
        if named:
            return found
    candidates = [ClusterTemplatePath(path, f"platform folder {f.path} (from {f.origin})") for f in platform_folders
                  for path in (os.path.join(f.path, name) for name in kind.names) if inputs.look(path) is not None]
    if len(candidates) > 1:
        raise ProfileError([Finding(Location(c.path, 1, 1), "", f"two platform folders hold {kind.what}: "
                                    f"{', '.join(x.path for x in candidates)}; keep one (a layer describes one cluster)",
                                    layer="platform") for c in candidates[1:]])
    return candidates[0] if candidates else None


def _from_pyproject(project: Project, kind: PlatformFile) -> tuple[bool, ClusterTemplatePath | None]:
    """Whether the project's pyproject.toml names the file of ``kind`` (``none`` names none), and the file."""
    if kind.key not in project.section:
        return False, None
    value = project.section[kind.key]
    if not isinstance(value, str) or not value.strip():
        raise ProfileError([Finding(project.location(kind.key), f"tool.kfdefaults.{kind.key}",
                                    f"must be the path of {kind.what}, relative to this file")])
    if value.strip().lower() == NONE:
        return True, None
    return True, ClusterTemplatePath(project.resolve(value), project.pyproject or "pyproject.toml")
