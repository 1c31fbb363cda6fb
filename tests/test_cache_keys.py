"""The content-addressed caches (a validated file, a merge, the patch schema), run as a user runs ``kfdefaults
render``, the cache on: a second run that differs in one thing each key holds (the Kubernetes version, a
library's version) gets its own result, never the first run's from the cache.

Each second run also differs in its command line or environment, so that it is not the replay of the first
(:mod:`kfdefaults.cli.replay`): what is tested is the cache below it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")

# schedulingGates exist from Kubernetes 1.26 on, a list merged by name: a platform and a team gate, merged, are two
PLATFORM_GATE = "pod_template:\n  spec:\n    schedulingGates:\n      - name: example.com/quota\n"
TEAM_GATE = "pod_template:\n  spec:\n    schedulingGates:\n      - name: example.com/review\n"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working folder with a platform and a team folder, each defining ``gated`` with one scheduling gate."""
    work = tmp_path / "work"
    for layer, text in (("platform", PLATFORM_GATE), ("team", TEAM_GATE)):
        (work / layer).mkdir(parents=True)
        (work / layer / "gated.yaml").write_text(text)
    return work


def kfdefaults(work: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    shell = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    shell.update(KFDEFAULTS_CACHE_DIR=str(work.parent / "cache"), KFDEFAULTS_NO_ENTRY_POINTS="1", **env)
    return subprocess.run([KFDEFAULTS, *args], cwd=work, env=shell, capture_output=True, text=True, timeout=120)


GATED = ("render", "gated", "--platform", "platform", "--team", "team", "--as", "podtemplate")


def gates(rendered: subprocess.CompletedProcess) -> list[str]:
    assert rendered.returncode == 0, rendered.stderr
    spec = json.loads(rendered.stdout)["template"]["spec"]
    return [gate["name"] for gate in spec.get("schedulingGates", [])]


@pytest.mark.slow
def test_a_file_is_validated_against_each_kubernetes_version_it_is_rendered_for(work: Path) -> None:
    """Valid for 1.32, the files are kept validated in the cache; rendered for 1.25, which has no schedulingGates,
    the first one read is an error at its line, as it is without the cache."""
    assert gates(kfdefaults(work, *GATED, "-o", "json", "--kubernetes-version", "1.32")) == [
        "example.com/review", "example.com/quota"]
    older = kfdefaults(work, *GATED, "--kubernetes-version", "1.25")
    assert (older.returncode, older.stdout) == (1, "")
    assert older.stderr.startswith("platform/gated.yaml:3:5: [platform] pod_template.spec.schedulingGates: "
                                   "unknown field `schedulingGates`"), older.stderr


@pytest.mark.slow
def test_a_merge_follows_the_patch_metadata_of_its_own_kubernetes_version(work: Path) -> None:
    """A run for 1.25 keeps that version's patch metadata in the cache; the next run, for 1.32, merges the gates
    of the two layers by name as 1.32's schema says (1.25's has no such list: it would keep only the team's)."""
    assert kfdefaults(work, "render", "gpu-large", "--kubernetes-version", "1.25").returncode == 0
    assert gates(kfdefaults(work, *GATED, "-o", "json", "--kubernetes-version", "1.32")) == [
        "example.com/review", "example.com/quota"]


@pytest.mark.slow
def test_another_deepmerge_merges_anew(work: Path) -> None:
    """A merge is kept in the cache by the deepmerge that made it. Here another deepmerge (a copy of the installed
    one first on the path, its version 99.0 and its ``override`` strategy keeping the lower value, standing for a
    release that merges otherwise) merges the same files: the ``elastic`` settings are its own."""
    (work / "team" / "gpu-large.yaml").write_text('elastic: {nnodes: "2:4"}\n')
    args = ("render", "gpu-large", "--team", "team", "-o", "json")
    assert json.loads(kfdefaults(work, *args).stdout)["elastic"]["nnodes"] == "2:4"
    site = work.parent / "site"
    copy = site / "deepmerge"
    shutil.copytree(os.path.dirname(importlib.util.find_spec("deepmerge").origin), copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "_version.py").write_text("__version__ = version = '99.0'\n__version_tuple__ = version_tuple = (99, 0)\n")
    fallback = copy / "strategy" / "fallback.py"
    code = fallback.read_text()
    assert code.count('"""use nxt, and ignore base."""\n        return nxt') == 1
    fallback.write_text(code.replace('"""use nxt, and ignore base."""\n        return nxt',
                                     '"""use nxt, and ignore base."""\n        return base'))
    other = kfdefaults(work, *args, PYTHONPATH=str(site))
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout)["elastic"]["nnodes"] == "1:4"  # the builtin gpu-large's, kept by that deepmerge


@pytest.mark.slow
def test_another_kubernetes_validate_validates_anew(work: Path) -> None:
    """A validated file is kept in the cache by the kubernetes-validate whose schema checked it. Here another
    one (first on the path, version 99.0, holding Kubernetes 1.32's schema without the container field ``stdin``,
    standing for a release whose schema changed) checks the same file: ``stdin`` is an error at its line."""
    (work / "team" / "interactive.yaml").write_text("pod_template:\n  spec:\n    containers:\n"
                                                     "      - name: primary\n        stdin: true\n")
    args = ("render", "interactive", "--team", "team")
    assert kfdefaults(work, *args).returncode == 0
    installed = Path(importlib.util.find_spec("kubernetes_validate").submodule_search_locations[0])
    shadow = work.parent / "site" / "kubernetes_validate"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    (shadow / "version.py").write_text('__version__ = "99.0"\n')
    for variant in ("v1.32.0-local", "v1.32.0-local-strict"):
        schema = json.loads((installed / "kubernetes-json-schema" / variant / "_definitions.json").read_bytes())
        del schema["$defs"]["io.k8s.api.core.v1.Container"]["properties"]["stdin"]
        (shadow / "kubernetes-json-schema" / variant).mkdir(parents=True)
        (shadow / "kubernetes-json-schema" / variant / "_definitions.json").write_text(json.dumps(schema))
    other = kfdefaults(work, *args, PYTHONPATH=str(shadow.parent))
    assert (other.returncode, other.stdout) == (1, ""), other.stderr
    assert "team/interactive.yaml:5:9: [team] pod_template.spec.containers[name=primary].stdin: unknown field" \
        in other.stderr


@pytest.mark.slow
def test_a_profile_that_names_another_primary_container_is_merged_anew(work: Path) -> None:
    """A file whose only change names another primary container (no container written, so no fragment's pod
    template changes) is another merge: the profile says the new name."""
    solo = work / "team" / "solo.yaml"
    solo.write_text("elastic: {nnodes: 1}\npod_template:\n  primary_container_name: trainer\n")
    args = ("render", "solo", "--team", "team", "-o", "json")
    assert json.loads(kfdefaults(work, *args).stdout)["pod_template"]["primary_container_name"] == "trainer"
    solo.write_text(solo.read_text().replace("trainer", "learner"))
    again = kfdefaults(work, *args)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["pod_template"]["primary_container_name"] == "learner"
