"""The corpus of bad profiles: each is rejected with exit 1, at the exact place, with the right words.

Each file in tests/bad_profiles/ starts with a comment header::

    # Bad: what is wrong.
    # expect: LINE:COLUMN PATH | key words | more key words

one ``expect`` line per error the file must produce (``PATH`` is ``-`` for errors that have none, such as
syntax errors). A file must produce exactly these errors, no more.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

from kfdefaults import ProfileError
from kfdefaults.api import validate_paths

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "bad_profiles")
FILES = sorted(f for f in os.listdir(CORPUS) if f.endswith((".yaml", ".yml", ".toml")))
_EXPECT = re.compile(r"# expect: (?P<line>\d+):(?P<column>\d+) (?P<path>\S+) \| (?P<words>.*)")


@dataclass
class Expected:
    line: int
    column: int
    path: str
    words: list[str]


def expectations(name: str) -> list[Expected]:
    with open(os.path.join(CORPUS, name), "rb") as f:
        header = f.read().decode("utf-8", errors="replace").splitlines()
    found = []
    for text in header:
        m = _EXPECT.fullmatch(text.strip())
        if m:
            path = "" if m.group("path") == "-" else m.group("path")
            found.append(Expected(int(m.group("line")), int(m.group("column")), path, m.group("words").split(" | ")))
    return found


def test_the_corpus_is_large_enough_and_every_file_says_what_it_expects():
    assert len(FILES) >= 40
    for name in FILES:
        assert expectations(name), f"{name} has no '# expect:' line"


@pytest.mark.parametrize("name", FILES)
def test_bad_profile_is_reported_at_its_place(name):
    path = os.path.join(CORPUS, name)
    report = validate_paths([path])
    expected = expectations(name)
    errors = report.errors
    assert len(errors) == len(expected), "\n".join(str(e) for e in errors)
    for want, got in zip(expected, errors):
        assert got.location.file == path
        assert (got.location.line, got.location.column) == (want.line, want.column), str(got)
        assert got.path == want.path, str(got)
        for words in want.words:
            assert words in got.message, f"{words!r} not in {got.message!r}"
        assert str(got).startswith(f"{path}:{want.line}:{want.column}: ")


@pytest.mark.parametrize("name", FILES)
def test_render_path_raises_only_profile_errors(name, tmp_path):
    """Loading the file as render does (a layer folder holding just it) fails with located ProfileErrors."""
    from kfdefaults.pipeline import Pipeline

    folder = tmp_path / "team"
    folder.mkdir()
    with open(os.path.join(CORPUS, name), "rb") as src:
        (folder / name).write_bytes(src.read())
    pipeline = Pipeline.discover(team=[str(folder)])
    profile = pipeline.catalog.names()
    target = next(n for n in profile if pipeline.catalog.files(n, "team"))
    with pytest.raises(ProfileError) as excinfo:
        pipeline.resolve(target)
    for finding in excinfo.value.findings:
        assert re.match(r".+:\d+:\d+: ", str(finding)), str(finding)


@pytest.mark.slow
def test_validate_reports_every_file_of_the_corpus_at_once():
    proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", "validate", CORPUS], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert proc.stdout == ""
    for name in FILES:
        for want in expectations(name):
            prefix = f"{os.path.join(CORPUS, name)}:{want.line}:{want.column}: "
            assert any(line.startswith(prefix) for line in proc.stderr.splitlines()), prefix


@pytest.mark.slow
@pytest.mark.parametrize("name", ["spec-many-errors.yaml", "yaml-python-tag.yaml", "rdzv-heartbeat.yaml",
                                  "spec-toml-quantity.toml"])
def test_render_exits_1_with_the_same_messages(name, tmp_path):
    folder = tmp_path / "team"
    folder.mkdir()
    with open(os.path.join(CORPUS, name), "rb") as src:
        (folder / name).write_bytes(src.read())
    stem = os.path.splitext(name)[0]
    proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", "render", stem, "--team", str(folder)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    for want in expectations(name):
        assert f"{folder / name}:{want.line}:{want.column}: " in proc.stderr
