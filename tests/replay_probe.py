"""Run ``kfdefaults`` as a user's shell does, in a process of its own, and say whether the run was replayed
(:mod:`kfdefaults.cli.replay`): the helpers of the tests that change what a render reads, between two runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

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

# The cluster's default PodTemplate of a platform folder: it gives every pod /dev/shm.
CLUSTER_TEMPLATE = """\
apiVersion: v1
kind: PodTemplate
metadata: {name: default}
template:
  spec:
    containers:
      - name: default
        volumeMounts: [{name: shm, mountPath: /dev/shm}]
    volumes:
      - name: shm
        emptyDir: {medium: Memory}
"""

LONG_AGO = time.time() - 3600


def age(*paths: Path) -> None:
    """Date files and folders an hour back, as files committed long ago are: a recent time keeps a run from
    being stored (an edit in the same tick as the recording would go unseen)."""
    for path in paths:
        for p in [path, *(path.rglob("*") if path.is_dir() else [])]:
            os.utime(p, (LONG_AGO, LONG_AGO), follow_symlinks=False)


def make_case(tmp_path: Path) -> dict:
    """A working folder with the team folder ``team`` holding ``vision.yaml``, dated an hour back, and the
    environment of a run: a cache of its own, no installed packages' folders, the probe's files."""
    work = tmp_path / "work"
    team = work / "team"
    team.mkdir(parents=True)
    (team / "vision.yaml").write_text(TEAM)
    age(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env.update(KFDEFAULTS_CACHE_DIR=str(tmp_path / "cache"), KFDEFAULTS_NO_ENTRY_POINTS="1",
               PROBE_OUT=str(tmp_path / "probe"), PROBE_RACE="0", PROBE_EDIT=str(tmp_path / "edit"))
    return {"work": work, "team": team, "env": env, "probe": tmp_path / "probe"}


def render(case: dict, *args: str, env: dict | None = None, cwd: Path | None = None) -> tuple[str, str, str, int]:
    """(stdout, stderr, "rendered" or "replayed", exit status) of ``kfdefaults ARGS`` in the case's folder (or
    ``cwd``)."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=cwd or case["work"], env=env or case["env"],
                          capture_output=True, text=True, timeout=120)
    return proc.stdout, proc.stderr, case["probe"].read_text(), proc.returncode


def render_on_a_terminal(case: dict, columns: int, *args: str) -> tuple[str, str]:
    """(what a terminal of ``columns`` columns shows on standard output, "rendered" or "replayed") of
    ``kfdefaults ARGS`` whose standard output is that terminal (a pseudo-terminal of that size)."""
    import fcntl
    import pty
    import struct
    import termios

    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in case["env"].items() if k not in ("COLUMNS", "LINES")}  # the terminal's size, not these
    proc = subprocess.Popen([sys.executable, "-c", PROBE, *args], cwd=case["work"], env=env,
                            stdin=subprocess.DEVNULL, stdout=terminal, stderr=subprocess.DEVNULL)
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the terminal's other end closed (Linux says EIO)
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    proc.wait(timeout=120)
    return shown.decode("utf-8", "replace").replace("\r\n", "\n"), case["probe"].read_text()


def copy_of_kfdefaults(site: Path) -> Path:
    """A copy of the installed kfdefaults in ``site`` (a folder a run puts first on ``PYTHONPATH``), its builtin
    profiles inside as a wheel installs them: another kfdefaults, whose code a test may change as a release
    would; the package's folder is returned."""
    import shutil

    import kfdefaults
    from kfdefaults.layers import builtin_folder

    package = site / "kfdefaults"
    shutil.copytree(os.path.dirname(kfdefaults.__file__), package, ignore=shutil.ignore_patterns("__pycache__"))
    if not (package / "profiles").is_dir():  # an editable install: the builtin profiles as a wheel packs them
        shutil.copytree(builtin_folder(), package / "profiles")
    return package
