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
    ({"increase_shared_memory": True}, "`increase_shared_memory` (did you mean `increase_shared_mem`?)"),
])
def test_a_mistyped_elastic_keyword_gets_a_suggestion(kwargs, words):
    from kfdefaults import Elastic

    with pytest.raises(TypeError) as excinfo:
        Elastic(profile="gpu-large", **kwargs)
    message = str(excinfo.value)
    assert words in message and "It takes profile, platform, team, increase_shared_mem, nnodes" in message


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


BAD_TEAM = "elastic:\n  nnodes: 2\n  nproc_per_node: eight\n"

BAD_TEMPLATE = """\
from flytekit import PodTemplate, task
from kubernetes.client import V1Container, V1PodSpec, V1Toleration
from kfdefaults import Elastic

BAD = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="primary")],
                                     tolerations=[V1Toleration(key="spot", operator="Sometimes")]))

@task(task_config=Elastic(profile="gpu-large"), pod_template=BAD)
def train() -> None: ...
"""


def pyflyte(cwd, *args: str) -> list[str]:
    """The lines ``pyflyte ARGS`` prints (both streams, box borders and blank lines left out), run as a user does."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env["COLUMNS"] = "300"  # rich-click's panel wraps the message at the terminal's width
    command = os.path.join(os.path.dirname(sys.executable), "pyflyte")
    proc = subprocess.run([command, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line.strip("│ ").rstrip() for line in (proc.stdout + proc.stderr).splitlines()]
    return [line for line in lines if line and not set(line) <= set("╭╮╰╯─ ") and not line.startswith("╭─")]


@pytest.mark.slow
@pytest.mark.parametrize("how", [["--pkgs", "wf", "package", "--image", "example.com/train:1", "-f"],
                                 ["run", "wf.py", "train"]])
def test_under_pyflyte_the_message_comes_first_without_kfdefaults_frames(tmp_path, how):
    """pyflyte prints a traceback of every frame of an exception raised while loading a module (kfdefaults' own
    among them, the message last); a ProfileError is shown as click shows an error: the message, then the user's
    line that raised it, nothing else."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "gpu-large.yaml").write_text(BAD_TEAM, encoding="utf-8")
    (tmp_path / "wf.py").write_text(textwrap.dedent(f"""\
        from flytekit import task
        from kfdefaults import Elastic

        @task(task_config=Elastic(profile="gpu-large", team=[{str(team)!r}]))
        def train() -> None: ...
        """), encoding="utf-8")
    lines = [line for line in pyflyte(tmp_path, *how) if not line.startswith("Loading packages")]
    assert lines == [f"{team}/gpu-large.yaml:3:19: [team] elastic.nproc_per_node: Input should be a valid integer or "
                     "auto (got 'eight')", f"(raised at {tmp_path}/wf.py:4)"], lines


@pytest.mark.slow
def test_a_task_layer_error_under_pyflyte_names_the_task_line(tmp_path):
    (tmp_path / "wf.py").write_text(BAD_TEMPLATE, encoding="utf-8")
    lines = pyflyte(tmp_path, "run", "wf.py", "train")
    assert lines == ["@task(pod_template=...): [task] pod_template.spec.tolerations[0].operator: `Sometimes` is not "
                     "one of Equal, Exists (values are case-sensitive)", f"(raised at {tmp_path}/wf.py:8)"], lines


def test_from_python_it_is_still_a_profile_error_whose_traceback_ends_at_the_entry_point(tmp_path):
    """Outside pyflyte it is an exception as any other: ``except kfdefaults.ProfileError`` catches it, and its
    traceback holds the caller's frame and kfdefaults' entry point only (which rich's tracebacks leave out)."""
    import traceback

    from kfdefaults import Elastic

    team = tmp_path / "team"
    team.mkdir()
    (team / "gpu-large.yaml").write_text(BAD_TEAM, encoding="utf-8")
    with pytest.raises(ProfileError) as excinfo:
        Elastic(profile="gpu-large", team=[str(team)])
    frames = traceback.extract_tb(excinfo.value.__traceback__)
    ours = [f for f in frames if f"{os.sep}kfdefaults{os.sep}" in f.filename]
    assert [(os.path.basename(f.filename), f.name) for f in ours] == [("errors.py", "entry")]
    assert excinfo.value.__cause__ is None and excinfo.value.__suppress_context__  # no chain of the inner frames
    assert excinfo.value.findings[0].path == "elastic.nproc_per_node"
