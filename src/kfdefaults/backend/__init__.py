"""Step 5, the backend: what Flyte's backend makes of a task on a :class:`~kfdefaults.Resolved` profile.

The registered task is not yet the pod. Flyte's backend (flyteplugins v1.16.8) lays the cluster's default
PodTemplate under the task's pod spec with mergo (lists concatenated, not merged by key), keeps of the template
only the containers named ``default`` and ``primary``, renames the primary container ``pytorch`` and builds a
PyTorchJob. This step restates that in Python, standard library only, importing no SDK:

* :mod:`.kinds` and the generated :mod:`.k8s_kinds`: the Go kind of every field, which mergo goes by;
* :mod:`.gojson` (what Go's JSON decoder keeps), :mod:`.mergo` (the merge), :mod:`.template_merge` (the
  template under the task), :mod:`.container` and :mod:`.pod` (``ToK8sPodSpec``), :mod:`.pytorchjob`;
* :mod:`.cluster` reads the cluster's PodTemplate with positions; :mod:`.registered` is the pod spec a task on a
  profile registers; :mod:`.avoid` leaves out the profile's ``/dev/shm`` where the template has one;
  :mod:`.checks` and :mod:`.pod_template_name` say what would break, and where.

``tests/test_backend_mergo.py`` compares the merge with the real mergo, built from a Go program of the tests.
"""
