"""How the command line lays out a warning, the one way for every command (``kfdefaults.cli.common.report``): the
first line ``FILE:LINE:COLUMN: [layer] path: warning: ...`` of at most 160 characters, the rest on indented lines
(wrapped at a terminal's width, one line each when piped), paths under the working folder relative to it.

Run on a real project folder: a platform ``h100`` profile extending ``gpu-large`` with ``nnodes: "1:8"``, a team
``join_timeout: 2400``, and cluster facts stating a 600 s Kueue timeout below a 1500 s cold start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_explain_terminal import on_terminal

from kfdefaults.cli.common import finding_lines, report

HEAD_MAX = 160  # written here, not imported: the bound the layout must keep
from kfdefaults.errors import Finding, Location

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "platform").mkdir()
    (tmp_path / "team").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.kfdefaults]\ntarget = "flytekit"\nplatform = ["platform"]\n'
                                             'team = ["team"]\n')
    (tmp_path / "platform" / "h100.yaml").write_text(
        'extends: gpu-large\nelastic:\n  nnodes: "1:8"\npod_template:\n  spec:\n    nodeSelector: {pool: h100}\n')
    (tmp_path / "team" / "vision.yaml").write_text("extends: h100\nelastic:\n  rdzv_configs:\n    join_timeout: 2400\n")
    (tmp_path / "platform" / "_cluster-facts.yaml").write_text(
        "node_start: {worst: 900}\nimage_pull: {worst: 600}\nkueue:\n  wait_for_pods_ready: {enable: true, timeout: 600}\n")
    return tmp_path


def kfdefaults(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    return subprocess.run([KFDEFAULTS, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def warnings_in(stderr: str) -> list[list[str]]:
    """Each warning's lines: its first line, then the indented ones below it."""
    found: list[list[str]] = []
    for line in stderr.splitlines():
        if line.startswith("    ") and found:
            found[-1].append(line)
        elif ": warning: " in line:
            found.append([line])
    return found


@pytest.mark.slow
def test_validate_counts_each_real_problem_once_in_short_first_lines(project):
    """Three real problems, each said once: Kueue evicts before a cold node (1500 s) is up; the elastic range's
    last_call_timeout closes the round without it; builtin's read_timeout 900 s, which both project profiles
    inherit, is below the start spread. No builtin profile the project does not use is named."""
    result = kfdefaults(project, "validate")
    assert result.returncode == 0, result.stderr
    warnings = warnings_in(result.stderr)
    # in file order, and the builtin file's absolute path sorts before or after the project's by where the
    # checkout is: compare the warnings as a sorted list
    assert sorted(w[0].split(": warning: ")[0] for w in warnings) == sorted([
        "platform/_cluster-facts.yaml:4:48: [facts] kueue.wait_for_pods_ready.timeout",
        "platform/h100.yaml:3:11: [platform] elastic.rdzv_configs.last_call_timeout",
        f"{Path(__file__).parent.parent.resolve() / 'profiles' / 'elastic-gpu-default.yaml'}:7:19: [builtin] "
        "elastic.rdzv_configs.read_timeout"])
    assert ": 0 errors, 3 warnings" in result.stderr.splitlines()[-1]
    assert all(len(w[0]) <= HEAD_MAX for w in warnings), [len(w[0]) for w in warnings]
    assert all(len(w) > 1 for w in warnings)  # the rest of each message is below its first line, indented
    assert str(project) not in result.stderr  # every path of the project relative to the working folder
    [kueue] = [" ".join(line.strip() for line in w) for w in warnings if "[facts] kueue" in w[0]]
    assert "Kueue's waitForPodsReady timeout is 600 s ([facts] platform/_cluster-facts.yaml:4:48)" in kueue
    assert "for profiles h100, vision" in kueue
    assert kfdefaults(project, "validate", "--strict").returncode == 1  # the warnings fail the run


def test_strict_passes_a_project_whose_profiles_have_no_problem(project):
    (project / "platform" / "_cluster-facts.yaml").unlink()
    result = kfdefaults(project, "validate", "--strict")
    assert result.returncode == 0 and ": 0 errors, 0 warnings" in result.stderr, result.stderr


