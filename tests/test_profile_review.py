"""The pull-request comment of the GitHub Action (scripts/profile_review.py), against a stand-in for GitHub's API.

The API is served over HTTP on this machine, answering as GitHub's REST API does for the calls the script makes
(list an issue's comments, create one, edit one), and recording every request.
"""

from __future__ import annotations

import http.server
import json
import os
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
        comment = {"id": 1000 + len(self.server.comments), "body": body["body"]}
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


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str]:
    """A team repository with two commits: the base, and a change to gpu-large that also changes its child."""
    repo = tmp_path / "repo"
    (repo / "profiles").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "ci@example.com")
    git(repo, "config", "user.name", "CI")
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


def test_no_change_and_no_comment_yet_posts_nothing(repo, github):
    repo_path, _ = repo
    head = git(repo_path, "rev-parse", "HEAD")
    proc = run(repo_path, head, github)
    assert proc.returncode == 0, proc.stderr
    assert [m for m, _, _ in github.requests] == ["GET"] and github.comments == []


def test_a_broken_profile_is_in_the_comment_and_fails_the_job(repo, github):
    repo_path, base = repo
    (repo_path / "profiles" / "quiet.yaml").write_text("elastic: {max_restarts: -1}\n")
    proc = run(repo_path, base, github)
    assert proc.returncode == 1
    body = github.comments[0]["body"]
    assert "`quiet` could not be compared:" in body and "quiet.yaml:1:25:" in body


def test_a_new_and_a_deleted_profile_are_compared_with_nothing(repo, github):
    repo_path, base = repo
    (repo_path / "profiles" / "quiet.yaml").unlink()
    (repo_path / "profiles" / "fresh.toml").write_text("[elastic]\nnproc_per_node = 2\n")
    proc = run(repo_path, base, github, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "`quiet (before)` → `quiet (after): absent`" in proc.stdout
    assert "`fresh (before): absent` → `fresh (after)`" in proc.stdout
    assert github.requests == []  # --dry-run posts nothing


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
