"""Step 6, build for flytekit: a :class:`~kfdefaults.Resolved` profile -> flytekit's objects and tasks.

The only code importing flytekit and ``flytekitplugins.kfpytorch``; importing this package imports both and
registers :class:`~.elastic.Elastic` with flytekit, so that ``@task(task_config=Elastic(...))`` defines a
:class:`~.task.ProfileElasticTask`.
"""

from __future__ import annotations

from flytekit.extend import TaskPlugins

from .elastic import Elastic
from .task import ProfileElasticTask

TaskPlugins.register_pythontask_plugin(Elastic, ProfileElasticTask)

__all__ = ["Elastic", "ProfileElasticTask"]
