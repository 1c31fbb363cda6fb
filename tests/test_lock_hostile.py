"""The lock file, the project's scan and the registered settings under bad and hostile input: located errors,
exit 1, nothing that blocks or grows without bound, nothing lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli_runner import invoke

from kfdefaults.lock import read_lock
from kfdefaults.lock.scan import MAX_SOURCE_BYTES, profiles_used

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project whose code uses gpu-large, with a team override, locked; the working folder."""
    (tmp_path / "profiles").mkdir()
    (tmp_path / "wf").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "vision"\n\n[tool.kfdefaults]\nteam = ["profiles"]\n')
    (tmp_path / "profiles" / "gpu-large.yaml").write_text("pod_template:\n  labels:\n    team: vision\n")
    (tmp_path / "wf" / "train.py").write_text('from kfdefaults import Elastic\n\nconfig = Elastic(profile="gpu-large")\n')
    monkeypatch.chdir(tmp_path)
    result = invoke(["lock"])
    assert result.exit_code == 0, result.output
    return tmp_path


def run(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    return subprocess.run([KFDEFAULTS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_a_pipe_in_place_of_the_lock_file_is_an_error_not_a_wait(project):
    (project / "kfdefaults.lock").unlink()
    os.mkfifo(project / "kfdefaults.lock")
    for args in (["render", "gpu-large"], ["lock", "--check"], ["validate", "profiles"]):
        proc = run(args, project)  # the timeout fails the test if anything waits on the pipe
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, args
        assert f"{project / 'kfdefaults.lock'}:1:1: the lock file is a pipe, not a regular file" in proc.stderr, args


def test_the_scan_reads_only_small_regular_python_files_and_never_waits(project):
    os.mkfifo(project / "wf" / "pipe.py")
    os.symlink("/dev/zero", project / "wf" / "zero.py")
    (project / "wf" / "data.py").write_text("Elastic = 1\nX = [" + "0, " * (MAX_SOURCE_BYTES // 3) + "]\n")
    (project / "wf" / "deep.py").write_text("from kfdefaults import Elastic\nSQL = " + " + ".join(["'x'"] * 3000) + "\n")
    skipped: list[tuple[str, str]] = []
    uses = profiles_used(str(project), skipped)
    assert [(u.file, u.profile) for u in uses] == [("wf/train.py", "gpu-large")]
    assert dict(skipped) == {
        "wf/data.py": f"the Python file is larger than {MAX_SOURCE_BYTES >> 10} KiB",
        "wf/deep.py": "Python's parser cannot read it (RecursionError)",
        "wf/pipe.py": "the Python file is a pipe, not a regular file",
        "wf/zero.py": "the Python file is a device, not a regular file",
    }
    result = invoke(["lock", "--check"])
    assert result.exit_code == 0, result.output
    assert "wf/pipe.py:1:1: warning: not searched for Elastic(profile=...) calls" in result.unfolded  # relative


def test_a_broken_lock_file_is_written_again_by_upgrade_and_says_so(project):
    (project / "kfdefaults.lock").write_text("<<<<<<< HEAD\nversion = 1\n=======\nversion = 1\n>>>>>>> theirs\n")
    assert invoke(["lock", "--check"]).exit_code == 1
    result = invoke(["lock", "--upgrade"])
    assert result.exit_code == 0, result.output
    assert "kfdefaults.lock:1:1: warning: invalid TOML" in result.stderr and "written again" in result.stderr
    assert list(read_lock(str(project / "kfdefaults.lock")).profiles) == ["gpu-large"]


@pytest.mark.parametrize("edit, message", [
    (("version = 1", "version = true"), "version: not a lock file this kfdefaults reads (version 1 expected)"),
    (('layer = "team"', 'layer = "bogus"'), "must be a table of `layer`, `file`, `digest`"),
    (('flytekit = "sha256:', 'flytekit = "sha256:00'), "must be a digest per target"),
])
def test_a_lock_file_of_another_shape_is_a_located_error(project, edit, message):
    path = project / "kfdefaults.lock"
    text = path.read_text()
    assert edit[0] in text
    path.write_text(text.replace(edit[0], edit[1], 1))
    result = invoke(["render", "gpu-large"])
    assert result.exit_code == 1 and f"{path}:" in result.stderr and message in result.stderr, result.output


def test_a_profile_no_layer_defines_leaves_the_lock_on_upgrade_once_nothing_uses_it(project):
    (project / "profiles" / "old.yaml").write_text("elastic:\n  nproc_per_node: 2\n")
    assert invoke(["lock", "old"]).exit_code == 0
    (project / "profiles" / "old.yaml").unlink()
    check = invoke(["lock", "--check"])
    assert check.exit_code == 1 and "profile 'old' was locked with team profiles/old.yaml, and no layer defines it " \
                                    "now" in check.stderr
    result = invoke(["lock", "--upgrade"])
    assert result.exit_code == 0, result.output
    assert "recorded: profile 'old' is defined by no layer now and used by no Elastic(...) call: it leaves the lock" \
        in result.stderr
    assert list(read_lock(str(project / "kfdefaults.lock")).profiles) == ["gpu-large"]


def test_a_profile_the_code_names_that_no_layer_defines_is_an_error_at_the_call(project):
    (project / "wf" / "typo.py").write_text('from kfdefaults import Elastic\nc = Elastic(profile="gpu-larg")\n')
    result = invoke(["lock", "--upgrade"])
    assert result.exit_code == 1
    assert result.stderr.count("no profile named 'gpu-larg'") == 1
    assert (f"{project / 'wf' / 'typo.py'}:2:5: Elastic(profile='gpu-larg'): no profile named 'gpu-larg'; did you "
            "mean 'gpu-large'?") in result.stderr


def test_a_profile_used_through_an_imported_name_is_not_missed_by_the_check(project):
    """``from kfdefaults import Elastic as E``: registration requires the profile locked; ``lock --check`` said the
    lock was up to date, and the task then failed to register."""
    (project / "profiles" / "extra.yaml").write_text("elastic: {nnodes: 2}\n")
    (project / "wf" / "alias.py").write_text('from kfdefaults.flyte2 import Elastic as E\nc = E(profile="extra")\n')
    result = invoke(["lock", "--check"])
    assert result.exit_code == 1, result.output
    assert "profile 'extra' is not in kfdefaults.lock" in result.stderr
    assert [(u.file, u.line, u.profile) for u in profiles_used(str(project))] == [
        ("wf/alias.py", 2, "extra"), ("wf/train.py", 3, "gpu-large")]


@pytest.mark.slow
def test_two_lock_runs_at_once_keep_both_profiles(project):
    names = ["cpu-small", "nccl-fail-fast", "elastic-gpu-default"]
    procs: list[subprocess.CompletedProcess] = []
    threads = [threading.Thread(target=lambda n=n: procs.append(run(["lock", n], project))) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.returncode for p in procs] == [0, 0, 0], [p.stderr for p in procs]
    assert sorted(read_lock(str(project / "kfdefaults.lock")).profiles) == sorted(["gpu-large", *names])
    assert not list(project.glob(".kfdefaults.lock*"))  # no temporary file left


def test_registered_settings_nested_past_what_json_decodes_are_no_settings(monkeypatch):
    from kfdefaults.runtime import registered_settings
    from kfdefaults.settings import RUNTIME_ENV

    class InAPod:
        def running_a_task(self) -> bool:
            return True

    monkeypatch.setenv(RUNTIME_ENV, "[" * 100_000 + "]" * 100_000)
    assert registered_settings(InAPod()) is None
    monkeypatch.setenv(RUNTIME_ENV, json.dumps({"key": "k", "elastic": {}}))
    assert registered_settings(InAPod()) == {"key": "k", "elastic": {}}


def test_carried_profiles_kfdefaults_did_not_write_are_none(monkeypatch):
    """``KFDEFAULTS_PROFILES`` in a pod: a value that is not base64, not gzip, inflates past the bound (a gzip
    bomb), nests past what JSON decodes, or has another version, is no value: the calls find nothing carried."""
    import base64
    import gzip

    from kfdefaults.pipeline.carried import MAX_INFLATED, decode, encode

    def packed(raw: bytes) -> str:
        return base64.b64encode(gzip.compress(raw, mtime=0)).decode()

    assert decode(encode({"k": {"profile": "p"}})) == {"k": {"profile": "p"}}
    too_big = json.dumps({"version": 1, "calls": {"k": "x" * MAX_INFLATED}}).encode()
    for value in ("not base64!", base64.b64encode(b"not gzip").decode(), packed(too_big),
                  packed(b"[" * 100_000 + b"]" * 100_000), packed(json.dumps({"version": 2, "calls": {"k": {}}}).encode()),
                  packed(b'{"version": 1, "calls": []}')):
        assert decode(value) == {}, value[:40]


def test_a_pyproject_beside_the_profiles_is_not_a_profile(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "vision"\n\n[tool.kfdefaults]\nteam = ["."]\n')
    (tmp_path / "gpu-large.yaml").write_text("pod_template:\n  labels:\n    team: vision\n")
    monkeypatch.chdir(tmp_path)
    result = invoke(["list"])
    assert result.exit_code == 0, result.output
    assert "pyproject" not in result.stdout
