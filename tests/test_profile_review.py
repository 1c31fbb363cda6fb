"""The pull-request comment of the GitHub Action (scripts/profile_review.py), against a stand-in for GitHub's API.

The API is served over HTTP on this machine, answering as GitHub's REST API does for the calls the script makes
(list an issue's comments, create one, edit one), and recording every request.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "profile_review.py"
KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")


class FakeGitHub(http.server.ThreadingHTTPServer):
    """GitHub's issue-comment API for one repository, held in memory."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.comments: list[dict] = []
        self.requests: list[tuple[str, str, dict | None]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: FakeGitHub

    def log_message(self, *args) -> None:  # quiet
        pass

    def _answer(self, code: int, payload) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict | None:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length)) if length else None

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.server.requests.append(("GET", self.path, None))
        assert self.headers["Authorization"] == "Bearer t0ken"
        from urllib.parse import parse_qs, urlsplit

        page = int(parse_qs(urlsplit(self.path).query).get("page", ["1"])[0])
        self._answer(200, self.server.comments[(page - 1) * 100:page * 100])

    def do_POST(self) -> None:  # noqa: N802
        body = self._body()
        self.server.requests.append(("POST", self.path, body))
        comment = {"id": 1000 + len(self.server.comments), "body": body["body"],
                   "user": {"login": "github-actions[bot]", "type": "Bot"}}
        self.server.comments.append(comment)
        self._answer(201, comment)

    def do_PATCH(self) -> None:  # noqa: N802
        body = self._body()
        self.server.requests.append(("PATCH", self.path, body))
        number = int(self.path.rsplit("/", 1)[1])
        for comment in self.server.comments:
            if comment["id"] == number:
                comment["body"] = body["body"]
                return self._answer(200, comment)
        self._answer(404, {"message": "Not Found"})


@pytest.fixture
def github():
    server = FakeGitHub()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def init(repo: Path) -> None:
    """A new git repository at ``repo``, with an author for its commits."""
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "ci@example.com")
    git(repo, "config", "user.name", "CI")


