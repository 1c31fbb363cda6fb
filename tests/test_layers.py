"""Layer discovery (flags, environment, pyproject.toml, entry points) and extends expansion."""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from cli_runner import invoke as run_cli, unfold
from conftest import PLATFORM, TEAM

import kfdefaults
from kfdefaults import ProfileError
from kfdefaults.layers import builtin_folder
from kfdefaults.pipeline import Pipeline


def profile(folder, name: str, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def layer_files(resolved) -> list[tuple[str, str]]:
    return [(f.layer, os.path.basename(f.source)) for f in resolved.fragments]


def test_builtin_profiles_exist_and_describe_themselves():
    pipeline = Pipeline.discover()
    assert {"elastic-gpu-default", "gpu-large", "cpu-small"} <= set(pipeline.catalog.names())
    for name in ("elastic-gpu-default", "gpu-large", "cpu-small"):
        definition = pipeline.definition(name, "builtin")
        assert definition.fragment.description, name
        assert definition.file.startswith(builtin_folder())


def test_flags_give_platform_and_team_layers_in_order():
    resolved = kfdefaults.resolve("gpu-large", platform=[PLATFORM], team=[TEAM])
    assert layer_files(resolved) == [
        ("builtin", "elastic-gpu-default.yaml"),
        ("builtin", "gpu-large.yaml"),
        ("platform", "gpu-large.yaml"),
        ("team", "gpu-large.yaml"),
    ]


def test_environment_variables_are_path_lists(monkeypatch, tmp_path):
    extra = tmp_path / "extra"
    profile(extra, "gpu-large.yaml", "elastic: {max_restarts: 9}\n")
    monkeypatch.setenv("KFDEFAULTS_PLATFORM_PATH", os.pathsep.join([PLATFORM, str(extra)]))
    monkeypatch.setenv("KFDEFAULTS_TEAM_PATH", TEAM)
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("gpu-large")
    # both platform folders are one layer: two definitions of gpu-large there are an error naming both files
    message = str(excinfo.value)
    assert "defined twice in the platform layer" in message
    assert os.path.join(PLATFORM, "gpu-large.yaml") in message and str(extra / "gpu-large.yaml") in message

    monkeypatch.setenv("KFDEFAULTS_PLATFORM_PATH", str(extra))
    resolved = kfdefaults.resolve("gpu-large")
    assert resolved.elastic_settings["max_restarts"] == 9
    assert [f.layer for f in resolved.fragments] == ["builtin", "builtin", "platform", "team"]


def test_nearest_pyproject_gives_team_folders(monkeypatch, tmp_path):
    project = tmp_path / "project"
    profile(project / "profiles", "gpu-large.yaml", "pod_template: {labels: {team: nlp}}\n")
    (project / "pyproject.toml").write_text('[tool.kfdefaults]\nteam = ["profiles"]\n', encoding="utf-8")
    (project / "src" / "pkg").mkdir(parents=True)
    monkeypatch.chdir(project / "src" / "pkg")
    resolved = kfdefaults.resolve("gpu-large")
    assert resolved.labels == {"team": "nlp"}
    assert resolved.fragments[-1].source == str(project / "profiles" / "gpu-large.yaml")


def test_pyproject_typo_is_located(monkeypatch, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.kfdefaults]\nteams = ["p"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("gpu-large")
    assert str(excinfo.value).startswith(f"{tmp_path / 'pyproject.toml'}:5:1: tool.kfdefaults.teams: unknown key")


BIG_PROJECT = '[project]\nname = "x"\ndependencies = ["kfdefaults>=0.1"]\n[tool.other]\nitems = [\n' + (
    "  1,\n" * 30_000) + "]\n"  # 180 KB, 30,000 values: over every budget of a profile file


@pytest.mark.parametrize("tail", ["", "# " + "x" * (2 << 20) + "\n"], ids=["180 KB", "over 2 MiB"])
def test_a_large_pyproject_without_tool_kfdefaults_breaks_nothing(monkeypatch, tmp_path, tail):
    (tmp_path / "pyproject.toml").write_text(BIG_PROJECT + tail, encoding="utf-8")
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path / "src")  # the file is in a folder above the working directory
    assert kfdefaults.resolve("gpu-large").elastic_settings["nproc_per_node"] == 8
    result = run_cli(["list"])
    assert result.exit_code == 0 and "gpu-large" in result.stdout, result.output
    assert run_cli(["validate"]).exit_code == 0


def test_tool_kfdefaults_is_read_from_a_large_pyproject(monkeypatch, tmp_path):
    profile(tmp_path / "profiles", "gpu-large.yaml", "pod_template: {labels: {team: nlp}}\n")
    (tmp_path / "pyproject.toml").write_text(BIG_PROJECT + '[tool.kfdefaults]\nteam = ["profiles"]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert kfdefaults.resolve("gpu-large").labels == {"team": "nlp"}


def test_tool_kfdefaults_in_a_pyproject_over_the_cap_is_an_error_not_a_skip(monkeypatch, tmp_path):
    from kfdefaults.layers.pyproject import MAX_PROJECT_FILE_BYTES

    text = "# " + "x" * MAX_PROJECT_FILE_BYTES + '\n[tool.kfdefaults]\nteam = ["profiles"]\n'
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = run_cli(["render", "gpu-large"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{tmp_path / 'pyproject.toml'}:1:1: file is larger than 1 MiB and sets tool.kfdefaults")


def test_a_pyproject_that_is_not_a_file_is_passed_over(monkeypatch, tmp_path):
    os.mkfifo(tmp_path / "pyproject.toml")
    monkeypatch.chdir(tmp_path)
    assert run_cli(["list"]).exit_code == 0


def test_missing_folder_is_an_error():
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("gpu-large", team=["/nonexistent/profiles"])
    assert "team folder (from team=): no such folder" in str(excinfo.value)


@pytest.mark.parametrize(("team", "said"), [(5, "not int"), ([None], "not a list holding NoneType"), (b"/x", "not bytes")])
def test_folders_of_the_wrong_type_are_named(team, said):
    with pytest.raises(TypeError, match=f"team= takes a folder path or a list of them .*{said}"):
        kfdefaults.resolve("gpu-large", team=team)


def test_diff_names_the_flag_that_gave_a_missing_folder():
    result = run_cli(["diff", "gpu-large", "--team", TEAM, "--team-against", "/nonexistent/new"])
    assert result.exit_code == 2
    assert "team folder (from --team-against): no such folder" in result.output


def install_profile_package(site, name: str, value: str, files: dict[str, str]) -> None:
    """Lay out an installed distribution as an installer does: the package and its .dist-info."""
    package = site / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    for filename, text in files.items():
        (package / filename).write_text(textwrap.dedent(text), encoding="utf-8")
    dist = site / f"{name}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(f"[kfdefaults.platform]\n{name} = {value}\n", encoding="utf-8")
    (dist / "RECORD").write_text("", encoding="utf-8")


def test_entry_point_packages_are_platform_folders(monkeypatch, tmp_path):
    site = tmp_path / "site"
    install_profile_package(site, "acme_profiles", "acme_profiles", {
        "gpu-large.yaml": "description: ACME's GPU pool\nelastic: {nnodes: '2:8'}\n",
        "acme-debug.toml": 'description = "ACME debugging"\n[elastic]\nnproc_per_node = 1\n',
    })
    monkeypatch.syspath_prepend(str(site))
    resolved = kfdefaults.resolve("gpu-large")
    assert resolved.elastic_settings["nnodes"] == "2:8"
    assert resolved.description == "ACME's GPU pool"
    assert resolved.fragments[-1].layer == "platform"
    assert "acme-debug" in Pipeline.discover().catalog.names()


def test_installed_packages_can_be_ignored_to_test_a_package_folder(monkeypatch, tmp_path):
    site = tmp_path / "site"
    install_profile_package(site, "acme_profiles", "acme_profiles", {"gpu-large.yaml": "elastic: {nnodes: '2:8'}\n"})
    monkeypatch.syspath_prepend(str(site))
    working_copy = tmp_path / "src" / "acme_profiles"
    profile(working_copy, "gpu-large.yaml", "elastic: {nnodes: '3:9'}\n")
    with pytest.raises(ProfileError, match="defined twice in the platform layer"):
        kfdefaults.resolve("gpu-large", platform=[str(working_copy)])
    monkeypatch.setenv("KFDEFAULTS_NO_ENTRY_POINTS", "1")
    assert kfdefaults.resolve("gpu-large", platform=[str(working_copy)]).elastic_settings["nnodes"] == "3:9"


@pytest.mark.slow
def test_validate_says_what_render_and_list_say_of_a_platform_package_without_profiles(tmp_path):
    """An installed platform package whose folder holds no profile file adds nothing: render and list warn,
    and so does validate (with and without files of its own), in the same words."""
    import subprocess
    import sys

    site = tmp_path / "site"
    install_profile_package(site, "hollow_profiles", "hollow_profiles", {"README.md": "profiles come later\n"})
    profile(tmp_path / "team", "mine.yaml", "description: mine\n")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_")}, "PYTHONPATH": str(site),
           "KFDEFAULTS_CACHE_DIR": os.environ["KFDEFAULTS_CACHE_DIR"]}
    warning = ("site/hollow_profiles: [platform] warning: no profile files (*.yaml, *.yml, *.toml) in this "
               "platform folder (from entry point hollow_profiles (hollow_profiles))")
    said = {}
    for name, args in {"render": ["render", "mine", "--team", "team"], "list": ["list"],
                       "validate": ["validate"], "validate team": ["validate", "team"]}.items():
        proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        said[name] = unfold(proc.stderr).splitlines().count(warning)
    assert said == {"render": 1, "list": 1, "validate": 1, "validate team": 1}
    assert proc.stderr.splitlines()[-1].endswith(": 0 errors, 1 warning")


def test_a_broken_entry_point_is_a_located_error(monkeypatch, tmp_path):
    site = tmp_path / "site"
    install_profile_package(site, "broken_profiles", "no_such_module:FOLDER", {})
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("gpu-large")
    assert str(excinfo.value).startswith("entry point broken_profiles (no_such_module:FOLDER): [platform] cannot load")


def test_validate_reports_a_broken_package_and_still_checks_the_files_given(monkeypatch, tmp_path):
    from kfdefaults.api import validate_paths

    site = tmp_path / "site"
    install_profile_package(site, "broken_profiles", "no_such_module:FOLDER", {})
    monkeypatch.syspath_prepend(str(site))
    team = profile(tmp_path / "team", "x.yaml", "elastic:\n  nnodes: 0\n")
    messages = [str(f) for f in validate_paths([str(tmp_path / "team")], platform=[str(tmp_path / "nowhere")]).errors]
    assert any(m.startswith("entry point broken_profiles (no_such_module:FOLDER): [platform] cannot load") for m in messages)
    assert any("platform folder (from --platform): no such folder" in m for m in messages)
    assert any(m.startswith(f"{team}:2:11: [team] elastic.nnodes: ") for m in messages)


@pytest.mark.parametrize("code, words", [
    ("raise SystemExit(0)\n", "importing it exited: SystemExit(0)"),
    ("raise SystemExit(3)\n", "importing it exited: SystemExit(3)"),
    ("raise RuntimeError('boom')\n", "importing it raised: RuntimeError: boom"),
    ("print('hello from the package')\nFOLDER = '.'\n", "importing it printed on standard output ('hello from the package')"),
    ("FOLDER = 42\n", "names int 42, not a folder path"),
])
@pytest.mark.parametrize("command", [["render", "gpu-large", "-o", "json"], ["validate"], ["list"]])
def test_a_faulty_platform_package_is_an_error_naming_it(monkeypatch, tmp_path, code, words, command):
    """A package that exits, raises or prints while imported: every command says so and exits 1, nothing
    on standard output (CI must not pass having checked nothing)."""
    name = f"faulty_{abs(hash((code, tuple(command)))) % 10**8}"
    site = tmp_path / "site"
    install_profile_package(site, name, f"{name}:FOLDER", {})
    (site / name / "__init__.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    result = run_cli(command)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    message = f"entry point {name} ({name}:FOLDER): [platform] cannot load this kfdefaults.platform entry point " \
              f"of the installed package {name}: {words}"
    assert message in result.stderr.splitlines()[0]


def test_a_plain_module_entry_point_whose_package_raises_names_the_entry_point(monkeypatch, tmp_path):
    site = tmp_path / "site"
    install_profile_package(site, "raising_parent", "raising_parent.profiles", {})
    (site / "raising_parent" / "profiles").mkdir()
    (site / "raising_parent" / "__init__.py").write_text("raise RuntimeError('broken parent')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    result = run_cli(["render", "gpu-large"])
    assert result.exit_code == 1
    assert result.stderr.startswith("entry point raising_parent (raising_parent.profiles): [platform] cannot load "
                                    "this kfdefaults.platform entry point of the installed package raising_parent: "
                                    "importing it raised: RuntimeError: broken parent")


def test_what_a_package_writes_on_standard_error_is_passed_on_marked(monkeypatch, tmp_path):
    site = tmp_path / "site"
    install_profile_package(site, "chatty_profiles", "chatty_profiles:FOLDER", {})
    folder = profile(tmp_path / "chatty", "chatty.yaml", "description: chatty\n")
    (site / "chatty_profiles" / "__init__.py").write_text(
        f"import sys\nprint('loading', file=sys.stderr)\nFOLDER = {os.path.dirname(folder)!r}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    result = run_cli(["render", "chatty", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["description"] == "chatty"
    assert "entry point chatty_profiles (chatty_profiles:FOLDER): loading" in result.stderr.splitlines()


def test_keyboard_interrupt_while_importing_a_package_is_not_swallowed(monkeypatch, tmp_path):
    site = tmp_path / "site"
    install_profile_package(site, "interrupted_profiles", "interrupted_profiles:FOLDER", {})
    (site / "interrupted_profiles" / "__init__.py").write_text("raise KeyboardInterrupt\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(KeyboardInterrupt):
        kfdefaults.resolve("gpu-large")


@pytest.mark.parametrize("text, line, words", [
    ("[kfdefaults.platform\nx = x:FOLDER\n", 1, "line 1 is neither a [group] header nor NAME = VALUE"),
    ("[kfdefaults.platform]\nx x:FOLDER\n", 2, "line 2 is not NAME = VALUE: 'x x:FOLDER'"),
    ("[kfdefaults.platform]\nx = a:FOLDER\nx = b:FOLDER\n", 3, "option 'x' in section 'kfdefaults.platform' already"),
])
def test_a_malformed_entry_points_file_is_a_located_error_not_a_skip(monkeypatch, tmp_path, text, line, words):
    site = tmp_path / "site"
    install_profile_package(site, "malformed_profiles", "malformed_profiles", {})
    points = site / "malformed_profiles-1.0.dist-info" / "entry_points.txt"
    points.write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    result = run_cli(["list"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{points}:{line}:1: [platform] cannot read the kfdefaults.platform entry points "
                                    f"of this installed package: {words}")


def test_an_entry_points_file_rewritten_in_place_is_read_again(monkeypatch, tmp_path):
    """A legacy editable install rewrites entry_points.txt without touching its folder's modification time."""
    from kfdefaults.layers import entry_points as _layers

    monkeypatch.setenv("KFDEFAULTS_CACHE_DIR", str(tmp_path / "cache"))
    site = tmp_path / "site"
    install_profile_package(site, "acme_rewritten_profiles", "acme_rewritten_profiles", {"acme-one.yaml": "description: one\n"})
    profile(tmp_path / "gamma", "acme-two.yaml", "description: two\n")
    (site / "acme_rewritten_profiles" / "__init__.py").write_text(f"GAMMA = {str(tmp_path / 'gamma')!r}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    _layers._ENTRY_POINTS.clear()
    assert "acme-two" not in Pipeline.discover().catalog.names()  # the answer is now in the cache
    points = site / "acme_rewritten_profiles-1.0.dist-info" / "entry_points.txt"
    folder_time = os.stat(site).st_mtime_ns
    with open(points, "a", encoding="utf-8") as f:  # in place: same file, same folder time
        f.write("gamma = acme_rewritten_profiles:GAMMA\n")
    os.utime(points, ns=(os.stat(points).st_atime_ns, os.stat(points).st_mtime_ns + 10**9))
    assert os.stat(site).st_mtime_ns == folder_time
    _layers._ENTRY_POINTS.clear()  # a new process
    assert {"acme-one", "acme-two"} <= set(Pipeline.discover().catalog.names())


def test_entry_point_may_name_a_path_attribute(monkeypatch, tmp_path):
    site = tmp_path / "site"
    install_profile_package(site, "beta_profiles", "beta_profiles:FOLDER", {})
    folder = tmp_path / "elsewhere"
    profile(folder, "beta.yaml", "description: beta\nelastic: {nnodes: 1}\n")
    (site / "beta_profiles" / "__init__.py").write_text(f"FOLDER = {str(folder)!r}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    assert kfdefaults.resolve("beta").description == "beta"


def test_the_file_name_is_the_profile_name(tmp_path):
    team = tmp_path / "team"
    same = profile(team, "same.yaml", "name: same\ndescription: name matching the file\nelastic: {nnodes: 1}\n")
    other = profile(team, "other.yaml", "name: renamed\nelastic: {nnodes: 1}\n")
    pipeline = Pipeline.discover(team=[str(team)])
    assert {"same", "other"} <= set(pipeline.catalog.names())
    assert "renamed" not in pipeline.catalog.names()
    assert pipeline.definition("same", "team").file == same
    with pytest.raises(ProfileError) as excinfo:
        pipeline.definition("other", "team")
    assert str(excinfo.value).startswith(f"{other}:1:7: [team] name: `renamed` is not the file's name")


def test_a_file_name_must_be_a_profile_name(tmp_path):
    team = tmp_path / "team"
    bad = profile(team, "gpu_large.yaml", "elastic: {nnodes: 1}\n")
    with pytest.raises(ProfileError) as excinfo:
        Pipeline.discover(team=[str(team)]).definition("gpu_large", "team")
    assert str(excinfo.value) == (f"{bad}:1:1: [team] the file name `gpu_large` is not a profile name (lower-case letters, "
                                  "digits and dashes): rename the file to `gpu-large.yaml`")


def test_extends_expands_parents_fully_layered_in_order(tmp_path):
    team = tmp_path / "team"
    profile(team, "base-a.yaml", "elastic: {max_restarts: 1}\n")
    profile(team, "base-b.yaml", "elastic: {max_restarts: 2, nproc_per_node: 3}\n")
    profile(team, "child.yaml", "extends: [base-a, base-b]\nelastic: {nproc_per_node: 4}\n")
    resolved = kfdefaults.resolve("child", team=[str(team)])
    assert [os.path.basename(f.source) for f in resolved.fragments] == ["base-a.yaml", "base-b.yaml", "child.yaml"]
    assert resolved.elastic_settings["max_restarts"] == 2
    assert resolved.elastic_settings["nproc_per_node"] == 4


def test_extends_cycle_names_the_files(tmp_path):
    team = tmp_path / "team"
    a = profile(team, "a.yaml", "extends: b\nelastic: {nnodes: 1}\n")
    b = profile(team, "b.yaml", "extends: [a]\nelastic: {nnodes: 1}\n")
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("a", team=[str(team)])
    message = str(excinfo.value)
    assert "`extends` forms a cycle" in message
    assert a in message and b in message


def test_unknown_parent_names_the_file(tmp_path):
    team = tmp_path / "team"
    child = profile(team, "child.yaml", "description: x\nextends: [no-such-parent]\n")
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("child", team=[str(team)])
    message = str(excinfo.value)
    assert message.startswith(f"{child}:2:")
    assert "unknown parent profile 'no-such-parent'" in message


def test_unknown_profile_suggests_a_near_name():
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("gpu-larg")
    assert "did you mean 'gpu-large'?" in str(excinfo.value)


def test_unknown_parent_suggests_a_near_name(tmp_path):
    team = tmp_path / "team"
    profile(team, "child.yaml", "description: x\nextends: gpu-largee\n")
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("child", team=[str(team)])
    assert "unknown parent profile 'gpu-largee'; did you mean 'gpu-large'?" in str(excinfo.value)


def test_validate_checks_a_team_folder_on_top_of_the_installed_platform(monkeypatch, tmp_path):
    site = tmp_path / "site"
    install_profile_package(site, "acme_context_profiles", "acme_context_profiles", {"gpu-large.yaml": """\
        pod_template:
          spec:
            volumes:
              - {name: dshm, emptyDir: {medium: Memory, sizeLimit: 256Gi}}
        """})
    monkeypatch.syspath_prepend(str(site))
    team = tmp_path / "profiles"
    team.mkdir()
    (team / "gpu-large.yaml").write_text(
        "pod_template:\n  spec:\n    containers:\n      - name: primary\n        resources: {limits: {memory: 64Gi}}\n")
    from kfdefaults.api import validate_paths

    [warning] = validate_paths([str(team)]).warnings  # the platform's 256Gi /dev/shm over the team's 64Gi limit
    assert "sizeLimit 256Gi" in warning.message and "memory limit 64Gi" in warning.message
    # the platform repository checks its own folder as the platform layer: the installed copy is not read too
    platform = tmp_path / "platform"
    platform.mkdir()
    (platform / "gpu-large.yaml").write_text("description: the repository's version\n")
    assert validate_paths([str(platform)], layer="platform").findings == []
