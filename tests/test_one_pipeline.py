"""Every entry point walks the one pipeline: what one command checks, the others check the same way.

Each test here is a place where copies of the pipeline had drifted apart: diff reading files with another schema
than render, /dev/shm normalised two ways, dotted paths written two ways in one run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from cli_runner import unfold


def kfdefaults(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env["KFDEFAULTS_NO_CACHE"] = "1"
    return subprocess.run([sys.executable, "-m", "kfdefaults.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd)


def folder_with(tmp_path, name: str, files: dict[str, str]) -> str:
    folder = tmp_path / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_text(textwrap.dedent(text), encoding="utf-8")
    return str(folder)


POD_LEVEL_RESOURCES = """\
    pod_template:
      spec:
        resources:
          limits: {cpu: "4"}
    """


@pytest.mark.slow
def test_diff_checks_files_against_the_kubernetes_version_it_is_given(tmp_path):
    """``spec.resources`` came in Kubernetes 1.32: render and diff with --kubernetes-version 1.31 both reject it."""
    team = folder_with(tmp_path, "team", {"gpu-large.yaml": POD_LEVEL_RESOURCES})
    render = kfdefaults("render", "gpu-large", "--team", team, "--kubernetes-version", "1.31", cwd=str(tmp_path))
    diff = kfdefaults("diff", "gpu-large", "--team-against", team, "--kubernetes-version", "1.31", cwd=str(tmp_path))
    assert render.returncode == 1 and "gpu-large.yaml:3:5" in render.stderr, render.stderr
    assert diff.returncode == 2, diff.stdout + diff.stderr
    assert "gpu-large.yaml:3:5" in diff.stderr and "resources" in diff.stderr, diff.stderr
    # and with the default version, which has the field, both accept it
    assert kfdefaults("diff", "gpu-large", "--team-against", team, cwd=str(tmp_path)).returncode == 1


@pytest.mark.slow
@pytest.mark.parametrize("mount_path", ["//dev/shm", "/dev/shm/", "/dev//shm", "/dev/./shm"])
def test_a_second_shm_mount_however_written_is_found_by_render_and_validate(tmp_path, mount_path):
    """The kubelet mounts all of these on /dev/shm: with the builtin's /dev/shm they are two mounts of one path."""
    team = folder_with(tmp_path, "team", {"gpu-large.yaml": f"""\
        pod_template:
          spec:
            containers:
              - name: primary
                volumeMounts:
                  - {{name: bigshm, mountPath: "{mount_path}"}}
            volumes:
              - name: bigshm
                emptyDir: {{medium: Memory}}
        """})
    render = kfdefaults("render", "gpu-large", "--team", team, cwd=str(tmp_path))
    validate = kfdefaults("validate", team, cwd=str(tmp_path))
    for proc in (render, validate):
        assert "mounts /dev/shm 2 times" in unfold(proc.stderr), (mount_path, proc.stderr)
    assert "team/gpu-large.yaml:6:13" in validate.stderr, validate.stderr  # at the team's mount, relative


@pytest.mark.slow
def test_one_run_writes_every_dotted_path_the_same_way(tmp_path):
    """A key holding a dot is quoted wherever a path is printed, as --set reads it back."""
    team = folder_with(tmp_path, "team", {"p.yaml": """\
        elastic:
          nproc.per: 2
          rdzv_configs:
            join.timeout: 60
        """})
    proc = kfdefaults("validate", team, cwd=str(tmp_path))
    assert proc.returncode == 1
    assert '[team] elastic."nproc.per": ' in proc.stderr, proc.stderr
    assert '[team] elastic.rdzv_configs."join.timeout": ' in proc.stderr, proc.stderr
    assert "elastic.nproc.per:" not in proc.stderr and 'rdzv_configs.join.timeout' not in proc.stderr


@pytest.mark.slow
def test_a_set_key_with_a_dot_is_named_as_it_was_written(tmp_path):
    proc = kfdefaults("render", "gpu-large", "--set", 'pod_template.labels."a.b/c d"=x', cwd=str(tmp_path))
    assert proc.returncode == 1
    assert '--set pod_template.labels."a.b/c d"=x: [task] pod_template.labels."a.b/c d": ' in proc.stderr, proc.stderr
