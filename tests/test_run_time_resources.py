"""Resources given where a task is registered or submitted, not where it is defined: ``pyflyte register/run
--resource-requests/--resource-limits`` and Flyte 2's ``task.override(resources=...)``. They merge into the
profile's per resource name as the task layer does, a warning names what of the profile's they replace, and
``nproc_per_node: auto`` follows them into what the pod runs.

flytekit's side runs the real ``pyflyte register`` command line (``--dry-run``: nothing is sent; the entities it
would register are read on their way, ``flyte_apps/pyflyte_register.py``), then runs the registered task the way
its pod does (``flyte_pods.py``); Flyte 2's serializes the overridden task with its own translator and runs it
through ``a0``.
"""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path

import pytest
from flyte_pods import APPS, container_env, run_a0, run_flytekit_pod, shell_env

from kfdefaults.errors import KfdefaultsWarning
from kfdefaults.settings import RUNTIME_ENV

APPS_SOURCE = {
    "big.py": """\
        from flytekit import task

        from kfdefaults import Elastic


        @task(task_config=Elastic(profile="gpu-large"))
        def big(x: int) -> int:
            return x
        """,
    "small.py": """\
        from flytekit import task

        from kfdefaults import Elastic


        @task(task_config=Elastic(profile="cpu-small"))
        def small(x: int) -> int:
            return x
        """,
    "auto.py": """\
        import os

        from flytekit import task

        from kfdefaults import Elastic

        TEAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")


        @task(task_config=Elastic(profile="auto-gpu", team=TEAM))
        def auto(x: int) -> int:
            return x
        """,
    "team/auto-gpu.yaml": """\
        extends: gpu-large
        elastic:
          nnodes: 1
          nproc_per_node: auto   # one worker per GPU of the primary container
        """,
}


def project(root: Path) -> Path:
    for name, text in APPS_SOURCE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def pyflyte_register(python, root: Path, module: str, *flags: str) -> tuple[dict, str]:
    """``pyflyte register --dry-run ... FLAGS MODULE.py`` from ``root``: the TaskTemplate of the module's task, and
    what the command printed on standard error."""
    out = root / "registered.json"
    proc = python.run([APPS / "pyflyte_register.py", out, "register", "--dry-run", "--copy", "none", "--version", "v1",
                       *flags, f"{module}.py"], cwd=root, env=shell_env())
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    [template] = json.loads(out.read_text()).values()
    return template, proc.stderr


def said(stderr: str) -> list[str]:
    return [line.split("KfdefaultsWarning: ", 1)[1] for line in stderr.splitlines() if "KfdefaultsWarning: " in line]


def test_pyflyte_resource_flags_say_what_they_replace_and_auto_follows_them_into_the_pod(tmp_path, flytekit_python):
    root = project(tmp_path / "project")
    template, stderr = pyflyte_register(flytekit_python, root, "big", "--resource-requests", "gpu=1")
    assert said(stderr) == [
        "pyflyte --resource-requests/--resource-limits on task big.big (profile 'gpu-large'): requests nvidia.com/gpu "
        "8 -> nvidia.com/gpu 1, limits nvidia.com/gpu 8 dropped; nproc_per_node stays 8 (the profile sets it; "
        "`nproc_per_node: auto` would follow the GPUs)"]
    assert template["k8sPod"]["podSpec"]["containers"][0]["resources"] == {"requests": {"gpu": "1"}}

    template, stderr = pyflyte_register(flytekit_python, root, "small", "--resource-requests", "mem=4Gi")
    assert said(stderr) == ["pyflyte --resource-requests/--resource-limits on task small.small (profile 'cpu-small'): "
                            "requests memory 2Gi -> memory 4Gi, limits memory 2Gi dropped"]

    template, stderr = pyflyte_register(flytekit_python, root, "auto", "--resource-requests", "gpu=2,cpu=4",
                                        "--resource-limits", "gpu=2")
    assert said(stderr) == [
        "pyflyte --resource-requests/--resource-limits on task auto.auto (profile 'auto-gpu'): requests nvidia.com/gpu "
        "8 -> nvidia.com/gpu 2, limits nvidia.com/gpu 8 -> nvidia.com/gpu 2; nproc_per_node follows them: 8 -> 2 (auto)"]
    primary = template["k8sPod"]["podSpec"]["containers"][0]
    assert primary["resources"] == {"requests": {"gpu": "2", "cpu": "4"}, "limits": {"gpu": "2"}}
    registered = json.loads(container_env(template)[RUNTIME_ENV])["elastic"]
    assert registered["nproc_per_node"] == 2

    image = tmp_path / "image"  # the code, without the team folder the profile came from
    image.mkdir()
    (image / "auto.py").write_text((root / "auto.py").read_text(), encoding="utf-8")
    proc, launched = run_flytekit_pod(flytekit_python, image, template, tmp_path / "work", x=3)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [config["nproc_per_node"] for config in launched] == [2]


FLYTE2_APP = """\
import os

import flyte

from kfdefaults.flyte2 import Elastic

TEAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")
big_env = flyte.TaskEnvironment(name="big", plugin_config=Elastic(profile="gpu-large"))
auto_env = flyte.TaskEnvironment(name="auto", plugin_config=Elastic(profile="auto-gpu", team=TEAM))


@big_env.task
def big(x: int) -> int:
    return x


@auto_env.task
def auto(x: int) -> int:
    return x
"""


@pytest.mark.slow
def test_flyte2_override_resources_says_what_it_replaces_and_auto_follows_it_into_the_pod(tmp_path):
    import asyncio
    import sys

    import flyte
    from flyte._internal.runtime.convert import convert_from_native_to_inputs
    from flyte._internal.runtime.task_serde import translate_task_to_wire
    from flyte.models import SerializationContext
    from google.protobuf.json_format import MessageToDict

    image = project(tmp_path / "image")
    (image / "kfd2_resources.py").write_text(FLYTE2_APP, encoding="utf-8")
    sys.path.insert(0, str(image))
    try:
        import kfd2_resources

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kfd2_resources.big.override(resources=flyte.Resources(gpu=1))
            kfd2_resources.big.override(resources=flyte.Resources(memory="4Gi"))  # gpu-large sets no memory
            auto = kfd2_resources.auto.override(resources=flyte.Resources(gpu=2))
        context = SerializationContext(version="v1", project="p", domain="development", org="o", root_dir=image)
        template = MessageToDict(translate_task_to_wire(auto, context).task_template)
        inputs = asyncio.run(convert_from_native_to_inputs(auto.native_interface, x=3))
    finally:
        sys.path.remove(str(image))
        sys.modules.pop("kfd2_resources", None)
    assert [str(w.message) for w in caught if w.category is KfdefaultsWarning] == [
        "task.override(resources=...) on task big.big (profile 'gpu-large'): requests nvidia.com/gpu 8 -> gpu 1, "
        "limits nvidia.com/gpu 8 dropped; nproc_per_node stays 8 (the profile sets it; `nproc_per_node: auto` would "
        "follow the GPUs)",
        "task.override(resources=...) on task auto.auto (profile 'auto-gpu'): requests nvidia.com/gpu 8 -> gpu 2, "
        "limits nvidia.com/gpu 8 dropped; nproc_per_node follows them: 8 -> 2 (auto)"]
    assert all(w.filename == __file__ for w in caught if w.category is KfdefaultsWarning)  # at the override's line
    assert json.loads(container_env(template)[RUNTIME_ENV])["elastic"]["nproc_per_node"] == 2

    proc, launched = run_a0(image, template, tmp_path / "work", inputs)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [config["nproc_per_node"] for config in launched] == [2]
