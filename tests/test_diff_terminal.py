"""``kfdefaults diff`` on a real terminal (a pseudo-terminal of 80, 100 and 120 columns), as a reviewer reads a pull
request: every value whole, or wrapped at a word or path boundary, and about as many lines as there are values."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest
from test_explain_terminal import on_terminal

BOUNDARIES = "/.,;:=-_])}"
"""Where a word may be cut: after a path separator, a JSON separator, a name's dash or underscore, a bracket."""

OLD = """\
description: Multi-node training of the detection models on the shared A100 pool, with the platform's defaults for NCCL and checkpoints
extends: gpu-large
elastic:
  nnodes: "2:4"
  rdzv_configs: {join_timeout: 1200}
pod_template:
  annotations:
    cost-allocation.example.com/a-rather-long-annotation-key-for-the-finance-team: vision-research-2024
  spec:
    containers:
      - name: primary
        image: registry.example.com/vision/detection/train:2024.06.1-cuda12.4-torch2.3
        env:
          - {name: CHECKPOINT_URI, value: "s3://vision-checkpoints/detection/experiments/2024-06/run-17/"}
    tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
"""

NEW = """\
description: Multi-node training of the detection models on the dedicated H100 pool, checkpoints written to the regional bucket every hour
extends: gpu-large
elastic:
  nnodes: "2:8"
  rdzv_configs: {join_timeout: 1800}
pod_template:
  annotations:
    cost-allocation.example.com/a-rather-long-annotation-key-for-the-finance-team: vision-production-2024
  spec:
    containers:
      - name: primary
        image: registry.example.com/vision/detection/train:2024.07.2-cuda12.4-torch2.4
        env:
          - {name: CHECKPOINT_URI, value: "s3://vision-checkpoints-eu-west-1/detection/production/2024-07/run-3/"}
    tolerations:
      - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
      - {key: pool, operator: Equal, value: h100, effect: NoSchedule}
"""


@pytest.fixture(scope="module")
def review(tmp_path_factory):
    """The two team folders of a pull request, and ``diff``'s arguments and JSON differences for them."""
    root = tmp_path_factory.mktemp("review")
    for folder, text in (("old", OLD), ("new", NEW)):
        (root / folder).mkdir()
        (root / folder / "train.yaml").write_text(text, encoding="utf-8")
    args = ("diff", "train", "--team", str(root / "old"), "--team-against", str(root / "new"))
    proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", *args, "-o", "json"], capture_output=True,
                          text=True)
    assert proc.returncode == 1, proc.stderr
    return args, json.loads(proc.stdout)["differences"]


def shown(value) -> str:
    from kfdefaults.show.leaves import format_value

    return format_value(value)


def found_whole_or_wrapped(text: str, lines: list[str]) -> bool:
    """Whether ``text`` is on one line, or starts after a space on one line and goes on at the start (after the
    indentation) of the lines that follow, each cut at a space (dropped) or just after a boundary character."""
    if any(text in line for line in lines):
        return True

    def goes_on(rest: str, j: int, before: str) -> bool:
        if not rest:
            return True
        if j >= len(lines):
            return False
        if rest[0] == " ":
            rest = rest[1:]  # cut at a space: the next line starts with the next word
        elif before[-1] not in BOUNDARIES:
            return False  # cut inside a word
        piece = lines[j].strip()
        return bool(piece) and (piece == rest or (rest.startswith(piece) and goes_on(rest[len(piece):], j + 1, piece)))

    for i, line in enumerate(lines):
        for start in [m.start() + 1 for m in re.finditer(" ", line)]:
            head = line[start:].rstrip()
            if head and text.startswith(head) and len(head) < len(text) and goes_on(text[len(head):], i + 1, head):
                return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize("columns", [80, 100, 120])
def test_every_value_is_whole_or_wrapped_at_a_boundary(columns, review):
    args, differences = review
    screen = on_terminal(columns, *args)
    lines = screen.splitlines()
    assert lines[0].startswith("train (before) → train (after): 7 differences"), screen
    texts = [d["path"] for d in differences] + [shown(d[side]) for d in differences for side in ("a", "b") if side in d]
    for text in texts:
        assert found_whole_or_wrapped(text, lines), (columns, text, screen)
    # no line overflows the terminal: every word of these values is shorter than it
    assert max(len(line) for line in lines) <= columns, screen
    # about one line per value and per origin: a value wraps to as many lines as its length needs, never to one
    # or two characters a line
    budget = 3 + sum(2 + len(text) // (columns - 30) for text in texts) + 2 * len(differences)
    assert len(lines) <= budget, (columns, len(lines), budget, screen)
    for d in differences:
        assert re.search(rf"set by team train\.yaml:{d['b_set_by']['line']}\b", screen), (d["path"], screen)


@pytest.mark.slow
def test_a_terminal_wide_enough_gets_the_table(review):
    args, differences = review
    screen = on_terminal(500, *args)
    assert re.search(r"path\s+┃\s+train \(before\)\s+┃\s+train \(after\)\s+┃\s+set by", screen), screen
    assert len(screen.splitlines()) == 2 + 3 + len(differences) + 1  # title, legend; the head, a row each, the foot
    for d in differences:
        assert shown(d["b"]) in screen


@pytest.mark.slow
def test_labels_longer_than_a_third_of_the_terminal_go_above_their_values(tmp_path):
    for name, workers in (("detection-finetune-single-node-debug", 2), ("detection-finetune-single-node-full", 8)):
        (tmp_path / f"{name}.yaml").write_text(textwrap.dedent(f"""\
            description: Fine-tuning of the detection models on one node with {workers} workers, for the data loaders
            elastic: {{nnodes: 1, nproc_per_node: {workers}}}
            """), encoding="utf-8")
    screen = on_terminal(80, "diff", "detection-finetune-single-node-debug", "detection-finetune-single-node-full",
                         "--team", str(tmp_path))
    lines = screen.splitlines()
    at = lines.index("    detection-finetune-single-node-debug:")
    assert lines[at + 1] == '      "Fine-tuning of the detection models on one node with 2 workers, for the', screen
    assert lines[at + 2] == '      data loaders"', screen
    assert max(len(line) for line in lines) <= 80
