"""``render --explain`` on a real terminal (a pseudo-terminal of 80 to 200 columns): every value and origin in full."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios

import pytest
from conftest import PLATFORM, TEAM

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_terminal(columns: int, *args: str, stderr_too: bool = False) -> str:
    """What ``kfdefaults ARGS`` shows on a terminal ``columns`` wide (colours removed); standard error goes to
    the terminal too with ``stderr_too``."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update(TERM="xterm-256color")
    proc = subprocess.Popen([sys.executable, "-m", "kfdefaults.cli", *args], stdin=slave, stdout=slave,
                            stderr=slave if stderr_too else subprocess.DEVNULL, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # the other end closed
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return ANSI.sub("", b"".join(chunks).decode("utf-8").replace("\r\n", "\n"))


def explained(*args: str) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", "render", *args, "--explain", "-o", "json"],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)["leaves"]


ARGS = ("gpu-large", "--platform", PLATFORM, "--team", TEAM, "--set", "elastic.max_restarts=null")


@pytest.fixture(scope="module")
def leaves() -> list[dict]:
    return explained(*ARGS)


def where(origin: dict) -> tuple[str, str]:
    """The text the terminal shows of an origin: its layer, and FILE:LINE (the file shortened to its name, its
    folder given once at the top) or its label."""
    if origin["file"]:
        return origin["layer"], f"{os.path.basename(origin['file'])}:{origin['line']}"
    return origin["layer"], origin["label"]


@pytest.mark.slow
@pytest.mark.parametrize("columns", [80, 100, 120, 200])
def test_every_value_and_origin_is_on_the_terminal_in_full(columns, leaves):
    from kfdefaults.show.leaves import format_value

    screen = on_terminal(columns, "render", *ARGS, "--explain")
    assert "where each value comes from" in screen
    for folder in (PLATFORM, TEAM):
        assert folder in screen or os.path.relpath(folder) in screen  # each layer's folder, once
    lines = screen.splitlines()
    for leaf in leaves:
        shown = f"({leaf['items']} item{'s' * (leaf['items'] != 1)})" if leaf["status"] == "replaced" else format_value(leaf["value"])
        layer, at = where(leaf["set_by"])
        key = leaf["path"].rsplit("]", 1)[-1].rsplit(".", 1)[-1]
        holding = [i for i, line in enumerate(lines) if shown in line and (key in line or leaf["status"] == "replaced")]
        assert holding, (columns, leaf["path"], shown)
        # the origin is on the value's line or the next one
        assert any(f"{layer} {at}" in " ".join(lines[i:i + 2]) for i in holding), (columns, leaf["path"], layer, at)
        if leaf["status"] == "removed":
            by_layer, by_at = where(leaf["removed_by"])
            assert any(f"removed by {by_layer} {by_at}" in " ".join(lines[i:i + 2]) for i in holding), leaf["path"]


@pytest.mark.slow
def test_narrow_terminals_keep_lines_within_the_width_where_the_values_allow(leaves):
    screen = on_terminal(80, "render", *ARGS, "--explain")
    long_lines = [line for line in screen.splitlines() if len(line) > 80]
    # only a value that is itself longer than the terminal may overflow it
    assert all(any(len(part) > 60 for part in line.split(" = ", 1)[1:]) or len(line.split(" = ")[0]) > 60
               for line in long_lines), long_lines


def test_a_wide_terminal_gets_the_table():
    screen = on_terminal(500, "render", "gpu-large", "--explain")  # "set at" holds the checkout's full path
    assert re.search(r"path\s+[│┃]\s+value\s+[│┃]\s+layer\s+[│┃]\s+set at", screen), screen[:500]


@pytest.mark.slow
def test_a_list_replaced_whole_says_how_many_items_went_and_where():
    leaves = explained(*ARGS)
    [replaced] = [leaf for leaf in leaves if leaf["status"] == "replaced"]
    assert replaced["path"] == "pod_template.spec.tolerations" and replaced["items"] == 1
    assert replaced["set_by"]["layer"] == "builtin" and replaced["removed_by"]["layer"] == "platform"
    assert replaced["removed_by"]["file"].endswith("platform/gpu-large.yaml")
    screen = on_terminal(80, "render", *ARGS, "--explain")
    assert re.search(r"- \(1 item\) of builtin gpu-large\.yaml:\d+\s+replaced whole by platform gpu-large\.yaml:\d+", screen)
