"""The package as users install it: the wheel holds the builtin profiles where the code looks for them."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    from hatchling.builders.wheel import WheelBuilder

    out = tmp_path_factory.mktemp("dist")
    [path] = list(WheelBuilder(str(ROOT)).build(directory=str(out), versions=["standard"]))
    return pathlib.Path(path)


def test_the_wheel_holds_every_builtin_profile_inside_the_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("kfdefaults/profiles/"))
    assert shipped == sorted(os.listdir(ROOT / "profiles"))
    assert "kfdefaults/cli/__main__.py" in names


@pytest.mark.slow
def test_an_installed_wheel_renders_from_its_own_profiles(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env.update(PYTHONPATH=str(site), KFDEFAULTS_NO_CACHE="1")  # ahead of the checkout's editable install
    code = "import kfdefaults.layers as l, kfdefaults; print(l.builtin_folder()); print(kfdefaults.__file__)"
    folder, module = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True,
                                    text=True, check=True).stdout.split()
    assert folder == str(site / "kfdefaults" / "profiles") and module.startswith(str(site))
    proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", "render", "gpu-large", "--explain"], env=env,
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"{site}/kfdefaults/profiles/gpu-large.yaml:" in proc.stdout


@pytest.mark.slow
def test_the_builtin_profiles_validate_clean_from_the_repository_root():
    proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", "validate", "--strict", "profiles"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert ": 0 errors, 0 warnings" in proc.stderr


def test_the_cache_fingerprint_covers_every_module_of_every_subpackage(tmp_path):
    import kfdefaults
    from kfdefaults import cache

    files = cache.source_files()
    package = pathlib.Path(kfdefaults.__file__).parent
    on_disk = sorted(str(p.relative_to(package)) for p in package.rglob("*.py") if "__pycache__" not in p.parts)
    assert files == on_disk
    assert {"smp/patch.py", "validate/body.py", "merge/fold.py", "flytekit/task.py"} <= set(files)


def test_a_change_to_a_module_deep_in_the_tree_is_a_new_cache_key(tmp_path):
    """A stale entry after a code change would be a wrong answer: changing any module changes every key."""
    import shutil

    import kfdefaults

    copy = tmp_path / "copy"
    shutil.copytree(pathlib.Path(kfdefaults.__file__).parent, copy / "kfdefaults", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}
    env["PYTHONPATH"] = str(copy)
    code = "import kfdefaults.cache as c; assert c.__file__.startswith(%r); print(c.key(b'x', 'profile'))" % str(copy)

    def key() -> str:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout

    before = key()
    assert key() == before  # nothing changed, the same key
    with open(copy / "kfdefaults" / "merge" / "primary.py", "a", encoding="utf-8") as f:
        f.write("\n# a change\n")
    assert key() != before


CORE_ONLY = ("kubernetes", "flytekit", "flytekitplugins", "flyte", "flyteplugins", "torch")
"""What the core never needs: the pre-commit hook's environment installs the core alone."""


def test_the_core_requires_neither_an_sdk_nor_the_kubernetes_client(wheel):
    metadata = zipfile.ZipFile(wheel).read(next(n for n in zipfile.ZipFile(wheel).namelist()
                                                if n.endswith(".dist-info/METADATA"))).decode()
    requires = [line.split(":", 1)[1].strip().replace('"', "'") for line in metadata.splitlines()
                if line.startswith("Requires-Dist:")]
    core = [r for r in requires if "extra ==" not in r]
    named = {r.split(";")[0].split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip().lower() for r in core}
    assert named.isdisjoint(CORE_ONLY), named
    for extra in ("kubernetes", "flytekit", "flyte2"):  # the SDKs take the client's models (V1PodSpec)
        assert f"kubernetes>=28; extra == '{extra}'" in requires


@pytest.mark.slow
@pytest.mark.parametrize("command", [["validate", "--strict"], ["render", "gpu-large", "--explain"], ["list"],
                                     ["render", "gpu-large", "--as", "podtemplate"], ["schema"]])
def test_the_hooks_commands_run_without_any_sdk_or_the_kubernetes_client(command, tmp_path):
    """Each of these packages made unimportable, as in a hook environment that installed the core alone."""
    code = (f"import sys\nfor name in {CORE_ONLY!r}:\n    sys.modules[name] = None\n"
            f"sys.argv = ['kfdefaults', *{command!r}]\nfrom kfdefaults.cli import main\nmain()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**env, "KFDEFAULTS_TARGET": "flytekit"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout or ": 0 errors, 0 warnings" in proc.stderr  # validate says it all on standard error


def test_v1_pod_template_without_the_kubernetes_client_says_which_extra(monkeypatch):
    import kfdefaults

    resolved = kfdefaults.resolve("gpu-large")
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    monkeypatch.setitem(sys.modules, "kubernetes.client", None)
    with pytest.raises(kfdefaults.KfdefaultsError, match=r"pip install 'kfdefaults\[kubernetes\]'"):
        resolved.v1_pod_template()
