"""Text from a profile reaches a terminal or a log only as visible characters (kfdefaults.escape.printable).

Every key, value, file and folder name here is hostile: OSC 52 (the terminal writes the clipboard), ``ESC[2J``
(clear the screen), a C1 CSI, a carriage return that overwrites the line, a right-to-left override, and a line
break followed by ``::error ...::`` (a GitHub Actions workflow command, which the runner acts on at the start
of a line of the log). Each command is run as a user runs it, in its own process, piped or on a pseudo-terminal,
and what it prints is checked by a definition of "raw" written here, not by the code under test.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from cli_runner import unfold

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")

OSC52 = "\x1b]52;c;aGk=\x07"
CLEAR = "\x1b[2J"
FORGED = "\n::error file=x::forged"
HOSTILE = f"k{OSC52}{CLEAR}\x9b1m\r\u202e{FORGED}"
"""A key, value or name holding every kind of character a terminal or a CI log acts on."""

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
"""What must never be printed: C0 controls but tab and line feed, DEL, C1, the bidirectional marks, overrides and
isolates, zero-width characters, the line and paragraph separators, the byte-order mark."""

SGR = re.compile(r"\x1b\[[0-9;]*m")
"""rich's own colours on a terminal: the only escape sequences a command may write."""


def assert_shown_safely(text: str) -> None:
    """No raw control or format character (rich's colours aside), and no line that a GitHub runner would read as
    a workflow command; the hostile text is there, as escapes."""
    plain = SGR.sub("", text)
    assert not RAW.search(plain), [m.group() for m in RAW.finditer(plain)][:5]
    assert not re.search(r"^\s*::", plain, re.MULTILINE), plain
    assert "\t" not in plain


