"""Rendering fixture layers equals kubectl applying the same pod-template fragments in order.

The fragments are read here independently of kfdefaults (PyYAML, tomllib), in the layer order the contract
fixes, and given to ``kubectl patch --local --type strategic`` one after another, starting from an empty
PodTemplate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from conftest import PLATFORM, TEAM

import kfdefaults
from kfdefaults.layers import builtin_folder

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BUILTIN = builtin_folder()


def read(path: str) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f) if path.endswith(".toml") else yaml.safe_load(f)


def template_patch(path: str) -> dict:
    section = read(path).get("pod_template") or {}
    patch = {}
    metadata = {k: section[k] for k in ("labels", "annotations") if k in section}
    if metadata:
        patch["metadata"] = metadata
    if "spec" in section:
        patch["spec"] = section["spec"]
    return patch


def kubectl_layers(kubectl: str, tmp_path, files: list[str]) -> dict:
    """Apply each file's pod template to an empty PodTemplate with kubectl, in order; return the template."""
    obj = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "layers"}, "template": {}}
    for i, path in enumerate(files):
        base, patch = tmp_path / f"base-{i}.json", tmp_path / f"patch-{i}.json"
        base.write_text(json.dumps(obj))
        patch.write_text(json.dumps({"template": template_patch(path)}))
        out = subprocess.run(
            [kubectl, "patch", "--local", "-f", str(base), "--type", "strategic", "--patch-file", str(patch), "-o", "json"],
            check=True, capture_output=True, text=True,
        )
        obj = json.loads(out.stdout)
    return obj.get("template", {})


def with_auto(resolved, pod: dict) -> dict:
    """kubectl's merge with the profile's ``auto`` values resolved, as kfdefaults resolves them after merging
    (kfdefaults.merge.auto): the merge itself is kubectl's, the ``auto`` rule comes after it."""
    from kfdefaults.merge.auto import resolve_auto

    return resolve_auto(resolved.replace(pod_template_spec=pod))[0].pod_template_spec


GPU_LARGE_FILES = [
    os.path.join(BUILTIN, "elastic-gpu-default.yaml"),
    os.path.join(BUILTIN, "gpu-large.yaml"),
    os.path.join(PLATFORM, "gpu-large.yaml"),
    os.path.join(TEAM, "gpu-large.yaml"),
]


def test_three_layers_equal_kubectl_in_order(kubectl, tmp_path):
    resolved = kfdefaults.resolve("gpu-large", platform=[PLATFORM], team=[TEAM])
    assert [f.source for f in resolved.fragments] == GPU_LARGE_FILES
    assert resolved.pod_template_spec == with_auto(resolved, kubectl_layers(kubectl, tmp_path, GPU_LARGE_FILES))


def test_values_of_every_layer_appear_and_the_higher_layer_wins():
    resolved = kfdefaults.resolve("gpu-large", platform=[PLATFORM], team=[TEAM])
    spec = resolved.pod_spec
    [primary, sidecar] = spec["containers"]
    assert primary["name"] == "primary" and sidecar["name"] == "log-shipper"
    # builtin: the /dev/shm mount and the GPUs; platform: memory limit, node selector; team: image
    assert primary["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert primary["resources"]["limits"] == {"nvidia.com/gpu": 8, "memory": "320Gi"}
    assert primary["image"] == "registry.example.com/vision/train:2.1"
    assert spec["nodeSelector"] == {"cloud.example.com/gpu": "a100"}
    # NCCL_DEBUG set by the platform, overridden by the team; merged by name, not appended
    assert primary["env"] == [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "WANDB_PROJECT", "value": "detection"}]
    # tolerations have no merge key: the platform's list replaces the builtin one
    assert [t["key"] for t in spec["tolerations"]] == ["nvidia.com/gpu", "pool"]
    # volumes merge by name: the platform adds a size limit to the builtin dshm volume
    assert spec["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}]
    assert resolved.labels == {"platform.example.com/pool": "a100", "team": "vision"}
    elastic = resolved.elastic_settings
    assert elastic["nnodes"] == "2:4"  # platform over builtin "1:4"
    assert elastic["max_restarts"] == 5  # platform over builtin 3
    assert elastic["rdzv_configs"] == {"join_timeout": 1200, "timeout": 900, "read_timeout": 1800}
    assert elastic["run_policy"] == {"clean_pod_policy": "running", "backoff_limit": 3}


def test_extends_and_delete_directive_equal_kubectl(kubectl, tmp_path):
    resolved = kfdefaults.resolve("vision-finetune", platform=[PLATFORM], team=[TEAM])
    files = GPU_LARGE_FILES + [os.path.join(TEAM, "vision-finetune.yaml")]
    assert [f.source for f in resolved.fragments] == files
    assert resolved.pod_template_spec == with_auto(resolved, kubectl_layers(kubectl, tmp_path, files))
    assert [c["name"] for c in resolved.pod_spec["containers"]] == ["primary"]
    assert resolved.elastic_settings["nnodes"] == 1


def test_toml_platform_profile_equals_kubectl(kubectl, tmp_path):
    resolved = kfdefaults.resolve("gpu-small", platform=[PLATFORM])
    files = [os.path.join(BUILTIN, "elastic-gpu-default.yaml"), os.path.join(PLATFORM, "gpu-small.toml")]
    assert [f.source for f in resolved.fragments] == files
    assert resolved.pod_template_spec == with_auto(resolved, kubectl_layers(kubectl, tmp_path, files))


@pytest.mark.parametrize("name", ["elastic-gpu-default", "gpu-large", "cpu-small"])
def test_builtin_profiles_equal_kubectl(kubectl, tmp_path, name):
    resolved = kfdefaults.resolve(name)
    files = [f.source for f in resolved.fragments]
    assert all(f.startswith(BUILTIN) for f in files)
    by_kubectl = kubectl_layers(kubectl, tmp_path, files)
    assert resolved.pod_template_spec == with_auto(resolved, by_kubectl)
    assert "auto" in json.dumps(by_kubectl)  # each builtin has an auto value, resolved after the merge
