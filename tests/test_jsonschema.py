"""kfdefaults schema: a JSON Schema of the profile file that editors can use; checked with the jsonschema package."""

from __future__ import annotations

import glob
import json
import os

import jsonschema
import pytest
from cli_runner import invoke as run_cli
from conftest import FIXTURES
from jsonschema.exceptions import best_match

from kfdefaults.layers import builtin_folder
from kfdefaults.read import read_document

PROFILES = sorted(glob.glob(os.path.join(builtin_folder(), "*")) + glob.glob(os.path.join(FIXTURES, "*", "*")))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    result = run_cli(["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.output)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.slow
def test_schema_names_its_dialect_and_bundles_the_podspec(validator):
    schema = validator.schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "io.k8s.api.core.v1.PodSpec" in schema["$defs"]
    assert "io.k8s.api.core.v1.Container" in schema["$defs"]
    # a fragment: nothing required anywhere
    assert '"required"' not in json.dumps(schema["$defs"]["io.k8s.api.core.v1.PodSpec"])


@pytest.mark.slow
@pytest.mark.parametrize("path", PROFILES, ids=os.path.basename)
def test_builtin_and_fixture_profiles_validate(validator, path):
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(read_document(path).data)]
    assert errors == []


def test_fragment_features_validate(validator):
    profile = {
        "pod_template": {
            "spec": {
                "$setElementOrder/containers": [{"name": "primary"}],
                "containers": [
                    {"name": "primary", "$patch": "merge", "resources": {"limits": {"memory": "16Gi", "nvidia.com/gpu": 8}},
                     "securityContext": None, "imagePullPolicy": "Always"},
                    {"name": "gone", "$patch": "delete"},
                ],
                "volumes": [{"name": "dshm", "$retainKeys": ["name", "emptyDir"], "emptyDir": {"medium": "HugePages-1Gi"}}],
                "nodeSelector": {"$patch": "replace", "pool": "a100"},
                "tolerations": None,
            }
        },
        "elastic": {"nnodes": "1:4", "rdzv_configs": {"join_timeout": 900, "timeout": None}},
    }
    assert list(validator.iter_errors(profile)) == []


@pytest.mark.parametrize("profile, where", [
    ({"pod_template": {"spec": {"containers": [{"name": "p", "volumeMount": []}]}}},
     ["pod_template", "spec", "containers", 0]),
    ({"pod_template": {"spec": {"containers": [{"name": "p", "resources": {"limits": {"memory": "16GB"}}}]}}},
     ["pod_template", "spec", "containers", 0, "resources", "limits", "memory"]),
    ({"pod_template": {"spec": {"containers": [{"name": "p", "env": [{"name": "A", "value": 1}]}]}}},
     ["pod_template", "spec", "containers", 0, "env", 0, "value"]),
    ({"pod_template": {"spec": {"containers": [{"name": "p", "imagePullPolicy": "always"}]}}},
     ["pod_template", "spec", "containers", 0, "imagePullPolicy"]),
    ({"pod_template": {"spec": {"priority": 2**40}}}, ["pod_template", "spec", "priority"]),
    ({"pod_template": {"spec": {"$patch": "remove"}}}, ["pod_template", "spec", "$patch"]),
    ({"elastic": {"rdzv_configs": {"heartbeat": 5}}}, ["elastic", "rdzv_configs"]),
    ({"elastic": {"nnodes": "a:b"}}, ["elastic", "nnodes"]),
    ({"elastic": {"nnodes": "0:3"}}, ["elastic", "nnodes"]),
    ({"elastic": {"nnodes": 2**31}}, ["elastic", "nnodes"]),
    ({"elastic": {"nproc_per_node": 0}}, ["elastic", "nproc_per_node"]),
    ({"elastic": {"monitor_interval": 0}}, ["elastic", "monitor_interval"]),
    ({"elastc": {}}, []),
    ({"pod_template": {"annotations": {"kfdefaults.io/receipt": "Strict"}}},
     ["pod_template", "annotations", "kfdefaults.io/receipt"]),
])
def test_bad_profiles_fail_at_the_right_place(validator, profile, where):
    error = best_match(validator.iter_errors(profile))
    assert error is not None
    assert list(error.absolute_path) == where


@pytest.mark.parametrize("nnodes", [1, 0, -1, 2**31 - 1, "1", " 2 ", "0", "00", "01", "1:4", "01:04", "0:3", "3:0", "4:3",
                                    "1:", ":4", "1:4:5", "a", "", "²", "1: 4", " 2 : 3 "])
def test_schema_and_validation_agree_on_nnodes(validator, nnodes):
    """The schema accepts what ``validate`` accepts; "MIN:MAX" with MIN > MAX is the one thing a pattern cannot see."""
    from pydantic import ValidationError

    from kfdefaults.validate.model import ElasticSection

    try:
        ElasticSection(nnodes=nnodes)
        valid = True
    except ValidationError:
        valid = False
    schema_valid = not list(validator.iter_errors({"elastic": {"nnodes": nnodes}}))
    assert schema_valid == (valid or nnodes == "4:3")


def test_schema_for_another_kubernetes_version():
    result = run_cli(["schema", "--kubernetes-version", "1.31"])
    schema = json.loads(result.output)
    assert "resources" not in schema["$defs"]["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert run_cli(["schema", "--kubernetes-version", "9.9"]).exit_code == 2


def _unions(node, parent_title=None):
    """Every ``(union branch, title of the node holding the union)`` in the schema."""
    if isinstance(node, list):
        for item in node:
            yield from _unions(item, parent_title)
    elif isinstance(node, dict):
        for union in ("anyOf", "oneOf"):
            for branch in node.get(union, []):
                yield branch, node.get("title")
        for value in node.values():
            yield from _unions(value, node.get("title"))


def test_editor_hovers_read_well(validator):
    """yaml-language-server takes a union whose branches have no title or description for one where every branch
    matched, and then shows the key's title once per branch (`Nnodes || Nnodes || Nnodes`): every branch has a
    title of its own, starting with its key's; our keys are titled by their path in a profile."""
    schema = validator.schema
    for branch, title in _unions(schema):
        assert branch.get("title"), branch
        if title:
            assert branch["title"].startswith(f"{title}: "), (title, branch["title"])
    defs = schema["$defs"]
    assert defs["ElasticSection"]["properties"]["nnodes"]["title"] == "elastic.nnodes"
    rdzv = defs["ElasticSection"]["properties"]["rdzv_configs"]["anyOf"][0]["properties"]
    assert rdzv["join_timeout"]["title"] == "elastic.rdzv_configs.join_timeout"
    assert defs["io.k8s.api.core.v1.PodSpec"]["properties"]["tolerations"]["title"] == "tolerations"
    titles = [t for t in (p.get("title") for d in defs.values() for p in d.get("properties", {}).values()) if t]
    assert not any(t in ("Nnodes", "ElasticSection") for t in titles)
