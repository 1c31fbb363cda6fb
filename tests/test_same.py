"""When two values are the same: one rule for ``diff``, the locks and ``verify`` (``kfdefaults.merge.leaves.same``),
as JSON and Kubernetes read data: ``1`` and ``1.0`` are one number, ``true`` is not ``1``, ``"8"`` is not ``8``
(docs/merge-semantics.md, "When two values are the same"). Each case runs the command line in a process of its
own, on profile files written here."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from kfdefaults.merge.leaves import same


def kfdefaults(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kfdefaults.cli", *args], capture_output=True, text=True)


def folder(path: Path, text: str, name: str = "gpu-large.yaml") -> str:
    path.mkdir(parents=True, exist_ok=True)
    (path / name).write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_5_and_5_0_are_one_number_to_diff(tmp_path):
    five = folder(tmp_path / "five", "elastic:\n  monitor_interval: 5\n")
    five_point_0 = folder(tmp_path / "five-point-0", "elastic:\n  monitor_interval: 5.0\n")
    result = kfdefaults("diff", "gpu-large", "--team", five, "--team-against", five_point_0, "-o", "text")
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr
    other = folder(tmp_path / "other", "elastic:\n  monitor_interval: 5.5\n")
    result = kfdefaults("diff", "gpu-large", "--team", five, "--team-against", other, "-o", "text")
    assert (result.returncode, result.stdout) == (1, "~ elastic.monitor_interval: 5 -> 5.5\n"), result.stderr


@pytest.mark.slow
def test_a_lock_and_diff_agree_that_5_0_is_the_locked_5(tmp_path):
    platform = folder(tmp_path / "platform", "locked: [elastic.monitor_interval]\nelastic:\n  monitor_interval: 5\n")
    team = folder(tmp_path / "team", "elastic:\n  monitor_interval: 5.0\n")
    written_again = kfdefaults("render", "gpu-large", "--platform", platform, "--team", team, "-o", "json")
    assert written_again.returncode == 0, written_again.stderr  # the locked value, written again
    assert json.loads(written_again.stdout)["elastic"]["monitor_interval"] == 5
    empty = folder(tmp_path / "empty", "", name="README")
    diff = kfdefaults("diff", "gpu-large", "--platform", platform, "--team", empty, "--team-against", team, "-o", "text")
    assert (diff.returncode, diff.stdout) == (0, ""), diff.stdout + diff.stderr  # and no difference either
    changed = folder(tmp_path / "changed", "elastic:\n  monitor_interval: 6\n")
    broken = kfdefaults("render", "gpu-large", "--platform", platform, "--team", changed)
    assert broken.returncode == 1 and broken.stdout == ""
    assert broken.stderr.startswith(f"{changed}/gpu-large.yaml:2:21: [team] elastic.monitor_interval: locked by "
                                    f"[platform] {platform}/gpu-large.yaml:1:10: "), broken.stderr
    assert "this changes 5 to 6" in broken.stderr


@pytest.mark.slow
def test_the_string_2_is_not_the_number_2_to_diff_or_a_lock(tmp_path):
    def limits(cpu: str) -> str:
        return f"pod_template:\n  spec:\n    containers:\n      - name: primary\n        resources: {{limits: {{cpu: {cpu}}}}}\n"

    string, number = folder(tmp_path / "string", limits('"2"')), folder(tmp_path / "number", limits("2"))
    diff = kfdefaults("diff", "gpu-large", "--team", string, "--team-against", number, "-o", "text")
    assert (diff.returncode, diff.stdout) == (1, '~ pod_template.spec.containers[name=primary].resources.limits.cpu: '
                                                 '"2" -> 2\n'), diff.stderr
    cpu = "pod_template.spec.containers[name=primary].resources.limits.cpu"
    platform = folder(tmp_path / "platform", f"locked: ['{cpu}']\n" + limits('"2"'))
    broken = kfdefaults("render", "gpu-large", "--platform", platform, "--team", number)
    assert broken.returncode == 1, broken.stdout
    assert broken.stderr.startswith(f"{number}/gpu-large.yaml:5:35: [team] {cpu}: locked by [platform] "), broken.stderr
    assert 'this changes "2" to 2' in broken.stderr
    assert kfdefaults("render", "gpu-large", "--platform", platform, "--team", string).returncode == 0


@pytest.mark.slow
def test_true_is_not_1_to_verify_and_30_0_is_30(tmp_path):
    team = folder(tmp_path / "team", "pod_template:\n  spec:\n    hostNetwork: true\n"
                                     "    terminationGracePeriodSeconds: 30\n")
    rendered = kfdefaults("render", "gpu-large", "--team", team, "--as", "podtemplate", "-o", "json")
    assert rendered.returncode == 0, rendered.stderr
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-0"},
           "spec": json.loads(rendered.stdout)["template"]["spec"]}
    pod["spec"]["terminationGracePeriodSeconds"] = 30.0  # a JSON number: the profile's 30
    live = tmp_path / "pod.json"
    live.write_text(json.dumps(pod), encoding="utf-8")
    result = kfdefaults("verify", str(live), "--profile", "gpu-large", "--team", team)
    assert result.returncode == 0 and ": no differences" in result.stdout, result.stdout + result.stderr
    pod["spec"]["hostNetwork"] = 1  # not a boolean
    live.write_text(json.dumps(pod), encoding="utf-8")
    result = kfdefaults("verify", str(live), "--profile", "gpu-large", "--team", team)
    assert result.returncode == 1
    assert (f"  pod_template.spec.hostNetwork: 1 -> true  team {team}/gpu-large.yaml:3\n"
            in result.stdout), result.stdout + result.stderr
    assert "1 difference" in result.stdout


@pytest.mark.parametrize("one, other, alike", [
    (1, 1.0, True), (True, 1, False), (False, 0, False), ("8", 8, False), (None, 0, False),
    ({"a": 1, "b": [2.0]}, {"b": [2], "a": 1.0}, True), ([1, 2], [2, 1], False), (math.nan, math.nan, True),
])
def test_the_rule_as_the_merge_semantics_page_writes_it(one, other, alike):
    assert same(one, other) is alike and same(other, one) is alike
