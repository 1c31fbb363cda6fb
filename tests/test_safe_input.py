"""Hostile input fails fast with a located ProfileError: aliases, nesting, size, tags, duplicates, huge numbers;
and generated hostile files, through the readers, the pipeline and the command line (fuzzing, at the end)."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfdefaults import ProfileError
from kfdefaults.read import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    parse_text,
    read_document,
)
from kfdefaults.read.document import MAX_EXPANDED_BYTES
from kfdefaults.validate.rdzv import RDZV_MAX_ATTEMPTS, RDZV_MAX_SECONDS

# How fast these inputs are rejected is measured by benchmarks/hostile_input.py; the tests check that each is
# stopped by the mechanism that bounds the work (the node count before expansion, the composer's budget and depth
# limit), not the time it takes.


def rejected(text: str, name: str = "bad.yaml") -> str:
    with pytest.raises(ProfileError) as excinfo:
        parse_text(text, name)
    [finding] = excinfo.value.findings
    return str(finding)


def test_billion_laughs_is_rejected_before_expansion():
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    message = rejected("\n".join(lines) + "\n")  # 10**9 values once expanded
    assert f"expands to more than {MAX_NODES} values" in message


def test_aliases_of_a_large_string_cannot_amplify_the_document():
    """A 54 KB file whose one 30 KB string is used 6,000 times stands for 180 MB: refused by the byte budget,
    located at the list whose aliases add up (the node budget alone let it through)."""
    big = "x" * 30_000
    text = ("pod_template:\n  spec:\n    containers:\n    - name: primary\n      image: &b " + big
            + "\n      args: [" + ", ".join(["*b"] * 6000) + "]\n")
    assert len(text) < MAX_FILE_BYTES and 6000 + 10 < MAX_NODES
    message = rejected(text)
    assert message.startswith("bad.yaml:6:13: document expands to more than 64 KiB of text")


def test_the_byte_budget_counts_each_use_of_an_alias():
    unit = "y" * 1000
    uses = MAX_EXPANDED_BYTES // 1000
    fits = "a: &u " + unit + "\nb: [" + ", ".join(["*u"] * (uses - 5)) + "]\n"
    assert len(parse_text(fits, "ok.yaml").data["b"]) == uses - 5
    message = rejected("a: &u " + unit + "\nb: [" + ", ".join(["*u"] * (uses + 5)) + "]\n")
    assert message.startswith("bad.yaml:2:4: document expands to more than")


@pytest.mark.parametrize("text, where", [
    ("a: " + "[" * 2000 + "]" * 2000 + "\n", ":1:67:"),  # the 64th [, the 65th level: the root mapping is one
    ("a: " + "[" * 64 + "]" * 64 + "\n", ":1:67:"),
    ("a: " + "{b: " * 200 + "1" + "}" * 200 + "\n", ":1:253:"),  # the key b of the 63rd {, on the 65th level
    ("".join("  " * i + "-\n" for i in range(MAX_DEPTH + 5)) + "x\n", f":{MAX_DEPTH + 1}:"),
])
def test_deep_nesting_is_rejected(text, where):
    message = rejected(text)
    assert where in message and f"nest deeper than {MAX_DEPTH} levels" in message


def test_aliases_cannot_nest_values_deeper_than_the_limit():
    """Each anchor nests 60 levels and holds the one before: 14 of them stand for 840 levels in 1.7 KB and 8,000
    values (within the budget), which no step after reading could walk (a RecursionError before)."""
    lines = ["a0: &a0 " + "[" * 60 + "1" + "]" * 60]
    lines += [f"a{i}: &a{i} " + "[" * 60 + f"*a{i - 1}" + "]" * 60 for i in range(1, 14)]
    message = rejected("\n".join(lines) + "\n")
    assert message.startswith("bad.yaml:1:12: values nest deeper than 64 levels once aliases are expanded"), message
    assert parse_text("a: &a [[1]]\nb: [*a, *a]\n", "ok.yaml").data == {"a": [[1]], "b": [[[1]], [[1]]]}


def test_brackets_in_block_scalars_do_not_count_as_nesting():
    text = ("a: |\n  " + "[" * 100 + "\n\n  {{{" + "{" * 100 + "\nb:\n- >-\n  " + "[" * 70
            + "\n- k: |+\n    " + "[" * 70 + "\n  j: x\n")
    doc = parse_text(text, "ok.yaml")
    assert doc.data["a"] == "[" * 100 + "\n\n{{{" + "{" * 100 + "\n"
    assert doc.data["b"] == ["[" * 70, {"k": "[" * 70 + "\n", "j": "x"}]


def test_deep_toml_nesting_is_located():
    message = rejected("a = " + "[" * 100 + "]" * 100 + "\n", "bad.toml")
    assert message.startswith("bad.toml:1:") and "nest deeper" in message
    message = rejected("a = " + "[" * 5000 + "]" * 5000 + "\n", "bad.toml")
    assert "nest deeper" in message


def test_brackets_in_strings_and_comments_do_not_count_as_nesting():
    text = "a: '" + "[" * 100 + "'\nb: x" + "[" * 100 + "\n# " + "{" * 100 + "\nc: \"\\\"" + "[" * 100 + "\"\n"
    doc = parse_text(text, "ok.yaml")
    assert doc.data["a"] == "[" * 100 and doc.data["b"] == "x" + "[" * 100


def test_too_many_values_are_rejected_by_the_composer_budget():
    message = rejected("a: [" + "1, " * (MAX_NODES + 10) + "]\n")
    assert message.startswith("bad.yaml:1:") and f"more than {MAX_NODES} values" in message


def test_size_cap(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("# " + "x" * MAX_FILE_BYTES + "\n", encoding="utf-8")
    with pytest.raises(ProfileError) as excinfo:
        read_document(str(path))
    assert str(excinfo.value).startswith(f"{path}:1:1: file is larger than {MAX_FILE_BYTES // 1024} KiB")


@pytest.mark.parametrize("text, where, words", [
    ("a: !!str 1\n", ":1:4:", "tags are not supported"),
    ("a: !!binary aGVsbG8=\n", ":1:4:", "tags are not supported"),
    ("a: !!python/name:os.system x\n", ":1:4:", "tags are not supported"),
    ("!!python/name:os.system a: 1\n", ":1:1:", "tags are not supported"),
    ("? [a, b]\n: 1\n", ":1:3:", "mapping keys must be plain strings"),
    ("a: !custom x\n", ":1:4:", "tags are not supported"),
    ("a: ! 12\n", ":1:4:", "tags are not supported (!)"),  # YAML says "12", PyYAML-style readers 12: refused
    ("a: !!map {b: 1}\n", ":1:4:", "tags are not supported (!!map)"),
    ("a: !!seq [1]\n", ":1:4:", "tags are not supported (!!seq)"),
    ("a:\n  !!str b: 1\n", ":2:3:", "tags are not supported (!!str)"),
    ("a: {b: 1, b: 2}\n", ":1:11:", "duplicate key 'b'"),
])
def test_tags_and_duplicates(text, where, words):
    message = rejected(text)
    assert where in message and words in message


def test_quoted_and_plain_scalars_keep_their_meaning_and_text():
    doc = parse_text("a: '1'\nb: 1\nc: 0o755\nd: True\ne: no\n", "ok.yaml")
    assert doc.data == {"a": "1", "b": 1, "c": 493, "d": True, "e": "no"}
    assert doc.plain_text == {("b",): "1", ("c",): "0o755", ("d",): "True"}


def test_a_leading_zero_is_an_error_not_a_guess():
    message = rejected("a: 0755\n")
    assert message.startswith("bad.yaml:1:4: `0755` is the decimal 755 in YAML 1.2 but the octal 493")


@pytest.mark.parametrize("text, expected", [
    ("[elastic]\nnnodes = 2\n  nnodes = 4\n", "bad.toml:3:3: invalid TOML: duplicate key nnodes: this table already sets it"),
    ("[elastic]\nnnodes = 2\n[elastic]\nmax_restarts = 1\n", "bad.toml:3:1: invalid TOML: table [elastic] is declared twice"),
    ("[elastic]\nnnodes = 2\n[elastic.nnodes]\n", "bad.toml:3:1: invalid TOML: table [elastic.nnodes] names a key that"),
])
def test_toml_duplicates_are_named_at_the_key(text, expected):
    assert rejected(text, "bad.toml").startswith(expected)


@pytest.mark.parametrize("text, where", [
    ("[elastic]\nnnodes = " + "9" * 4400 + "\n", "bad.toml:2:10:"),  # past Python's 4,300-digit int() limit
    ("[elastic]\nnproc_per_node = [1,\n  " + "1" * 40 + "]\n", "bad.toml:3:3:"),
    ("[elastic]\nnnodes = 0x" + "f" * 5000 + "\n", "bad.toml:2:10:"),  # hex has no int() limit: as large as written
    ("[elastic]\nnnodes = -" + "1_000" * 10 + "\n", "bad.toml:2:10:"),
])
def test_toml_integers_of_more_than_30_digits_are_located_errors(text, where):
    message = rejected(text, "bad.toml")
    assert message.startswith(where) and "no profile value is that large" in message


def test_yaml_and_toml_refuse_the_same_integers():
    assert "is that large" in rejected("a: " + "1" * 31 + "\n")
    assert parse_text("a = " + "1" * 30 + "\n", "ok.toml").data == {"a": int("1" * 30)}
    assert parse_text("a: " + "1" * 30 + "\n", "ok.yaml").data == {"a": int("1" * 30)}
    assert "is that large" in rejected("a = " + "1" * 31 + "\n", "bad.toml")


# --- fuzzing: generated hostile files, through the readers, the pipeline and the command line ----------------
#
# Every file drawn breaks one rule that bounds the work or the values (a budget, the depth, the size, the
# integer digits, a rendezvous bound, YAML's own rules), inside an otherwise valid profile at a random place. So
# each must be refused: by the Python API with a ProfileError located in the file, by the command line with
# exit 1, FILE:LINE:COLUMN lines and no traceback, in a process held to a memory and CPU limit.

#: Where a hostile value goes: (YAML text with {} for the value, its indentation, TOML text likewise).
PLACES = [
    ("description: {}\n", 0, "description = {}\n"),
    ("elastic:\n  nproc_per_node: {}\n", 2, "[elastic]\nnproc_per_node = {}\n"),
    ("elastic:\n  rdzv_configs:\n    join_timeout: {}\n", 4, "[elastic.rdzv_configs]\njoin_timeout = {}\n"),
    ("pod_template:\n  labels:\n    team: {}\n", 4, "[pod_template.labels]\nteam = {}\n"),
    ("pod_template:\n  spec:\n    containers:\n      - name: primary\n        args: {}\n", 8,
     "[[pod_template.spec.containers]]\nname = \"primary\"\nargs = {}\n"),
]

FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")), deadline=None, database=None,
                derandomize="FUZZ_EXAMPLES" not in os.environ, suppress_health_check=list(HealthCheck))
"""The same examples on every run (derandomized: CI never fails on an example no earlier run drew);
``FUZZ_EXAMPLES=500 pytest tests/test_safe_input.py`` explores that many new random ones."""


@st.composite
def yaml_values(draw) -> str:
    """A YAML value (flow style, or block style at the place's indentation: ``{indent}``) past a bound."""
    kind = draw(st.sampled_from(["aliases", "laughs", "deep-flow", "deep-block", "digits", "tag", "duplicate",
                                 "merge-key", "rdzv"]))
    if kind == "aliases":  # one string, used by aliases until the document stands for more than 64 KiB
        size = draw(st.integers(500, 4000))
        uses = MAX_EXPANDED_BYTES // size + draw(st.integers(1, 40))
        return "&s " + "x" * size + " # {after}" + "[" + ", ".join(["*s"] * uses) + "]"
    if kind == "laughs":  # nested aliases: far more values than the budget, from a few lines (hostile_yaml)
        return "laughs"
    if kind == "deep-flow":
        depth = MAX_DEPTH + draw(st.integers(1, 3000))
        opener = draw(st.sampled_from(["[", "{a: "]))
        return opener * depth + "1" + ("]" if opener == "[" else "}") * depth
    if kind == "deep-block":  # written at the place's indentation (hostile_yaml)
        return "deep-block"
    if kind == "digits":
        digits = draw(st.integers(31, 6000))
        return draw(st.sampled_from(["", "-", "0x", "0o"])) + draw(st.sampled_from("123456789")) + "7" * (digits - 1)
    if kind == "tag":
        return draw(st.sampled_from(["!!python/object/apply:os.system ['ls']", "!!binary aGVsbG8=", "! 12",
                                     "!custom x", "!!str 1", "!!map {a: 1}"]))
    if kind == "duplicate":
        return "{a: 1, b: 2, a: 3}"
    if kind == "merge-key":
        return "{<<: {a: 1}}"
    key_value = draw(st.sampled_from([("join_timeout", RDZV_MAX_SECONDS), ("read_timeout", RDZV_MAX_SECONDS),
                                      ("keep_alive_max_attempt", RDZV_MAX_ATTEMPTS)]))
    return f"rdzv:{key_value[0]}:{key_value[1] + draw(st.integers(1, 2**64))}"


@st.composite
def hostile_yaml(draw) -> str:
    value = draw(yaml_values())
    template, indent, _ = draw(st.sampled_from(PLACES))
    if value.startswith("rdzv:"):
        _, key, number = value.split(":")
        return f"elastic:\n  rdzv_configs:\n    {key}: {number}\n"
    if value == "laughs":
        width, depth = draw(st.integers(5, 12)), draw(st.integers(5, 9))
        lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
        lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, depth)]
        return "\n".join(lines) + "\n" + template.format(f"*a{depth - 1}")
    if value == "deep-block":
        depth = MAX_DEPTH + draw(st.integers(1, 40))
        block = "".join(" " * (indent + 2 + 2 * i) + "-\n" for i in range(depth)) + " " * (indent + 2 * depth + 2) + "x"
        return template.format("\n" + block)
    anchor, _, rest = value.partition(" # {after}")
    if rest:  # an anchored string somewhere, its aliases at the place
        return f"x-anchor: {anchor}\n" + template.format(rest)
    return template.format(value)


