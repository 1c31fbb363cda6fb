"""The cache of parsed and validated profile files: used when a file is unchanged, never wrong."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

import kfdefaults
from kfdefaults import ProfileError
from kfdefaults.pipeline import Pipeline

PROFILE = "description: cached\nelastic:\n  nnodes: 2\n  nproc_per_node: 4\npod_template:\n  spec:\n    nodeSelector: {pool: a}\n"


def entries(cache) -> list[str]:
    return sorted(glob.glob(os.path.join(cache, "*", "*.json")))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("KFDEFAULTS_CACHE_DIR", str(folder))
    return str(folder)


def team_with(tmp_path, text: str = PROFILE) -> str:
    team = tmp_path / "team"
    team.mkdir(exist_ok=True)
    (team / "p.yaml").write_text(text, encoding="utf-8")
    return str(team)


def load(team: str):
    return Pipeline.discover(team=[team], entry_points=False).definition("p", "team")


def test_a_valid_file_is_cached_and_read_back_identically(tmp_path, cache, monkeypatch):
    team = team_with(tmp_path)
    fresh = load(team)
    assert entries(cache)

    def no_parsing(raw, file):
        raise AssertionError(f"{file} parsed again")

    monkeypatch.setattr("kfdefaults.validate.files.parse_bytes", no_parsing)
    cached = load(team)
    assert cached.fragment.elastic == fresh.fragment.elastic == {"nnodes": 2, "nproc_per_node": 4}
    assert cached.fragment.pod_template == fresh.fragment.pod_template
    assert cached.document.keys == fresh.document.keys and cached.document.values == fresh.document.values
    assert str(cached.document.location(("elastic", "nproc_per_node"))) == str(fresh.document.location(("elastic", "nproc_per_node")))


def test_a_cached_run_does_not_parse_or_validate(tmp_path, cache):
    team = team_with(tmp_path)
    kfdefaults.resolve("p", team=[team])  # fills the cache
    code = (
        "import sys, kfdefaults\n"
        f"kfdefaults.resolve('p', team=[{team!r}])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'ruamel')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ})
    assert proc.stdout.strip() == "[]", proc.stderr


def test_an_unchanged_profile_is_merged_once(tmp_path, cache):
    team = team_with(tmp_path)
    fresh = kfdefaults.resolve("p", team=[team])  # merges, and stores the merge
    code = (
        "import json, sys, kfdefaults\n"
        f"r = kfdefaults.resolve('p', team=[{team!r}])\n"
        "print(json.dumps([r.elastic_settings, r.pod_template_spec, r.primary_container_name, r.description]))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('deepmerge',) or m == 'kfdefaults.smp.patch'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ})
    merged, imported = proc.stdout.splitlines()
    assert json.loads(merged) == [fresh.elastic_settings, fresh.pod_template_spec, fresh.primary_container_name,
                                  fresh.description]
    assert imported == "[]", proc.stderr  # neither the merge engine nor deepmerge was needed
    changed = kfdefaults.resolve("p", team=[team], overrides={"elastic": {"nnodes": 3}})  # another merge: computed
    assert changed.elastic_settings["nnodes"] == 3


def test_a_changed_file_is_read_again(tmp_path, cache):
    team = team_with(tmp_path)
    assert kfdefaults.resolve("p", team=[team]).elastic_settings["nproc_per_node"] == 4
    team_with(tmp_path, PROFILE.replace("nproc_per_node: 4", "nproc_per_node: 6"))
    assert kfdefaults.resolve("p", team=[team]).elastic_settings["nproc_per_node"] == 6
    team_with(tmp_path, PROFILE.replace("nproc_per_node: 4", "nproc_per_node: zero"))
    with pytest.raises(ProfileError, match="nproc_per_node"):
        kfdefaults.resolve("p", team=[team])


def test_a_damaged_entry_is_a_miss(tmp_path, cache):
    team = team_with(tmp_path)
    load(team)
    for entry in entries(cache):
        with open(entry, "w") as f:
            f.write('{"document": {"data": "broken"')
    assert load(team).fragment.elastic == {"nnodes": 2, "nproc_per_node": 4}
    for entry in entries(cache):
        with open(entry, "w") as f:
            json.dump({"unexpected": True}, f)
    assert load(team).fragment.elastic == {"nnodes": 2, "nproc_per_node": 4}


def test_the_cache_can_be_turned_off(tmp_path, cache, monkeypatch):
    monkeypatch.setenv("KFDEFAULTS_NO_CACHE", "1")
    load(team_with(tmp_path))
    assert entries(cache) == []


def test_an_unwritable_cache_is_ignored(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("KFDEFAULTS_CACHE_DIR", str(blocker / "cache"))
    assert load(team_with(tmp_path)).fragment.elastic == {"nnodes": 2, "nproc_per_node": 4}


def test_same_bytes_under_two_file_names_are_two_profiles(tmp_path, cache):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, name in ((first, "alpha.yaml"), (second, "beta.yaml")):
        folder.mkdir()
        (folder / name).write_text(PROFILE, encoding="utf-8")
    alpha = Pipeline.discover(team=[str(first)], entry_points=False).definition("alpha", "team")
    beta = Pipeline.discover(team=[str(second)], entry_points=False).definition("beta", "team")  # a cache hit
    assert (alpha.name, beta.name) == ("alpha", "beta")
    assert beta.fragment.profile == "beta" and beta.file == str(second / "beta.yaml")


def test_a_cached_file_renamed_to_a_bad_name_is_still_rejected(tmp_path, cache):
    team = team_with(tmp_path)
    load(team)
    os.rename(os.path.join(team, "p.yaml"), os.path.join(team, "Bad_Name.yaml"))
    with pytest.raises(ProfileError, match="the file name `Bad_Name` is not a profile name"):
        Pipeline.discover(team=[team], entry_points=False).definition("Bad_Name", "team")


def test_the_same_bytes_as_yaml_and_as_toml_are_two_documents(tmp_path, cache):
    team = tmp_path / "team"
    team.mkdir()
    (team / "a.yaml").write_text("description: x\n", encoding="utf-8")
    assert kfdefaults.resolve("a", team=[str(team)]).description == "x"  # cached as YAML
    (team / "a.yaml").rename(team / "a.toml")
    with pytest.raises(ProfileError, match="invalid TOML"):
        kfdefaults.resolve("a", team=[str(team)])


def test_no_cache_turns_off_the_in_process_memo_too(tmp_path, cache, monkeypatch):
    team = team_with(tmp_path, "elastic: {nnodes: 2}\n")
    assert kfdefaults.resolve("p", team=[team]).elastic_settings["nnodes"] == 2
    path = os.path.join(team, "p.yaml")
    stat = os.stat(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write("elastic: {nnodes: 3}\n")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same time: the memo cannot tell
    monkeypatch.setenv("KFDEFAULTS_NO_CACHE", "1")
    assert kfdefaults.resolve("p", team=[team]).elastic_settings["nnodes"] == 3
