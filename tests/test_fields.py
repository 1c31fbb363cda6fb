"""``kfdefaults fields PATH``: a key's type and merge strategy, from the models and the Kubernetes schema."""

from __future__ import annotations

import json

import pytest
from cli_runner import invoke


def field(path: str, *extra: str) -> dict:
    result = invoke(["fields", path, "-o", "json", *extra])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("path, kind, merge", [
    ("pod_template.spec.tolerations", "list of Toleration", "atomic list: a higher layer replaces it whole"),
    ("pod_template.spec.containers", "list of Container", "list merged by key `name`"),
    ("pod_template.spec.containers[name=primary].volumeMounts", "list of VolumeMount", "list merged by key `mountPath`"),
    ("pod_template.spec.containers[name=primary].args", "list of string", "atomic list"),
    ("pod_template.spec.containers[name=primary].resources.limits", "mapping of Quantity", "key by key"),
    ("pod_template.spec.nodeSelector", "mapping of string", "key by key"),
    ("elastic.rdzv_configs.join_timeout", "integer (seconds) >= 1", "key by key"),
    ("elastic.start_method", "one of spawn, fork", "key by key"),
    ("elastic.rdzv_configs", "mapping", "per key"),
    ("delete", "list of strings", "not merged"),
])
def test_a_field_says_its_type_and_how_it_merges(path, kind, merge):
    got = field(path)
    assert got["type"] == kind and merge in got["merge"], got
    assert got["path"] == path


def test_the_merge_strategy_is_the_one_the_engine_uses():
    """The words come from the schema's patch metadata, which strategic_merge_patch reads too."""
    from kfdefaults.smp.schema import schema_type

    spec = schema_type("PodSpec")
    for name in ("tolerations", "containers", "volumes", "imagePullSecrets", "readinessGates"):
        _, meta = spec.lookup_slice(name)
        words = field(f"pod_template.spec.{name}")["merge"]
        if meta.merge_key and "merge" in meta.strategies:
            assert f"merged by key `{meta.merge_key}`" in words, name
        else:
            assert "atomic list" in words, name


def test_a_field_of_another_kubernetes_version():
    assert field("pod_template.spec.resources")["type"] == "ResourceRequirements"  # a 1.32 field
    result = invoke(["fields", "pod_template.spec.resources", "--kubernetes-version", "1.31"])
    assert result.exit_code == 1 and "PodSpec has no field `resources` (Kubernetes 1.31)" in result.stderr


@pytest.mark.parametrize("path, words", [
    ("pod_template.spec.nodeSelectr", "did you mean `nodeSelector`?"),
    ("elastic.nproc", "did you mean `nproc_per_node`?"),
    ("elastic.rdzv_configs.join", "no rendezvous setting `join`"),
    ("pod_template.spec.tolerations[name=x]", "the list has no merge key"),
    ("pod_template.spec.containers[image=x]", "they are merged by `name`"),
])
def test_an_unknown_field_is_an_error_with_a_suggestion(path, words):
    result = invoke(["fields", path])
    assert result.exit_code == 1 and words in result.stderr, result.stderr


def test_text_output_wraps_at_the_help_width():
    result = invoke(["fields", "pod_template.spec.containers"])
    assert result.exit_code == 0
    assert all(len(line) <= 100 for line in result.stdout.splitlines())
    assert result.stdout.splitlines()[:2] == ["pod_template.spec.containers", "  type: list of Container"]
