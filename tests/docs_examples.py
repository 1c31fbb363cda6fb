"""Runs the examples of a documentation page, following the conventions of docs/writing-docs.md.

A page is read top to bottom; every fenced code block is one of:

* a **file** (``title="path"``): written into the page's working folder. A YAML or TOML file is a profile and
  is checked with ``kfdefaults validate --strict`` at once, unless it is ``pyproject.toml``, a dotfile or under
  a dot-folder, or marked ``<!-- doc-test: file -->`` (then it is only parsed). ``<!-- doc-test: invalid -->``
  marks a profile that validation must reject. Python files are compiled; JSON is parsed.
* **python** with ``>>>``: a doctest; the page's doctests share one namespace.
* **python** without ``>>>`` and without a title: imported as a module (it must not raise).
* **console**: ``$ COMMAND`` lines are run; the lines after a command, if any, are its expected output
  (``...`` matches anything, as in doctest's ELLIPSIS). A command must exit 0 unless the next command is
  ``echo $?``, which shows its exit status.
* **sh** / **bash** (no prompts): run as a bash script (``set -euo pipefail``).
* any block marked ``<!-- doc-test: skip: REASON -->``: not run. A block of any other kind without that marker
  (``text``, a YAML block without a title, ...) is an error, so that no example goes unchecked by accident.

Commands run in the page's working folder, with no platform or team folder from the environment. ``kfdefaults``
runs in-process (tests/cli_runner.py: standard output and standard error interleaved, as on a terminal);
``echo $?`` and ``cd DIR`` are built in; ``pip install ./DIR`` builds that project into a folder of the page
(never into the environment) and puts it on the path, so that its entry points count; anything else runs in bash
with the environment's ``bin`` folder first on ``PATH``.
"""

from __future__ import annotations

import doctest
import importlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import types
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
BIN = Path(sys.executable).parent

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*)$")
_MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<word>[a-z-]+)\s*(?::\s*(?P<reason>.*?))?\s*-->\s*$")
_MARKERS = ("skip", "file", "invalid")
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_SHELL_SYNTAX = re.compile(r"[|&;<>`]|\$\(")
_INSTALLERS = ("pip", "pip3", "uv", "sudo", "curl", "wget", "apt", "apt-get")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class ExampleError(AssertionError):
    """An example of a page failed, or a block follows none of the conventions."""


@dataclass
class Block:
    """A fenced code block of a page."""

    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    attrs: dict[str, str]
    text: str
    marker: str | None
    reason: str | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page}:{self.line}"


def parse_blocks(page: Path, text: str | None = None) -> list[Block]:
    """Every fenced block of a Markdown page, with the ``doc-test`` marker on the line before it, if any."""
    lines = (page.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group("indent"), m.group("fence"), m.group("info").strip()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines):
            close = re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", lines[i])
            if close:
                break
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        else:
            raise ExampleError(f"{page}:{start + 1}: a code block that is never closed")
        i += 1
        marker = reason = None
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0 and "doc-test" in lines[j]:
            mm = _MARKER.match(lines[j])
            if not mm or mm.group("word") not in _MARKERS:
                raise ExampleError(f"{page}:{j + 1}: unknown marker {lines[j].strip()!r}; "
                                   f"use <!-- doc-test: {' | '.join(_MARKERS)} -->")
            marker, reason = mm.group("word"), mm.group("reason")
        lang = info.split()[0].lstrip("{.").rstrip("}") if info else ""
        blocks.append(Block(page, start + 1, lang.lower(), dict(_ATTR.findall(info)), "\n".join(body) + "\n",
                            marker, reason))
    return blocks


