"""The documentation site builds with ``mkdocs build --strict``: a broken link or anchor, a page missing from the
navigation, or a docstring mkdocstrings cannot render fails the tests. The build imports neither flytekit nor
torch (the generated reference pages come from kfdefaults alone, and mkdocstrings reads the code statically).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

_BUILD = """
import runpy, sys
sys.argv = ["mkdocs", "build", "--strict", "--config-file", sys.argv[1], "--site-dir", sys.argv[2]]
try:
    runpy.run_module("mkdocs", run_name="__main__")
except SystemExit as e:
    code = e.code or 0
else:
    code = 0
# (griffe may look up the flytekitplugins namespace package, which runs no code: only its modules count)
heavy = sorted(m for m in sys.modules if m in ("torch", "flytekit") or m.startswith("flytekitplugins."))
if heavy:
    print("the build imported " + ", ".join(heavy), file=sys.stderr)
    code = code or 3
sys.exit(code)
"""


@pytest.mark.slow
def test_the_site_builds_strictly_without_importing_flytekit_or_torch(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "KFDEFAULTS_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("KFDEFAULTS_PLATFORM_PATH", None)
    env.pop("KFDEFAULTS_TEAM_PATH", None)
    proc = subprocess.run([sys.executable, "-c", _BUILD, str(REPO / "mkdocs.yml"), str(site)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "WARNING" not in log, log
    for page in ("index.html", "getting-started/index.html", "troubleshooting/index.html",
                 "reference/profile-file/index.html", "reference/cli/index.html", "reference/python-api/index.html",
                 "reference/builtin-profiles/index.html", "reference/kfdefaults.schema.json",
                 "cookbook/packaging/index.html"):
        assert (site / page).is_file(), page
    cli = (site / "reference/cli/index.html").read_text(encoding="utf-8")
    assert "kfdefaults validate" in cli and "--team-against" in cli  # the help of every command
    api = (site / "reference/python-api/index.html").read_text(encoding="utf-8")
    assert "strategic_merge_patch" in api and ":class:" not in api
    # a role's `~a.b.c` shows `c`, as in Sphinx; a literal `` is a docstring section mkdocstrings split mid-span
    assert "<code>~" not in api and "``" not in api


def _docs_hooks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "scripts" / "docs_hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_generated_reference_pages_are_committed_and_current() -> None:
    """The reference pages are files of the repository (readable in a clone and on the code host), and what the code
    generates now: `python scripts/docs_hooks.py` writes them again."""
    hooks = _docs_hooks()
    assert set(hooks.GENERATED) == {"reference/profile-file.md", "reference/builtin-profiles.md", "reference/cli.md",
                                    "reference/kfdefaults.schema.json"}
    assert hooks.stale() == [], "run `python scripts/docs_hooks.py` and commit the pages it writes"


def test_the_profile_file_reference_says_each_type_once() -> None:
    page = (REPO / "docs" / "reference" / "profile-file.md").read_text(encoding="utf-8")
    assert "or null" not in page  # every field may be null (it deletes): the page says so once, at the top
    assert "| `labels` | mapping of string to string | Pod labels. |" in page


def test_every_relative_link_of_the_docs_and_readme_names_a_file_of_the_repository() -> None:
    """A link works in a clone and on the code host as on the site: it names a file that is in the repository."""
    import re

    link = re.compile(r"\]\(([^)\s]+)\)")
    broken = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code is not a link
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in link.findall(text):
            path = target.split("#", 1)[0]
            if not path or re.match(r"[a-z]+:", path):
                continue
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert broken == []


def _blocks(text: str, language: str) -> list[str]:
    import re

    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.slow
def test_the_readmes_examples_run_as_written(tmp_path: Path) -> None:
    """Each `$ kfdefaults ...` line of the README's console blocks, run in an empty folder as a newcomer would
    (comments and all), and each Python example: none fails, none names a file the reader does not have."""
    import shlex

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    commands = [line[2:] for block in _blocks(readme, "console") for line in block.splitlines()
                if line.startswith("$ kfdefaults ")]
    assert len(commands) >= 8
    kfdefaults = str(Path(sys.executable).parent / "kfdefaults")
    for command in commands:
        argv = shlex.split(command, comments=True)
        proc = subprocess.run([kfdefaults, *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == (1 if argv[1] == "diff" else 0), (command, proc.stderr)  # diff: 1 is "different"
        assert proc.stdout, command
    for i, code in enumerate(_blocks(readme, "python")):
        (tmp_path / f"example{i}.py").write_text(code, encoding="utf-8")
        proc = subprocess.run([sys.executable, f"example{i}.py"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, (code, proc.stderr)


def test_the_install_advice_names_the_extras_that_exist_and_agrees() -> None:
    """The README and Getting started give one story: not on PyPI yet, the core without an SDK, an extra per SDK
    (each an extra of pyproject.toml)."""
    import re
    import tomllib

    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])
    pages = {name: (REPO / name).read_text(encoding="utf-8") for name in ("README.md", "docs/getting-started.md")}
    for name, text in pages.items():
        named = set(re.findall(r"kfdefaults\[([a-z0-9]+)\]", text)) | set(re.findall(r"'\.\[([a-z0-9]+)\]'", text))
        assert named and named <= extras, (name, named - extras)
        assert {"flytekit", "flyte2"} <= named, name
        assert "not on PyPI yet" in text, name
        assert "needs Python 3.9 or later, `flytekit`" not in text  # the core needs no SDK