def dry_run(repo: Path, base: str, *args: str) -> subprocess.CompletedProcess:
    """The review of ``repo`` against ``base`` (``--dry-run``: the comment printed), as the Action runs it; a
    review that hangs fails the test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KFDEFAULTS_", "GITHUB_"))}
    env["KFDEFAULTS_NO_ENTRY_POINTS"] = "1"
    return subprocess.run([sys.executable, str(SCRIPT), *args, "--kfdefaults", KFDEFAULTS, "--base", base,
                           "--dry-run"], cwd=repo, capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str]:
    """A team repository with two commits: the base, and a change to gpu-large that also changes its child."""
    repo = tmp_path / "repo"
    (repo / "profiles").mkdir(parents=True)
    init(repo)
    (repo / "profiles" / "gpu-large.yaml").write_text("pod_template:\n  labels: {team: vision}\n", encoding="utf-8")
    (repo / "profiles" / "child.yaml").write_text("extends: gpu-large\nelastic: {nnodes: 1, run_policy: null}\n")
    (repo / "profiles" / "quiet.yaml").write_text("elastic: {max_restarts: 1}\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "profiles" / "gpu-large.yaml").write_text("pod_template:\n  labels: {team: detection}\n", encoding="utf-8")
    git(repo, "commit", "-qam", "change")
    return repo, base


def run(repo: Path, base: str, github: FakeGitHub, *args: str) -> subprocess.CompletedProcess:
    event = repo.parent / "event.json"
    event.write_text(json.dumps({"number": 7, "pull_request": {"number": 7, "base": {"sha": base}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KFDEFAULTS_", "GITHUB_"))}
    env.update(GITHUB_EVENT_PATH=str(event), GITHUB_REPOSITORY="acme/profiles", GITHUB_TOKEN="t0ken",
               GITHUB_API_URL=github.url, GITHUB_STEP_SUMMARY=str(repo.parent / "summary.md"))
    return subprocess.run([sys.executable, str(SCRIPT), "--folder", "profiles", "--kfdefaults", KFDEFAULTS, *args],
                          cwd=repo, capture_output=True, text=True, env=env)


@pytest.mark.slow
def test_one_comment_with_each_changed_profile_then_edited_not_posted_again(repo, github):
    repo_path, base = repo
    first = run(repo_path, base, github)
    assert first.returncode == 0, first.stderr
    assert [(m, p) for m, p, _ in github.requests] == [
        ("GET", "/repos/acme/profiles/issues/7/comments?per_page=100&page=1"),
        ("POST", "/repos/acme/profiles/issues/7/comments")]
    [comment] = github.comments
    body = comment["body"]
    assert body.startswith("<!-- kfdefaults profile review -->")
    # the changed file, and the profile that extends it, each with its table; the unchanged one counted
    assert "**kfdefaults diff** `gpu-large (before)` → `gpu-large (after)`: 1 difference." in body
    assert "**kfdefaults diff** `child (before)` → `child (after)`: 1 difference." in body
    assert "| ~ | `pod_template.labels.team` | `vision` | `detection` |" in body
    assert "quiet" not in body.split("<sub>")[0] and "1 profile unchanged" in body
    assert (repo_path.parent / "summary.md").read_text().startswith("<!-- kfdefaults profile review -->")

    (repo_path / "profiles" / "gpu-large.yaml").write_text("pod_template:\n  labels: {team: vision}\n")  # reverted
    second = run(repo_path, base, github)
    assert second.returncode == 0, second.stderr
    assert [m for m, _, _ in github.requests[2:]] == ["GET", "PATCH"]
    assert github.requests[-1][1] == f"/repos/acme/profiles/issues/comments/{comment['id']}"
    assert len(github.comments) == 1 and "No profile's merged result changes." in github.comments[0]["body"]


@pytest.mark.slow
def test_no_change_and_no_comment_yet_posts_nothing(repo, github):
    repo_path, _ = repo
    head = git(repo_path, "rev-parse", "HEAD")
    proc = run(repo_path, head, github)
    assert proc.returncode == 0, proc.stderr
    assert [m for m, _, _ in github.requests] == ["GET"] and github.comments == []


@pytest.mark.slow
def test_a_broken_profile_is_in_the_comment_and_fails_the_job(repo, github):
    repo_path, base = repo
    (repo_path / "profiles" / "quiet.yaml").write_text("elastic: {max_restarts: -1}\n")
    proc = run(repo_path, base, github)
    assert proc.returncode == 1
    body = github.comments[0]["body"]
    assert "`quiet` could not be compared:" in body and "quiet.yaml:1:25:" in body


@pytest.mark.slow
def test_a_new_and_a_deleted_profile_are_compared_with_nothing(repo, github):
    repo_path, base = repo
    (repo_path / "profiles" / "quiet.yaml").unlink()
    (repo_path / "profiles" / "fresh.toml").write_text("[elastic]\nnproc_per_node = 2\n")
    proc = run(repo_path, base, github, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "`quiet (before)` → `quiet (after): absent`" in proc.stdout
    assert "`fresh (before): absent` → `fresh (after)`" in proc.stdout
    assert github.requests == []  # --dry-run posts nothing


@pytest.mark.slow
def test_github_refusing_is_a_clear_error(repo, github):
    repo_path, base = repo
    event = repo_path.parent / "event.json"
    event.write_text("{}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KFDEFAULTS_", "GITHUB_"))}
    env.update(GITHUB_EVENT_PATH=str(event))
    proc = subprocess.run([sys.executable, str(SCRIPT), "--folder", "profiles", "--base", base, "--kfdefaults",
                           KFDEFAULTS], cwd=repo_path, capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and "posting needs a pull_request event" in proc.stderr


def test_the_action_runs_the_script_it_ships():
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    script = [step["run"] for step in action["runs"]["steps"] if "profile_review.py" in step.get("run", "")]
    assert script and '"${{ github.action_path }}/scripts/profile_review.py"' in script[0]
    assert set(action["inputs"]) >= {"folders", "layer", "github-token"}


# --- a hostile pull request: the comment holds no Markdown or HTML that the profile text did not come with ------

HOSTILE_VALUES = [
    "`<img src=x onerror=alert(1)>`",
    "a``<img src=x onerror=alert(1)>``**bold**",
    "```\n## Approved by @security-team\n```",
    "``",
    "`" * 40,
    "x\\|<img src=x onerror=alert(2)>|**bold**",
    "@security-team **bold** <img src=x onerror=alert(3)>",
    "line\n## Approved by @security-team\r\n| a | b |",
]
"""Values of the head's profile: backtick runs of 1, 2, 3 and 40 followed by HTML, emphasis, a heading and an
@-mention; a backslash before a table's pipe; line breaks inside a table cell."""

