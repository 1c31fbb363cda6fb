"""Round trip: what ``render`` prints, used as a profile, renders to the same result."""

from __future__ import annotations

import json

import pytest
import yaml
from cli_runner import invoke as run_cli
from conftest import PLATFORM, TEAM

NAMES = ["gpu-large", "vision-finetune", "gpu-small", "cpu-small", "elastic-gpu-default"]
SETS = ("--set", "pod_template.annotations.note=no", "--set", 'pod_template.labels.version="1.10"',
        "--set", "pod_template.spec.containers[name=primary].args=[--lr, '0.1', 'on']")


def render(*args: str) -> str:
    result = run_cli(["render", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("fmt", ["yaml", "json"])
@pytest.mark.parametrize("name", NAMES)
def test_rendered_profile_alone_renders_to_itself(name, fmt, tmp_path):
    first = render(name, "--platform", PLATFORM, "--team", TEAM, *SETS, "-o", fmt)
    head = f"name: {name}\n" if fmt == "yaml" else f'  "name": "{name}",\n'
    assert head in first
    (tmp_path / "roundtrip.yaml").write_text(first.replace(head, head.replace(name, "roundtrip"), 1), encoding="utf-8")
    again = render("roundtrip", "--platform", str(tmp_path), "-o", fmt)
    assert again == first.replace(head, head.replace(name, "roundtrip"), 1)


@pytest.mark.parametrize("name", ["gpu-large", "gpu-small", "cpu-small"])
def test_rendered_profile_on_top_of_its_own_layers_changes_nothing(name, tmp_path):
    first = render(name, "--platform", PLATFORM, "--team", TEAM, *SETS)
    (tmp_path / f"{name}.yaml").write_text(first, encoding="utf-8")
    assert render(name, "--platform", PLATFORM, "--team", str(tmp_path)) == first


@pytest.mark.parametrize("name", NAMES)
def test_yaml_and_json_carry_the_same_data(name):
    args = (name, "--platform", PLATFORM, "--team", TEAM, *SETS)
    assert yaml.safe_load(render(*args)) == json.loads(render(*args, "-o", "json"))