@st.composite
def hostile_toml(draw) -> str:
    kind = draw(st.sampled_from(["digits", "deep", "date", "duplicate", "rdzv", "syntax"]))
    _, _, template = draw(st.sampled_from(PLACES))
    if kind == "digits":
        digits = draw(st.integers(31, 6000))
        prefix = draw(st.sampled_from(["", "-", "0x", "0o"]))
        return template.format(prefix + draw(st.sampled_from("1234567")) + "7" * (digits - 1))
    if kind == "deep":
        depth = MAX_DEPTH + draw(st.integers(1, 3000))
        return template.format("[" * depth + "1" + "]" * depth)
    if kind == "date":
        return template.format(draw(st.sampled_from(["2024-01-01", "12:30:00", "2024-01-01T00:00:00Z"])))
    if kind == "duplicate":
        return template.format("1") + template.splitlines()[-1].format("2") + "\n"
    if kind == "rdzv":
        key, bound = draw(st.sampled_from([("join_timeout", RDZV_MAX_SECONDS), ("keep_alive_max_attempt", RDZV_MAX_ATTEMPTS)]))
        return f"[elastic.rdzv_configs]\n{key} = {bound + draw(st.integers(1, 2**62))}\n"
    return template.format(draw(st.sampled_from(["[1, 2", "{a = 1", "\"unterminated", "1 2", "= 3"])))