def kind_of(block: Block) -> str:
    """What the runner does with a block: skip, file, doctest, module, console, script; raises if none fits."""
    if block.marker == "skip":
        if not block.reason:
            raise ExampleError(f"{block.where}: say why the block is not run: <!-- doc-test: skip: REASON -->")
        return "skip"
    if "title" in block.attrs:
        return "file"
    if block.marker in ("file", "invalid"):
        raise ExampleError(f"{block.where}: <!-- doc-test: {block.marker} --> needs a block with title=\"PATH\"")
    if block.lang in ("python", "py", "pycon"):
        return "doctest" if re.search(r"^>>> ", block.text, re.M) else "module"
    if block.lang == "console":
        return "console"
    if block.lang in ("sh", "bash", "shell"):
        return "script"
    raise ExampleError(
        f"{block.where}: a ```{block.lang or '(no language)'} block that is not run: give it title=\"PATH\" "
        "(a file), make it a python, console or sh example, or mark it <!-- doc-test: skip: REASON -->"
    )


def is_profile(path: str, block: Block) -> bool:
    """YAML and TOML files are profiles, except pyproject.toml, dotfiles, files under dot-folders, and marked ones."""
    parts = Path(path).parts
    return (
        path.endswith((".yaml", ".yml", ".toml"))
        and Path(path).name != "pyproject.toml"
        and not any(p.startswith(".") for p in parts)
        and block.marker != "file"
    )


def layer_of(path: str) -> str:
    """A profile under a folder whose name says ``platform`` belongs to the platform layer; others to the team."""
    return "platform" if any("platform" in p for p in Path(path).parts[:-1]) else "team"


@dataclass
class Page:
    """The state of one page's run: its working folder, doctest namespace, last exit status, profiles written."""

    path: Path
    root: Path
    cwd: Path = field(init=False)
    globs: dict[str, Any] = field(default_factory=dict)
    last_status: int = 0
    profiles: dict[str, bool] = field(default_factory=dict)  # relative path -> valid
    site: Path | None = None
    modules: int = 0

    def __post_init__(self) -> None:
        self.root = self.root.resolve()
        self.cwd = self.root
        # The doctests run in a real module, so that flytekit can name a task a doctest defines.
        module = types.ModuleType(f"docs_{_slug(self.path)}")
        module.__file__ = str(self.root / f"{module.__name__}.py")
        sys.modules[module.__name__] = module
        self.globs = module.__dict__


def _slug(path: Path) -> str:
    return re.sub(r"\W+", "_", str(path.relative_to(DOCS) if path.is_relative_to(DOCS) else path.name)).strip("_")


# ------------------------------------------------------------------------------------------------------ running


def run_page(path: Path, root: Path, text: str | None = None) -> list[tuple[Block, str]]:
    """Run every block of a page in ``root`` (the page's working folder, also the current directory).

    Returns:
        ``(block, kind)`` for every block, in page order.

    Raises:
        ExampleError: the first block that fails, with the page and line.
    """
    page = Page(path, root)
    done = []
    saved_path = list(sys.path)
    old_cwd = os.getcwd()
    try:
        for block in parse_blocks(path, text):
            kind = kind_of(block)
            os.chdir(page.cwd)
            try:
                {"skip": lambda b, p: None, "file": _file, "doctest": _doctest, "module": _module,
                 "console": _console, "script": _script}[kind](block, page)
            except ExampleError:
                raise
            except Exception as e:  # a crash of the example itself: say where
                raise ExampleError(f"{block.where}: the {kind} block raised {type(e).__name__}: {e}") from e
            done.append((block, kind))
    finally:
        os.chdir(old_cwd)
        sys.path[:] = saved_path
        importlib.invalidate_caches()
    return done


