"""The process's shared pipeline (what ``Elastic(profile=...)`` resolves through) in a fresh process: reused while
nothing it read changed, and never for another call. Each test changes one thing between two calls of one process
(an environment variable, an argument, ``sys.path``) and wants the second call to follow it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from replay_probe import CLUSTER_TEMPLATE

# Each step writes files, sets environment variables (None unsets one), puts folders first on sys.path, then
# resolves a profile through shared_pipeline(**call) and prints what it got: its labels, elastic settings and
# volumes, or the error.
STEPS = textwrap.dedent("""\
    import json, os, sys
    from kfdefaults import ProfileError
    from kfdefaults.pipeline.shared import shared_pipeline
    for step in json.loads(sys.argv[1]):
        for path, text in step.get("write", {}).items():
            with open(path, "w") as f:
                f.write(text)
        for name, value in step.get("env", {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        sys.path[:0] = step.get("path", [])
        try:
            resolved = shared_pipeline(**step.get("call", {})).resolve(step["profile"])
        except ProfileError as e:
            print(json.dumps({"error": str(e)}))
            continue
        spec = resolved.pod_template_spec
        print(json.dumps({"labels": spec.get("metadata", {}).get("labels", {}), "elastic": resolved.elastic_settings,
                          "volumes": [v["name"] for v in spec.get("spec", {}).get("volumes", [])]}))
""")


def shell_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    return {**env, "KFDEFAULTS_CACHE_DIR": str(tmp_path / "cache"), **extra}


def steps(tmp_path: Path, *steps: dict, env: dict[str, str] | None = None) -> list[dict]:
    """What each step resolved, in one fresh process (working folder ``tmp_path``)."""
    proc = subprocess.run([sys.executable, "-c", STEPS, json.dumps(list(steps))], cwd=tmp_path,
                          env=env or shell_env(tmp_path, KFDEFAULTS_NO_ENTRY_POINTS="1"), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def folder(path: Path, files: dict[str, str]) -> str:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_text(text)
    return str(path)


def labelled(value: str) -> dict[str, str]:
    """A gpu-large file of a platform or team folder that labels the pod ``made-by: VALUE``."""
    return {"gpu-large.yaml": f"pod_template:\n  labels: {{made-by: {value}}}\n"}


def platform_package(site: Path) -> str:
    """An installed platform package in ``site`` (its folder registered as a ``kfdefaults.platform`` entry point)
    whose gpu-large labels the pod ``made-by: acme``."""
    info = site / "acme_platform-1.0.dist-info"
    folder(info, {"METADATA": "Metadata-Version: 2.1\nName: acme-platform\nVersion: 1.0\n",
                  "entry_points.txt": "[kfdefaults.platform]\nacme = acme_platform\n"})
    folder(site / "acme_platform", {"__init__.py": "", **labelled("acme")})
    return str(site)


def test_elastic_follows_the_platform_path_set_between_two_calls(tmp_path: Path, flytekit_python) -> None:
    """A notebook that points KFDEFAULTS_PLATFORM_PATH elsewhere between two ``Elastic(...)`` calls gets the
    other platform's profile from the second."""
    a = folder(tmp_path / "a", {"gpu-large.yaml": "elastic: {max_restarts: 5}\n"})
    b = folder(tmp_path / "b", {"gpu-large.yaml": "elastic: {max_restarts: 7}\n"})
    script = tmp_path / "notebook.py"
    script.write_text(textwrap.dedent("""\
        import os, sys
        from kfdefaults import Elastic
        os.environ["KFDEFAULTS_PLATFORM_PATH"] = sys.argv[1]
        first = Elastic(profile="gpu-large").max_restarts
        os.environ["KFDEFAULTS_PLATFORM_PATH"] = sys.argv[2]
        print(first, Elastic(profile="gpu-large").max_restarts)
    """))
    proc = flytekit_python.run([script, a, b], cwd=tmp_path, env=shell_env(tmp_path, KFDEFAULTS_NO_ENTRY_POINTS="1"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["5", "7"]


def test_the_team_path_set_between_two_calls_is_followed(tmp_path: Path) -> None:
    a, b = folder(tmp_path / "a", labelled("a")), folder(tmp_path / "b", labelled("b"))
    first, second = steps(tmp_path, {"env": {"KFDEFAULTS_TEAM_PATH": a}, "profile": "gpu-large"},
                          {"env": {"KFDEFAULTS_TEAM_PATH": b}, "profile": "gpu-large"})
    assert (first["labels"]["made-by"], second["labels"]["made-by"]) == ("a", "b")


def test_installed_packages_turned_off_between_two_calls_are_left_out(tmp_path: Path) -> None:
    site = platform_package(tmp_path / "site")
    first, second = steps(tmp_path, {"path": [site], "profile": "gpu-large"},
                          {"env": {"KFDEFAULTS_NO_ENTRY_POINTS": "1"}, "profile": "gpu-large"},
                          env=shell_env(tmp_path))
    assert first["labels"].get("made-by") == "acme" and "made-by" not in second["labels"]


@pytest.mark.slow
def test_a_package_on_a_folder_put_on_sys_path_between_two_calls_is_read(tmp_path: Path) -> None:
    site = platform_package(tmp_path / "site")
    first, second = steps(tmp_path, {"profile": "gpu-large"}, {"path": [site], "profile": "gpu-large"},
                          env=shell_env(tmp_path))
    assert "made-by" not in first["labels"] and second["labels"].get("made-by") == "acme"


def test_the_cluster_template_named_between_two_calls_is_merged(tmp_path: Path) -> None:
    """KFDEFAULTS_CLUSTER_TEMPLATE set between two calls: its /dev/shm replaces the profile's in the second."""
    template = tmp_path / "template.yaml"
    template.write_text(CLUSTER_TEMPLATE)
    call = {"call": {"target": "flytekit"}, "profile": "gpu-large"}
    first, second = steps(tmp_path, call, {**call, "env": {"KFDEFAULTS_CLUSTER_TEMPLATE": str(template)}})
    assert "dshm" in first["volumes"] and "dshm" not in second["volumes"]


def test_a_cluster_template_put_in_the_platform_folder_between_two_calls_is_merged(tmp_path: Path) -> None:
    """A platform folder's ``_cluster-template.yaml`` is looked for: one written between two calls gives /dev/shm,
    so the second leaves the profile's own out."""
    platform = folder(tmp_path / "platform", labelled("platform"))
    call = {"call": {"platform": [platform], "target": "flytekit"}, "profile": "gpu-large"}
    first, second = steps(tmp_path, call, {**call, "write": {f"{platform}/_cluster-template.yaml": CLUSTER_TEMPLATE}})
    assert "dshm" in first["volumes"] and "dshm" not in second["volumes"]


GATED = "pod_template:\n  spec:\n    schedulingGates:\n      - name: example.com/review\n"


@pytest.mark.slow
@pytest.mark.parametrize("argument", ["platform", "team", "project", "kubernetes_version", "target"])
def test_each_argument_has_its_own_pipeline(tmp_path: Path, argument: str) -> None:
    """Two calls that differ in one argument of shared_pipeline(): the second resolves per its own."""
    a = folder(tmp_path / "a", {**labelled("a"), "gated.yaml": GATED})
    b = folder(tmp_path / "b", labelled("b"))
    for name, team in (("x", "a"), ("y", "b")):
        folder(tmp_path / name, {"pyproject.toml": f'[tool.kfdefaults]\nteam = ["../{team}"]\n'})
    calls = {"platform": ({"platform": [a]}, {"platform": [b]}), "team": ({"team": [a]}, {"team": [b]}),
             "project": ({"project": [str(tmp_path / "x")]}, {"project": [str(tmp_path / "y")]}),
             "kubernetes_version": ({"team": [a], "kubernetes_version": "1.32"},
                                    {"team": [a], "kubernetes_version": "1.25"}),
             "target": ({"target": "flytekit"}, {"target": "flyte2"})}[argument]
    profile = "gated" if argument == "kubernetes_version" else "gpu-large"
    first, second = steps(tmp_path, *({"call": call, "profile": profile} for call in calls))
    if argument == "kubernetes_version":  # no schedulingGates in Kubernetes 1.25
        assert "error" not in first and "unknown field `schedulingGates`" in second["error"]
    elif argument == "target":  # each plugin's own default below every layer
        assert (first["elastic"]["monitor_interval"], second["elastic"]["monitor_interval"]) == (5, 3)
    else:
        assert (first["labels"]["made-by"], second["labels"]["made-by"]) == ("a", "b")
