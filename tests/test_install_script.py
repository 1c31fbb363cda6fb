"""``scripts/install_go_mergo.sh``, run as the README's test command runs it, against a stand-in ``apt-get``: it says
why it could not install (apt-get's own error), says the differential test will be skipped only when it will be,
and does nothing where Go and the mergo source already are where the test looks."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "install_go_mergo.sh"
PACKAGES = "golang-go golang-github-imdario-mergo-dev"
TOOLS = ("sh", "mktemp", "rm", "grep", "tail", "tr", "cut", "date", "env", "mkdir", "touch", "cat")


def machine(tmp_path: Path, apt_get: str) -> tuple[dict[str, str], Path]:
    """A PATH of the few tools the script uses, a root ``id``, and ``apt-get`` doing what ``apt_get`` (shell) says;
    where the test looks for mergo (``MERGO_GOPATH``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        os.symlink(shutil.which(tool), bin_dir / tool)
    for name, body in (("id", "echo 0"), ("apt-get", apt_get)):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    gopath = tmp_path / "gopath"
    return {"PATH": str(bin_dir), "MERGO_GOPATH": str(gopath), "CALLS": str(tmp_path / "calls")}, gopath


def run(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60,
                          executable=shutil.which("sh"))


def test_a_failed_install_says_apt_gets_reason(tmp_path):
    env, gopath = machine(tmp_path, 'echo "$*" >> "$CALLS"\n'
                                    'case "$1" in update) echo "Hit:1 http://deb.debian.org/debian bookworm InRelease";;\n'
                                    '*) echo "Reading package lists..."; echo "E: Unable to locate package golang-go";'
                                    ' exit 100;; esac')
    proc = run(env)
    assert proc.returncode == 0 and proc.stdout == ""
    mergo = gopath / "src/github.com/imdario/mergo/merge.go"
    assert proc.stderr == (f"install_go_mergo: apt-get could not install {PACKAGES}: E: Unable to locate package "
                           f"golang-go; tests/test_backend_mergo.py will be skipped (missing: go on PATH; {mergo})\n")
    assert Path(env["CALLS"]).read_text().splitlines()[1] == "update -qq"  # the lists updated, then tried again


def test_an_update_that_fails_is_said_too(tmp_path):
    env, _ = machine(tmp_path, 'case "$1" in update) echo "E: Could not get lock /var/lib/apt/lists/lock"; exit 100;;\n'
                               '*) echo "E: Package golang-go has no installation candidate"; exit 100;; esac')
    said = run(env).stderr
    assert said.startswith("install_go_mergo: apt-get install failed (E: Package golang-go has no installation "
                           "candidate), and apt-get update failed too (E: Could not get lock "
                           "/var/lib/apt/lists/lock); tests/test_backend_mergo.py will be skipped"), said


def test_nothing_is_done_where_the_test_finds_go_and_mergo(tmp_path):
    """mergo where MERGO_GOPATH says (the test looks there too): present, so nothing to install or to say."""
    env, gopath = machine(tmp_path, 'echo "$*" >> "$CALLS"; exit 100')
    (gopath / "src/github.com/imdario/mergo").mkdir(parents=True)
    (gopath / "src/github.com/imdario/mergo/merge.go").write_text("package mergo\n")
    (Path(env["PATH"]) / "go").write_text("#!/bin/sh\n")
    (Path(env["PATH"]) / "go").chmod(0o755)
    proc = run(env)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert not Path(env["CALLS"]).exists()  # apt-get was not run


def test_an_install_that_succeeds_says_so(tmp_path):
    env, gopath = machine(tmp_path, 'mkdir -p "$MERGO_GOPATH/src/github.com/imdario/mergo"; '
                                    'touch "$MERGO_GOPATH/src/github.com/imdario/mergo/merge.go"; '
                                    'printf "#!/bin/sh\\n" > "$(dirname "$0")/go"; chmod +x "$(dirname "$0")/go"')
    (Path(env["PATH"]) / "dirname").symlink_to(shutil.which("dirname"))
    (Path(env["PATH"]) / "printf").symlink_to(shutil.which("printf"))
    (Path(env["PATH"]) / "chmod").symlink_to(shutil.which("chmod"))
    proc = run(env)
    assert proc.returncode == 0 and proc.stderr.startswith(f"install_go_mergo: installed {PACKAGES} in "), proc.stderr


def test_a_skip_is_said_whenever_the_test_will_skip(tmp_path):
    """apt-get succeeds, but the mergo source is not where the test looks (MERGO_GOPATH): the test will skip, and
    the script says so, naming what is missing, even where Debian's own path holds it."""
    env, gopath = machine(tmp_path, "exit 0")
    (Path(env["PATH"]) / "go").write_text("#!/bin/sh\n")
    (Path(env["PATH"]) / "go").chmod(0o755)
    mergo = gopath / "src/github.com/imdario/mergo/merge.go"
    assert run(env).stderr == (f"install_go_mergo: apt-get installed {PACKAGES}, but they are not where the test "
                               f"looks; tests/test_backend_mergo.py will be skipped (missing: {mergo})\n")
