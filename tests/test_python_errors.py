"""Errors met from Python as good as the command line's: a suggestion for a mistyped keyword, and a ProfileError
whose first line says it all (the line a traceback ends with, under pyflyte)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from kfdefaults import ProfileError


@pytest.mark.parametrize("kwargs, words", [
    ({"nnode": 2}, "`nnode` (did you mean `nnodes`?)"),
    ({"nprocs": 8}, "`nprocs` (did you mean `nproc_per_node`?)"),
    ({"max_restart": 1}, "`max_restart` (did you mean `max_restarts`?)"),
    ({"teams": ["x"]}, "`teams` (did you mean `team`?)"),
    ({"increase_shared_mem": True}, "kfdefaults profiles own /dev/shm"),
])
def test_a_mistyped_elastic_keyword_gets_a_suggestion(kwargs, words):
    from kfdefaults import Elastic

    with pytest.raises(TypeError) as excinfo:
        Elastic(profile="gpu-large", **kwargs)
    message = str(excinfo.value)
    assert words in message and "It takes profile, platform, team, nnodes" in message


def test_the_first_line_of_a_profile_error_says_how_many_more_follow(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    (team / "p.yaml").write_text("elastic: {nnodes: 0, nproc_per_node: 0}\n", encoding="utf-8")
    import kfdefaults

    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("p", team=[team])
    first, *rest = str(excinfo.value).splitlines()
    assert first.startswith(f"{team}/p.yaml:1:19: [team] elastic.nnodes: ") and first.endswith("(and 1 more problem, below)")
    assert len(rest) == 1 and rest[0].startswith(f"{team}/p.yaml:1:38: [team] elastic.nproc_per_node: ")


def test_under_pyflyte_the_last_line_names_the_file_line_and_problem(tmp_path):
    """pyflyte prints a traceback of its own when a module fails to load; the line it ends with is enough."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "gpu-large.yaml").write_text("elastic:\n  nnodes: 2\n  nproc_per_node: eight\n", encoding="utf-8")
    (tmp_path / "wf.py").write_text(textwrap.dedent(f"""\
        from flytekit import task
        from kfdefaults import Elastic

        @task(task_config=Elastic(profile="gpu-large", team=[{str(team)!r}]))
        def train() -> None: ...
        """), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env["COLUMNS"] = "200"  # pyflyte's traceback box wraps the message at the terminal's width
    pyflyte = os.path.join(os.path.dirname(sys.executable), "pyflyte")
    proc = subprocess.run([pyflyte, "--pkgs", "wf", "package", "--image", "example.com/train:1", "-f"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode != 0
    last = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()][-1]
    assert last.startswith("ProfileError: "), last
    assert f"{team}/gpu-large.yaml:3:19: [team] elastic.nproc_per_node:" in last, last