def _file(block: Block, page: Page) -> None:
    rel = block.attrs["title"]
    target = (page.cwd / rel).resolve()
    if not target.is_relative_to(page.root):
        raise ExampleError(f"{block.where}: {rel} is outside the page's working folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(block.text, encoding="utf-8")
    rel_root = str(target.relative_to(page.root))
    if rel.endswith(".py"):
        compile(block.text, rel, "exec")
    elif rel.endswith(".json"):
        json.loads(block.text)
    elif is_profile(rel, block):
        page.profiles[rel_root] = block.marker != "invalid"
        _validate_profile(block, page, rel_root)
        return
    elif rel.endswith((".yaml", ".yml")):
        import yaml

        yaml.safe_load(block.text)
    elif rel.endswith(".toml"):
        tomllib.loads(block.text)
    if block.marker == "invalid":
        raise ExampleError(f"{block.where}: <!-- doc-test: invalid --> is for profiles only")


def _validate_profile(block: Block, page: Page, rel: str) -> None:
    folder = str(Path(rel).parent)
    layer = layer_of(rel)
    siblings = [p for p, ok in page.profiles.items() if ok and str(Path(p).parent) == folder and p != rel]
    args = ["validate", "--strict", "--layer", layer, *siblings, rel]
    if layer == "team":
        platforms = sorted({str(Path(p).parent) for p, ok in page.profiles.items() if ok and layer_of(p) == "platform"})
        for p in platforms:
            args += ["--platform", p]
    code, output = _kfdefaults(args, {}, page.root)
    if block.marker == "invalid":
        if code != 1:
            raise ExampleError(f"{block.where}: marked invalid, but `kfdefaults {' '.join(args)}` accepts it:\n{output}")
    elif code != 0:
        raise ExampleError(f"{block.where}: `kfdefaults {' '.join(args)}` rejects this profile:\n{output}")


def _doctest(block: Block, page: Page) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.text, page.globs, block.where, str(block.page), block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = io.StringIO()
    test.globs = page.globs  # one namespace for the page, the module's own
    runner.run(test, out=report.write, clear_globs=False)
    if runner.failures:
        raise ExampleError(f"{block.where}: a doctest failed\n{report.getvalue()}")


def _module(block: Block, page: Page) -> None:
    page.modules += 1
    name = f"{page.globs['__name__']}_{page.modules}"
    (page.cwd / f"{name}.py").write_text(block.text, encoding="utf-8")
    if str(page.cwd) not in sys.path:
        sys.path.insert(0, str(page.cwd))
    importlib.invalidate_caches()
    importlib.import_module(name)


def _script(block: Block, page: Page) -> None:
    _refuse_installers(block, block.text.split()[0] if block.text.split() else "")
    code, output = _bash(f"set -euo pipefail\n{block.text}", page)
    if code != 0:
        raise ExampleError(f"{block.where}: the script exited {code}:\n{output}")


def _console(block: Block, page: Page) -> None:
    commands = _commands(block)
    if not commands:
        raise ExampleError(f"{block.where}: a console block without any `$ COMMAND` line")
    for n, (line, command, want) in enumerate(commands):
        status_shown = n + 1 < len(commands) and commands[n + 1][1].strip() == "echo $?"
        code, got = _run_command(block, page, line, command)
        page.last_status = code
        if code != 0 and not status_shown and command.strip() != "echo $?":
            raise ExampleError(f"{block.page.name}:{line}: `{command}` exited {code} (show it with `echo $?` if "
                               f"that is the point):\n{got}")
        if want is not None:
            _compare(block, line, command, want, got)


def _commands(block: Block) -> list[tuple[int, str, str | None]]:
    """``(line, command, expected output or None)`` of a console block."""
    out: list[tuple[int, str, str | None]] = []
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise ExampleError(f"{block.page.name}:{block.line + 1 + i}: output before any `$ COMMAND` line")
        line = block.line + 1 + i
        command = lines[i][2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1].rstrip() + " " + lines[i].strip()
        i += 1
        want: list[str] = []
        while i < len(lines) and not lines[i].startswith("$ "):
            want.append(lines[i])
            i += 1
        out.append((line, command, "\n".join(want) + "\n" if want else None))
    return out


def _compare(block: Block, line: int, command: str, want: str, got: str) -> None:
    norm_want = "\n".join(s.rstrip() for s in want.rstrip("\n").splitlines()) + "\n"
    norm_got = "\n".join(s.rstrip() for s in got.rstrip("\n").splitlines()) + "\n"
    checker = doctest.OutputChecker()
    if not checker.check_output(norm_want, norm_got, doctest.ELLIPSIS):
        example = doctest.Example(command, norm_want)
        diff = checker.output_difference(example, norm_got, doctest.ELLIPSIS)
        raise ExampleError(f"{block.page.name}:{line}: `{command}` printed something else.\n{diff}")


def _refuse_installers(block: Block, word: str) -> None:
    if word in _INSTALLERS:
        raise ExampleError(f"{block.where}: `{word}` would change this machine; mark the block "
                           "<!-- doc-test: skip: REASON --> (`pip install ./DIR` in a console block is run safely)")


def _run_command(block: Block, page: Page, line: int, command: str) -> tuple[int, str]:
    if command.strip() == "echo $?":
        return 0, f"{page.last_status}\n"
    if _SHELL_SYNTAX.search(command.replace("$?", "")):
        _refuse_installers(block, command.split()[0])
        return _bash(command, page)
    words = shlex.split(command, comments=True)
    env: dict[str, str] = {}
    while words and _ASSIGNMENT.match(words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    if not words:
        raise ExampleError(f"{block.page.name}:{line}: an empty command")
    if words[0] == "cd" and len(words) == 2:
        target = (page.cwd / words[1]).resolve()
        if not target.is_relative_to(page.root) or not target.is_dir():
            raise ExampleError(f"{block.page.name}:{line}: cannot cd to {words[1]}")
        page.cwd = target
        return 0, ""
    if words[0] == "kfdefaults":
        return _kfdefaults(words[1:], env, page.cwd)
    if words[:2] == ["pip", "install"] or words[:4] == ["python", "-m", "pip", "install"]:
        return _pip_install(block, page, line, [w for w in words[2 if words[0] == "pip" else 4:] if not w.startswith("-")])
    _refuse_installers(block, words[0])
    return _bash(command, page)


def _kfdefaults(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    from cli_runner import invoke as run_cli

    full_env: dict[str, str | None] = {"KFDEFAULTS_PLATFORM_PATH": None, "KFDEFAULTS_TEAM_PATH": None}
    full_env.update(env)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = run_cli(args, env=full_env)
    finally:
        os.chdir(old)
    return result.exit_code, result.output


def _bash(script: str, page: Page) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KFDEFAULTS_PLATFORM_PATH", "KFDEFAULTS_TEAM_PATH")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if page.site is not None:
        env["PYTHONPATH"] = f"{page.site}{os.pathsep}{env.get('PYTHONPATH', '')}"
    proc = subprocess.run(["bash", "-c", script], cwd=page.cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)
    return proc.returncode, proc.stdout


def _pip_install(block: Block, page: Page, line: int, targets: list[str]) -> tuple[int, str]:
    """Build each local project with its own build backend (no isolation, offline) and unpack the wheel."""
    if not targets or not all(t.startswith((".", "/")) for t in targets):
        raise ExampleError(f"{block.page.name}:{line}: only `pip install ./DIR` of a project on the page is run")
    page.site = page.site or page.root / ".site-packages"
    page.site.mkdir(exist_ok=True)
    for target in targets:
        project = (page.cwd / target).resolve()
        with open(project / "pyproject.toml", "rb") as f:
            backend = tomllib.load(f).get("build-system", {}).get("build-backend", "setuptools.build_meta:__legacy__")
        wheels = page.root / ".wheels"
        wheels.mkdir(exist_ok=True)
        build = (f"import importlib, sys; b = importlib.import_module({backend.split(':')[0]!r}); "
                 f"print(b.build_wheel(sys.argv[1]))")
        proc = subprocess.run([sys.executable, "-c", build, str(wheels)], cwd=project, capture_output=True, text=True)
        if proc.returncode != 0:
            return proc.returncode, proc.stdout + proc.stderr
        wheel = wheels / proc.stdout.strip().splitlines()[-1]
        with zipfile.ZipFile(wheel) as z:
            z.extractall(page.site)
    if str(page.site) not in sys.path:
        sys.path.insert(0, str(page.site))
    importlib.invalidate_caches()
    return 0, ""