def test_render_lays_out_its_warnings_the_same_way(project):
    result = kfdefaults(project, "render", "vision")
    assert result.returncode == 0 and result.stdout.startswith("name: vision")
    warnings = warnings_in(result.stderr)
    assert len(warnings) == 3 and all(len(w[0]) <= HEAD_MAX for w in warnings)
    assert str(project) not in result.stderr


@pytest.mark.slow
def test_at_a_terminal_the_indented_lines_wrap_to_its_width(project, monkeypatch):
    monkeypatch.chdir(project)
    env_free = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("KFDEFAULTS_") and k != "KFDEFAULTS_CACHE_DIR"}
    try:
        screen = on_terminal(80, "validate", stderr_too=True)
    finally:
        os.environ.update(env_free)
    warnings = warnings_in(screen)
    assert len(warnings) == 3
    for lines in warnings:
        assert len(lines[0]) <= HEAD_MAX and all(len(line) <= 80 and line.startswith("    ") for line in lines[1:])
    piped = warnings_in(kfdefaults(project, "validate").stderr)
    assert [" ".join(line.strip() for line in w) for w in warnings] == \
        [" ".join(line.strip() for line in w) for w in piped]  # the same words, wrapped
    assert any(len(line) > 80 for w in piped for line in w[1:])  # piped, a detail stays one line for grep


def test_a_short_warning_stays_one_line_and_an_error_is_never_cut(capsys):
    short = Finding(Location("a.yaml", 2, 3), "elastic.nnodes", "short", "warning", "team", ("one detail",))
    assert finding_lines(short) == ["a.yaml:2:3: [team] elastic.nnodes: warning: short", "    one detail"]
    long = Finding(Location("a.yaml", 2, 3), "x", "word " * 60, "warning")
    lines = finding_lines(long, 40)
    assert len(lines[0]) <= HEAD_MAX and all(len(line) <= 40 for line in lines[1:])
    assert " ".join(line.strip() for line in lines).split() == ["a.yaml:2:3:", "x:", "warning:", *["word"] * 60]
    report([Finding(Location("a.yaml", 2, 3), "x", "word " * 60, layer="team", details=("one detail",))])
    assert capsys.readouterr().err == f"a.yaml:2:3: [team] x: {'word ' * 60}; one detail\n"  # FILE:LINE:COLUMN: message


def test_the_no_facts_note_of_timeline_fits_80_columns_at_a_terminal(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    screen = on_terminal(80, "timeline", "gpu-large", "--only-platform", "empty", "--target", "flytekit", "-o", "json",
                         stderr_too=True)
    note = [line for line in screen.splitlines() if not line.lstrip().startswith(("{", "}", '"', "]", "["))]
    start = next(i for i, line in enumerate(note) if line.startswith("kfdefaults: no cluster facts"))
    lines = [note[start]] + [line for line in note[start + 1:start + 4] if line.startswith("    ")]
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines), lines
    assert "[tool.kfdefaults] cluster_facts" in " ".join(line.strip() for line in lines)


def test_a_deadline_below_join_timeout_is_flagged_without_facts_naming_both_lines(tmp_path):
    """A profile's own run_policy.active_deadline_seconds 120 ends the job before a rendezvous that waits
    join_timeout 900 s (the builtin's) gives up: render and validate say so with no cluster facts at all."""
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "short.yaml").write_text(
        "extends: gpu-large\nelastic:\n  run_policy:\n    active_deadline_seconds: 120\n")
    builtin = Path(__file__).parent.parent.resolve() / "profiles" / "elastic-gpu-default.yaml"
    join = next(i for i, line in enumerate(builtin.read_text().splitlines(), 1) if "join_timeout" in line)
    for args in (("render", "short", "--team", "team"), ("validate", "team")):
        result = kfdefaults(tmp_path, *args, "--facts", "none", "--target", "flytekit")
        assert result.returncode == 0, result.stderr
        [warning] = [" ".join(line.strip() for line in w) for w in warnings_in(result.stderr)]
        assert warning.startswith("team/short.yaml:4:30: [team] elastic.run_policy.active_deadline_seconds: warning: "
                                  "active_deadline_seconds is 120 s ([team] team/short.yaml:4:30), below join_timeout's "
                                  f"900 s ([builtin] {builtin}:{join}:"), warning
