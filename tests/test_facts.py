"""The cluster's facts: found as the cluster's template is, validated like a profile (every problem at its
FILE:LINE:COLUMN), and described by a JSON Schema that agrees with the validator."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import jsonschema
import pytest
import yaml
from cli_runner import invoke

from kfdefaults import ProfileError
from kfdefaults.pipeline import Pipeline
from kfdefaults.validate import facts as facts_module

EXAMPLE = textwrap.dedent(facts_module.__doc__.split("::\n\n", 1)[1].split("\n\nUnknown", 1)[0])
"""The example of the module's description: what docs/cluster-facts.md shows too."""


def platform_with(tmp_path: Path, text: str, name: str = "_cluster-facts.yaml") -> Path:
    folder = tmp_path / "platform"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


def facts_of(folder: Path, **kwargs) -> facts_module.ClusterFacts | None:
    return Pipeline.discover(platform=[str(folder)], **kwargs).facts


def test_the_documented_example_is_read_with_the_place_of_each_fact(tmp_path):
    folder = platform_with(tmp_path, EXAMPLE)
    shutil.copy(Path(__file__).parent / "kueue_configs" / "chart-0.19.yaml", folder / "_kueue-config.yaml")
    facts = facts_of(folder)
    assert (facts.get("kueue", "version"), facts.kueue_config.api_version) == ("0.19", "v1beta2")
    assert facts.span("node_start", "a100") == ({"typical": 240, "worst": 900}, ("node_pools", "a100", "node_start"))
    assert facts.span("image_pull", "a100") == ({"typical": 40, "worst": 420}, ("image_pull",))  # the cluster's
    assert facts.torch_version("gpu-large") == ("2.3.1", ("torch", "profiles", "gpu-large"))
    assert facts.torch_version("cpu-small") == ("2.5.1", ("torch", "version"))
    where = facts.location("node_pools", "a100", "price_per_node_hour")
    line = EXAMPLE.splitlines().index(next(l for l in EXAMPLE.splitlines() if "price_per_node_hour" in l)) + 1
    assert (Path(where.file).name, where.line) == ("_cluster-facts.yaml", line)


def test_no_facts_are_none_and_unknown_facts_are_none(tmp_path):
    (tmp_path / "platform").mkdir()
    assert facts_of(tmp_path / "platform") is None
    facts = facts_of(platform_with(tmp_path, "description: measured nothing yet\n"))
    assert facts.get("kueue", "wait_for_pods_ready") is None
    assert facts.span("node_start", "a100") == ({}, ())
    assert facts.torch_version("gpu-large") == (None, ())


BAD = """\
node_start: {typical: 90, worst: 60}
node_pools:
  a100:
    allocatable: {cpu: "95", memory: 12GB}
    taints: [{key: a, effect: NoSchedul}]
    nodez: 3
kueue:
  wait_for_pods_ready: {enable: "yes", timeout: 0}
torch: {version: latest}
"""


def test_every_bad_fact_is_an_error_at_its_line(tmp_path):
    folder = platform_with(tmp_path, BAD)
    with pytest.raises(ProfileError) as excinfo:
        facts_of(folder)
    said = {(f.location.line, f.path): f.message for f in excinfo.value.findings}
    assert said[(1, "node_start")] == "typical (90 s) is longer than worst (60 s)"
    assert "`12GB` is not a Kubernetes quantity; did you mean `12G`" in said[(4, "node_pools.a100.allocatable.memory")]
    assert "'NoSchedule', 'PreferNoSchedule' or 'NoExecute'" in said[(5, "node_pools.a100.taints[0].effect")]
    assert said[(6, "node_pools.a100.nodez")] == "unknown field `nodez`; did you mean `nodes`?"
    assert "boolean" in said[(8, "kueue.wait_for_pods_ready.enable")]
    assert "greater than or equal to 1" in said[(8, "kueue.wait_for_pods_ready.timeout")]
    assert "'latest' is not a torch version" in said[(9, "torch.version")]


def test_the_facts_are_found_as_the_template_is_and_named_once(tmp_path, monkeypatch):
    folder = platform_with(tmp_path, "torch: {version: '2.4.0'}\n")
    other = tmp_path / "elsewhere.yaml"
    other.write_text("torch: {version: '2.6.0'}\n")
    assert facts_of(folder, facts=str(other)).get("torch", "version") == "2.6.0"  # the option first
    monkeypatch.setenv("KFDEFAULTS_CLUSTER_FACTS", "none")
    assert facts_of(folder) is None  # `none` says there are none, whatever a folder holds
    monkeypatch.delenv("KFDEFAULTS_CLUSTER_FACTS")
    second = tmp_path / "second"
    second.mkdir()
    (second / "_cluster-facts.toml").write_text("[torch]\nversion = '2.5.0'\n")
    with pytest.raises(ProfileError, match="two platform folders hold the cluster's facts"):
        Pipeline.discover(platform=[str(folder), str(second)])


def test_a_facts_file_is_no_profile(tmp_path):
    folder = platform_with(tmp_path, "torch: {version: '2.4.0'}\n")
    result = invoke(["list", "--platform", str(folder)])
    assert result.exit_code == 0 and "_cluster-facts" not in result.stdout


def test_the_schema_agrees_with_the_validator(tmp_path):
    result = invoke(["schema", "--facts"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(yaml.safe_load(EXAMPLE))) == []
    assert list(validator.iter_errors(yaml.safe_load(BAD)))
    for fact in ({"kueue": {"wait_for_pods_ready": {"enable": True, "timeout": 0}}},
                 {"node_pools": {"a": {"allocatable": {"memory": "12GB"}}}},
                 {"node_pools": {"a": {"nodes": -1}}}, {"flyte": {"task_timeout": "1h"}}):
        assert list(validator.iter_errors(fact)), fact  # each bad fact alone is refused by both
        folder = platform_with(tmp_path, yaml.safe_dump(fact))
        with pytest.raises(ProfileError):
            facts_of(folder)
