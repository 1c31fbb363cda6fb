"""Step 3, validate: documents -> validated :class:`~.fragment.Fragment` objects; merged profiles -> warnings.

:mod:`.files` loads one profile file (:mod:`.body`: the section models of :mod:`.model`, ``rdzv_configs`` in
:mod:`.rdzv`, the PodSpec fragment in :mod:`.podspec`, labels and annotations in :mod:`.metadata`);
:mod:`.task_layer` validates the task layer alike (``--set`` arrives through :mod:`.sets`); :mod:`.merged`
warns about merged profiles whose settings break together, :mod:`.folders` about folders without profiles.
Every finding is located at ``FILE:LINE:COLUMN``.
"""