def run(*args: str, env: dict | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([KFDEFAULTS, *args], capture_output=True, text=True, env={**os.environ, **(env or {})},
                          cwd=cwd, timeout=300)


def on_terminal(*args: str, cwd: str | None = None) -> str:
    """What ``kfdefaults ARGS`` writes to a terminal 200 columns wide, standard error included, as it is."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 200, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update(TERM="xterm-256color")
    proc = subprocess.Popen([KFDEFAULTS, *args], stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                            close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 120)
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
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")  # the terminal's own line ends


def yaml_string(text: str) -> str:
    """``text`` as a YAML double-quoted scalar, written with escapes only (the file itself stays plain)."""
    return '"' + "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else f"\\U{ord(c):08x}"
                         for c in text) + '"'


@pytest.fixture(scope="module")
def team(tmp_path_factory) -> Path:
    """A team folder (itself named with ESC) of hostile profiles: ``p`` valid with hostile values and a hostile
    deprecation note, ``bad`` with a hostile unknown key, and a file whose name is hostile."""
    root = tmp_path_factory.mktemp("escaping")
    folder = root / f"team{CLEAR}"
    folder.mkdir()
    (folder / "p.yaml").write_text(
        f"description: {yaml_string('d' + HOSTILE)}\n"
        f"deprecated: {yaml_string('use q' + HOSTILE)}\n"
        "pod_template:\n  annotations:\n"
        f"    note: {yaml_string('v' + HOSTILE)}\n"
        f"    bare: {yaml_string('w' + CLEAR + OSC52 + 'w')}\n", encoding="utf-8")
    (folder / "bad.yaml").write_text(f"elastic:\n  {yaml_string(HOSTILE)}: 1\n", encoding="utf-8")
    (folder / f"n{CLEAR}{FORGED}.yaml").write_text("elastic: {nnodes: 1}\n", encoding="utf-8")
    return folder


ESCAPED_KEY = r"k\x1b]52;c;aGk=\x07\x1b[2J\x9b1m\r\u202e\n::error file=x::forged"
"""The hostile key as a message shows it."""


@pytest.mark.slow
def test_validate_names_a_hostile_key_and_file_name_with_escapes(team):
    proc = run("validate", str(team))
    assert proc.returncode == 1
    assert_shown_safely(proc.stdout + proc.stderr)
    lines = proc.stderr.splitlines()
    [bad] = [line for line in lines if "bad.yaml" in line]
    assert bad.startswith(str(team).replace(CLEAR, r"\x1b[2J") + "/bad.yaml:2:3: [team] elastic.")
    assert f'elastic."{ESCAPED_KEY}": unknown field `{ESCAPED_KEY}`' in bad
    [named] = [line for line in lines if "is not a profile name" in line]
    assert r"/n\x1b[2J\n::error file=x::forged.yaml:1:1: [team] the file name" in named
    assert lines[-1].startswith("kfdefaults validate: ")


@pytest.mark.slow
def test_render_errors_and_warnings_show_escapes(team):
    bad = run("render", "bad", "--team", str(team))
    assert bad.returncode == 1 and bad.stdout == ""
    assert_shown_safely(bad.stderr)
    assert ESCAPED_KEY in bad.stderr
    good = run("render", "p", "--team", str(team), "-o", "json")
    assert good.returncode == 0
    assert_shown_safely(good.stdout + good.stderr)
    assert r"is deprecated: use qk\x1b]52;c;aGk=\x07\x1b[2J\x9b1m\r\u202e\n::error file=x::forged" in unfold(good.stderr)
    # the data reads back as the file wrote it: JSON's own escapes
    import json

    assert json.loads(good.stdout)["pod_template"]["annotations"]["note"] == "v" + HOSTILE


def test_a_one_line_error_that_names_a_profile_shows_escapes(team):
    proc = run("render", f"x{CLEAR}{FORGED}", "--team", str(team))
    assert proc.returncode == 1
    assert_shown_safely(proc.stderr)
    assert r"kfdefaults: no profile named 'x\x1b[2J\n::error file=x::forged'" in proc.stderr


@pytest.mark.slow
def test_list_shows_descriptions_and_problems_with_escapes(team):
    piped = run("list", "--team", str(team))
    assert piped.returncode == 1
    assert_shown_safely(piped.stdout + piped.stderr)
    [row] = [line for line in piped.stdout.splitlines() if line.startswith("p ")]
    assert row.endswith(r"dk\x1b]52;c;aGk=\x07\x1b[2J\x9b1m\r\u202e\n::error file=x::forged (deprecated: use "
                        r"qk\x1b]52;c;aGk=\x07\x1b[2J\x9b1m\r\u202e\n::error file=x::forged)")
    table = on_terminal("list", "--team", str(team))
    assert_shown_safely(table)
    assert r"\x1b]52;c;aGk=\x07" in table


@pytest.mark.slow
def test_diff_text_table_and_explain_show_escapes(team):
    text = run("diff", "cpu-small", "p", "--team", str(team))
    assert text.returncode == 1
    assert_shown_safely(text.stdout + text.stderr)
    assert r'+ pod_template.annotations.note: "vk\u001b]52;c;aGk=\u0007\u001b[2J\u009b1m\r\u202e\n::error' in text.stdout
    # a value without whitespace is quoted too: it reads back as YAML, and a backslash in it is not an escape
    assert r'+ pod_template.annotations.bare: "w\u001b[2J\u001b]52;c;aGk=\u0007w"' in text.stdout
    for args in (("diff", "cpu-small", "p", "--team", str(team)), ("render", "p", "--team", str(team), "--explain")):
        shown = on_terminal(*args)
        assert_shown_safely(shown)
        assert r"\u001b]52;c;aGk=" in shown and r"\x1b[2J" in shown  # the value, and the folder's name
    explained = run("render", "p", "--team", str(team), "--explain")
    assert_shown_safely(explained.stdout + explained.stderr)
    assert str(team).replace(CLEAR, r"\x1b[2J") + "/p.yaml:5" in explained.stdout


@pytest.mark.slow
def test_verify_shows_the_live_object_and_the_profile_with_escapes(team, tmp_path):
    """A live Pod's name is the cluster's, the locations are the profile folder's: both hostile here."""
    pod = tmp_path / "pod.yaml"
    pod.write_text(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {yaml_string('pod' + HOSTILE)}}}\nspec:\n"
                   "  containers:\n    - {name: primary, image: a}\n", encoding="utf-8")
    proc = run("verify", str(pod), "--profile", "p", "--team", str(team))
    assert proc.returncode == 1
    assert_shown_safely(proc.stdout + proc.stderr)
    assert proc.stdout.startswith(r"Pod podk\x1b]52;c;aGk=\x07\x1b[2J\x9b1m\r\u202e\n::error file=x::forged: ")
    assert str(team).replace(CLEAR, r"\x1b[2J") + "/p.yaml:5" in proc.stdout


@pytest.mark.slow
def test_fields_names_an_unknown_key_with_escapes():
    proc = run("fields", f"pod_template.spec.x{OSC52}{FORGED}")
    assert proc.returncode == 1
    assert_shown_safely(proc.stderr)
    assert r"kfdefaults fields: PodSpec has no field `x\x1b]52;c;aGk=\x07\n::error file=x::forged`" in proc.stderr


def test_where_shows_folder_and_file_names_with_escapes(team):
    proc = run("where", "p", "--team", str(team))
    assert_shown_safely(proc.stdout + proc.stderr)
    assert r"team\x1b[2J" in proc.stdout and r"n\x1b[2J\n::error file=x::forged" in proc.stdout


