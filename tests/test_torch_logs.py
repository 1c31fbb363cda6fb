"""``tests/torch_logs/`` (the logs of the real runs of ``torch_runs.SCENARIOS``, written by
``python tests/torch_runs.py --capture tests/torch_logs``) and ``docs/clocks-measured.md``, which quotes them: the
page shows the measured table of ``runs.json`` and quotes no log line that the captured logs do not hold."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from torch_runs import SCENARIOS, table

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "torch_logs"
PAGE = ROOT / "docs" / "clocks-measured.md"
QUOTE = re.compile(r"<!-- doc-test: skip: lines of (tests/torch_logs/[\w.-]+) -->\n```text\n(.*?)```", re.S)


def runs() -> dict:
    return json.loads((LOGS / "runs.json").read_text(encoding="utf-8"))


def test_every_scenario_was_captured_with_a_log_per_started_agent():
    captured = runs()
    assert list(captured["scenarios"]) == list(SCENARIOS)
    assert captured["torch"].startswith("2.13.")
    for name, run in captured["scenarios"].items():
        assert run["settings"] == SCENARIOS[name].settings(), name  # the logs are of today's catalogue
        for index, agent in enumerate(run["agents"]):
            assert (LOGS / f"{name}.agent{index}.stderr").exists() == agent["started"], (name, index)


def test_the_page_shows_the_measured_table():
    assert table(runs()) in PAGE.read_text(encoding="utf-8")


def test_the_page_has_a_section_per_scenario():
    page = PAGE.read_text(encoding="utf-8")
    for name in SCENARIOS:
        assert re.search(rf"^### .* {{#{re.escape(name)}}}$", page, re.M), name


def quoted_blocks() -> list[tuple[str, str]]:
    return QUOTE.findall(PAGE.read_text(encoding="utf-8"))


def test_the_page_quotes_logs():
    assert len(quoted_blocks()) >= len(SCENARIOS)


@pytest.mark.parametrize("log, block", quoted_blocks(), ids=[f"{log}:{i}" for i, (log, _) in enumerate(quoted_blocks())])
def test_each_quoted_line_is_a_line_of_its_log(log, block):
    """Every line of a quoted block is a whole line of the log, ``...`` standing for any text (a path, a pid, a
    port, a time): what a log classifier may match on is what torch printed."""
    lines = (ROOT / log).read_text(encoding="utf-8", errors="replace").splitlines()
    for quoted in block.splitlines():
        pattern = re.compile(".*".join(re.escape(part) for part in quoted.split("...")))
        assert any(pattern.fullmatch(line) for line in lines), f"{quoted!r} is not a line of {log}"
