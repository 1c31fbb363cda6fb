"""The replay of an unchanged ``render``: it prints exactly what a render prints, and any change to what the
render read, looked for or was given makes it render again."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

# Runs the command line as the console script does, then says on a file of its own whether the pipeline was
# imported: a replay never imports it. PROBE_RACE sets the window before a run in which a changed input keeps
# it from being stored (two seconds; 0 here, so that files a test has just written are not held against it);
# when the file PROBE_EDIT names exists, the file it names is edited between the run that reads it and the
# storing of that run, keeping its old modification time, as `cp -p` or `rsync -t` would (once: the request
# is removed).
PROBE = textwrap.dedent("""\
    import atexit, os, sys
    def said():
        with open(os.environ["PROBE_OUT"], "w") as f:
            f.write("rendered" if "kfdefaults.pipeline" in sys.modules else "replayed")
    atexit.register(said)
    from kfdefaults import inputs
    from kfdefaults.cli import main, replay
    if "PROBE_RACE" in os.environ:
        inputs.RACE_SECONDS = float(os.environ["PROBE_RACE"])
    if os.path.exists(os.environ["PROBE_EDIT"]):
        store = replay.Recording.store
        def edited_then_stored(self):
            with open(os.environ["PROBE_EDIT"]) as request:
                path = request.read()
            os.unlink(os.environ["PROBE_EDIT"])
            st = os.stat(path)
            with open(path, "a") as f:
                f.write("# edited while the render ran\\n")
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
            store(self)
        replay.Recording.store = edited_then_stored
    main()
""")

TEAM = """\
description: the team's GPU profile
extends: elastic-gpu-default
elastic:
  nnodes: 2
pod_template:
  labels: {team: vision}
  spec:
    containers:
      - name: primary
        image: registry.example.com/vision/train:2.1
"""

LONG_AGO = time.time() - 3600


def age(*paths: Path) -> None:
    """Date files and folders an hour back, as files committed long ago are: a recent time keeps a run from
    being stored (an edit in the same tick as the recording would go unseen)."""
    for path in paths:
        for p in [path, *(path.rglob("*") if path.is_dir() else [])]:
            os.utime(p, (LONG_AGO, LONG_AGO), follow_symlinks=False)


@pytest.fixture
def case(tmp_path: Path) -> dict:
    work = tmp_path / "work"
    team = work / "team"
    team.mkdir(parents=True)
    (team / "vision.yaml").write_text(TEAM)
    age(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env.update(KFDEFAULTS_CACHE_DIR=str(tmp_path / "cache"), KFDEFAULTS_NO_ENTRY_POINTS="1",
               PROBE_OUT=str(tmp_path / "probe"), PROBE_RACE="0", PROBE_EDIT=str(tmp_path / "edit"))
    return {"work": work, "team": team, "env": env, "probe": tmp_path / "probe"}


def render(case: dict, *args: str, env: dict | None = None) -> tuple[str, str, str, int]:
    """(stdout, stderr, "rendered" or "replayed", exit status) of ``kfdefaults ARGS`` in the case's folder."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=case["work"], env=env or case["env"],
                          capture_output=True, text=True, timeout=120)
    return proc.stdout, proc.stderr, case["probe"].read_text(), proc.returncode


ARGS = ("render", "vision", "--team", "team", "--as", "podtemplate")


def test_an_unchanged_render_is_replayed_with_the_same_output(case: dict) -> None:
    first = render(case, *ARGS)
    second = render(case, *ARGS)
    assert first[2] == "rendered" and second[2] == "replayed"
    assert second == (first[0], first[1], "replayed", 0)
    assert "registry.example.com/vision/train:2.1" in first[0]
    assert "kfdefaults: target" in first[1]


def test_an_edit_that_keeps_size_and_time_is_seen(case: dict) -> None:
    render(case, *ARGS)
    assert render(case, *ARGS)[2] == "replayed"
    profile = case["team"] / "vision.yaml"
    profile.write_text(TEAM.replace("train:2.1", "train:2.2"))  # same size
    age(profile)  # and the same time, as rsync -t or cp -p leave it
    out, _, how, status = render(case, *ARGS)
    assert (how, status) == ("rendered", 0)
    assert "train:2.2" in out and "train:2.1" not in out


def test_a_new_profile_file_in_a_folder_is_seen(case: dict) -> None:
    render(case, *ARGS)
    (case["team"] / "elastic-gpu-default.yaml").write_text("pod_template:\n  labels: {shadowed: 'yes'}\n")
    age(case["team"])
    out, _, how, _ = render(case, *ARGS)
    assert how == "rendered" and "shadowed" in out


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


