"""Every example of the documentation site runs (docs/writing-docs.md says how each kind of block is run).

One test per page of docs/; a failure names the page and line. The tests of the runner itself are at the end:
an unmarked block, a wrong output and a profile marked invalid that validates must each fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_examples import DOCS, ExampleError, kind_of, parse_blocks, run_page

PAGES = sorted(DOCS.rglob("*.md"))


@pytest.fixture(autouse=True)
def _private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.setenv("KFDEFAULTS_CACHE_DIR", str(tmp_path_factory.mktemp("kfdefaults-cache")))


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
@pytest.mark.filterwarnings("ignore:Configuring shared memory:UserWarning")  # the plugin's, shown on purpose
def test_examples_of_the_page_run(page: Path, tmp_path: Path) -> None:
    run_page(page, tmp_path)


def test_no_page_skips_all_its_examples() -> None:
    """A page whose examples are all marked skip would be tested by nothing (a page of prose has no block)."""
    for page in PAGES:
        kinds = [kind_of(b) for b in parse_blocks(page)]
        assert not kinds or any(k != "skip" for k in kinds), f"{page}: no example of this page runs"


def run_text(tmp_path: Path, text: str) -> list:
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    work = tmp_path / f"work{len(list(tmp_path.glob('work*')))}"
    work.mkdir()
    return run_page(page, work)


def test_a_block_that_is_neither_run_nor_marked_fails(tmp_path: Path) -> None:
    with pytest.raises(ExampleError, match="not run"):
        run_text(tmp_path, "# Page\n\n```text\nsome output\n```\n")
    assert [k for _, k in run_text(tmp_path, "<!-- doc-test: skip: a log line -->\n```text\nlog\n```\n")] == ["skip"]


def test_a_skip_marker_needs_a_reason(tmp_path: Path) -> None:
    with pytest.raises(ExampleError, match="say why"):
        run_text(tmp_path, "<!-- doc-test: skip -->\n```text\nlog\n```\n")


def test_console_output_is_compared(tmp_path: Path) -> None:
    ok = "```console\n$ kfdefaults list\n...\ngpu-large            builtin  Multi-node GPU training...\n```\n"
    run_text(tmp_path, ok)
    with pytest.raises(ExampleError, match="printed something else"):
        run_text(tmp_path, "```console\n$ kfdefaults list\nno-such-profile\n```\n")


def test_a_failing_command_fails_unless_its_status_is_shown(tmp_path: Path) -> None:
    with pytest.raises(ExampleError, match="exited 1"):
        run_text(tmp_path, "```console\n$ kfdefaults render no-such-profile\n```\n")
    run_text(tmp_path, "```console\n$ kfdefaults render no-such-profile\n...\n$ echo $?\n1\n```\n")


def test_profiles_are_validated_and_invalid_ones_must_fail(tmp_path: Path) -> None:
    bad = "```yaml title=\"team/x.yaml\"\nelastic:\n  nproc_per_node: \"8\"\n```\n"
    with pytest.raises(ExampleError, match="rejects this profile"):
        run_text(tmp_path, bad)
    run_text(tmp_path, "<!-- doc-test: invalid -->\n" + bad)
    good = "```yaml title=\"team/x.yaml\"\nelastic:\n  nproc_per_node: 8\n```\n"
    with pytest.raises(ExampleError, match="marked invalid"):
        run_text(tmp_path, "<!-- doc-test: invalid -->\n" + good)


def test_doctests_and_modules_run(tmp_path: Path) -> None:
    with pytest.raises(ExampleError, match="doctest failed"):
        run_text(tmp_path, "```python\n>>> 1 + 1\n3\n```\n")
    with pytest.raises(ExampleError, match="ZeroDivisionError"):
        run_text(tmp_path, "```python\nx = 1 / 0\n```\n")


def test_installers_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ExampleError, match="would change this machine"):
        run_text(tmp_path, "```sh\npip install kfdefaults\n```\n")
