"""The primary container's image: which of the task's image, the profile's and the registration's default wins.

**Decision** (docs/flyte.md and docs/flyte2.md, "Images"): the task layer wins, as for every other field.

1. The task's own image argument: flytekit's ``@task(container_image=...)``, Flyte 2's
   ``TaskEnvironment(image=...)`` (any image but ``"auto"``).
2. The profile's image (``pod_template.spec.containers[name=primary].image`` of a builtin, platform or team file).
3. The registration's default image: ``pyflyte register --image`` or flytekit's default image; ``flyte deploy
   --image`` or Flyte 2's ``"auto"`` image.

A profile is the task's defaults, more specific than an image given for every task of a registration; the task's
own argument is the task layer. Both SDKs, left alone, would keep a pod template's image over both (flytekit's
``_serialize_pod_spec``, Flyte 2's ``_get_k8s_pod``): the adapters leave the profile's image out of the pod
template they register when the task gives its own. An image the task's own pod template sets
(``@task(pod_template=...)``, ``--set``) is the task layer already, and the SDKs keep it, over their argument too.

Who set the image is what ``--explain`` says (the merge's provenance, :mod:`kfdefaults.merge.provenance`), so that
the messages name the same ``FILE:LINE``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..merge.origins import Origin
from ..merge.provenance import provenance
from ..merge.result import Resolved
from ..paths import PathT, Select

TASK_IMAGE = {"flytekit": "@task(container_image=...)", "flyte2": "TaskEnvironment(image=...)"}
"""The task's own image argument, per target."""

DEFAULT_IMAGE = {"flytekit": "the registration's default image (pyflyte --image, else flytekit's default image)",
                 "flyte2": "the deployment's default image (flyte deploy --image, else Flyte 2's \"auto\" image)"}
"""What gives the image where neither the task nor the profile does, per target."""


@dataclass(frozen=True)
class ProfileImage:
    """The image the merged profile gives the primary container, and who set it.

    Attributes:
        image: The image reference, as written.
        origin: The layer and ``FILE:LINE`` (or label) that set it, as ``--explain`` shows it.
    """

    image: str
    origin: Origin

    @property
    def by_task(self) -> bool:
        """Whether the task's own pod template set it (the task layer), not a profile file."""
        return self.origin.layer == "task"

    @property
    def where(self) -> str:
        """``FILE:LINE``, or the label of a value no file holds."""
        return self.origin.where


def image_path(resolved: Resolved) -> PathT:
    """The leaf path of the primary container's image, as ``--explain`` names it."""
    return ("pod_template", "spec", "containers", Select("name", resolved.primary_container_name), "image")


def profile_image(resolved: Resolved) -> ProfileImage | None:
    """The image the merged profile sets on the primary container, and who set it; ``None`` when no layer does.
    Only a profile with an image asks who set it (the merge is replayed once for it, a few milliseconds)."""
    image = next((c.get("image") for c in resolved.pod_template_spec.get("spec", {}).get("containers") or []
                  if isinstance(c, dict) and c.get("name") == resolved.primary_container_name), None)
    if not isinstance(image, str) or not image:
        return None
    found = provenance(resolved).setter(image_path(resolved))
    return ProfileImage(image, found.origin) if found is not None else None


def explain_note(resolved: Resolved) -> str | None:
    """The line ``--explain`` ends with when the merged profile sets the primary container's image: which image
    the task gets (:mod:`kfdefaults.show.image`); ``None`` when the profile sets none."""
    found = profile_image(resolved)
    if found is None:
        return None
    target = resolved.target.name
    task_image, default = TASK_IMAGE.get(target, "the task's image"), DEFAULT_IMAGE.get(target, "the default image")
    origin = f"{found.origin.layer} {found.where}"
    if found.by_task:
        return (f"note: image: {found.image} ({origin}) is the task's own pod template's: the task gets it, over "
                f"{task_image} and over {default}")
    return f"note: image: {found.image} ({origin}) wins over {default}; {task_image} wins over it"


def task_image_wins(target: str, profile: str, found: ProfileImage) -> str:
    """The warning when the task's own image argument leaves out the profile's image."""
    return f"{TASK_IMAGE[target]} wins over profile {profile}'s image {found.image} ({found.where})"


def profile_image_wins(target: str, profile: str, found: ProfileImage, default: str) -> str:
    """The warning when the profile's image wins over ``default``, the registration's default image (its reference
    and what gave it: ``ghcr.io/org/img:1 (pyflyte --image)``)."""
    what = "the registration's" if target == "flytekit" else "the deployment's"
    return (f"image: profile {profile}'s {found.image} ({found.where}) wins over {what} default image {default}; "
            f"{TASK_IMAGE[target]} would win over it")
