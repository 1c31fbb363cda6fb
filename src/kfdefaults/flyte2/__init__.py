"""Step 6, build for Flyte 2: a :class:`~kfdefaults.Resolved` profile -> the objects of ``flyte`` and
``flyteplugins-pytorch``, and the tasks a :class:`~.elastic.Elastic` defines.

The only code importing ``flyte`` and ``flyteplugins``. A profile is given per ``TaskEnvironment``, as Flyte 2 gives
the plugin's ``Elastic``::

    import flyte
    from kfdefaults.flyte2 import Elastic

    env = flyte.TaskEnvironment(name="train", plugin_config=Elastic(profile="gpu-large", nnodes=2))

    @env.task
    def train() -> None: ...

and per ``ClusteredTaskEnvironment`` for Flyte 2's clustered tasks (a JobSet): ``kfdefaults.flyte2.
ClusteredTaskEnvironment(profile="two-node", name="train", image=...)``, the SDK's environment with its clustered
fields from the profile.

Importing this package checks that the SDK is installed (the ``flyte2`` extra of kfdefaults; Python 3.10 or
later) and raises an ``ImportError`` that says what to install; it imports nothing heavy. The plugin imports
torch (several seconds), so :class:`Elastic` and the task class are imported when first used, and registered
with Flyte 2's ``TaskPluginRegistry`` then.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

TYPE_CHECKING = False


def _require_sdk() -> None:
    missing = []
    for module in ("flyte", "flyteplugins.pytorch"):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    if missing:
        python = "" if sys.version_info >= (3, 10) else f"; Flyte 2 needs Python 3.10 or later, this is {sys.version.split()[0]}"
        raise ImportError(
            f"kfdefaults.flyte2 needs Flyte 2's SDK, and {' and '.join(missing)} cannot be imported: "
            f"pip install 'kfdefaults[flyte2]' (flyte and flyteplugins-pytorch){python}", name=missing[0],
        )


_require_sdk()

_WHERE = {
    "Elastic": ".elastic",
    "RunPolicy": ".elastic",
    "ProfileTorchFunctionTask": ".task",
    "ProfilePodTemplate": ".task",
    "ClusteredTaskEnvironment": ".clustered",
    "ProfileClusteredTask": ".clustered",
}

__all__ = sorted(_WHERE)

if TYPE_CHECKING:  # pragma: no cover
    from .elastic import Elastic, RunPolicy  # noqa: F401
    from .clustered import ClusteredTaskEnvironment, ProfileClusteredTask  # noqa: F401
    from .task import ProfilePodTemplate, ProfileTorchFunctionTask  # noqa: F401


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kfdefaults.flyte2' has no attribute {name!r}")
    # the task module imports the Elastic module and registers Elastic with Flyte 2's TaskPluginRegistry: a
    # TaskEnvironment(plugin_config=Elastic(...)) then defines a ProfileTorchFunctionTask (the clustered module
    # registers its own, and imports no plugin)
    if module != ".clustered":
        importlib.import_module(".task", __name__)
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
