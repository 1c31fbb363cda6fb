"""The timeouts a profile can set: what torch 2.13 reads (checked against its installed source), the checks of the
environment variables, and the merged-profile warnings about settings that make a rendezvous or a shutdown fail."""

from __future__ import annotations

import inspect
import pathlib
import textwrap
from pathlib import Path

import pytest
from cli_runner import invoke

from kfdefaults.validate.torch_env import (
    NOT_TORCH_SETTINGS,
    TORCH_ENV_SETTINGS,
    value_problem,
)


def write(folder: Path, name: str, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def torch_source(*modules: str) -> str:
    import importlib

    return "".join(inspect.getsource(importlib.import_module(m)) for m in modules)


# --- what torch reads -------------------------------------------------------------------------------------------------


def test_rdzv_timeout_is_read_by_the_legacy_etcd_and_static_rendezvous_only():
    c10d = torch_source("torch.distributed.elastic.rendezvous.dynamic_rendezvous",
                        "torch.distributed.elastic.rendezvous.c10d_rendezvous_backend")
    assert 'get("timeout"' not in c10d and 'get_as_int("timeout"' not in c10d
    for module in ("torch.distributed.elastic.rendezvous.etcd_rendezvous",
                   "torch.distributed.elastic.rendezvous.static_tcp_rendezvous"):
        source = torch_source(module)
        assert '"timeout"' in source, module
    from kfdefaults.validate.rdzv import RDZV_SETTINGS

    assert "only the legacy etcd and the static rendezvous read it" in RDZV_SETTINGS["timeout"][1]
    assert "connect" in RDZV_SETTINGS["read_timeout"][1] and "each node's own deadline" in RDZV_SETTINGS["join_timeout"][1]


def test_the_environment_variables_confirmed_in_torchs_python_source_are_read_there():
    sources = {
        "TORCH_DIST_INIT_BARRIER": "torch.distributed.distributed_c10d",
        "TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "torch.distributed.launcher.api",
        "TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT": "torch.distributed.elastic.agent.server.local_elastic_agent",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "torch.distributed.elastic.agent.server.local_elastic_agent",
        "TORCH_NCCL_TRACE_BUFFER_SIZE": "torch.distributed.distributed_c10d",
        "TORCH_FR_BUFFER_SIZE": "torch.distributed.distributed_c10d",
    }
    for name, module in sources.items():
        assert name in TORCH_ENV_SETTINGS
        assert name in torch_source(module), (name, module)


def test_the_names_people_try_for_the_process_group_timeout_are_read_nowhere_in_torch():
    import torch

    folder = pathlib.Path(torch.__file__).parent / "distributed"
    text = "".join(p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*.py"))
    for name in NOT_TORCH_SETTINGS:
        assert f'"{name}"' not in text and f"'{name}'" not in text, name


@pytest.mark.parametrize("name, value, expected", [
    ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", None),
    ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "0", "warning"),
    ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "true", "error"),
    ("TORCH_DIST_INIT_BARRIER", "yes", "error"),
    ("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "30.5", "error"),
    ("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "45", None),
    ("TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT", "120.5", None),
    ("TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT", "two minutes", "error"),
    ("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "0", "error"),
    ("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "10", "warning"),
    ("TORCH_NCCL_BLOCKING_WAIT", "1", "warning"),
    ("NCCL_DEBUG", "anything", None),
])
def test_values(name, value, expected):
    problem = value_problem(name, value)
    assert (problem[0] if problem else None) == expected


def test_env_values_through_the_command_line(tmp_path):
    path = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                env:
                  - {name: TORCH_NCCL_ASYNC_ERROR_HANDLING, value: "0"}
                  - {name: TORCH_NCCL_TIMEOUT, value: "60"}
        """)
    result = invoke(["validate", path])
    assert result.exit_code == 0 and "Traceback" not in result.output
    lines = result.unfolded.splitlines()
    assert lines[0].startswith(f"{path}:6:60: [team] pod_template.spec.containers[name=primary]"
                               ".env[name=TORCH_NCCL_ASYNC_ERROR_HANDLING].value: warning: ")
    assert "the job hangs" in lines[0]
    assert lines[1].startswith(f"{path}:7:20: [team] pod_template.spec.containers[name=primary]"
                               ".env[name=TORCH_NCCL_TIMEOUT].name: warning: torch reads no `TORCH_NCCL_TIMEOUT`")
    bad = invoke(["render", "gpu-large", "--set",
                  "pod_template.spec.containers[name=primary].env=[{name: TORCH_DIST_INIT_BARRIER, value: 'true'}]"])
    assert bad.exit_code == 1 and "`TORCH_DIST_INIT_BARRIER` takes 0 or 1, got 'true'" in bad.stderr


def test_nccl_fail_fast_is_a_fragment_to_extend(tmp_path):
    write(tmp_path / "team", "train.yaml", "extends: [gpu-large, nccl-fail-fast]\n")
    result = invoke(["render", "train", "--team", str(tmp_path / "team"), "-o", "json"])
    assert result.exit_code == 0, result.stderr
    import json

    env = json.loads(result.stdout)["pod_template"]["spec"]["containers"][0]["env"]
    assert {"name": "TORCH_NCCL_ASYNC_ERROR_HANDLING", "value": "1"} in env
    assert {"name": "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "value": "300"} in env


# --- merged-profile warnings ------------------------------------------------------------------------------------------


def test_a_file_store_with_several_nodes_warns(tmp_path):
    path = write(tmp_path / "team", "gpu-large.yaml", "elastic:\n  rdzv_configs:\n    store_type: file\n")
    result = invoke(["render", "gpu-large", "--team", str(tmp_path / "team")])
    assert result.exit_code == 0
    assert result.messages.startswith(f"{path}:3:17: [team] elastic.rdzv_configs.store_type: warning: `store_type: file` "
                                    "with nnodes 1:4: the file store uses the rendezvous endpoint as a file path")
    one = invoke(["render", "gpu-large", "--team", str(tmp_path / "team"), "--set", "elastic.nnodes=1"])
    assert "store_type" not in one.stderr


def test_a_shutdown_timeout_beyond_the_grace_period_warns(tmp_path):
    path = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                env: [{name: TORCH_ELASTIC_SHUTDOWN_TIMEOUT, value: "60"}]
        """)
    result = invoke(["validate", "--strict", path])
    assert result.exit_code == 1
    assert result.messages.startswith(f"{path}:5:61: [team] pod_template.spec.containers[name=primary]"
                                    ".env[name=TORCH_ELASTIC_SHUTDOWN_TIMEOUT].value: warning: "
                                    "TORCH_ELASTIC_SHUTDOWN_TIMEOUT is 60 s but the pod's terminationGracePeriodSeconds "
                                    "is 30 (the Kubernetes default)")
    longer = invoke(["render", "gpu-large", "--team", str(tmp_path / "team"),
                     "--set", "pod_template.spec.terminationGracePeriodSeconds=90"])
    assert longer.exit_code == 0 and longer.messages == ""


def test_the_timeouts_page_lists_every_variable_a_profile_can_set():
    page = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "timeouts.md").read_text(encoding="utf-8")
    section = page.split("## What a profile can set", 1)[1].split("\n## ", 1)[0]
    for name in TORCH_ENV_SETTINGS:
        assert f"`{name}`" in section, name
    for name in NOT_TORCH_SETTINGS:
        assert f"`{name}`" in section, name


def test_through_elastic_a_fragment_reaches_the_task_and_a_bad_value_raises(tmp_path):
    from collections import OrderedDict

    from flytekit import task
    from flytekit.configuration import ImageConfig, SerializationSettings
    from flytekit.tools.translator import get_serializable

    import kfdefaults
    from kfdefaults import Elastic

    write(tmp_path / "team", "train.yaml", "extends: [gpu-large, nccl-fail-fast]\n")
    t = task(task_config=Elastic(profile="train", team=[str(tmp_path / "team")]))(_body)
    settings = SerializationSettings(image_config=ImageConfig.auto_default_image())
    [container] = get_serializable(OrderedDict(), settings, t).template.k8s_pod.pod_spec["containers"]
    assert {"name": "TORCH_NCCL_ASYNC_ERROR_HANDLING", "value": "1"} in container["env"]
    bad = write(tmp_path / "bad", "train.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                env: [{name: TORCH_DIST_INIT_BARRIER, value: "true"}]
        """)
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        Elastic(profile="train", team=[str(tmp_path / "bad")])
    [finding] = excinfo.value.findings
    assert str(finding.location) == f"{bad}:5:54" and "takes 0 or 1, got 'true'" in finding.message


def _body() -> None: ...
