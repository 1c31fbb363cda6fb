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

import pytest
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


DYNAMIC_APP = """\
    import os
    from typing import List

    from flytekit import PodTemplate, dynamic, task
    from kubernetes.client import V1Container, V1EnvVar, V1PodSpec

    from kfdefaults import Elastic, carry_profiles

    TEAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")
    NIGHTLY = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="primary", env=[V1EnvVar(name="RUN_KIND",
                                                                                                   value="nightly")])]))


    @task(task_config=Elastic(profile="pair", team=TEAM))
    def train(x: int) -> int:
        return x


    @dynamic(environment=carry_profiles(train))
    def sweep(n: int) -> List[int]:
        return [train(x=i) for i in range(n)] + [train(x=n).with_overrides(pod_template=NIGHTLY)]
    """

PLAIN_DYNAMIC_APP = """\
    import os
    from typing import List

    from flytekit import dynamic, task

    from kfdefaults import Elastic

    TEAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")


    @task(task_config=Elastic(profile="pair", team=TEAM))
    def train(x: int) -> int:
        return x


    @dynamic
    def sweep(n: int) -> List[int]:
        return [train(x=i) for i in range(n)]
    """


def register_task(python, project: Path, module: str, task: str) -> dict:
    proc = python.run([APPS / "register_app.py", project, module, task], cwd=project, env=shell_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


IMAGES = {"other profile files": {"team/pair.yaml": OTHER_PAIR}, "no profile files": {}}


def test_a_task_compiled_in_a_dynamics_pod_is_the_task_registered(tmp_path, flytekit_python):
    """`@dynamic(environment=carry_profiles(train))`: in the dynamic's pod flytekit compiles `train` again; with other
    profile files in the image, or none, it compiles to the very task `pyflyte register` registered for it, a
    node's `with_overrides(pod_template=...)` merges over its profile there, and its pod runs torch on the
    registered settings."""
    from flyte_pods import futures_of

    laptop = write(tmp_path / "laptop", {"kfd_dyn.py": DYNAMIC_APP, "team/pair.yaml": PAIR})
    sweep = register_task(flytekit_python, laptop, "kfd_dyn", "sweep")
    train = register_task(flytekit_python, laptop, "kfd_dyn", "train")
    settings = json.loads(container_env(train)[RUNTIME_ENV])["elastic"]
    for kind, files in IMAGES.items():
        image = write(tmp_path / kind, {"kfd_dyn.py": DYNAMIC_APP, **files})
        proc, _ = run_flytekit_pod(flytekit_python, image, sweep, tmp_path / "work" / kind, n=2)
        compiled = futures_of(proc)
        [child] = compiled["tasks"]
        assert child["k8sPod"] == train["k8sPod"] and child.get("custom") == train.get("custom"), kind
        assert child["type"] == train["type"], kind
        # the node's override, merged in the pod over the carried profile as at registration
        [override] = [n["taskNode"]["overrides"]["podTemplate"] for n in compiled["nodes"]
                      if n["taskNode"].get("overrides", {}).get("podTemplate")]
        env = container_env({"config": {"primary_container_name": "primary"}, "k8sPod": override})
        assert (env["RUN_KIND"], env["FROM_PROFILE"]) == ("nightly", "registered"), kind
        # the receipt the override's pod checks is the registered one, and the override's variable with its setter
        expected = json.loads(container_env(train)[RUNTIME_ENV])
        expected["pod"]["env"]["RUN_KIND"] = {"set_by": "task with_overrides(pod_template=...)", "value": "nightly"}
        assert json.loads(env[RUNTIME_ENV]) == expected, kind
        proc, launched = run_flytekit_pod(flytekit_python, image, child, tmp_path / "child" / kind, x=1)
        assert proc.returncode == 0, proc.stderr[-3000:]
        launched_as_registered(launched, settings)


def test_a_dynamic_registered_without_the_profiles_fails_naming_why(tmp_path, flytekit_python):
    """A plain `@dynamic` carries nothing: in its pod, compiling `train` fails, saying that the parent was registered
    without kfdefaults' settings for the call and what to write; never a task built from the image's other profile
    files, nor a plain pod without the profile that then fails for another reason."""
    laptop = write(tmp_path / "laptop", {"kfd_dyn.py": PLAIN_DYNAMIC_APP, "team/pair.yaml": PAIR})
    sweep = register_task(flytekit_python, laptop, "kfd_dyn", "sweep")
    for kind, files in IMAGES.items():
        image = write(tmp_path / kind, {"kfd_dyn.py": PLAIN_DYNAMIC_APP, **files})
        proc, launched = run_flytekit_pod(flytekit_python, image, sweep, tmp_path / "work" / kind, n=2)
        assert proc.returncode == 3 and "FUTURES" not in proc.stdout and not launched, kind
        assert ("ProfileError: task kfd_dyn.train: no settings were carried here for Elastic(profile='pair'): this "
                "is a @dynamic's pod that compiles it, and the parent was registered without kfdefaults' settings "
                "for it (no KFDEFAULTS_PROFILES). kfdefaults never resolves it from the profile files of this pod "
                "instead; give the parent the profiles of what it calls: "
                "@dynamic(environment=kfdefaults.carry_profiles(task))") in proc.stderr, proc.stderr[-3000:]


FLYTE2_APP = """\
    import os

    import flyte

    from kfdefaults import carry_profiles
    from kfdefaults.flyte2 import Elastic

    TEAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")
    train_env = flyte.TaskEnvironment(name="train", plugin_config=Elastic(profile="pair", team=TEAM))
    driver_env = flyte.TaskEnvironment(name="driver", depends_on=[train_env], env_vars=carry_profiles(train_env))


    @train_env.task
    def train(x: int) -> int:
        return x


    @driver_env.task
    async def main(x: int) -> int:
        return await train.aio(x)
    """

PLAIN_FLYTE2_APP = FLYTE2_APP.replace("    from kfdefaults import carry_profiles\n", "").replace(
    ", env_vars=carry_profiles(train_env)", "")


def flyte2_registered(laptop: Path, module: str) -> tuple[dict, dict, object]:
    """What `flyte deploy` sends for the parent and the child (Flyte 2's translator, from the laptop's folder), and
    the parent's inputs."""
    import asyncio
    import importlib
    import sys

    from flyte._internal.runtime.convert import convert_from_native_to_inputs
    from flyte._internal.runtime.task_serde import translate_task_to_wire
    from flyte.models import SerializationContext
    from google.protobuf.json_format import MessageToDict

    sys.path.insert(0, str(laptop))
    try:
        app = importlib.import_module(module)
        context = SerializationContext(version="v1", project="p", domain="development", org="o", root_dir=laptop)
        parent, child = (MessageToDict(translate_task_to_wire(t, context).task_template) for t in (app.main, app.train))
        inputs = asyncio.run(convert_from_native_to_inputs(app.main.native_interface, x=10))
    finally:
        sys.path.remove(str(laptop))
        sys.modules.pop(module, None)
    return parent, child, inputs


@pytest.mark.slow
def test_a_child_a_flyte2_parent_submits_is_the_child_deployed(tmp_path):
    """A Flyte 2 parent whose environment carries the child's profile (`env_vars=carry_profiles(train_env)`):
    in the parent's pod, Flyte 2's controller serializes the child again; with other profile files in the image,
    or none, it submits the very task deployed, whose pod runs torch on the registered settings."""
    from flyte_pods import run_a0

    laptop = write(tmp_path / "laptop", {"kfd2_nested.py": FLYTE2_APP, "team/pair.yaml": PAIR})
    parent, deployed, inputs = flyte2_registered(laptop, "kfd2_nested")
    settings = json.loads(container_env(deployed)[RUNTIME_ENV])["elastic"]
    for kind, files in IMAGES.items():
        image = write(tmp_path / kind, {"kfd2_nested.py": FLYTE2_APP, **files})
        proc, submitted = run_a0(image, parent, tmp_path / "parent" / kind, inputs, parent=True)
        assert submitted is not None, proc.stderr[-3000:]
        assert submitted["k8sPod"] == deployed["k8sPod"] and submitted["custom"] == deployed["custom"], kind
        proc, launched = run_a0(image, submitted, tmp_path / "child" / kind, inputs)
        assert proc.returncode == 0, proc.stderr[-3000:]
        launched_as_registered(launched, settings)


@pytest.mark.slow
def test_a_flyte2_parent_deployed_without_the_profiles_fails_naming_why(tmp_path):
    from flyte_pods import run_a0

    laptop = write(tmp_path / "laptop", {"kfd2_plain.py": PLAIN_FLYTE2_APP, "team/pair.yaml": PAIR})
    parent, _, inputs = flyte2_registered(laptop, "kfd2_plain")
    for kind, files in IMAGES.items():
        image = write(tmp_path / kind, {"kfd2_plain.py": PLAIN_FLYTE2_APP, **files})
        proc, submitted = run_a0(image, parent, tmp_path / "parent" / kind, inputs, parent=True)
        assert submitted is None, kind
        assert ("task train.train: no settings were carried here for Elastic(profile='pair'): this is a Flyte 2 "
                "parent's pod that submits it, and the parent was registered without kfdefaults' settings for it (no "
                "KFDEFAULTS_PROFILES). kfdefaults never resolves it from the profile files of this pod instead; give "
                "the parent the profiles of what it calls: flyte.TaskEnvironment(..., "
                "env_vars=kfdefaults.carry_profiles(child_environment))") in proc.stderr, proc.stderr[-3000:]
