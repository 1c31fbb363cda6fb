"""Step 4, merge: a profile name -> one :class:`~.result.Resolved` (expand ``extends``, then fold the layers).

:mod:`.expand` finds the fragments, :mod:`.fold` folds them (the ``elastic`` sections key by key over the
plugin's defaults in :mod:`.elastic`, the pod templates by :mod:`kfdefaults.smp`), :mod:`.primary` makes the
primary container one container across layers. Nothing here imports an SDK.
"""
