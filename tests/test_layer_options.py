"""Layer options that say what they do: --only-team replaces the project's team folders, messages name where each
folder came from, and ``kfdefaults where`` lists every source searched."""

from __future__ import annotations

import json
import os

from cli_runner import invoke


def project(tmp_path) -> tuple[str, str]:
    """A project whose pyproject.toml names a team folder defining gpu-large, and another folder defining it too."""
    root = tmp_path / "project"
    (root / "profiles").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[tool.kfdefaults]\nteam = ["profiles"]\n', encoding="utf-8")
    (root / "profiles" / "gpu-large.yaml").write_text("elastic: {nnodes: 2}\n", encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    (other / "gpu-large.yaml").write_text("elastic: {nnodes: 3}\n", encoding="utf-8")
    return str(root), str(other)


def test_a_second_folder_with_team_adds_and_the_error_names_where_each_came_from(tmp_path, monkeypatch):
    root, other = project(tmp_path)
    monkeypatch.chdir(root)
    result = invoke(["render", "gpu-large", "--team", other])
    assert result.exit_code == 1
    assert "defined twice in the team layer" in result.stderr
    assert f"{other}/gpu-large.yaml (from --team)" in result.stderr
    assert f"{root}/profiles/gpu-large.yaml (from {root}/pyproject.toml)" in result.stderr
    assert "--only-team DIR reads one folder alone" in result.stderr


def test_only_team_replaces_the_project_team_folders_for_one_command(tmp_path, monkeypatch):
    root, other = project(tmp_path)
    monkeypatch.chdir(root)
    rendered = invoke(["render", "gpu-large", "--only-team", other, "-o", "json"])
    assert rendered.exit_code == 0, rendered.stderr
    assert json.loads(rendered.stdout)["elastic"]["nnodes"] == 3
    assert json.loads(invoke(["render", "gpu-large", "-o", "json"]).stdout)["elastic"]["nnodes"] == 2
    listed = json.loads(invoke(["list", "--only-team", other, "-o", "json"]).stdout)
    assert {r["name"]: r["layers"] for r in listed}["gpu-large"] == ["builtin", "team"]


def test_only_team_leaves_out_the_environment_variable_too(tmp_path, monkeypatch):
    root, other = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = invoke(["render", "gpu-large", "--only-team", other, "-o", "json"], env={"KFDEFAULTS_TEAM_PATH": f"{root}/profiles"})
    assert result.exit_code == 0 and json.loads(result.stdout)["elastic"]["nnodes"] == 3


def test_team_and_only_team_together_is_a_usage_mistake(tmp_path):
    result = invoke(["render", "gpu-large", "--only-team", str(tmp_path), "--team", str(tmp_path)])
    assert result.exit_code == 2 and "--team adds to the team layer and --only-team replaces it" in result.stderr


def test_where_lists_every_source_in_order_with_what_it_gave(tmp_path, monkeypatch):
    root, other = project(tmp_path)
    monkeypatch.chdir(root)
    result = invoke(["where", "-o", "json", "--team", other])
    assert result.exit_code == 0, result.stderr
    layers = {layer["layer"]: [s["source"] for s in layer["sources"]] for layer in json.loads(result.stdout)["layers"]}
    assert layers["platform"] == ["--platform", "KFDEFAULTS_PLATFORM_PATH (not set)",
                                  "installed packages (entry-point group kfdefaults.platform)",
                                  f"[tool.kfdefaults] platform in {root}/pyproject.toml"]
    assert layers["team"] == ["--team", "KFDEFAULTS_TEAM_PATH (not set)", f"[tool.kfdefaults] team in {root}/pyproject.toml"]
    text = invoke(["where", "--team", other]).stdout
    assert "other: 1 profile (gpu-large)" in text and "profiles: 1 profile (gpu-large)" in text


def test_where_name_gives_the_chain_of_fragments_lowest_first(tmp_path, monkeypatch):
    root, _ = project(tmp_path)
    monkeypatch.chdir(root)
    data = json.loads(invoke(["where", "gpu-large", "-o", "json"]).stdout)
    chain = [(f["layer"], f["profile"]) for f in data["profile"]["fragments"]]
    assert chain == [("builtin", "elastic-gpu-default"), ("builtin", "gpu-large"), ("team", "gpu-large")]
    assert data["profile"]["fragments"][-1]["file"] == f"{root}/profiles/gpu-large.yaml"


def test_where_reports_a_missing_folder_without_failing(tmp_path):
    result = invoke(["where", "--team", str(tmp_path / "nope")])
    assert result.exit_code == 0
    assert "no such folder" in result.stdout


def test_where_names_the_cluster_files_every_command_finds_and_what_named_them(tmp_path, monkeypatch):
    root, _ = project(tmp_path)
    monkeypatch.chdir(root)
    platform, spare = os.path.join(root, "platform"), os.path.join(root, "spare")
    for folder in (platform, spare):
        os.mkdir(folder)
        with open(os.path.join(folder, "_cluster-facts.yaml"), "w") as f:
            f.write("node_start: {typical: 60, worst: 300}\n")
    cluster = json.loads(invoke(["where", "-o", "json", "--platform", platform]).stdout)["cluster"]
    assert cluster["facts"] == {"file": os.path.join(platform, "_cluster-facts.yaml"),
                                "named_by": f"platform folder {platform} (from --platform)"}
    assert cluster["pod_template"] is None
    text = invoke(["where", "--platform", platform]).stdout
    assert "  facts: platform/_cluster-facts.yaml (named by platform folder" in text
    assert "  PodTemplate (Flyte 1 tasks): none found" in text
    # the variable's "none" wins over the folder's file, as for every other command
    monkeypatch.setenv("KFDEFAULTS_CLUSTER_FACTS", "none")
    cluster = json.loads(invoke(["where", "-o", "json", "--platform", platform]).stdout)["cluster"]
    assert cluster["facts"] == {"file": None, "named_by": "KFDEFAULTS_CLUSTER_FACTS"}
    monkeypatch.delenv("KFDEFAULTS_CLUSTER_FACTS")
    # two platform folders with facts: the error every command gives, said here without failing
    result = invoke(["where", "--platform", platform, "--platform", spare])
    assert result.exit_code == 0
    assert "  facts: error: " in result.stdout and "two platform folders hold the cluster's facts" in result.stdout
