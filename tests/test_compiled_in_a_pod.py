"""A task on a profile that is serialized again somewhere else than where it was registered — in the pod of a
``@dynamic``, in a Flyte 2 parent's pod — or run by another node than its own — a map task's array node — runs on
the settings registered, or fails saying why; never on the profile files of the pod it runs in.

Each case is registered with the SDK's own serialization in a fresh process (``flyte_apps/register_*.py``, Flyte 2's
``translate_task_to_wire``), then run the way its pod runs it (``flyte_pods.py``): a fresh process in the image's
folder — holding other profile files than the registration's, or none — with only the serialized container's
environment and args. A task compiled in a pod is run in turn from what that pod compiled.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from flyte_pods import APPS, container_env, primary_container, run_flytekit_pod, shell_env

from kfdefaults.settings import RUNTIME_ENV

PAIR = """\
    elastic:
      nnodes: 1
      nproc_per_node: 2
      max_restarts: 2
      rdzv_configs: {join_timeout: 222}
    pod_template:
      spec:
        containers:
          - name: primary
            env: [{name: FROM_PROFILE, value: "registered"}]
    """

OTHER_PAIR = "elastic: {nnodes: 1, nproc_per_node: 1, max_restarts: 0, rdzv_configs: {join_timeout: 999}}\n"
"""What the image's own folder says of the profile: the settings a task must never silently run on."""


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def registered_workflow(python, project: Path, module: str, workflow: str) -> dict:
    proc = python.run([APPS / "register_workflow.py", project, module, workflow], cwd=project, env=shell_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def launched_as_registered(launched: list[dict], registered: dict) -> None:
    """torch's LaunchConfig is what the registered settings say (the `pair` profile of the registration)."""
    assert len(launched) == 1, launched
    [config] = launched
    assert (config["nproc_per_node"], config["max_restarts"]) == (registered["nproc_per_node"], registered["max_restarts"])
    assert config["rdzv_configs"] == registered["rdzv_configs"] and registered["rdzv_configs"]["join_timeout"] == 222


MAP_APP = """\
    import os
    from typing import List

    from flytekit import PodTemplate, map_task, task, workflow
    from kubernetes.client import V1Container, V1EnvVar, V1PodSpec

    from kfdefaults import Elastic

    TEAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")


    @task(task_config=Elastic(profile="pair", team=TEAM))
    def train(x: int) -> int:
        return x


    NIGHTLY = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="primary", env=[V1EnvVar(name="RUN_KIND",
                                                                                                   value="nightly")])]))


    @workflow
    def mapped(xs: List[int]) -> List[int]:
        return map_task(train)(x=xs)


    @workflow
    def mapped_with_override(xs: List[int]) -> List[int]:
        return map_task(train)(x=xs).with_overrides(pod_template=NIGHTLY)


    @workflow
    def node_with_override(x: int) -> int:
        return train(x=x).with_overrides(pod_template=NIGHTLY)
    """

ARRAY_INDEX = {"BATCH_JOB_ARRAY_INDEX_VAR_NAME": "FLYTE_K8S_ARRAY_INDEX", "FLYTE_K8S_ARRAY_INDEX": "1"}
"""What Flyte's backend sets in each pod of an array node (its k8s array plugin): where the pod's index is."""


def test_a_mapped_pod_runs_on_the_registered_settings(tmp_path, flytekit_python):
    """The array node of `map_task(train)` runs each mapped pod on the map task's registered pod template: the
    profile's, with the settings registered; an image holding another `pair` runs them all the same."""
    laptop = write(tmp_path / "laptop", {"kfd_map.py": MAP_APP, "team/pair.yaml": PAIR})
    registered = registered_workflow(flytekit_python, laptop, "kfd_map", "mapped")
    [array] = registered["tasks"].values()
    settings = json.loads(container_env(array)[RUNTIME_ENV])["elastic"]
    assert primary_container(array)["args"][0] == "pyflyte-map-execute"

    image = write(tmp_path / "image", {"kfd_map.py": MAP_APP, "team/pair.yaml": OTHER_PAIR})
    proc, launched = run_flytekit_pod(flytekit_python, image, array, tmp_path / "work", extra_env=ARRAY_INDEX,
                                      x=[5, 6, 7])
    assert proc.returncode == 0, proc.stderr[-3000:]
    launched_as_registered(launched, settings)


def test_a_map_node_override_is_refused_at_registration_and_a_node_override_keeps_the_profile(tmp_path, flytekit_python):
    """flytekit registers `map_task(train)(...).with_overrides(pod_template=...)` as the mapped pods' whole pod
    template (no /dev/shm, resources or registered settings): registering it fails, saying so. The same override
    on a workflow node of the task keeps the profile, and the node's pod runs on the registered settings."""
    laptop = write(tmp_path / "laptop", {"kfd_map.py": MAP_APP, "team/pair.yaml": PAIR})
    proc = flytekit_python.run([APPS / "register_workflow.py", laptop, "kfd_map", "mapped_with_override"], cwd=laptop,
                               env=shell_env())
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert proc.stderr.startswith("KfdefaultsError: map_task(kfd_map.train).with_overrides(pod_template=...): flytekit "
                                  "registers the override as the whole pod template of the mapped pods, without "
                                  "profile 'pair''s (its /dev/shm, resources, tolerations and the settings registered "
                                  "with the task, KFDEFAULTS_ELASTIC)"), proc.stderr

    registered = registered_workflow(flytekit_python, laptop, "kfd_map", "node_with_override")
    [node] = registered["workflow"]["nodes"]
    override = node["taskNode"]["overrides"]["podTemplate"]
    node_template = {"config": {"primary_container_name": override["primaryContainerName"]},
                     "k8sPod": {"podSpec": override["podSpec"]}}  # what the backend runs the node's pods on
    env = container_env(node_template)
    assert (env["RUN_KIND"], env["FROM_PROFILE"]) == ("nightly", "registered")
    settings = json.loads(env[RUNTIME_ENV])["elastic"]
    image = write(tmp_path / "image", {"kfd_map.py": MAP_APP, "team/pair.yaml": OTHER_PAIR})
    proc, launched = run_flytekit_pod(flytekit_python, image, node_template, tmp_path / "work", x=3)
    assert proc.returncode == 0, proc.stderr[-3000:]
    launched_as_registered(launched, settings)
