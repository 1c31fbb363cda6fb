"""The documentation site builds with ``mkdocs build --strict``: a broken link or anchor, a page missing from the
navigation, or a docstring mkdocstrings cannot render fails the tests. The build imports neither flytekit nor
torch (the generated reference pages come from kfdefaults alone, and mkdocstrings reads the code statically).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def _docs_hooks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "scripts" / "docs_hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
