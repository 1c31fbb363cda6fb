"""What a pull request's profile changes do to the tasks: one pull-request comment, kept up to date.

Run by the repository's GitHub Action (action.yml) in a platform or team repository, on a pull request: for every
profile of the given folders (new, deleted and unchanged files alike, since a profile can change through
``extends``), ``kfdefaults diff NAME --team BASE --team-against HEAD --format markdown``; the profiles that
differ go into one comment on the pull request, found again by a marker and edited on the next push rather than
posted twice.

    python scripts/profile_review.py --folder profiles [--layer team] [--base SHA] [--dry-run]

The base version of each folder is read from git (``git archive BASE -- FOLDER``), the head version from the
working tree. GitHub is reached with ``GITHUB_TOKEN`` at ``GITHUB_API_URL`` (default https://api.github.com) for
``GITHUB_REPOSITORY``; the pull request and its base come from the event file (``GITHUB_EVENT_PATH``).

Exit status: 0 when every profile could be compared (differences or not), 1 when one could not (a broken file:
the comment says which), 2 a usage mistake.

The pull request's author chooses every file name, key and value: in the comment, each of them is a code span or
inside a fenced block, fenced as :mod:`kfdefaults.escape` says (Markdown's rule, with the kfdefaults this Action
installs), so that none is read as Markdown, HTML or an @-mention; every name is passed to ``kfdefaults`` after
``--``, so that a file named ``--help.yaml`` is a profile name, not an option.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from typing import Any, Sequence

from kfdefaults.escape import code_span, fenced
from kfdefaults.layers import CLUSTER_FILES
from kfdefaults.layers.catalog import profile_file_names

MARKER = "<!-- kfdefaults profile review -->"
MAX_COMMENT = 65536
"""The longest comment body GitHub takes (characters); a longer one is refused, and the review would be lost."""
BOT = "github-actions[bot]"
"""Who posts with the workflow's GITHUB_TOKEN: only a comment of this author is the review's, whatever another
comment holds (a pull request's author could post the marker to have the bot edit their comment instead)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", action="append", required=True, help="A profile folder of the repository (repeatable).")
    parser.add_argument("--layer", choices=["team", "platform"], default="team", help="The layer of the folders.")
    parser.add_argument("--base", help="The commit to compare with (default: the pull request's base).")
    parser.add_argument("--kfdefaults", default="kfdefaults", help="The kfdefaults command to run.")
    parser.add_argument("--dry-run", action="store_true", help="Print the comment instead of posting it.")
    parser.add_argument("--bot", default=BOT, help=f"The login that posts the comment (default {BOT}, the "
                                                   "GITHUB_TOKEN's); a comment of any other author is never edited.")
    args = parser.parse_args(argv)
    event = _event()
    base = args.base or (event.get("pull_request") or {}).get("base", {}).get("sha")
    if not base:
        parser.error("no --base, and no pull request in GITHUB_EVENT_PATH")
    sections, trouble, unchanged = [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        nothing = os.path.join(tmp, "nothing")
        os.mkdir(nothing)
        for folder in args.folder:
            old = _checkout(base, folder, tmp)
            for name in sorted(_names(old) | _names(folder)):
                code, text = _diff(args.kfdefaults, name, old, folder, args.layer, nothing)
                if code == 0:
                    unchanged += 1
                elif code == 1:
                    sections.append(text)
                else:
                    trouble.append(f"{code_span(name)} could not be compared:\n\n{fenced(text.strip())}\n")
    notes = []
    under = shared_inputs_changed(args.kfdefaults, base, args.folder, args.layer)
    if under:
        shown = []  # as many as fit in a quarter of the comment: a change may edit thousands of a folder's files
        for span in map(code_span, under):
            if sum(len(s) + 2 for s in shown) + len(span) > MAX_COMMENT // 4:
                break
            shown.append(span)
        more = len(under) - len(shown)
        notes.append("**Not in the differences below**: this change also edits what both sides are compared under "
                     "(the project's `[tool.kfdefaults]`, the platform layer's folders, the cluster's files), so "
                     "what that does to the tasks is in neither side: " + ", ".join(shown)
                     + (f"{' and' if shown else ''} {more} more file{'s' * (more != 1)}" if more else "") + ".\n")
    body = comment(sections, trouble, unchanged, base, notes=notes)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as f:
            f.write(body + "\n")
    body = comment(sections, trouble, unchanged, base, limit=MAX_COMMENT, notes=notes)
    if args.dry_run:
        sys.stdout.write(body + "\n")
    else:
        post(body, event, quiet=not sections and not trouble and not notes, bot=args.bot)
    return 1 if trouble else 0


def comment(sections: list[str], trouble: list[str], unchanged: int, base: str, limit: int | None = None,
            notes: Sequence[str] = ()) -> str:
    """The comment: a marker to find it again, the notes (what the differences cannot show), then each profile's
    differences, the failures, and a count.

    With ``limit``, as many profiles as fit in that many characters (failures first), then how many more there
    are: the job's summary (written whole) lists them all."""
    parts = trouble + [s.rstrip() + "\n" for s in sections]
    while True:
        lines = [MARKER, "### What this change does to the tasks", "", *notes]
        if not sections and not trouble:
            lines.append("No profile's merged result changes.")
        lines += parts
        left = len(trouble) + len(sections) - len(parts)
        if left:
            lines.append(f"{left} more profile{'s' * (left != 1)} changed or could not be compared: the job's summary "
                         "lists every one.\n")
        lines.append(f"<sub>{unchanged} profile{'s' * (unchanged != 1)} unchanged; compared with {base[:12]}.</sub>")
        text = "\n".join(lines)
        if limit is None or len(text) <= limit or not parts:
            return text
        parts = parts[:-1]


def _event() -> dict[str, Any]:
    path = os.environ.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _checkout(base: str, folder: str, tmp: str) -> str:
    """The folder as it is at ``base``, written under ``tmp``; an empty folder when it did not exist then."""
    target = os.path.join(tmp, "base")
    os.makedirs(os.path.join(target, folder), exist_ok=True)
    proc = subprocess.run(["git", "archive", "--format=tar", base, "--", folder], capture_output=True)
    if proc.returncode == 0:
        with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as archive:
            if hasattr(tarfile, "data_filter"):  # Python 3.12, and 3.8.17+ / 3.11.4+ backports
                archive.extractall(target, filter="data")
            else:  # pragma: no cover - older Pythons: git archive of our own commit holds plain files only
                archive.extractall(target)
    return os.path.join(target, folder)


def _names(folder: str) -> set[str]:
    """The profiles of ``folder`` as kfdefaults finds them: not the cluster's PodTemplate or facts beside them
    (``_cluster-template.yaml``, ``_cluster-facts.yaml``), nor a ``pyproject.toml``."""
    return {os.path.splitext(n)[0] for n in profile_file_names(folder)}


def _diff(command: str, name: str, old: str, new: str, layer: str, nothing: str) -> tuple[int, str]:
    """``kfdefaults diff NAME`` of the two folders: ``(exit status, the Markdown, or the error text)``. The name,
    a file's, comes after ``--``: a file named ``-h.yaml`` is not asking for the usage.

    A platform folder is compared with no team layer on top (``nothing``, an empty folder, on both sides), as
    ``validate --layer platform`` checks it: the repository's own team folders (its ``pyproject.toml``'s, which the
    pull request writes) would lie over both sides and hide what the change does to the platform's values."""
    above = ["--team", nothing, "--team-against", nothing] if layer == "platform" else []
    proc = subprocess.run([command, "diff", f"--{layer}", old, f"--{layer}-against", new, *above, "--format",
                           "markdown", "--", name], capture_output=True, text=True, errors="replace")
    return proc.returncode, proc.stdout if proc.returncode in (0, 1) else proc.stderr or proc.stdout


def shared_inputs_changed(command: str, base: str, folders: list[str], layer: str) -> list[str]:
    """The files of the repository that both sides of every comparison read, and that the change edits since
    ``base``: the project's ``pyproject.toml`` (and one it deletes where the project is looked for), the cluster's
    facts and PodTemplate it finds, and for a team folder, the platform layer's folders; as ``kfdefaults where``
    finds them, but for a compared platform folder's own cluster files (each side reads its copy).

    ``diff`` reads these as they are now on both sides: a pull request that edits them (a platform folder its
    ``pyproject.toml`` adds, a team profile ``extends``) changes tasks while every profile compared looks unchanged.
    """
    proc = subprocess.run([command, "where", "-o", "json"], capture_output=True, text=True, errors="replace")
    try:
        found = json.loads(proc.stdout)
    except ValueError:  # where failed: its error is the diff's too, already in the comment
        return []
    paths = [found["project"]["pyproject"]] if found["project"]["pyproject"] else []
    paths += [item["file"] for item in found.get("cluster", {}).values() if item and item.get("file")]
    if layer == "team":  # a platform folder's review reads no other layer (see _diff)
        paths += [folder["path"] for entry in found["layers"] if entry["layer"] == "platform"
                  for source in entry["sources"] for folder in source["folders"]]
    top = os.path.realpath(subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True)
                           .stdout.strip() or ".")
    here = os.path.realpath(os.getcwd())  # where the project is looked for: one the change deletes is found no more
    while os.path.commonpath([here, top]) == top:
        paths.append(os.path.join(here, "pyproject.toml"))
        if here == top:
            break
        here = os.path.dirname(here)
    # what each side reads from its own copy of a compared folder: its profiles, and a platform folder's cluster
    # files; anything else under it (a platform folder inside, the project's pyproject.toml) is read as it is now
    compared = {os.path.realpath(folder) for folder in folders} if layer == "platform" else set()
    inside = []
    for real in (link for path in paths for link in _followed(path)):
        own = os.path.dirname(real) in compared and os.path.basename(real) in CLUSTER_FILES
        if os.path.commonpath([real, top]) == top and not own:
            inside.append("" if real == top else os.path.relpath(real, top))  # git's literal "." names no file
    if not inside:
        return []
    changed = subprocess.run(["git", "diff", "--name-only", "-z", base, "--", *(f":(top,literal){p}" for p in inside)],
                             capture_output=True, text=True, errors="replace")
    return sorted(name for name in changed.stdout.split("\0") if name
                  and not (os.path.basename(name) == "pyproject.toml" and _same_settings(base, top, name)))


def _followed(path: str) -> list[str]:
    """Each link met on the way from ``path`` to what it names, then that file or folder: a change that points a
    link elsewhere changes what is read through a name whose target it leaves alone."""
    met, here = [], os.path.abspath(path)
    for _ in range(40):  # as the kernel's, a loop of links ends
        parts = here.split(os.sep)
        at = next((i for i in range(2, len(parts) + 1) if os.path.islink(os.sep.join(parts[:i]))), None)
        if at is None:
            break
        link = os.sep.join(parts[:at])
        met.append(link)
        here = os.path.normpath(os.path.join(os.path.dirname(link), os.readlink(link), *parts[at:]))
    return met + [os.path.realpath(path)]


def _same_settings(base: str, top: str, name: str) -> bool:
    """Whether ``pyproject.toml`` ``name`` holds the same ``[tool.kfdefaults]`` at ``base`` as now: an edit
    elsewhere in it (a dependency's version) changes nothing kfdefaults reads. Each side is read as kfdefaults reads
    a project (a pipe or device in its place, a huge or deeply nested file bounded)."""
    from kfdefaults.errors import ProfileError
    from kfdefaults.layers.pyproject import kfdefaults_section

    def settings(path: str | None) -> Any:
        try:
            found = kfdefaults_section(path) if path is not None else None
        except ProfileError:
            return "unreadable"  # differs from what a readable file holds, and a broken file is an edit to show
        return found[1] if found else None

    old = subprocess.run(["git", "show", f"{base}:{name}"], capture_output=True)
    with tempfile.TemporaryDirectory() as tmp:
        before = None
        if old.returncode == 0:
            before = os.path.join(tmp, "pyproject.toml")
            with open(before, "wb") as f:
                f.write(old.stdout)
        before = settings(before)
    now = os.path.join(top, name)
    return before != "unreadable" and before == settings(now if os.path.lexists(now) else None)


def post(body: str, event: dict[str, Any], *, quiet: bool, bot: str = BOT) -> None:
    """Edit the pull request's comment that carries :data:`MARKER` and was posted by ``bot``, or add one (not when
    ``quiet`` and none exists).

    Raises:
        SystemExit: no pull request in the event, no token, or GitHub refused (its answer is printed).
    """
    number = (event.get("pull_request") or {}).get("number") or event.get("number")
    repository, token = os.environ.get("GITHUB_REPOSITORY"), os.environ.get("GITHUB_TOKEN")
    if not number or not repository or not token:
        sys.exit("profile_review: posting needs a pull_request event, GITHUB_REPOSITORY and GITHUB_TOKEN (or --dry-run)")
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    existing = _find(api, repository, number, token, bot)
    if existing is not None:
        _request("PATCH", f"{api}/repos/{repository}/issues/comments/{existing}", token, {"body": body})
    elif not quiet:
        _request("POST", f"{api}/repos/{repository}/issues/{number}/comments", token, {"body": body})


def _find(api: str, repository: str, number: int, token: str, bot: str) -> int | None:
    """The review's own comment: one that ``bot`` posted and that starts with :data:`MARKER`."""
    page = 1
    while True:
        comments = _request("GET", f"{api}/repos/{repository}/issues/{number}/comments?per_page=100&page={page}", token)
        for item in comments:
            author = (item.get("user") or {}).get("login") if isinstance(item, dict) else None
            if author == bot and str(item.get("body", "")).startswith(MARKER):
                return int(item["id"])
        if len(comments) < 100:
            return None
        page += 1


def _request(method: str, url: str, token: str, payload: dict[str, Any] | None = None) -> Any:
    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        sys.exit(f"profile_review: GitHub answered {e.code} to {method} {url}: {e.read().decode(errors='replace')[:500]}")
    except (OSError, http.client.HTTPException, ValueError) as e:  # unreachable, cut off, not JSON
        sys.exit(f"profile_review: {method} {url} failed: {type(e).__name__}: {e}")


if __name__ == "__main__":
    sys.exit(main())
