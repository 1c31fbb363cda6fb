"""The task a ``kfdefaults.flyte2.Elastic`` environment defines: :class:`ProfileTorchFunctionTask`, a
``TorchFunctionTask`` whose pod template is the profile's, merged with the task layer
(:class:`~.profile_task.ProfileTask` says what that absorbs), its receipt taken before the plugin launches torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flyte.extend import TaskPluginRegistry
from flyteplugins.pytorch.task import TorchFunctionTask

from .elastic import Elastic
from .profile_task import ProfilePodTemplate, ProfileTask

__all__ = ["ProfilePodTemplate", "ProfileTorchFunctionTask"]


@dataclass(kw_only=True)
class ProfileTorchFunctionTask(ProfileTask, TorchFunctionTask):
    """A ``TorchFunctionTask`` whose pod template is its ``Elastic``'s profile merged with the task layer
    (:class:`~.profile_task.ProfileTask`).

    Attributes:
        kfdefaults_resolved: The merged profile the task registers with (``None`` in a pod running on the
            registered settings, or with a plain ``flyteplugins.pytorch.Elastic``).
    """

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        """Run the task; in a Flyte pod, only on the settings registered for it (:meth:`_raise_deferred`), and after
        its receipt (:func:`kfdefaults.receipt.take_receipt`; a report tab too when the task has a report).

        Raises:
            ProfileError: no settings were registered for this task's call in this pod.
            ReceiptError: the pod differs from what was registered and the profile asks for a strict receipt.
        """
        self._raise_deferred(running=True)
        config = self.plugin_config
        if isinstance(config, Elastic) and config.registered is not None:
            self._take_receipt({"min_nodes": self.min_nodes, "max_nodes": self.max_nodes,
                                "nproc_per_node": config.nproc_per_node, "max_restarts": config.max_restarts,
                                "monitor_interval": config.monitor_interval, "rdzv_backend": config.rdzv_backend,
                                "rdzv_configs": dict(config.rdzv_configs or {})})
        return await super().execute(*args, **kwargs)


TaskPluginRegistry.register(config_type=Elastic, plugin=ProfileTorchFunctionTask)
