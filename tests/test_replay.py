"""The replay of an unchanged ``render``: it prints exactly what a render prints, and any change to what the
render read, looked for or was given makes it render again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from replay_probe import (
    LONG_AGO,
    PROBE,
    TEAM,
    age,
    copy_of_kfdefaults,
    make_case,
    render,
    render_on_a_terminal,
)


@pytest.fixture
def case(tmp_path: Path) -> dict:
    return make_case(tmp_path)


ARGS = ("render", "vision", "--team", "team")


@pytest.mark.slow
def test_an_unchanged_render_is_replayed_with_the_same_output(case: dict) -> None:
    first = render(case, *ARGS)
    second = render(case, *ARGS)
    assert first[2] == "rendered" and second[2] == "replayed"
    assert second == (first[0], first[1], "replayed", 0)
    assert "registry.example.com/vision/train:2.1" in first[0]
    assert "kfdefaults: target" in first[1]


@pytest.mark.slow
def test_an_edit_that_keeps_size_and_time_is_seen(case: dict) -> None:
    render(case, *ARGS)
    assert render(case, *ARGS)[2] == "replayed"
    profile = case["team"] / "vision.yaml"
    profile.write_text(TEAM.replace("train:2.1", "train:2.2"))  # same size
    age(profile)  # and the same time, as rsync -t or cp -p leave it
    out, _, how, status = render(case, *ARGS)
    assert (how, status) == ("rendered", 0)
    assert "train:2.2" in out and "train:2.1" not in out


@pytest.mark.slow
def test_a_new_profile_file_in_a_folder_is_seen(case: dict) -> None:
    render(case, *ARGS)
    (case["team"] / "elastic-gpu-default.yaml").write_text("pod_template:\n  labels: {shadowed: 'yes'}\n")
    age(case["team"])
    out, _, how, _ = render(case, *ARGS)
    assert how == "rendered" and "shadowed" in out


@pytest.mark.slow
def test_a_pyproject_toml_that_appears_is_seen(case: dict) -> None:
    """A render looks for pyproject.toml in the working folder and above: one that appears later declares the
    team folder, and the same command now renders with it."""
    args = ("render", "vision", "--as", "podtemplate")
    out, err, how, status = render(case, *args)
    assert status == 1 and "vision" in err  # no such profile without the team folder
    (case["work"] / "pyproject.toml").write_text('[tool.kfdefaults]\nteam = ["team"]\n')
    age(case["work"])
    out, err, how, status = render(case, *args)
    assert (how, status) == ("rendered", 0), err
    assert render(case, *args)[2] == "replayed"
    (case["work"] / "pyproject.toml").unlink()
    age(case["work"])
    assert render(case, *args)[3] == 1


@pytest.mark.slow
def test_another_environment_or_argument_renders_again(case: dict) -> None:
    render(case, *ARGS)
    assert render(case, *ARGS, "--set", "elastic.nnodes=3")[2] == "rendered"
    assert render(case, *ARGS, env={**case["env"], "KFDEFAULTS_TARGET": "flyte2"})[2] == "rendered"
    assert render(case, *ARGS)[2] == "replayed"


@pytest.mark.slow
def test_a_damaged_entry_is_a_miss(case: dict) -> None:
    first = render(case, *ARGS)
    entries = [p for p in Path(case["env"]["KFDEFAULTS_CACHE_DIR"]).rglob("*.json") if b"-marshal " in p.read_bytes()[:40]]
    assert len(entries) == 1
    raw = entries[0].read_bytes()
    entries[0].write_bytes(raw[:-20] + bytes(b ^ 0xFF for b in raw[-20:]))
    assert render(case, *ARGS)[:2] == first[:2]
    entries[0].write_bytes(b"\xff" * 100)
    again = render(case, *ARGS)
    assert again[:2] == first[:2] and again[2] == "rendered"


@pytest.mark.slow
def test_a_file_changed_just_now_is_not_stored(case: dict) -> None:
    # a window no run outlasts however loaded the machine (two seconds by default: a run that starts slower than
    # that after the write would find the file settled, and rightly store it)
    env = {**case["env"], "PROBE_RACE": "60"}
    (case["team"] / "vision.yaml").write_text(TEAM)  # modified now: a second edit within the same tick is possible
    assert render(case, *ARGS, env=env)[2] == "rendered"
    assert render(case, *ARGS, env=env)[2] == "rendered"


@pytest.mark.slow
def test_a_file_changed_during_the_run_is_not_stored(case: dict) -> None:
    """Edited after the render read it and before the run is stored, its modification time set back: its change
    time says so, and the next run renders the file as it is now."""
    profile = case["team"] / "vision.yaml"
    Path(case["env"]["PROBE_EDIT"]).write_text(str(profile))
    assert render(case, *ARGS)[2] == "rendered"
    assert profile.read_text().endswith("# edited while the render ran\n")
    assert render(case, *ARGS)[2] == "rendered"
    assert render(case, *ARGS)[2] == "replayed"


@pytest.mark.slow
def test_a_failed_render_is_not_replayed(case: dict) -> None:
    for args in (("render", "nothing-here", "--team", "team"), ARGS[:4] + ("--set", "elastic.nnodes=zero")):
        first = render(case, *args)
        assert first[3] == 1
        assert render(case, *args)[2] == "rendered"


@pytest.mark.slow
def test_a_render_as_flyte_is_replayed_until_the_sdk_changes(case: dict, tmp_path: Path) -> None:
    """--as flyte defines a real task: its output follows from the SDK's code too. A package that shadows the SDK
    (here a copy of flytekitplugins' kfpytorch package found first on the path) is another SDK: rendered again."""
    args = ("render", "vision", "--team", "team", "--as", "flyte", "--target", "flytekit",
            "--set", "elastic.nnodes=2")
    first = render(case, *args)
    assert first[2:] == ("rendered", 0), first[1]
    assert render(case, *args)[:3] == (first[0], first[1], "replayed")
    import importlib.util
    import shutil

    plugin = Path(importlib.util.find_spec("flytekitplugins.kfpytorch").origin).parent
    site = tmp_path / "site"
    shutil.copytree(plugin, site / "flytekitplugins" / "kfpytorch")
    age(site)
    env = {**case["env"], "PYTHONPATH": str(site)}
    render(case, *args, env=env)
    assert render(case, *args, env=env)[2] == "replayed"
    init = site / "flytekitplugins" / "kfpytorch" / "__init__.py"
    init.write_text(init.read_text() + "\n# another release\n")
    age(init)
    assert render(case, *args, env=env)[2] == "rendered"


@pytest.mark.slow
def test_without_the_cache_nothing_is_replayed(case: dict) -> None:
    env = {**case["env"], "KFDEFAULTS_NO_CACHE": "1"}
    render(case, *ARGS, env=env)
    assert render(case, *ARGS, env=env)[2] == "rendered"


@pytest.mark.slow
def test_both_streams_into_one_read_the_same_when_replayed(case: dict) -> None:
    """`2>&1`: the replay makes the writes in the order the render made them."""
    def combined() -> tuple[str, str]:
        proc = subprocess.run([sys.executable, "-c", PROBE, *ARGS], cwd=case["work"], env=case["env"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        return proc.stdout, case["probe"].read_text()

    first, second = combined(), combined()
    assert (first[1], second[1]) == ("rendered", "replayed")
    assert first[0] == second[0] and first[0].index("kfdefaults: target") < first[0].index("name: vision")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_replay_that_cannot_write_says_so(case: dict) -> None:
    render(case, *ARGS)
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-c", PROBE, *ARGS], cwd=case["work"], env=case["env"],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert case["probe"].read_text() == "replayed"
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == "kfdefaults: No space left on device"
    assert "Traceback" not in proc.stderr


def stored_inputs(case: dict) -> list[list]:
    """The inputs of every replay entry in the case's cache (the entry's first line is checked first)."""
    import marshal

    from kfdefaults import cache

    found = []
    for entry in Path(case["env"]["KFDEFAULTS_CACHE_DIR"]).glob("??/*.json"):
        header, _, body = entry.read_bytes().partition(b"\n")
        if b"-marshal " in header and header.split(b" ")[-1] == cache.digest(body).encode():
            found += marshal.loads(body)["inputs"]  # [[kind, name, state], ...]
    return found


@pytest.mark.slow
def test_a_package_installed_since_is_seen(case: dict) -> None:
    """A folder of sys.path changes when a package is installed in it: the platform package that appears may
    register a folder (an entry point), and the render runs again."""
    site = case["work"].parent / "site"
    site.mkdir()
    age(site)
    env = {**{k: v for k, v in case["env"].items() if k != "KFDEFAULTS_NO_ENTRY_POINTS"}, "PYTHONPATH": str(site)}
    render(case, *ARGS, env=env)
    assert render(case, *ARGS, env=env)[2] == "replayed"
    (site / "acme_platform").mkdir()
    assert render(case, *ARGS, env=env)[2] == "rendered"


@pytest.mark.slow
def test_the_schema_package_version_is_an_input(case: dict) -> None:
    import importlib.util

    render(case, *ARGS)
    origin = importlib.util.find_spec("kubernetes_validate").origin
    assert [["module", "kubernetes_validate", origin]] == [i[:2] + i[2][:1] for i in stored_inputs(case)
                                                           if i[0] == "module" and i[1] == "kubernetes_validate"]


@pytest.mark.slow
def test_a_project_inside_the_cache_folder_is_still_read(case: dict) -> None:
    env = {**case["env"], "KFDEFAULTS_CACHE_DIR": str(case["work"].parent)}  # the project below it
    render(case, *ARGS, env=env)
    assert render(case, *ARGS, env=env)[2] == "replayed"
    profile = case["team"] / "vision.yaml"
    profile.write_text(TEAM.replace("train:2.1", "train:2.2"))
    age(profile)
    out, _, how, _ = render(case, *ARGS, env=env)
    assert how == "rendered" and "train:2.2" in out


@pytest.mark.slow
def test_a_team_folder_named_like_a_shard_of_the_cache_is_still_read(case: dict) -> None:
    """A team folder ``be`` in the cache folder is the project's, not one of the cache's two-letter folders:
    its files and its listing are inputs, so an edit is rendered, never a stale replay."""
    team = case["work"].parent / "be"
    case["team"].rename(team)
    age(case["work"].parent)
    env = {**case["env"], "KFDEFAULTS_CACHE_DIR": str(case["work"].parent)}  # the working folder below it
    args = ("render", "vision", "--team", "../be", "--as", "podtemplate")
    first, _, how, status = render(case, *args, env=env)
    assert (how, status) == ("rendered", 0) and "train:2.1" in first
    assert render(case, *args, env=env)[2] == "replayed"
    (team / "vision.yaml").write_text(TEAM.replace("train:2.1", "train:2.2"))  # same size
    age(team / "vision.yaml")  # and the same time; the folder's own times unchanged
    out, _, how, _ = render(case, *args, env=env)
    assert how == "rendered" and "train:2.2" in out and "train:2.1" not in out
    (team / "speech.yaml").write_text(TEAM)  # a new file in it: its listing changed
    age(team)
    assert render(case, *args, env=env)[2] == "rendered"


@pytest.mark.slow
def test_a_link_pointed_elsewhere_with_its_time_kept_is_seen(case: dict) -> None:
    other = case["work"] / "other"
    other.mkdir()
    (other / "vision.yaml").write_text(TEAM.replace("vision}", "speech}"))
    link = case["work"] / "linked"
    link.symlink_to("team")
    age(case["work"])
    os.utime(link, (LONG_AGO, LONG_AGO), follow_symlinks=False)
    args = ("render", "vision", "--team", "linked", "--as", "podtemplate")
    render(case, *args)
    assert render(case, *args)[2] == "replayed"
    link.unlink()
    link.symlink_to("other")
    os.utime(link, (LONG_AGO, LONG_AGO), follow_symlinks=False)
    out, _, how, _ = render(case, *args)
    assert how == "rendered" and "team: speech" in out


@pytest.mark.slow
def test_an_edit_of_the_clusters_node_list_is_seen(case):
    """The facts and the node list they name are inputs of a render: a node list edited is a render again, and the
    warning of a profile that fits no pool comes or goes with it."""
    from node_lists import GPU_TAINT, pool_nodes, write_node_list

    platform = case["work"] / "platform"
    platform.mkdir()
    (platform / "_cluster-facts.yaml").write_text("nodes: _nodes.json\n")
    t4 = {"cpu": "47", "memory": "340Gi", "nvidia.com/gpu": "4", "pods": "110"}
    write_node_list(platform / "_nodes.json", *pool_nodes("gpu", 2, t4, taints=[GPU_TAINT]))
    args = ("render", "gpu-large", "--platform", "platform")
    _, first, how, code = render(case, *args)
    assert (how, code) == ("rendered", 0) and "fits none of the 1 node pool" in " ".join(first.split())  # wrapped
    _, again, how, _ = render(case, *args)
    assert how == "replayed" and again == first
    write_node_list(platform / "_nodes.json", *pool_nodes("gpu", 2, dict(t4, **{"nvidia.com/gpu": "8"}),
                                                          taints=[GPU_TAINT]))
    _, after, how, _ = render(case, *args)
    assert how == "rendered" and "fits none" not in " ".join(after.split())


# -- each input a render depends on, changed between two runs with the same command: rendered again


@pytest.mark.slow
def test_an_sdk_plugin_removed_since_changes_the_default_target_said(case: dict) -> None:
    """Without --target, the target follows the installed SDKs: Flyte 2's plugin gone (here a package of the same
    name, without ``pytorch``, found first on the path, as when flyteplugins-pytorch is uninstalled), the same
    command renders again, and no longer names a target: with one SDK there is no choice to explain."""
    site = case["work"].parent / "site"
    site.mkdir()
    age(site)
    env = {**case["env"], "PYTHONPATH": str(site)}
    _, said, how, _ = render(case, *ARGS, env=env)
    assert how == "rendered" and "target flytekit assumed; flyte2: " in said
    assert render(case, *ARGS, env=env)[2] == "replayed"
    (site / "flyteplugins").mkdir()
    (site / "flyteplugins" / "__init__.py").write_text("")
    age(site)
    _, said, how, _ = render(case, *ARGS, env=env)
    assert how == "rendered" and "target" not in said, said


def test_a_target_the_project_states_since_is_another_render(case: dict) -> None:
    """``[tool.kfdefaults] target`` written since the last render settles the target: the same command renders
    again, and says nothing of a target."""
    assert "target flytekit assumed" in render(case, *ARGS)[1]
    assert render(case, *ARGS)[2] == "replayed"
    (case["work"] / "pyproject.toml").write_text('[tool.kfdefaults]\ntarget = "flytekit"\n')
    out, said, how, _ = render(case, *ARGS)
    assert how == "rendered" and said == "", said
    assert render(case, *ARGS)[2] == "replayed"


@pytest.mark.slow
@pytest.mark.parametrize("library", ["deepmerge", "pydantic", "yaml"])
def test_another_copy_of_a_library_renders_again(case: dict, library: str) -> None:
    """The libraries whose code makes a profile (deepmerge merges ``elastic``, pydantic validates, PyYAML reads) are
    inputs: the same one found elsewhere on the path (reinstalled, upgraded) is another render."""
    import importlib.util
    import shutil

    site = case["work"].parent / "site"
    site.mkdir()
    age(site)
    env = {**case["env"], "PYTHONPATH": str(site)}
    render(case, *ARGS, env=env)
    assert render(case, *ARGS, env=env)[2] == "replayed"
    shutil.copytree(os.path.dirname(importlib.util.find_spec(library).origin), site / library,
                    ignore=shutil.ignore_patterns("__pycache__"))
    age(site)
    assert render(case, *ARGS, env=env)[2] == "rendered"


@pytest.mark.slow
def test_a_lock_file_that_appears_holds_the_next_render(case: dict) -> None:
    """A project's render looks for kfdefaults.lock beside its pyproject.toml: one written since (here with a
    platform folder this shell does not name) makes the same command fail, naming the missing file."""
    (case["work"] / "pyproject.toml").write_text('[tool.kfdefaults]\nteam = ["team"]\n')
    platform = case["work"] / "platform"
    platform.mkdir()
    (platform / "elastic-gpu-default.yaml").write_text("pod_template:\n  labels: {pool: a100}\n")
    age(case["work"])
    args = ("render", "vision", "--as", "podtemplate")
    first = render(case, *args)
    assert first[2:] == ("rendered", 0) and "pool" not in first[0]
    assert render(case, *args)[2] == "replayed"
    assert render(case, "lock", "vision", env={**case["env"], "KFDEFAULTS_PLATFORM_PATH": "platform"})[3] == 0
    _, said, how, status = render(case, *args)
    assert (how, status) == ("rendered", 1)
    assert "kfdefaults.lock" in said and "platform file missing: platform/elastic-gpu-default.yaml" in said


@pytest.mark.slow
def test_a_large_pyproject_that_comes_to_set_tool_kfdefaults_is_seen(case: dict) -> None:
    """A pyproject.toml over the size kfdefaults parses is still read for ``tool.kfdefaults``: once it sets it,
    the same command is an error."""
    from kfdefaults.layers.pyproject import MAX_PROJECT_FILE_BYTES

    project = case["work"] / "pyproject.toml"
    project.write_text('[project]\nname = "big"\n' + "#" * MAX_PROJECT_FILE_BYTES + "\n")
    age(project)
    render(case, *ARGS)
    assert render(case, *ARGS)[2] == "replayed"
    with project.open("a") as f:
        f.write('[tool.kfdefaults]\nteam = ["team"]\n')
    age(project)
    _, said, how, status = render(case, *ARGS)
    assert (how, status) == ("rendered", 1) and "sets tool.kfdefaults" in said


@pytest.mark.slow
def test_a_declared_platform_folder_that_appears_is_read(case: dict) -> None:
    """``platform = ["acme"]`` names a package until a folder ``acme`` stands beside pyproject.toml (packages
    unchecked here, as --no-entry-points leaves them): the folder made since is the platform layer."""
    (case["work"] / "pyproject.toml").write_text('[tool.kfdefaults]\nplatform = ["acme"]\nteam = ["team"]\n')
    age(case["work"])
    args = ("render", "vision", "--as", "podtemplate")
    first, _, how, status = render(case, *args)
    assert (how, status) == ("rendered", 0) and "a100" not in first
    assert render(case, *args)[2] == "replayed"
    (case["work"] / "acme").mkdir()
    (case["work"] / "acme" / "elastic-gpu-default.yaml").write_text("pod_template:\n  labels: {pool: a100}\n")
    age(case["work"])
    out, _, how, _ = render(case, *args)
    assert how == "rendered" and "pool: a100" in out


@pytest.mark.slow
def test_an_installed_platform_package_whose_code_names_another_folder_is_seen(case: dict) -> None:
    """An entry point ``module:attribute`` runs the package's code to find its folder: the package upgraded in
    place (its ``__init__.py`` rewritten, its entry points and folders as they were) names another folder, and
    the next render reads it."""
    site = case["work"].parent / "site"
    info = site / "acme_platform-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-platform\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[kfdefaults.platform]\nacme = acme_platform:folder\n")
    package = site / "acme_platform"
    for release in ("v1", "v2"):
        (package / release).mkdir(parents=True)
        (package / release / "elastic-gpu-default.yaml").write_text(f"pod_template:\n  labels: {{acme: {release}}}\n")
    init = package / "__init__.py"
    init.write_text('import os\nfolder = os.path.join(os.path.dirname(__file__), "v1")\n')
    age(site)
    env = {**{k: v for k, v in case["env"].items() if k != "KFDEFAULTS_NO_ENTRY_POINTS"}, "PYTHONPATH": str(site)}
    first, said, how, _ = render(case, *ARGS, env=env)
    assert how == "rendered" and "acme: v1" in first, said
    assert render(case, *ARGS, env=env)[2] == "replayed"
    init.write_text(init.read_text().replace('"v1"', '"v2"'))
    out, _, how, _ = render(case, *ARGS, env=env)
    assert how == "rendered" and "acme: v2" in out


@pytest.mark.slow
def test_a_folder_that_gains_a_profile_file_is_no_longer_warned_of(case: dict) -> None:
    """The warning about a team folder without profile files goes with the first file put in it (one the
    profile does not read: only the folder's listing says so)."""
    extra = case["work"] / "extra"
    extra.mkdir()
    age(extra)
    args = (*ARGS, "--team", "extra")
    _, said, how, _ = render(case, *args)
    assert how == "rendered" and "no profile files" in said
    assert render(case, *args)[2] == "replayed"
    (extra / "speech.yaml").write_text(TEAM)
    age(extra)
    _, said, how, _ = render(case, *args)
    assert how == "rendered" and "no profile files" not in said


@pytest.mark.slow
def test_a_sub_folder_that_gains_profile_files_is_named_in_the_warning(case: dict) -> None:
    """A folder without profile files is warned of, and its sub-folders that hold some are named: a file put in
    ``extra/profiles/`` (the folder ``extra`` itself unchanged) adds that hint to the same command's warning."""
    (case["work"] / "extra" / "profiles").mkdir(parents=True)
    age(case["work"])
    args = (*ARGS, "--team", "extra")
    _, said, how, _ = render(case, *args)
    assert how == "rendered" and "no profile files" in said and "profiles/ holds" not in said
    assert render(case, *args)[2] == "replayed"
    (case["work"] / "extra" / "profiles" / "speech.yaml").write_text(TEAM)
    age(case["work"] / "extra")
    _, said, how, _ = render(case, *args)
    assert how == "rendered" and "profiles/ holds profile files" in said


# -- each part of the command's key: the same inputs, another command


@pytest.mark.slow
def test_the_same_command_in_another_project_renders_that_project(case: dict) -> None:
    """Two projects whose pyproject.toml name their own team folders: the same command, run in each, renders each
    one's profile (the working folder is part of the command)."""
    projects = {}
    for name, image in (("one", "train:2.1"), ("two", "train:2.2")):
        folder = case["work"].parent / name
        (folder / "team").mkdir(parents=True)
        (folder / "pyproject.toml").write_text('[tool.kfdefaults]\nteam = ["team"]\n')
        (folder / "team" / "vision.yaml").write_text(TEAM.replace("train:2.1", image))
        projects[name] = folder
    age(case["work"].parent)
    args = ("render", "vision", "--as", "podtemplate")
    assert "train:2.1" in render(case, *args, cwd=projects["one"])[0]
    assert render(case, *args, cwd=projects["one"])[2] == "replayed"
    out, _, how, _ = render(case, *args, cwd=projects["two"])
    assert how == "rendered" and "train:2.2" in out


@pytest.mark.slow
def test_explain_follows_the_terminal_it_is_shown_on(case: dict) -> None:
    """--explain prints a table on a wide terminal, a narrow layout on a narrow one and plain text into a pipe:
    each run of the same command writes what its own standard output takes, never what another one took."""
    args = ("render", "vision", "--team", "team", "--explain")
    wide, how = render_on_a_terminal(case, 240, *args)
    assert how == "rendered" and "│ elastic.nnodes " in wide  # a row of the table
    assert render_on_a_terminal(case, 240, *args) == (wide, "replayed")
    narrow, how = render_on_a_terminal(case, 60, *args)
    assert how == "rendered" and "  nnodes = 2 " in narrow and "│" not in narrow  # the layout of a narrow one
    piped, _, how, _ = render(case, *args)
    assert how == "rendered" and "elastic.nnodes" in piped and "\x1b[" not in piped and "│" not in piped


@pytest.mark.slow
def test_another_kfdefaults_renders_again_and_merges_anew(case: dict) -> None:
    """kfdefaults' own code makes the output: a release whose flytekit default differs (here a copy of kfdefaults
    first on the path, whose ``targets.py`` is replaced by one with another ``monitor_interval``) renders the same
    command anew, and merges anew rather than reading an earlier merge from the cache."""
    site = case["work"].parent / "site"
    targets = copy_of_kfdefaults(site) / "targets.py"
    env = {**case["env"], "PYTHONPATH": str(site)}
    args = ("render", "vision", "--team", "team", "--target", "flytekit")
    first, said, how, _ = render(case, *args, env=env)
    assert how == "rendered" and "monitor_interval: 5" in first, said
    assert render(case, *args, env=env)[2] == "replayed"
    code = targets.read_text()
    assert code.count('"monitor_interval": 5,') == 1
    targets.write_text(code.replace('"monitor_interval": 5,', '"monitor_interval": 7,'))
    out, said, how, _ = render(case, *args, env=env)
    assert how == "rendered" and "monitor_interval: 7" in out, said