@st.composite
def hostile_files(draw) -> tuple[bytes, str]:
    """``(bytes, suffix)`` of a hostile profile file, with the file-level troubles mixed in now and then."""
    suffix = draw(st.sampled_from([".yaml", ".toml"]))
    text = draw(hostile_yaml() if suffix == ".yaml" else hostile_toml())
    trouble = draw(st.sampled_from([None] * 17 + ["oversize", "not-utf8", "nul"]))
    raw = text.encode("utf-8")
    if trouble == "oversize":
        raw = b"# " + b"x" * MAX_FILE_BYTES + b"\n" + raw
    elif trouble == "not-utf8":
        raw = raw + b"description2: \xff\xfe\n"
    elif trouble == "nul":
        raw = raw + b"# \x00\n"
    return raw, suffix


LOCATED = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): ")


@pytest.mark.slow
@FUZZ
@given(hostile_files())
def test_generated_hostile_files_are_located_profile_errors(hostile):
    """The Python API: validate_paths never raises and reports an error located in the file; loading and
    merging the profile raises ProfileError, located in the file, and nothing else."""
    from kfdefaults.api import validate_paths
    from kfdefaults.pipeline import Pipeline

    raw, suffix = hostile
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "hostile" + suffix)
        with open(path, "wb") as f:
            f.write(raw)
        errors = validate_paths([path]).errors
        assert errors and all(LOCATED.match(str(e)) and str(e).startswith(path + ":") for e in errors), errors
        with pytest.raises(ProfileError) as excinfo:
            Pipeline.discover(team=[folder], entry_points=False, pyproject=False).resolve("hostile")
        assert all(str(f).startswith(path + ":") for f in excinfo.value.findings)


