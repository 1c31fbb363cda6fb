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
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'yaml')))\n"
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


# --- nothing in the folder is trusted ------------------------------------------------------------------------


def entry_key_of(path: str) -> str:
    return os.path.basename(os.path.dirname(path)) + os.path.basename(path)[: -len(".json")]


def render_json(team: str) -> dict:
    from cli_runner import invoke

    result = invoke(["render", "p", "--team", team, "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("value", [
    {"a": 1}, [1], "x", None, 7,
    {"description": 1, "elastic": [], "pod": "x", "primary": 3},  # a merge of the wrong types
    {"description": None, "elastic": {"nnodes": 1}, "pod": {"spec": []}, "primary": "primary"},
    {"document": {"data": {}, "keys": [[1]], "values": [], "plain_text": []}},  # a definition of the wrong shape
    {"points": [[1]], "files": [[1, 2, 3]]},  # entry points of the wrong shape
])
def test_an_entry_of_the_wrong_shape_is_a_miss(tmp_path, cache, value):
    """Every entry overwritten, under its own key and with a good digest, with a value of another shape: each
    user of the cache checks the shape and computes the answer again."""
    from kfdefaults import cache as kcache

    team = team_with(tmp_path)
    fresh = render_json(team)
    for entry in entries(cache):
        kcache.store(entry_key_of(entry), value)
    assert render_json(team) == fresh
    assert render_json(team) == fresh  # and the entries written again in the meantime are good


def test_an_entry_under_another_key_or_damaged_is_a_miss(tmp_path, cache):
    from kfdefaults import cache as kcache

    team = team_with(tmp_path)
    load(team)
    first, second = entries(cache)[:2]
    with open(first, "rb") as f:
        copied = f.read()
    with open(second, "wb") as f:
        f.write(copied)  # a whole, valid entry: but another key's
    assert kcache.load(entry_key_of(second)) is None
    with open(first, "r+b") as f:
        f.seek(len(copied) - 2)
        f.write(b"0")  # one byte changed: the digest no longer matches
    assert kcache.load(entry_key_of(first)) is None


@pytest.mark.slow
@pytest.mark.parametrize("special", ["fifo", "dev-zero", "huge"])
def test_a_special_file_in_place_of_an_entry_never_blocks(tmp_path, cache, special):
    team = team_with(tmp_path)
    fresh = render_json(team)
    for entry in entries(cache):
        os.unlink(entry)
        if special == "fifo":
            os.mkfifo(entry)
        elif special == "dev-zero":
            os.symlink("/dev/zero", entry)
        else:
            with open(entry, "wb") as f:
                f.truncate(64 << 20)  # sparse: 64 MiB of zeros
    proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", "render", "p", "--team", team, "-o", "json"],
                          capture_output=True, text=True, env={**os.environ}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == fresh


def test_temporary_files_of_a_killed_write_are_swept(tmp_path, cache):
    """A process killed while writing an entry leaves its temporary file: the next sweep removes it, unless it
    is recent enough to be a write in progress."""
    import time

    from kfdefaults import cache as kcache

    team = team_with(tmp_path)
    load(team)
    shard = os.path.dirname(entries(cache)[0])
    stale, fresh = os.path.join(shard, "ab" * 31 + ".x1.tmp"), os.path.join(shard, "cd" * 31 + ".x2.tmp")
    older = os.path.join(shard, "tmpk2_x9q0a.tmp")  # as versions before the entries named their key wrote them
    foreign = os.path.join(cache, "notes.txt")
    for path in (stale, fresh, older, foreign):
        with open(path, "wb") as f:
            f.write(b"x" * 1000)
    old = time.time() - kcache.STALE_TEMPORARY_SECONDS - 60
    for path in (stale, older, foreign):
        os.utime(path, (old, old))
    kcache.sweep(cache)
    assert not os.path.exists(stale) and not os.path.exists(older)
    assert os.path.exists(fresh) and os.path.exists(foreign)