@pytest.mark.slow
def test_python_warnings_and_errors_of_elastic_show_escapes(team):
    """``Elastic(profile=...)`` in a user's program: the deprecation warning (Python's warnings module prints it)
    and a ProfileError's traceback, both through the same rule."""
    code = ("import warnings\nwarnings.simplefilter('always')\nfrom kfdefaults import Elastic\nElastic(profile='p')\n"
            "Elastic(profile='bad')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "KFDEFAULTS_TEAM_PATH": str(team)})
    assert proc.returncode == 1
    assert_shown_safely(proc.stdout + proc.stderr)
    assert r"deprecated: warning: profile `p` is deprecated: use qk\x1b]52;c;aGk=\x07\x1b[2J" in proc.stderr
    # flytekit's rich traceback wraps long lines at spaces, and drops the space where it wraps
    unwrapped = "".join(proc.stderr.split())
    folder = str(team).replace(CLEAR, r"\x1b[2J")
    expected = f"ProfileError: {folder}/bad.yaml:2:3: [team] elastic.\"{ESCAPED_KEY}\""
    assert "".join(expected.split()) in unwrapped


# --- the rules themselves, for any text ---------------------------------------------------------------------

from hypothesis import example, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from budgets import examples  # noqa: E402
from hypothesis import settings  # noqa: E402

from kfdefaults.escape import code_span, fenced, printable, table_cell  # noqa: E402
from kfdefaults.paths import format_path, parse_path  # noqa: E402

TRICKY = "`" * 5 + " \n\r\t|\\<>*_#@[]()!&;:~-=.\"'\x00\x1b\x07\x7f\x9b\u00a0\u200b\u202e\u2028\u2066\ufeff\uff40\U000e0001"
texts = st.text(st.one_of(st.sampled_from(TRICKY), st.characters()), max_size=40)
"""Strings weighted to what Markdown and terminals read: backtick runs, spaces at the ends, line breaks, pipes,
backslashes, HTML, controls, format characters; a fullwidth backtick (U+FF40), which CommonMark does not fence."""


@pytest.mark.slow
@settings(max_examples=examples(300))
@given(texts)
@example("`" * 10_000)
@example(" ")
@example("  `  ")
@example("a\\|b")
def test_printable_leaves_no_character_a_terminal_acts_on(text):
    shown = printable(text)
    assert not RAW.search(shown) and "\n" not in shown and "\t" not in shown
    assert printable(shown) == shown
    if text.isprintable():
        assert shown == text  # what Python calls printable keeps its characters


@pytest.mark.slow
@settings(max_examples=examples(300))
@given(st.text(st.one_of(st.sampled_from(TRICKY), st.characters()), min_size=1, max_size=40))
@example("`" * 10_000)
@example("`")
@example(" `` ")
@example("  ")
@example("\uff40x\uff40")
def test_a_code_span_is_one_code_span_of_the_text(text):
    """Wherever it stands in a paragraph, :func:`code_span` is exactly one code span whose content is the text as a
    terminal shows it (``\\n`` for a line break: CommonMark would make it a space, and a table row ends there)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True})
    for before, after in (("", " could not be compared:"), ("x ", " y"), ("**kfdefaults diff** ", " → `b`")):
        children = md.parse(before + code_span(text) + after)[1].children
        spans = [c for c in children if c.type == "code_inline"]
        assert spans[0].content == printable(text), (text, children)
        assert len(spans) == (2 if "`b`" in after else 1)
        assert {c.type for c in children} <= {"text", "code_inline", "strong_open", "strong_close"}


@pytest.mark.slow
@settings(max_examples=examples(300))
@given(st.text(st.one_of(st.sampled_from(TRICKY), st.characters()), min_size=1, max_size=40))
@example("a\\|b")
@example("\\\\|")
@example("|")
@example("`|`")
def test_a_table_cell_is_one_code_span_and_keeps_the_row(text):
    """In a GFM table: one cell, one code span, the text as :func:`printable` shows it (a backslash right before
    a pipe written ``\\x5c``), and the row keeps its cells."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    tokens = md.parse(f"| a | b | c |\n|---|---|---|\n| + | {table_cell(text)} | {table_cell(text)} |\n")
    assert [t.type for t in tokens].count("td_open") == 3
    cells = [t for t in tokens if t.type == "inline"][3:]
    for cell in cells[1:]:
        [span] = cell.children
        assert span.type == "code_inline" and span.content == printable(text).replace("\\|", "\\x5c|")


@pytest.mark.slow
@settings(max_examples=examples(300))
@given(texts)
@example("```")
@example("x\n````\n~~~\n  ```` \n`")
@example("`" * 10_000)
def test_a_fenced_block_holds_the_text_and_nothing_closes_it_early(text):
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark", {"html": True}).parse(fenced(text) + "\n\nafter @someone")
    assert [t.type for t in tokens] == ["fence", "paragraph_open", "inline", "paragraph_close"]
    assert tokens[0].content == "\n".join(printable(line) for line in text.split("\n")) + "\n"
    assert tokens[2].content == "after @someone"


@settings(max_examples=examples(300))
@given(st.text(st.one_of(st.sampled_from(TRICKY + '."[]='), st.characters()), min_size=1, max_size=20))
@example("\\x1b")
@example("a\x1bb")
def test_a_path_is_printable_and_reads_back_as_its_keys(key):
    path = format_path(("pod_template", "labels", key))
    assert printable(path) == path
    assert parse_path(path) == ["pod_template", "labels", key]
