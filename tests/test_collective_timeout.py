"""``elastic.nccl_collective_timeout_sec`` under flytekit: kfdefaults sets ``init_process_group``'s NCCL default in
every worker, as Flyte 2's plugin does, so that the profile bounds ``init_process_group(backend="nccl")`` and every
collective on it without a line of training code.

Run as in a pod: the task's module is registered (its pod template carries the resolved settings), the profile
files are then removed, and ``pyflyte-execute``'s entry point runs the task (``flyte_apps/pod_runner.py``); its
worker returns the default ``init_process_group`` would take for ``backend="nccl"`` (``_get_default_timeout``). On
this CPU build of torch, NCCL's own default is absent and torch falls back to 30 minutes (with a warning); the
profile's value wins over it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from collections import OrderedDict

import pytest
from flytekit.configuration import ImageConfig, SerializationSettings
from flytekit.tools.translator import get_serializable

from kfdefaults.settings import RUNTIME_ENV

HERE = os.path.dirname(os.path.abspath(__file__))
APPS = os.path.join(HERE, "flyte_apps")

APP = '''\
import os

from flytekit import task

from kfdefaults import Elastic

TEAM = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "team")]


@task(task_config=Elastic(profile="timed", team=TEAM))
def nccl_default(x: int) -> int:
    from torch.distributed.distributed_c10d import Backend, _get_default_timeout

    return int(_get_default_timeout(Backend("nccl")).total_seconds()) + x
'''


@pytest.mark.parametrize("start_method,seconds", [("spawn", 7), ("fork", 11), ("fork", None)])
def test_the_profiles_collective_timeout_is_the_nccl_default_in_every_worker(tmp_path, flytekit_python, start_method,
                                                                             seconds):
    image = tmp_path / "image"
    (image / "team").mkdir(parents=True)
    (image / "kfd_timed_app.py").write_text(APP, encoding="utf-8")
    timeout = f"\n  nccl_collective_timeout_sec: {seconds}" if seconds else ""
    (image / "team" / "timed.yaml").write_text(textwrap.dedent(f"""\
        elastic:
          nnodes: 1
          nproc_per_node: 1
          start_method: {start_method}""") + timeout + "\n", encoding="utf-8")
    sys.path.insert(0, str(image))
    try:
        import kfd_timed_app

        settings = SerializationSettings(image_config=ImageConfig.auto_default_image())
        tt = get_serializable(OrderedDict(), settings, kfd_timed_app.nccl_default).template
    finally:
        sys.path.remove(str(image))
        sys.modules.pop("kfd_timed_app", None)
    [primary] = [c for c in tt.k8s_pod.pod_spec["containers"] if c["name"] == tt.config["primary_container_name"]]
    env = {e["name"]: e["value"] for e in primary["env"]}
    assert json.loads(env[RUNTIME_ENV])["elastic"].get("nccl_collective_timeout_sec") == seconds
    shutil.rmtree(image / "team")  # the pod runs on what was registered
    work = tmp_path / "work"
    work.mkdir()
    proc = flytekit_python.run([os.path.join(APPS, "pod_runner.py"), tmp_path / "launch.jsonl", work, "kfd_timed_app",
                                "nccl_default", "0"], cwd=image, env={**os.environ, **env,
                                                                     "FLYTE_INTERNAL_EXECUTION_ID": "kfd-test"},
                               timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"RESULT {seconds or 1800}" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