def test_the_cache_is_kept_under_its_cap_least_recently_used_first(tmp_path, cache):
    import time

    from kfdefaults import cache as kcache

    now = time.time()
    for i in range(20):
        kcache.store(kcache.key(str(i).encode(), "test"), "x" * 10_000)
    paths = entries(cache)
    for age, path in enumerate(paths):  # entries[0] used most recently, the last one least
        os.utime(path, (now - age * 100, now - age * 100))
    sizes = sum(os.path.getsize(p) for p in paths)
    assert kcache.sweep(cache, max_bytes=sizes // 2) > 0
    left = entries(cache)
    assert sum(os.path.getsize(p) for p in left) <= sizes // 2 * 3 // 4
    assert left == paths[: len(left)]  # the most recently used ones are kept


def test_a_write_sweeps_at_most_once_an_hour(tmp_path, cache, monkeypatch):
    from kfdefaults import cache as kcache

    swept = []
    monkeypatch.setattr(kcache, "sweep", lambda folder: swept.append(folder))
    for i in range(5):
        kcache.store(kcache.key(str(i).encode(), "test"), i)
    assert swept == [cache]


def test_an_entry_over_the_size_cap_is_not_written(tmp_path, cache):
    from kfdefaults import cache as kcache

    entry_key = kcache.key(b"large", "test")
    kcache.store(entry_key, "x" * kcache.MAX_ENTRY_BYTES)
    assert kcache.load(entry_key) is None and entries(cache) == []
    kcache.store(entry_key, "x" * 1000)
    assert kcache.load(entry_key) == "x" * 1000


def test_cache_clear_removes_the_entries_and_nothing_else(tmp_path, cache):
    from cli_runner import invoke

    load(team_with(tmp_path))
    foreign = os.path.join(cache, "keep-me.txt")
    with open(foreign, "w") as f:
        f.write("not the cache's")
    shown = invoke(["cache"])
    assert shown.exit_code == 0 and shown.stdout.startswith(f"{cache}: {len(entries(cache))} entries, ")
    cleared = invoke(["cache", "clear"])
    assert cleared.exit_code == 0 and cleared.stdout.startswith("removed ")
    assert entries(cache) == [] and os.path.exists(foreign)


# --- the in-process memo --------------------------------------------------------------------------------------


def same_size_same_time(path: str, text: str) -> None:
    """Write ``text`` as ``rsync -t``, ``tar`` or ``cp -p`` would: the old size and the old modification time."""
    before = os.stat(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_the_shared_pipeline_sees_an_edit_that_keeps_size_and_time(tmp_path, cache):
    """What Elastic(profile=...) uses: reused while nothing changed, built again when a file it read holds other
    bytes, even under the same size and time."""
    from kfdefaults.pipeline.shared import shared_pipeline

    team = team_with(tmp_path, "elastic: {nnodes: 2}\n")
    first = shared_pipeline(team=[team])
    assert first.resolve("p").elastic_settings["nnodes"] == 2
    assert shared_pipeline(team=[team]) is first
    same_size_same_time(os.path.join(team, "p.yaml"), "elastic: {nnodes: 3}\n")
    second = shared_pipeline(team=[team])
    assert second is not first and second.resolve("p").elastic_settings["nnodes"] == 3


def test_the_shared_pipeline_sees_a_pyproject_edit_that_keeps_size_and_time(tmp_path, cache, monkeypatch):
    from kfdefaults.pipeline.shared import shared_pipeline

    for name in ("aa", "bb"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "p.yaml").write_text(f"description: {name}\n", encoding="utf-8")
    project = tmp_path / "pyproject.toml"
    project.write_text('[tool.kfdefaults]\nteam = ["aa"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert shared_pipeline().resolve("p").description == "aa"
    same_size_same_time(str(project), '[tool.kfdefaults]\nteam = ["bb"]\n')
    assert shared_pipeline().resolve("p").description == "bb"


def test_validate_reads_the_cache_and_fills_none_of_it(tmp_path, cache, monkeypatch):
    """validate checks each file once: it stores no file and no merge (creating a thousand cache files costs more
    than it saves), and uses what render stored."""
    from kfdefaults.api import validate_paths

    team = team_with(tmp_path)
    report = validate_paths([team])
    assert not report.errors and entries(cache) == [entry for entry in entries(cache) if _is_schema(entry)]
    kfdefaults.resolve("p", team=[team])  # render's walk stores the file and the merge
    stored = entries(cache)

    def no_parsing(raw, file):
        raise AssertionError(f"{file} parsed again")

    monkeypatch.setattr("kfdefaults.validate.files.parse_bytes", no_parsing)
    assert not validate_paths([team]).errors
    assert entries(cache) == stored


def _is_schema(entry: str) -> bool:
    """Whether a cache entry holds the patch schema's definitions (stored by every pipeline, once)."""
    with open(entry, encoding="utf-8") as f:
        f.readline()
        return "io.k8s.api.core.v1.PodTemplate" in f.read(200_000)


@pytest.mark.parametrize("edit", ["profile", "pyproject", "new file"])
def test_a_settled_stat_stands_for_the_bytes_only_until_something_changes(tmp_path, cache, monkeypatch, edit):
    """Once nothing changed status for RACE_SECONDS (0 here: anything written before the check), calls trust the
    stat and read no file; an edit of the same size and time still changes the ctime, a new file is found."""
    import kfdefaults.inputs as inputs_module
    from kfdefaults.pipeline.shared import shared_pipeline

    monkeypatch.setattr(inputs_module, "RACE_SECONDS", 0.0)
    team = team_with(tmp_path, "elastic: {nnodes: 2}\n")
    project = tmp_path / "pyproject.toml"
    project.write_text(f'[tool.kfdefaults]\nteam = ["{os.path.basename(team)}"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    first = shared_pipeline()
    assert first.resolve("p").elastic_settings["nnodes"] == 2
    assert shared_pipeline() is first
    reads = []
    digest = inputs_module._content_digest
    monkeypatch.setattr(inputs_module, "_content_digest", lambda path: reads.append(path) or digest(path))
    assert shared_pipeline() is first and reads == []  # the stat alone
    if edit == "profile":
        same_size_same_time(os.path.join(team, "p.yaml"), "elastic: {nnodes: 3}\n")
    elif edit == "pyproject":
        os.utime(project, ns=(0, os.stat(project).st_mtime_ns))  # a change of status only: read again, same bytes
    else:
        with open(os.path.join(team, "q.yaml"), "w", encoding="utf-8") as f:
            f.write("elastic: {nnodes: 5}\n")
    again = shared_pipeline()
    if edit == "profile":
        assert str(project) not in reads and again is not first
        assert again.resolve("p").elastic_settings["nnodes"] == 3
    elif edit == "pyproject":
        assert again is first and reads == [str(project)]
    else:
        assert again.resolve("q").elastic_settings["nnodes"] == 5
