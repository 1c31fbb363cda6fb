"""Strings that YAML 1.1 readers take for something else stay strings through render and kubectl."""

from __future__ import annotations

import json
import subprocess

import pytest
from cli_runner import invoke as run_cli

TRICKY = ["no", "on", "y", "off", "Yes", "0755", "1_000", "12:30", "2024-01-01", "1e3", "0x1F", "~", "null", ".5", "+1"]


@pytest.fixture
def tricky_profile(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    # annotations, not labels: label values such as "12:30" or "~" are not valid label values
    annotations = "\n".join(f"    l{i}: {json.dumps(v)}" for i, v in enumerate(TRICKY))
    env = "\n".join(f"          - {{name: V{i}, value: {json.dumps(v)}}}" for i, v in enumerate(TRICKY))
    (team / "tricky.yaml").write_text(
        f"pod_template:\n  annotations:\n{annotations}\n  spec:\n    containers:\n      - name: primary\n        env:\n{env}\n",
        encoding="utf-8",
    )
    return team


def test_rendered_strings_survive_kubectl(kubectl, tmp_path, tricky_profile):
    result = run_cli(["render", "tricky", "--team", str(tricky_profile), "--as", "podtemplate"])
    assert result.exit_code == 0, result.output
    manifest = tmp_path / "tricky.yaml"
    manifest.write_text(result.stdout, encoding="utf-8")
    out = subprocess.run([kubectl, "patch", "--local", "-f", str(manifest), "--type", "strategic", "-p", "{}", "-o", "json"],
                         check=True, capture_output=True, text=True)
    template = json.loads(out.stdout)["template"]
    assert template["metadata"]["annotations"] == {f"l{i}": v for i, v in enumerate(TRICKY)}
    env = template["spec"]["containers"][0]["env"]
    assert env == [{"name": f"V{i}", "value": v} for i, v in enumerate(TRICKY)]


def test_rendered_profile_reads_back_the_same_with_a_yaml_1_1_reader(tricky_profile):
    import yaml

    result = run_cli(["render", "tricky", "--team", str(tricky_profile)])
    profile = yaml.safe_load(result.stdout)  # PyYAML resolves YAML 1.1 scalars
    assert profile["pod_template"]["annotations"] == {f"l{i}": v for i, v in enumerate(TRICKY)}