HOSTILE_FILES = ["--help.yaml", "-h.yaml", "a`b.yaml", "<b>x<b>.yaml", "<img src=x onerror=alert(4)>.yaml"]
"""Files the head adds (and the first two the base already has): option-like names, a backtick, HTML. A file name
holds no ``/``, so ``<b>x</b>.yaml`` cannot exist: ``<b>x<b>`` opens the same element."""

MARKERS = ("onerror", "security-team", "bold", "Approved", "<b>", "<img")
"""Text that exists in the repository only: wherever the comment holds it, it must be code."""

OURS_HTML = {"<!-- kfdefaults profile review -->\n", "<sub>", "</sub>"}


@pytest.fixture
def hostile(tmp_path) -> tuple[Path, str]:
    """A team repository whose head commit is a hostile pull request: values, a key and file names chosen to
    forge the comment."""
    repo = tmp_path / "repo"
    profiles = repo / "profiles"
    profiles.mkdir(parents=True)
    init(repo)
    (profiles / "hostile.yaml").write_text("pod_template:\n  annotations:\n    note: base\n", encoding="utf-8")
    (profiles / "broken.yaml").write_text("elastic: {nnodes: 1}\n", encoding="utf-8")
    for name in HOSTILE_FILES[:2]:
        (profiles / name).write_text("elastic: {nnodes: 1}\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    annotations = "".join(f"    n{i}: {json.dumps(value)}\n" for i, value in enumerate(HOSTILE_VALUES))
    (profiles / "hostile.yaml").write_text(f"pod_template:\n  annotations:\n{annotations}", encoding="utf-8")
    key = json.dumps("x\n```\n## Approved by @security-team\n<img src=x onerror=alert(5)>\n~~~")
    (profiles / "broken.yaml").write_text(f"elastic:\n  {key}: 1\n", encoding="utf-8")
    for name in HOSTILE_FILES:
        (profiles / name).write_text("elastic: {nnodes: 2}\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hostile head")
    return repo, base


def flat(tokens) -> list:
    """Every token of a markdown-it stream, the inline ones' children in place."""
    out = []
    for token in tokens:
        out.append(token)
        out += flat(token.children or [])
    return out


@pytest.mark.slow
def test_a_hostile_pull_request_cannot_forge_the_comment(hostile, github):
    """The comment, read by a CommonMark parser with HTML on (as GitHub renders it, tables included), holds the
    hostile text only as code: no image, emphasis, heading, link or raw HTML of the repository's, no @-mention
    outside code, no table row broken by a value; and the option-like file names were compared, not taken for
    options."""
    from markdown_it import MarkdownIt

    repo_path, base = hostile
    proc = dry_run(repo_path, base, "--folder", "profiles")
    assert proc.returncode == 1, proc.stderr  # the broken key and the file names are errors
    body = proc.stdout
    assert github.requests == []
    for parser in (MarkdownIt("commonmark", {"html": True}), MarkdownIt("commonmark", {"html": True}).enable("table")):
        tokens = flat(parser.parse(body))
        kinds = {t.type for t in tokens}
        assert not kinds & {"image", "link_open", "em_open", "html_inline_open", "code_block", "hr", "blockquote_open",
                            "bullet_list_open", "ordered_list_open"}, kinds
        assert [t.tag for t in tokens if t.type == "heading_open"] == ["h3"]
        strong = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "strong_open"]
        assert strong and set(strong) == {"kfdefaults diff"}
        assert {t.content for t in tokens if t.type in ("html_inline", "html_block")} <= OURS_HTML
        for t in tokens:  # the repository's text is code, wherever it is
            if t.type not in ("code_inline", "fence", "inline"):
                assert not any(m in t.content for m in MARKERS), (t.type, t.content)
        html = parser.render(body)
        outside = re.sub(r"<code>.*?</code>|<pre>.*?</pre>", "", html, flags=re.DOTALL)
        assert not re.search(r"<(img|em|a|b|h1|h2|h4|h5|h6)\b", outside), outside
        assert "@security-team" not in outside and "onerror" not in outside
        if "table_open" in kinds:
            rows = [t for t in tokens if t.type == "tr_open"]
            cells = [t for t in tokens if t.type in ("td_open", "th_open")]
            assert len(rows) == 1 + len(HOSTILE_VALUES) + 1 and len(cells) == 5 * len(rows)  # `note` removed
            code = {t.content for t in tokens if t.type == "code_inline"}
            for value in HOSTILE_VALUES:  # each value whole in one code span of its cell, as diff quotes it
                assert json.dumps(value).replace("\\|", "\\x5c|") in code, value
    fences = [t for t in flat(MarkdownIt("commonmark").parse(body)) if t.type == "fence"]
    assert any("## Approved by @security-team" in t.content and "broken.yaml:2:3:" in t.content for t in fences)
    for name in ("--help", "-h"):  # compared (a bad file name is an error), not the usage printed and "unchanged"
        assert any(f"/{name}.yaml:1:1: [team] the file name `{name}` is not a profile name" in t.content
                   for t in fences), name
    assert "usage:" not in body and "0 profiles unchanged" in body


