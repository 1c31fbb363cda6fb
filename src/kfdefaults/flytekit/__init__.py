"""Step 6, build for flytekit: a :class:`~kfdefaults.Resolved` profile -> flytekit's objects and tasks.

The only code importing flytekit and ``flytekitplugins.kfpytorch``; importing this package imports both and
registers :class:`~.elastic.Elastic` with flytekit, so that ``@task(task_config=Elastic(...))`` defines a
:class:`~.task.ProfileElasticTask`. Without them (the ``flytekit`` extra of kfdefaults), importing it raises
an ``ImportError`` that says what to install.
"""

from __future__ import annotations

try:
    from flytekit.extend import TaskPlugins
    from flytekitplugins.kfpytorch import Elastic as _PluginElastic  # noqa: F401  (the plugin must be there too)
except ImportError as e:
    raise ImportError(
        f"kfdefaults.Elastic (kfdefaults.flytekit) needs flytekit and flytekitplugins-kfpytorch, and {e.name or e} "
        "cannot be imported: pip install 'kfdefaults[flytekit]' (for Flyte 2, use kfdefaults.flyte2 and "
        "pip install 'kfdefaults[flyte2]')", name=e.name
    ) from e

from .elastic import Elastic
from .task import ProfileElasticTask

TaskPlugins.register_pythontask_plugin(Elastic, ProfileElasticTask)

__all__ = ["Elastic", "ProfileElasticTask"]
