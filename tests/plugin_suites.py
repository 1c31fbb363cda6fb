"""The SDK plugins' own test modules, run against kfdefaults' classes.

flytekitplugins-kfpytorch publishes its tests in its source distribution on PyPI: :func:`kfpytorch_tests` fetches
the one of the installed version with pip (the package registry's ordinary client), once into a cache folder, and
takes its ``tests/*.py``; nothing of it is kept in this repository. :func:`run_suite` runs them in a process of
their own with a ``conftest.py`` of ours (``plugin_conftests/kfpytorch.py``) that makes the plugin's
``Elastic`` kfdefaults', and reads each test's outcome from pytest's JUnit XML.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("KFDEFAULTS_PLUGIN_TESTS", Path.home() / ".cache" / "kfdefaults-plugin-tests"))


def _pip() -> list[str]:
    """A pip: this interpreter's, else the system's ``python3 -m pip`` (a uv-made venv has none)."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    python = shutil.which("python3") or shutil.which("python")
    if python is None:
        raise RuntimeError("no pip to fetch the plugin's tests with")
    return [python, "-m", "pip"]


def kfpytorch_tests() -> Path:
    """The folder of the installed flytekitplugins-kfpytorch's own ``tests/*.py``, from its sdist on PyPI."""
    version = importlib.metadata.version("flytekitplugins-kfpytorch")
    folder = CACHE / f"flytekitplugins-kfpytorch-{version}" / "tests"
    if folder.is_dir() and any(folder.glob("test_*.py")):
        return folder
    with tempfile.TemporaryDirectory() as download:
        subprocess.run([*_pip(), "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", download,
                        f"flytekitplugins-kfpytorch=={version}"], check=True, capture_output=True, timeout=300)
        [sdist] = Path(download).glob("*.tar.gz")
        staging = Path(tempfile.mkdtemp(dir=CACHE.parent if CACHE.parent.is_dir() else None))
        with tarfile.open(sdist) as archive:
            members = [m for m in archive.getmembers() if m.isfile() and len(Path(m.name).parts) == 3
                       and Path(m.name).parts[1] == "tests" and m.name.endswith(".py")]
            archive.extractall(staging, members=members, filter="data")
        found = [staging / m.name for m in members]
        folder.mkdir(parents=True, exist_ok=True)
        for path in found:
            shutil.copyfile(path, folder / path.name)
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def run_suite(tests: Path, conftest: Path, work: Path, *args: str) -> dict[str, str]:
    """Run the test modules of ``tests`` (copied into ``work`` beside ``conftest``) in a fresh pytest process:
    ``{test name: "passed" | "failed" | "skipped"}``, a parametrized test named with its parameters' id."""
    shutil.copytree(tests, work / "tests")
    shutil.copyfile(conftest, work / "tests" / "conftest.py")
    report = work / "report.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           "--rootdir", str(work), f"--junitxml={report}", *args, str(work / "tests")],
                          cwd=work, capture_output=True, text=True, timeout=900)
    if not report.exists():
        raise AssertionError(f"the plugin's tests did not run: {proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        kind = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        outcomes[f"{module}::{case.get('name')}"] = {"failure": "failed", "error": "failed"}.get(kind, kind)
    return outcomes