def test_error_text_stays_inside_its_block_whatever_the_command_prints(repo, tmp_path):
    """What ``kfdefaults diff`` says when it cannot compare goes into a fenced block that no line of it closes:
    here a stand-in command (an older kfdefaults, say) prints fences of both kinds, a heading and HTML."""
    from markdown_it import MarkdownIt

    repo_path, base = repo
    said = "a.yaml:1:1: bad\n```\n## Approved by @security-team\n~~~\n````` <img src=x onerror=alert(1)>\n\x1b[2J"
    (tmp_path / "said.txt").write_text(said + "\n", encoding="utf-8")
    command = tmp_path / "kfdefaults"
    command.write_text(f"#!/bin/sh\ncat '{tmp_path / 'said.txt'}' >&2\nexit 2\n", encoding="utf-8")
    command.chmod(0o755)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--folder", "profiles", "--kfdefaults", str(command),
                           "--base", base, "--dry-run"], cwd=repo_path, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    tokens = MarkdownIt("commonmark", {"html": True}).parse(proc.stdout)
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 3  # child, gpu-large, quiet: each could not be compared
    shown = said.replace("\x1b", "\\x1b")
    assert all(t.content == shown + "\n" and t.info == "text" for t in fences)
    assert [t.tag for t in tokens if t.type == "heading_open"] == ["h3"]
    assert not [t for t in tokens if t.type == "html_block" and "onerror" in t.content]


@pytest.mark.slow
def test_a_comment_that_only_looks_like_the_review_is_never_edited(repo, github):
    """The pull request's author posts the marker in a comment of their own: the bot would otherwise edit it, and its
    review would stand under the author's name (or be lost). Only the bot's own comment is the review."""
    repo_path, base = repo
    github.comments.append({"id": 1, "body": "<!-- kfdefaults profile review -->\nLGTM, nothing changes",
                            "user": {"login": "mallory", "type": "User"}})
    proc = run(repo_path, base, github)
    assert proc.returncode == 0, proc.stderr
    assert [m for m, _, _ in github.requests] == ["GET", "POST"]
    assert github.comments[0]["body"].endswith("LGTM, nothing changes")
    assert "`gpu-large (before)`" in github.comments[1]["body"]
    run(repo_path, base, github)
    assert [m for m, _, _ in github.requests[2:]] == ["GET", "PATCH"]
    assert github.requests[-1][1].endswith(f"/comments/{github.comments[1]['id']}")


@pytest.mark.slow
def test_a_review_longer_than_github_takes_is_cut_to_fit_and_says_so(repo, github):
    """GitHub refuses a comment body over 65,536 characters: the review would be lost (the old one kept). It lists
    what fits, says how many more there are, and the job's summary holds them all."""
    repo_path, base = repo
    big = "".join(f"    k{i:04d}: {'v' * 60}\n" for i in range(150))
    for n in range(6):
        (repo_path / "profiles" / f"big-{n}.yaml").write_text("pod_template:\n  labels:\n" + big.replace("v" * 60, "a" * 60))
    git(repo_path, "add", "-A")
    git(repo_path, "commit", "-qm", "big profiles")
    new_base = git(repo_path, "rev-parse", "HEAD")
    for n in range(6):
        (repo_path / "profiles" / f"big-{n}.yaml").write_text("pod_template:\n  labels:\n" + big)
    proc = run(repo_path, new_base, github)
    assert proc.returncode == 0, proc.stderr
    body = github.comments[-1]["body"]
    summary = (repo_path.parent / "summary.md").read_text()
    assert len(body) <= 65536 < len(summary)
    assert re.search(r"\d+ more profiles changed or could not be compared: the job's summary lists every one", body)
    assert summary.count("**kfdefaults diff**") == 6 > body.count("**kfdefaults diff**") >= 1