CHILD_MEMORY = 1 << 30
"""Address space a command-line run over the hostile files may use (1 GiB; a run peaks at about 35 MiB resident)."""

CHILD_CPU_SECONDS = 120
"""CPU time it may use (each file is refused in well under a second; the whole run takes a few)."""


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_SECONDS, CHILD_CPU_SECONDS))


CHILD = """
import resource, sys
from kfdefaults.cli import main
try:
    main(sys.argv[1:])
finally:
    try:  # this program's own peak: ru_maxrss also counts the forking parent's memory on Linux
        peak = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])
    except (OSError, IndexError, ValueError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sys.stderr.write(f"@@ peak {peak} KiB\\n")
"""


def run_limited(*args: str) -> tuple[int, str, str, int]:
    """``kfdefaults ARGS`` in a process held to CHILD_MEMORY and CHILD_CPU_SECONDS: (status, stdout, stderr
    without the peak line, peak resident memory in KiB)."""
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, timeout=600,
                          preexec_fn=_limits, env={**os.environ})
    *lines, peak = proc.stderr.rstrip("\n").split("\n")
    assert peak.startswith("@@ peak "), f"killed by a limit? status {proc.returncode}: {proc.stderr[-2000:]}"
    return proc.returncode, proc.stdout, "\n".join(lines), int(peak.split()[2])


