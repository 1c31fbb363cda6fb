"""``kfdefaults diff``: leaf-by-leaf differences, diff's exit codes, a Markdown table for pull requests."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from cli_runner import invoke as run_cli
from conftest import PLATFORM, TEAM


def invoke(*args: str, **kwargs):
    return run_cli(list(args), **kwargs)


def test_equal_profiles_exit_0_and_print_nothing():
    result = invoke("diff", "gpu-large", "gpu-large", "--platform", PLATFORM, "--team", TEAM)
    assert result.exit_code == 0
    assert result.stdout == ""


def test_two_profiles_differ_exit_1_with_one_line_per_leaf():
    result = invoke("diff", "gpu-large", "gpu-small", "--platform", PLATFORM)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert '~ elastic.nnodes: "2:4" -> 1' in lines
    assert '~ pod_template.labels."platform.example.com/pool": a100 -> t4' in lines
    # a list without a merge key differs as a whole: no per-position lines
    [tolerations] = [line for line in lines if "tolerations" in line]
    assert tolerations.startswith('~ pod_template.spec.tolerations: [{"effect": "NoSchedule", "key": "nvidia.com/gpu"')
    assert '- pod_template.spec.containers[name=primary].resources.limits.memory: 320Gi' in lines
    assert all(line[:2] in ("~ ", "- ", "+ ") for line in lines)
    assert "\x1b[" not in result.stdout
    # name is what was asked for, not a difference
    assert not any(line.startswith(("~ name", "- name", "+ name")) for line in lines)


def test_added_values_are_marked_plus():
    result = invoke("diff", "gpu-small", "gpu-large", "--platform", PLATFORM, "--team", TEAM)
    assert result.exit_code == 1
    assert "+ pod_template.labels.team: vision" in result.stdout.splitlines()


@pytest.fixture
def pr(tmp_path):
    """A pull request on the team folder: old and new copies, the new one replacing the tolerations."""
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(TEAM, old)
    shutil.copytree(TEAM, new)
    text = (new / "gpu-large.yaml").read_text(encoding="utf-8")
    text = text.replace("  nproc_per_node: 8\n", "  nproc_per_node: 4\n")
    text += "    tolerations:\n      - key: team-gpu\n        operator: Exists\n"
    (new / "gpu-large.yaml").write_text(text, encoding="utf-8")
    return str(old), str(new)


def test_one_profile_under_two_sets_of_folders(pr):
    old, new = pr
    result = invoke("diff", "gpu-large", "--platform", PLATFORM, "--team", old, "--team-against", new)
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert "~ elastic.nproc_per_node: 8 -> 4" in lines
    assert lines[-1].startswith('~ pod_template.spec.tolerations: [{"effect": "NoSchedule", "key": "nvidia.com/gpu"')
    assert lines[-1].endswith('-> [{"key": "team-gpu", "operator": "Exists"}]')
    # unchanged files, unchanged leaves: the rest of the profile is not reported
    assert not any("NCCL_DEBUG" in line or "labels" in line for line in lines)
    same = invoke("diff", "gpu-large", "--platform", PLATFORM, "--team", old, "--team-against", old)
    assert same.exit_code == 0 and same.stdout == ""


def test_markdown_table_for_a_pull_request(pr):
    old, new = pr
    result = invoke("diff", "gpu-large", "--platform", PLATFORM, "--team", old, "--team-against", new, "--format", "markdown")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "**kfdefaults diff** `gpu-large (before)` → `gpu-large (after)`: 2 differences."
    assert lines[2] == "| | path | `gpu-large (before)` | `gpu-large (after)` | set by |"
    assert lines[3] == "|---|---|---|---|---|"
    new_file = os.path.join(new, "gpu-large.yaml")
    assert f"| ~ | `elastic.nproc_per_node` | `8` | `4` | team `{new_file}:3` |" in lines
    platform_file = os.path.join(PLATFORM, "gpu-large.yaml")
    [tolerations] = [line for line in lines if "tolerations" in line]
    assert tolerations.startswith('| ~ | `pod_template.spec.tolerations` | `[{"effect": "NoSchedule"')
    assert tolerations.endswith(f"| team `{new_file}:23` (was platform `{platform_file}:25`) |")
    assert all(line.count("|") == 6 for line in lines[2:])


def test_markdown_when_equal():
    result = invoke("diff", "cpu-small", "cpu-small", "-o", "markdown")
    assert result.exit_code == 0
    assert result.stdout == "**kfdefaults diff** `cpu-small (before)` → `cpu-small (after)`: no differences.\n"


def test_markdown_escapes_pipes(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    (team / "cpu-small.yaml").write_text('pod_template:\n  annotations:\n    note: "a|b`c"\n', encoding="utf-8")
    result = invoke("diff", "cpu-small", "--team-against", str(team), "-o", "markdown")
    assert result.exit_code == 1
    row = [line for line in result.stdout.splitlines() if "note" in line][0]
    assert "``a\\|b`c``" in row and row.count("|") - row.count("\\|") == 6


def test_json_for_scripts(pr):
    old, new = pr
    result = invoke("diff", "gpu-large", "--platform", PLATFORM, "--team", old, "--team-against", new, "-o", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["equal"] is False
    assert data["a"]["folders"]["team"] == [old] and data["b"]["folders"]["team"] == [new]
    by_path = {d["path"]: d for d in data["differences"]}
    nproc = by_path["elastic.nproc_per_node"]
    assert (nproc["change"], nproc["a"], nproc["b"]) == ("changed", 8, 4)
    assert nproc["b_set_by"]["file"] == os.path.join(new, "gpu-large.yaml") and nproc["b_set_by"]["line"] == 3
    replaced = by_path["pod_template.spec.tolerations"]
    assert replaced["change"] == "changed" and replaced["b"] == [{"key": "team-gpu", "operator": "Exists"}]
    assert [t["key"] for t in replaced["a"]] == ["nvidia.com/gpu", "pool"]
    assert replaced["a_set_by"]["layer"] == "platform" and replaced["b_set_by"]["layer"] == "team"


def test_compared_layer_ignores_pyproject_and_environment(pr, tmp_path, monkeypatch):
    """A repository whose pyproject.toml names the new folder: the old side must not see it too."""
    old, new = pr
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text(f'[tool.kfdefaults]\nteam = ["{new}"]\n', encoding="utf-8")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("KFDEFAULTS_TEAM_PATH", new)
    result = invoke("diff", "gpu-large", "--platform", PLATFORM, "--team", old, "--team-against", new)
    assert result.exit_code == 1, result.output
    assert "~ elastic.nproc_per_node: 8 -> 4" in result.stdout.splitlines()


def test_trouble_exits_2():
    result = run_cli(["diff", "gpu-large", "no-such-profile"])
    assert result.exit_code == 2
    assert "no profile named 'no-such-profile'" in result.output


def test_bad_file_exits_2_with_its_location(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    (team / "gpu-large.yaml").write_text("elastic:\n  nproc_per_node: eight\n", encoding="utf-8")
    result = run_cli(["diff", "gpu-large", "--team-against", str(team)])
    assert result.exit_code == 2
    assert f"{team / 'gpu-large.yaml'}:2:19: [team] elastic.nproc_per_node: " in result.output


def test_nothing_to_compare_is_a_usage_mistake():
    result = run_cli(["diff", "gpu-large"])
    assert result.exit_code == 2
    assert "NAME_B" in result.output


def test_table_on_a_terminal(pr, capsys, monkeypatch):
    from kfdefaults.api import compare
    from kfdefaults.show.diff_view import show_diff

    monkeypatch.setenv("COLUMNS", "300")
    old, new = pr
    a, b = compare("gpu-large", platform=[PLATFORM], team=[old], team_against=[new])
    assert show_diff(a, b, "table") == 1
    out = capsys.readouterr().out
    assert "elastic.nproc_per_node" in out and "(was" in out


def test_a_profile_new_in_the_change_is_compared_with_nothing(pr):
    old, new = pr
    with open(os.path.join(new, "segmenter.yaml"), "w", encoding="utf-8") as f:
        f.write("description: a new profile\nelastic: {nnodes: 2}\n")
    result = invoke("diff", "segmenter", "--team", old, "--team-against", new)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert '+ description: "a new profile"' in lines and "+ elastic.nnodes: 2" in lines
    deleted = invoke("diff", "segmenter", "--team", new, "--team-against", old)
    assert deleted.exit_code == 1 and "- elastic.nnodes: 2" in deleted.stdout.splitlines()
    nowhere = invoke("diff", "no-such-profile", "--team", old, "--team-against", new)
    assert nowhere.exit_code == 2 and "no profile named 'no-such-profile'" in nowhere.output


def test_a_list_emptied_by_the_change_is_one_difference(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, command in ((old, "[x]"), (new, "[]")):
        folder.mkdir()
        (folder / "p.yaml").write_text(
            f"pod_template:\n  spec:\n    containers:\n      - name: primary\n        command: {command}\n")
    result = invoke("diff", "p", "--team", str(old), "--team-against", str(new))
    assert result.stdout.splitlines() == ['~ pod_template.spec.containers[name=primary].command: ["x"] -> []']


def test_the_terminal_table_prints_paths_and_labels_as_written(pr, capsys, monkeypatch):
    from kfdefaults.paths import Select
    from kfdefaults.show.diff import Difference, Side
    from kfdefaults.show.diff_view import print_diff_table

    monkeypatch.setenv("COLUMNS", "300")

    path = ("pod_template", "spec", "containers", Select("name", "primary"), "image")
    print_diff_table(Side("[a]", "p", {}, []), Side("b", "p", {}, []),
                     [Difference(path, "changed", "x:1", "x:2", None, None)])
    out = capsys.readouterr().out
    assert "pod_template.spec.containers[name=primary].image" in out and "[a] → b" in out