@pytest.mark.slow
def test_the_cluster_files_beside_a_platform_folder_s_profiles_are_not_compared_as_profiles(tmp_path):
    """A platform folder holds the cluster's PodTemplate and facts beside its profiles (and a team folder may be
    the project's, with its pyproject.toml): they are no profiles, and comparing them as such failed every review
    of a platform repository."""
    repo = tmp_path / "repo"
    (repo / "platform").mkdir(parents=True)
    init(repo)
    (repo / "platform" / "a.yaml").write_text("elastic: {nnodes: 2}\n", encoding="utf-8")
    (repo / "platform" / "_cluster-facts.yaml").write_text("node_start: {typical: 90, worst: 600}\n")
    (repo / "platform" / "_cluster-template.yaml").write_text(
        "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: t}\ntemplate:\n  spec:\n"
        "    containers: [{name: default, image: x}]\n", encoding="utf-8")
    (repo / "platform" / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "platform" / "a.yaml").write_text("elastic: {nnodes: 4}\n", encoding="utf-8")
    proc = dry_run(repo, base, "--folder", "platform", "--layer", "platform")
    assert proc.returncode == 0, proc.stdout
    assert "could not be compared" not in proc.stdout and "_cluster" not in proc.stdout
    assert "| ~ | `elastic.nnodes` | `2` | `4` |" in proc.stdout