@pytest.mark.slow
@settings(FUZZ, max_examples=3)
@given(st.lists(hostile_files(), min_size=8, max_size=12))
def test_the_command_line_refuses_generated_hostile_files_within_bounds(batch):
    """``validate`` and ``render`` over a folder of hostile files: exit 1, every file named at a LINE:COLUMN,
    no traceback, no internal error; within the memory and CPU limits, and a modest peak."""
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i, (raw, suffix) in enumerate(batch):
            paths.append(os.path.join(folder, f"hostile-{i}{suffix}"))
            with open(paths[-1], "wb") as f:
                f.write(raw)
        code, _, err, peak = run_limited("validate", folder)
        assert code == 1, err
        assert "Traceback" not in err and "internal error" not in err, err
        lines = err.splitlines()
        assert lines[-1].startswith("kfdefaults validate: ")
        assert all(LOCATED.match(line) for line in lines[:-1]), err
        assert {LOCATED.match(line)["file"] for line in lines[:-1]} == set(paths)
        assert peak < 256 * 1024, f"peak {peak} KiB"  # about 35 MiB; a 54 KB file of aliases took 745 MiB without the byte budget
        code, out, err, peak = run_limited("render", "hostile-0", "--team", folder, "-o", "json")
        assert code == 1 and out == "" and "Traceback" not in err and "internal error" not in err, err
        assert all(LOCATED.match(line) for line in err.splitlines()), err


# --- text a terminal, a log or Markdown acts on: in keys, values and file names -------------------------------
#
# Each generated profile holds control characters, line breaks and backtick runs (with what follows them in an
# attack: an OSC 52 or screen-clearing escape, a forged ``::error::`` workflow command, HTML, an @-mention) in a
# key, a value or its file name, or has an option-like file name (``--help.yaml``). Whatever the command line
# prints of them is visible characters only, one finding a line, and a name after ``--`` is a name.