def test_another_environment_or_argument_renders_again(case: dict) -> None:
    render(case, *ARGS)
    assert render(case, *ARGS, "--set", "elastic.nnodes=3")[2] == "rendered"
    assert render(case, *ARGS, env={**case["env"], "KFDEFAULTS_TARGET": "flyte2"})[2] == "rendered"
    assert render(case, *ARGS)[2] == "replayed"


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


def test_a_file_changed_just_now_is_not_stored(case: dict) -> None:
    # a window no run outlasts however loaded the machine (two seconds by default: a run that starts slower than
    # that after the write would find the file settled, and rightly store it)
    env = {**case["env"], "PROBE_RACE": "60"}
    (case["team"] / "vision.yaml").write_text(TEAM)  # modified now: a second edit within the same tick is possible
    assert render(case, *ARGS, env=env)[2] == "rendered"
    assert render(case, *ARGS, env=env)[2] == "rendered"


def test_a_file_changed_during_the_run_is_not_stored(case: dict) -> None:
    """Edited after the render read it and before the run is stored, its modification time set back: its change
    time says so, and the next run renders the file as it is now."""
    profile = case["team"] / "vision.yaml"
    Path(case["env"]["PROBE_EDIT"]).write_text(str(profile))
    assert render(case, *ARGS)[2] == "rendered"
    assert profile.read_text().endswith("# edited while the render ran\n")
    assert render(case, *ARGS)[2] == "rendered"
    assert render(case, *ARGS)[2] == "replayed"


def test_a_failed_render_is_not_replayed(case: dict) -> None:
    for args in (("render", "nothing-here", "--team", "team"), ARGS[:4] + ("--set", "elastic.nnodes=zero")):
        first = render(case, *args)
        assert first[3] == 1
        assert render(case, *args)[2] == "rendered"


def test_a_render_as_flyte_is_replayed_until_the_sdk_changes(case: dict, tmp_path: Path) -> None:
    """--as flyte defines a real task: its output follows from the SDK's code too. A package that shadows the SDK
    (here a copy of flytekitplugins' kfpytorch package found first on the path) is another SDK: rendered again."""
    args = ("render", "vision", "--team", "team", "--as", "flyte", "--set", "elastic.nnodes=2")
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


def test_without_the_cache_nothing_is_replayed(case: dict) -> None:
    env = {**case["env"], "KFDEFAULTS_NO_CACHE": "1"}
    render(case, *ARGS, env=env)
    assert render(case, *ARGS, env=env)[2] == "rendered"


def test_both_streams_into_one_read_the_same_when_replayed(case: dict) -> None:
    """`2>&1`: the replay makes the writes in the order the render made them."""
    def combined() -> tuple[str, str]:
        proc = subprocess.run([sys.executable, "-c", PROBE, *ARGS], cwd=case["work"], env=case["env"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        return proc.stdout, case["probe"].read_text()

    first, second = combined(), combined()
    assert (first[1], second[1]) == ("rendered", "replayed")
    assert first[0] == second[0] and first[0].index("kfdefaults: target") < first[0].index("apiVersion")


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


def test_the_schema_package_version_is_an_input(case: dict) -> None:
    import importlib.util

    render(case, *ARGS)
    origin = importlib.util.find_spec("kubernetes_validate").origin
    assert [["module", "kubernetes_validate", origin]] == [i[:2] + i[2][:1] for i in stored_inputs(case)
                                                           if i[0] == "module" and i[1] == "kubernetes_validate"]


def test_a_project_inside_the_cache_folder_is_still_read(case: dict) -> None:
    env = {**case["env"], "KFDEFAULTS_CACHE_DIR": str(case["work"].parent)}  # the project below it
    render(case, *ARGS, env=env)
    assert render(case, *ARGS, env=env)[2] == "replayed"
    profile = case["team"] / "vision.yaml"
    profile.write_text(TEAM.replace("train:2.1", "train:2.2"))
    age(profile)
    out, _, how, _ = render(case, *ARGS, env=env)
    assert how == "rendered" and "train:2.2" in out


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
    assert (how, code) == ("rendered", 0) and "fits none of the 1 node pool" in first
    _, again, how, _ = render(case, *args)
    assert how == "replayed" and again == first
    write_node_list(platform / "_nodes.json", *pool_nodes("gpu", 2, dict(t4, **{"nvidia.com/gpu": "8"}),
                                                          taints=[GPU_TAINT]))
    _, after, how, _ = render(case, *args)
    assert how == "rendered" and "fits none" not in after