@pytest.mark.slow
def test_a_platform_change_is_not_hidden_by_team_folders_the_pull_request_declares(tmp_path):
    """The head adds a team folder to the repository's pyproject.toml whose profile sets back every value the
    platform change sets: laid over both sides, it made the change look like none. A platform folder is compared
    without the team layer, as ``validate --layer platform`` checks it."""
    repo = tmp_path / "repo"
    (repo / "platform").mkdir(parents=True)
    init(repo)
    (repo / "platform" / "a.yaml").write_text("elastic: {nnodes: 2, max_restarts: 3}\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "platform" / "a.yaml").write_text("elastic: {nnodes: 16, max_restarts: 100}\n", encoding="utf-8")
    (repo / "mask").mkdir()
    (repo / "mask" / "a.yaml").write_text("elastic: {nnodes: 2, max_restarts: 3}\n", encoding="utf-8")
    (repo / "pyproject.toml").write_text('[tool.kfdefaults]\nteam = ["mask"]\n', encoding="utf-8")
    proc = dry_run(repo, base, "--folder", "platform", "--layer", "platform")
    assert proc.returncode == 0, proc.stdout
    assert "No profile's merged result changes" not in proc.stdout
    assert "| ~ | `elastic.nnodes` | `2` | `16` | platform `platform/a.yaml:1` |" in proc.stdout
    assert "| ~ | `elastic.max_restarts` | `3` | `100` |" in proc.stdout


@pytest.mark.slow
def test_what_both_sides_are_compared_under_is_named_when_the_change_edits_it(tmp_path):
    """The head adds a platform folder through the project's `[tool.kfdefaults]`, raising what the team's profile
    extends: `diff` reads the project as it is now on both sides, so the team folder's profiles compare equal. The
    comment names the files both sides were compared under that the change edits; an edit of `pyproject.toml`
    outside `[tool.kfdefaults]` is not one."""
    repo = tmp_path / "repo"
    (repo / "profiles").mkdir(parents=True)
    init(repo)
    (repo / "profiles" / "train.yaml").write_text("extends: gpu-large\nelastic: {max_restarts: 1}\n", encoding="utf-8")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '1'\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")

    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '2'\n", encoding="utf-8")
    git(repo, "commit", "-qam", "a version")
    proc = dry_run(repo, base, "--folder", "profiles")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Not in the differences below" not in proc.stdout and "No profile's merged result changes." in proc.stdout
    (repo / "shared").mkdir()
    (repo / "shared" / "gpu-large.yaml").write_text("elastic: {nnodes: 16}\n", encoding="utf-8")
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '2'\n\n[tool.kfdefaults]\n"
                                         'platform = ["shared"]\n', encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a platform of our own")
    proc = dry_run(repo, base, "--folder", "profiles")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No profile's merged result changes." in proc.stdout  # both sides read the new platform
    assert ("**Not in the differences below**: this change also edits what both sides are compared under (the "
            "project's `[tool.kfdefaults]`, the platform layer's folders, the cluster's files), so what that does to "
            "the tasks is in neither side: `pyproject.toml`, `shared/gpu-large.yaml`.") in proc.stdout


def shared_platform(tmp_path: Path) -> tuple[Path, str]:
    """A team repository whose ``pyproject.toml`` names a platform folder of its own, ``shared``, that its profile
    extends; committed as the base."""
    repo = tmp_path / "repo"
    (repo / "profiles").mkdir(parents=True)
    (repo / "shared").mkdir()
    init(repo)
    (repo / "profiles" / "train.yaml").write_text("extends: gpu-large\n", encoding="utf-8")
    (repo / "shared" / "gpu-large.yaml").write_text("elastic: {nnodes: 2}\n", encoding="utf-8")
    (repo / "pyproject.toml").write_text('[tool.kfdefaults]\nplatform = ["shared"]\n', encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo, git(repo, "rev-parse", "HEAD")


@pytest.mark.slow
@pytest.mark.parametrize("hostile", ["pipe", "nested"])
def test_a_pyproject_toml_the_change_edits_is_read_within_kfdefaults_bounds(tmp_path, hostile):
    """Whether an edited ``pyproject.toml`` changes ``[tool.kfdefaults]`` is read as kfdefaults reads a project: a
    link named ``pyproject.toml`` in a platform folder to a pipe (or ``/dev/zero``) hung the review, and values
    nested past what Python's TOML reader recurses through ended it with a traceback."""
    repo, base = shared_platform(tmp_path)
    if hostile == "pipe":
        os.mkfifo(tmp_path / "pipe")
        (repo / "shared" / "pyproject.toml").symlink_to(tmp_path / "pipe")
    else:
        (repo / "pyproject.toml").write_text('[tool.kfdefaults]\nplatform = ["shared"]\nx = ' + "[" * 5000
                                             + "]" * 5000 + "\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hostile")
    proc = dry_run(repo, base, "--folder", "profiles")
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stdout + proc.stderr
    if hostile == "pipe":  # no project file kfdefaults reads: a profile folder's pyproject.toml is none
        assert proc.returncode == 0 and "No profile's merged result changes." in proc.stdout, proc.stderr
    else:  # a broken [tool.kfdefaults] is an edit to show
        assert "**Not in the differences below**" in proc.stdout and "values nest deeper than" in proc.stdout


@pytest.mark.slow
def test_a_change_that_edits_thousands_of_shared_files_still_fits_in_a_comment(tmp_path):
    """The note names each file both sides are compared under that the change edits, and a platform folder may hold
    thousands: named whole, the comment was longer than GitHub takes and the review was lost. It names what fits
    and counts the rest."""
    repo, base = shared_platform(tmp_path)
    for i in range(2000):
        (repo / "shared" / f"notes-{'x' * 40}-{i:04d}.txt").write_text("\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many files")
    proc = dry_run(repo, base, "--folder", "profiles")
    assert proc.returncode == 0, proc.stderr
    body = proc.stdout.rstrip("\n")
    assert len(body) <= 65536
    assert re.search(r"`shared/notes-x+-\d{4}\.txt` and \d+ more files\.\n", body)
    assert "No profile's merged result changes." in body


@pytest.mark.slow
@pytest.mark.parametrize("links", [["plat"], ["plat", "mid"]])
def test_a_link_the_change_points_elsewhere_is_named(tmp_path, links):
    """The project's platform folder is a link (or a link to a link) the change points at another folder: the file
    it reaches is unchanged, the link is what is edited, and the review said no profile changed with no note."""
    repo = tmp_path / "repo"
    (repo / "profiles").mkdir(parents=True)
    init(repo)
    (repo / "profiles" / "train.yaml").write_text("extends: gpu-large\n", encoding="utf-8")
    for folder, nnodes in (("small", 2), ("large", 16)):
        (repo / folder).mkdir()
        (repo / folder / "gpu-large.yaml").write_text(f"elastic: {{nnodes: {nnodes}}}\n", encoding="utf-8")
    for link, target in zip(links, links[1:] + ["small"]):
        (repo / link).symlink_to(target)
    (repo / "pyproject.toml").write_text('[tool.kfdefaults]\nplatform = ["plat"]\n', encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / links[-1]).unlink()
    (repo / links[-1]).symlink_to("large")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "another platform through the same name")
    proc = dry_run(repo, base, "--folder", "profiles")
    assert proc.returncode == 0, proc.stderr
    assert f"so what that does to the tasks is in neither side: `{links[-1]}`." in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("compared", ["profiles", "."])
def test_what_both_sides_read_inside_a_compared_team_folder_is_named(tmp_path, compared):
    """Each side reads only the profiles of its own copy of a compared team folder: a platform folder inside it, or
    the project's pyproject.toml when the team folder is the repository's top, is read as the change leaves it on
    both sides, and was left out of the note as if compared."""
    repo = tmp_path / "repo"
    shared = "profiles/shared" if compared == "profiles" else "shared"
    (repo / shared).mkdir(parents=True)
    init(repo)
    (repo / compared / "train.yaml").write_text("extends: gpu-large\n", encoding="utf-8")
    (repo / shared / "gpu-large.yaml").write_text("elastic: {nnodes: 2}\n", encoding="utf-8")
    (repo / "pyproject.toml").write_text(f'[tool.kfdefaults]\nplatform = ["{shared}"]\n' if compared == "profiles"
                                         else "[project]\nname = 'x'\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    if compared == "profiles":
        (repo / shared / "gpu-large.yaml").write_text("elastic: {nnodes: 16}\n", encoding="utf-8")
    else:
        (repo / "pyproject.toml").write_text(f'[tool.kfdefaults]\nplatform = ["{shared}"]\n', encoding="utf-8")
    git(repo, "commit", "-qam", "a platform change")
    proc = dry_run(repo, base, "--folder", compared)
    assert proc.returncode == 0, proc.stderr
    named = "profiles/shared/gpu-large.yaml" if compared == "profiles" else "pyproject.toml"
    assert f"so what that does to the tasks is in neither side: `{named}`." in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("gone", ["deleted", "a folder"])
def test_a_project_file_the_change_removes_is_named(tmp_path, gone):
    """The change deletes the project's pyproject.toml (or puts a folder in its place), and with it the platform
    folder it declared: kfdefaults finds no project on either side, and the note, made of what is found now, named
    nothing while every task changed."""
    repo, base = shared_platform(tmp_path)
    git(repo, "rm", "-q", "pyproject.toml")
    if gone == "a folder":
        (repo / "pyproject.toml").mkdir()
        (repo / "pyproject.toml" / "notes.txt").write_text("\n", encoding="utf-8")
        git(repo, "add", "-A")
    git(repo, "commit", "-qm", "no project")
    proc = dry_run(repo, base, "--folder", "profiles")
    assert proc.returncode == 0, proc.stderr
    assert "so what that does to the tasks is in neither side: `pyproject.toml`" in proc.stdout


@pytest.mark.slow
def test_a_platform_folder_at_the_repository_s_top_is_looked_up_whole(tmp_path):
    """`platform = ["."]` names the repository's top folder: git's literal pathspec `.` matches no file, so a change
    to the platform profiles there made no note while every task changed."""
    repo = tmp_path / "repo"
    (repo / "profiles").mkdir(parents=True)
    init(repo)
    (repo / "profiles" / "train.yaml").write_text("extends: gpu-large\n", encoding="utf-8")
    (repo / "gpu-large.yaml").write_text("elastic: {nnodes: 2}\n", encoding="utf-8")
    (repo / "pyproject.toml").write_text('[tool.kfdefaults]\nplatform = ["."]\n', encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "gpu-large.yaml").write_text("elastic: {nnodes: 16}\n", encoding="utf-8")
    git(repo, "commit", "-qam", "a platform change")
    proc = dry_run(repo, base, "--folder", "profiles")
    assert proc.returncode == 0, proc.stderr
    assert "so what that does to the tasks is in neither side: `gpu-large.yaml`." in proc.stdout