PIECES = ["`", "``", "```", "\x1b", "]52;c;aGk=\x07", "[2J", "\r", "\n", "\n::error file=x::forged", "\x9b", "\x7f",
          "\u202e", "\u2028", "\u200b", "<img src=x onerror=alert(1)>", "@security-team", "|", "\\", " ", "a"]
OPTION_LIKE = ["--help", "-h", "--version", "-o", "--team", "--", "-"]
SHOWN_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def _yaml_string(text: str) -> str:
    return '"' + "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else f"\\U{ord(c):08x}"
                         for c in text) + '"'


@st.composite
def displayed_profiles(draw) -> tuple[str, str, str]:
    """``(kind, file name without suffix, YAML text)``: kind ``key``, ``value``, ``name`` or ``option``."""
    kind = draw(st.sampled_from(["key", "value", "name", "option"]))
    text = "".join(draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=8)))
    if kind == "key":
        return kind, "k", f"elastic:\n  {_yaml_string(text)}: 1\n"
    if kind == "value":
        return kind, "v", f"pod_template:\n  annotations:\n    note: {_yaml_string(text)}\n"
    if kind == "name":
        return kind, "n" + text.replace("/", "|"), "elastic: {nnodes: 2}\n"
    return kind, draw(st.sampled_from(OPTION_LIKE)), "elastic: {nnodes: 2}\n"


def _shown_safely(text: str) -> None:
    assert not SHOWN_RAW.search(text), [m.group() for m in SHOWN_RAW.finditer(text)][:5]
    assert not re.search(r"^\s*::", text, re.MULTILINE), text


@pytest.mark.slow
@settings(FUZZ, max_examples=3)
@given(st.lists(displayed_profiles(), min_size=6, max_size=10))
def test_the_command_line_shows_hostile_keys_values_and_file_names_as_escapes(batch):
    from markdown_it import MarkdownIt

    from kfdefaults.escape import printable

    kfdefaults = os.path.join(os.path.dirname(sys.executable), "kfdefaults")
    with tempfile.TemporaryDirectory() as folder:
        names: dict[str, str] = {}
        for i, (kind, name, text) in enumerate(batch):
            name = name if kind == "option" else f"{name}{i}"
            names.setdefault(name, kind)
            with open(os.path.join(folder, name + ".yaml"), "w", encoding="utf-8") as f:
                f.write(text)

        def run(*args: str) -> subprocess.CompletedProcess:
            proc = subprocess.run([kfdefaults, *args], capture_output=True, text=True, timeout=300)
            assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
            _shown_safely(proc.stdout + proc.stderr)
            return proc

        checked = run("validate", folder)
        bad = {n for n, kind in names.items() if kind != "value"}
        assert checked.returncode == (1 if bad else 0)
        *findings, summary = checked.stderr.splitlines()
        assert summary.startswith("kfdefaults validate: ") and all(LOCATED.match(line) for line in findings)
        assert {LOCATED.match(line)["file"] for line in findings} == {printable(os.path.join(folder, n + ".yaml"))
                                                                     for n in bad}
        run("list", "--team", folder)
        for name, kind in names.items():
            if kind == "value":
                assert run("diff", "cpu-small", name, "--team", folder).returncode == 1
                markdown = run("diff", "cpu-small", name, "--team", folder, "--format", "markdown").stdout
                tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(markdown)
                children = [c for t in tokens if t.type == "inline" for c in t.children]
                assert {c.type for c in children} <= {"text", "code_inline", "strong_open", "strong_close"}
                assert all("onerror" not in c.content and "@" not in c.content for c in children if c.type == "text")
            elif kind == "option":  # after --, a name: compared (and refused, as a bad name), not an option
                proc = run("diff", "--team", folder, "--team-against", folder, "--format", "markdown", "--", name)
                assert proc.returncode == 2 and proc.stdout == "" and "usage:" not in proc.stderr, proc.stderr
                assert f"{name}.yaml:1:1: [team] the file name `{name}` is not a profile name" in proc.stderr
