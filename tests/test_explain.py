"""Provenance: ``render --explain`` names, for every leaf, the layer and a real FILE:LINE holding the value."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import yaml
from cli_runner import invoke as run_cli
from conftest import PLATFORM, TEAM

from kfdefaults.errors import ProfileError
from kfdefaults.paths import Select, format_path
from kfdefaults.merge.leaves import profile_leaves
from kfdefaults.show.leaves import format_value


def invoke(*args: str):
    return run_cli(list(args))


def explain_json(*args: str) -> list[dict]:
    result = invoke("render", *args, "--explain", "-o", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["leaves"]


def read_line(file: str, line: int) -> str:
    with open(file, encoding="utf-8") as f:
        return f.read().splitlines()[line - 1]


def last_key(path: str) -> str:
    """The last mapping key of a dotted leaf path (quotes removed)."""
    tail = re.split(r"\.(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", re.sub(r"\[[^\]]*\]", "", path))[-1]
    return tail.strip('"')


def assert_line_holds(origin: dict, path: str, value) -> None:
    """The line ``origin`` names holds the value as written (a string bare or quoted, a number as digits)."""
    assert origin["file"] and origin["line"], origin
    assert os.path.isfile(origin["file"]), origin
    text = read_line(origin["file"], origin["line"])
    written = value if isinstance(value, str) else format_value(value)
    assert written in text, f"{path}: {written!r} not on {origin['file']}:{origin['line']}: {text!r}"
    assert last_key(path) in text, f"{path}: key {last_key(path)!r} not on {origin['file']}:{origin['line']}: {text!r}"


# --- the acceptance check -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpu-large", "vision-finetune", "gpu-small"])
def test_every_leaf_names_a_layer_and_a_real_file_line_holding_its_value(name):
    leaves = explain_json(name, "--platform", PLATFORM, "--team", TEAM)
    assert leaves
    for leaf in leaves:
        assert leaf["set_by"]["layer"] in ("default", "builtin", "platform", "team"), leaf
        if leaf["set_by"]["layer"] == "default":  # named by the SDK default that supplied it, not a line of code
            assert leaf["set_by"]["file"] is None and leaf["set_by"]["line"] is None, leaf
            label = leaf["set_by"]["label"]
            assert "default" in label and leaf["path"].split(".")[-1] in label, leaf
        elif leaf["status"] == "replaced":  # a whole list: who set its first item, and where the new one is
            assert leaf["items"] == len(leaf["value"]) >= 1, leaf
            first = leaf["value"][0]
            first_key, first_value = next(iter(first.items())) if isinstance(first, dict) else (None, first)
            assert_line_holds(leaf["set_by"], f"{leaf['path']}[0].{first_key}", first_value)
            replacing = read_line(leaf["removed_by"]["file"], leaf["removed_by"]["line"])
            assert leaf["path"].rsplit(".", 1)[-1] + ":" in replacing, (leaf, replacing)  # the new list's key
        else:
            assert_line_holds(leaf["set_by"], leaf["path"], leaf["value"])


def test_three_layer_profile_is_explained_from_all_three_layers_plain_text():
    result = invoke("render", "gpu-large", "--platform", PLATFORM, "--team", TEAM, "--explain")
    assert result.exit_code == 0, result.output
    assert "\x1b[" not in result.stdout  # no colour when piped
    layers = set()
    *lines, note = result.stdout.splitlines()
    assert note.startswith("note: image: registry.example.com/vision/train:2.1 (team ")  # which image, after the table
    for line in lines:
        cells = re.split(r"\s{2,}", line)
        path, value, layer, where = cells[:4]
        layers.add(layer)
        if layer == "default":
            assert "default" in where, line
            continue
        file, _, number = where.rpartition(":")
        text = read_line(file, int(number))
        if "replaced whole by" in line:  # a list replaced whole: how many items went, and its first item's line
            assert re.fullmatch(r"\(\d+ items?\)", value), line
            continue
        assert (value.strip('"') in text) or (json.loads(value) in text), (line, text)
    assert {"builtin", "platform", "team"} <= layers


def test_explain_names_who_set_each_value():
    by_path = {leaf["path"]: leaf for leaf in explain_json("gpu-large", "--platform", PLATFORM, "--team", TEAM)}
    assert by_path["elastic.nnodes"]["value"] == "2:4"
    assert by_path["elastic.nnodes"]["set_by"]["layer"] == "platform"
    assert by_path["elastic.nnodes"]["set_by"]["file"] == os.path.join(PLATFORM, "gpu-large.yaml")
    assert by_path["elastic.nnodes"]["set_by"]["line"] == 4
    # overridden below: the team's INFO over the platform's WARN, with the history
    nccl = by_path["pod_template.spec.containers[name=primary].env[name=NCCL_DEBUG].value"]
    assert (nccl["value"], nccl["set_by"]["layer"], nccl["set_by"]["line"]) == ("INFO", "team", 17)
    assert [(o["value"], o["set_by"]["layer"]) for o in nccl["overrides"]] == [("WARN", "platform")]
    # a value written again by a higher layer is that layer's, even when equal
    toleration = by_path["pod_template.spec.tolerations[0].key"]
    assert (toleration["value"], toleration["set_by"]["layer"]) == ("nvidia.com/gpu", "platform")
    # labels live under pod_template in the file
    assert by_path["pod_template.labels.team"]["set_by"]["line"] == 8
    # the plugin's defaults are the default layer
    assert by_path["elastic.start_method"]["set_by"]["layer"] == "default"
    assert by_path["elastic.start_method"]["set_by"]["source"] == "plugin default"


def test_live_leaves_are_exactly_what_render_prints():
    args = ("--platform", PLATFORM, "--team", TEAM, "--set", "elastic.max_restarts=null",
            "--set", "pod_template.spec.containers[name=sidecar].image=busybox:1")
    for name in ("gpu-large", "vision-finetune", "gpu-small", "cpu-small", "elastic-gpu-default"):
        rendered = json.loads(invoke("render", name, *args, "-o", "json").stdout)
        expected = {format_path(p): v for p, v in profile_leaves(rendered).items()}
        leaves = [leaf for leaf in explain_json(name, *args) if leaf["status"] == "set"]
        assert [leaf["path"] for leaf in leaves] == list(expected), name  # same leaves, same order
        assert {leaf["path"]: leaf["value"] for leaf in leaves} == expected


# --- removed values -------------------------------------------------------------------------------------------


def test_delete_directive_shows_as_removed_with_who_removed_it():
    leaves = explain_json("vision-finetune", "--platform", PLATFORM, "--team", TEAM)
    removed = [leaf for leaf in leaves if leaf["status"] == "removed"]
    assert {leaf["path"] for leaf in removed} == {
        "elastic.run_policy.backoff_limit",
        "elastic.run_policy.clean_pod_policy",
        "pod_template.spec.containers[name=log-shipper].name",
        "pod_template.spec.containers[name=log-shipper].image",
    }
    for leaf in removed:
        # the run policy came from the builtin gpu-large, the sidecar from the team's gpu-large
        assert leaf["set_by"]["layer"] == ("builtin" if leaf["path"].startswith("elastic.") else "team")
        assert_line_holds(leaf["set_by"], leaf["path"], leaf["value"])
        by = leaf["removed_by"]
        assert by["layer"] == "team" and by["file"] == os.path.join(TEAM, "vision-finetune.yaml")
        removing_line = read_line(by["file"], by["line"]).strip()
        assert removing_line.startswith("run_policy: null" if leaf["path"].startswith("elastic.") else "$patch: delete")


REPLACING_TEAM = """\
elastic:
  max_restarts: null
  rdzv_configs:
    timeout: null
pod_template:
  labels:
    platform.example.com/pool: ~
  spec:
    nodeSelector:
      $patch: replace
      team: vision
    tolerations:
      - key: team-gpu
        operator: Exists
    containers:
      - name: primary
        resources:
          limits: null
    volumes:
      - name: dshm
        $retainKeys: [name, hostPath]
        hostPath: {path: /dev/shm}
"""


@pytest.fixture
def replacing_team(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    (team / "gpu-large.yaml").write_text(REPLACING_TEAM, encoding="utf-8")
    return str(team)


def test_null_replace_retain_keys_and_a_replaced_atomic_list_show_as_removed(replacing_team):
    leaves = explain_json("gpu-large", "--platform", PLATFORM, "--team", replacing_team)
    removed = {}
    for leaf in leaves:
        if leaf["status"] == "removed":
            removed.setdefault(leaf["path"], []).append(leaf)
    file = os.path.join(replacing_team, "gpu-large.yaml")
    expected_cause_line = {
        "elastic.max_restarts": "  max_restarts: null",
        "elastic.rdzv_configs.timeout": "    timeout: null",
        'pod_template.labels."platform.example.com/pool"': "    platform.example.com/pool: ~",
        'pod_template.spec.nodeSelector."cloud.example.com/gpu"': "      $patch: replace",
        "pod_template.spec.containers[name=primary].resources.limits.memory": "          limits: null",
        'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"': "          limits: null",
        "pod_template.spec.volumes[name=dshm].emptyDir.medium": "        $retainKeys: [name, hostPath]",
        "pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit": "        $retainKeys: [name, hostPath]",
        # the team replaced the platform's tolerations: every value it dropped is shown, at the list
        "pod_template.spec.tolerations[0].key": "    tolerations:",
        "pod_template.spec.tolerations[0].effect": "    tolerations:",
        "pod_template.spec.tolerations[1].key": "    tolerations:",
        "pod_template.spec.tolerations[1].operator": "    tolerations:",
        "pod_template.spec.tolerations[1].value": "    tolerations:",
        "pod_template.spec.tolerations[1].effect": "    tolerations:",
    }
    assert set(removed) == set(expected_cause_line)
    for path, entries in removed.items():
        for leaf in entries:
            by = leaf["removed_by"]
            assert (by["layer"], by["file"]) == ("team", file), path
            assert read_line(file, by["line"]) == expected_cause_line[path], path
            assert leaf["set_by"]["layer"] in ("builtin", "platform"), path
            assert_line_holds(leaf["set_by"], path, leaf["value"])
    # what replaced them is the team's, and what survived a replaced list unchanged is the team's too
    by_path = {leaf["path"]: leaf for leaf in leaves if leaf["status"] == "set"}
    assert by_path["pod_template.spec.tolerations[0].key"]["value"] == "team-gpu"
    assert by_path["pod_template.spec.tolerations[0].operator"]["set_by"]["layer"] == "team"
    assert "pod_template.spec.tolerations[1].key" not in by_path
    # a deleted elastic key comes back as the plugin's default
    assert by_path["elastic.max_restarts"]["value"] == 0
    assert by_path["elastic.max_restarts"]["set_by"]["layer"] == "default"


def test_removed_lines_in_plain_text_say_who_removed_them(replacing_team):
    result = invoke("render", "gpu-large", "--platform", PLATFORM, "--team", replacing_team, "--explain")
    file = os.path.join(replacing_team, "gpu-large.yaml")
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("pod_template.spec.tolerations[1].key")]
    assert len(lines) == 1
    assert re.fullmatch(rf"pod_template\.spec\.tolerations\[1\]\.key\s+pool\s+platform\s+\S+gpu-large\.yaml:26"
                        rf"\s+removed by team {re.escape(file)}:12", lines[0]), lines[0]
    # a removed value sorts next to the value now at its path
    paths = [re.split(r"\s{2,}", ln)[0] for ln in result.stdout.splitlines()]
    i = paths.index("pod_template.spec.tolerations[0].key")
    assert paths[i + 1] == "pod_template.spec.tolerations[0].key"


def test_toml_profile_positions():
    leaves = explain_json("gpu-small", "--platform", PLATFORM)
    by_path = {leaf["path"]: leaf for leaf in leaves}
    gpu = by_path['pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"']
    assert (gpu["value"], gpu["set_by"]["line"]) == (1, 16)
    assert by_path["pod_template.spec.tolerations[0].effect"]["set_by"]["line"] == 21


# --- the task layer -------------------------------------------------------------------------------------------


def test_set_values_name_their_set_argument():
    sets = ["elastic.nnodes=2",
            "pod_template.spec.containers[name=primary].image=repo/img:1",
            "pod_template.spec.containers[name=sidecar].image=busybox:1",
            'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"=4',
            "pod_template.labels={a: b}",
            "elastic.rdzv_configs.join_timeout=null",
            'pod_template.spec.containers[name=primary].resources.requests."nvidia.com/gpu"=4']  # a GPU request is its limit
    args = [a for s in sets for a in ("--set", s)]
    leaves = explain_json("gpu-large", "--platform", PLATFORM, "--team", TEAM, *args)
    by_path = {leaf["path"]: leaf for leaf in leaves if leaf["status"] == "set"}
    expect = {
        "elastic.nnodes": sets[0],
        "pod_template.spec.containers[name=primary].image": sets[1],
        "pod_template.spec.containers[name=sidecar].image": sets[2],
        "pod_template.spec.containers[name=sidecar].name": sets[2],
        'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"': sets[3],
        "pod_template.labels.a": sets[4],
        'pod_template.spec.containers[name=primary].resources.requests."nvidia.com/gpu"': sets[6],
    }
    for path, argument in expect.items():
        set_by = by_path[path]["set_by"]
        assert (set_by["layer"], set_by["source"], set_by["file"], set_by["line"]) == ("task", f"--set {argument}", None, None), path
    removed = [leaf for leaf in leaves if leaf["status"] == "removed" and leaf["path"] == "elastic.rdzv_configs.join_timeout"]
    assert [leaf["removed_by"]["source"] for leaf in removed] == [f"--set {sets[5]}"]
    # the overridden image is kept in the history
    image = by_path["pod_template.spec.containers[name=primary].image"]
    assert [o["set_by"]["layer"] for o in image["overrides"]] == ["team"]


@pytest.mark.slow
def test_explain_paths_are_set_keys():
    """A path printed by --explain, given back to --set, sets that very leaf."""
    leaves = explain_json("gpu-large", "--platform", PLATFORM, "--team", TEAM)
    for leaf in leaves:
        if leaf["status"] != "set" or "[" in leaf["path"].split(".")[-1] or re.search(r"\[\d+\]", leaf["path"]):
            continue
        if isinstance(leaf["value"], (dict, list)) or re.search(r"\[(\w+)=[^\]]*\]\.\1$", leaf["path"]):
            continue  # an item's merge key names the item; it is set by whoever created the item
        again = explain_json("gpu-large", "--platform", PLATFORM, "--team", TEAM, "--set", f"{leaf['path']}={format_value(leaf['value'])}")
        same = [x for x in again if x["path"] == leaf["path"] and x["status"] == "set"]
        assert len(same) == 1 and same[0]["value"] == leaf["value"], leaf["path"]
        assert same[0]["set_by"]["layer"] == "task", leaf["path"]


def test_explain_paths_with_brackets_and_quotes_in_merge_keys_are_set_keys_too(tmp_path):
    (tmp_path / "odd.yaml").write_text(
        'pod_template:\n  spec:\n    containers:\n      - name: primary\n'
        '        volumeMounts: [{name: v, mountPath: "/a]b"}]\n        env: [{name: "e\\"f", value: x}]\n'
        "    volumes: [{name: v, emptyDir: {}}]\n")
    leaves = {leaf["path"]: leaf for leaf in explain_json("odd", "--team", str(tmp_path))}
    mount = 'pod_template.spec.containers[name=primary].volumeMounts[mountPath="/a]b"].name'
    env = 'pod_template.spec.containers[name=primary].env[name="e\\"f"].value'
    assert mount in leaves and env in leaves
    again = {leaf["path"]: leaf for leaf in explain_json("odd", "--team", str(tmp_path), "--set", f"{mount}=w",
                                                         "--set", f"{env}=y")}
    assert again[mount]["value"] == "w" and again[env]["value"] == "y"
    assert again[mount]["set_by"]["layer"] == again[env]["set_by"]["layer"] == "task"


def test_a_list_item_by_position_cannot_be_set_and_the_message_says_why():
    result = invoke("render", "gpu-large", "--set", "pod_template.spec.tolerations[0].key=a")
    assert result.exit_code == 1
    assert "names a list item by position" in result.output and "set the whole list" in result.output


# --- formats --------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_explain_json_and_yaml_carry_the_same_data():
    base = ("render", "vision-finetune", "--platform", PLATFORM, "--team", TEAM, "--explain")
    as_json = json.loads(invoke(*base, "-o", "json").stdout)
    as_yaml = yaml.safe_load(invoke(*base, "-o", "yaml").stdout)
    assert as_json == as_yaml
    assert as_json["name"] == "vision-finetune"
    assert set(as_json["leaves"][0]) == {"path", "value", "status", "set_by", "overrides"}


def test_explain_plain_text_is_stable():
    first = invoke("render", "gpu-large", "--platform", PLATFORM, "--team", TEAM, "--explain").stdout
    assert first == invoke("render", "gpu-large", "--platform", PLATFORM, "--team", TEAM, "--explain").stdout


def test_explain_table_on_a_terminal(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    from kfdefaults.api import resolve
    from kfdefaults.show.explain import explain
    from kfdefaults.show.explain_view import print_explain_table

    resolved = resolve("vision-finetune", platform=[PLATFORM], team=[TEAM])
    print_explain_table(resolved.name, explain(resolved))
    out = capsys.readouterr().out
    assert "removed by" in out and "log-shipper" in out and "vision-finetune.yaml:10" in out


def test_explain_does_not_combine_with_as_podtemplate():
    result = run_cli(["render", "gpu-large", "--explain", "--as", "podtemplate"])
    assert result.exit_code == 2
    assert "--explain" in result.output


@pytest.mark.slow
def test_explain_and_diff_do_not_import_flytekit_or_the_kubernetes_client():
    for argv in (["render", "gpu-large", "--explain"], ["diff", "gpu-large", "cpu-small", "-o", "markdown"]):
        code = (
            f"import sys, runpy; sys.argv = ['kfdefaults'] + {argv!r}\n"
            "try:\n    runpy.run_module('kfdefaults.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('flytekit', 'kubernetes', 'torch'))\n"
            "print('HEAVY', heavy, file=sys.stderr)\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ})
        assert "HEAVY []" in proc.stderr, proc.stderr


# --- leaves ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["flytekit", "flyte2"])
def test_a_profile_that_checks_clean_is_merged_once(target, monkeypatch):
    """Who set what is worked out when something asks (a warning to locate, --explain, diff): a profile whose
    checks find nothing is merged once, its merge not replayed."""
    from kfdefaults.pipeline import Pipeline

    monkeypatch.setenv("KFDEFAULTS_NO_CACHE", "1")
    pipeline = Pipeline.discover(platform=[PLATFORM], team=[TEAM], target=target)
    clean = []
    for name in sorted(pipeline.catalog.names()):
        try:
            resolved = pipeline.resolve(name)
        except ProfileError:  # a fragment whose `auto` needs the cluster's facts, which these folders lack
            continue
        if not pipeline.warnings(resolved):
            clean.append(name)
            assert resolved.provenance_memo is None, name
    assert {"gpu-large", "cpu-small"} <= set(clean)


def test_leaf_paths_use_merge_keys_from_the_schema_and_indices_for_atomic_lists():
    leaves = profile_leaves({"pod_template": {"spec": {
        "containers": [{"name": "a", "args": ["x", "y"], "ports": [{"containerPort": 80}],
                        "volumeMounts": [{"name": "v", "mountPath": "/m"}]}],
        "tolerations": [{"key": "k"}],
        "volumes": [{"name": "v", "emptyDir": {}}],
    }}})
    assert list(map(format_path, leaves)) == [
        "pod_template.spec.containers[name=a].name",
        "pod_template.spec.containers[name=a].args[0]",
        "pod_template.spec.containers[name=a].args[1]",
        "pod_template.spec.containers[name=a].ports[containerPort=80].containerPort",
        "pod_template.spec.containers[name=a].volumeMounts[mountPath=/m].name",
        "pod_template.spec.containers[name=a].volumeMounts[mountPath=/m].mountPath",
        "pod_template.spec.tolerations[0].key",
        "pod_template.spec.volumes[name=v].name",
        "pod_template.spec.volumes[name=v].emptyDir",
    ]
    assert leaves[("pod_template", "spec", "volumes", Select("name", "v"), "emptyDir")] == {}


@pytest.mark.parametrize(("value", "text"), [
    ("2:4", '"2:4"'), ("no", '"no"'), ("8", '"8"'), ("Memory", "Memory"), ("a b", '"a b"'), ("", '""'),
    (8, "8"), (True, "true"), (None, "null"), ({}, "{}"), ([], "[]"), (1.5, "1.5"),
])
def test_values_are_written_as_set_reads_them(value, text):
    from kfdefaults.validate.sets import parse_value

    assert format_value(value) == text
    assert parse_value(text) == value


def test_who_set_or_removed_anything_holding_leaves_is_the_highest_layer_under_it(tmp_path):
    """``setter`` and ``remover`` of a path that holds leaves (a list item, a mapping, the profile itself) answer
    from an index of every path's prefixes: the same as the highest of the setters (removers) of the path and
    every path under it, the first of several as high, for every prefix of every leaf of a profile whose layers
    set, replace and remove values."""
    from kfdefaults.merge.provenance import Provenance, highest, provenance
    from kfdefaults.merge.result import Resolved
    from kfdefaults.merge.step import merge_step
    from kfdefaults.pipeline import Pipeline

    team = tmp_path / "team"
    team.mkdir()
    (team / "probe.yaml").write_text(textwrap.dedent("""\
        extends: gpu-large
        elastic: {nnodes: 3, rdzv_configs: {read_timeout: null}}
        pod_template:
          labels: {team: null, stage: test}
          spec:
            tolerations: [{key: dedicated, operator: Exists}]
            containers:
              - name: primary
                env:
                  - {name: NCCL_DEBUG, $patch: delete}
                  - {name: EXTRA, value: "1"}
              - {name: log-shipper, $patch: delete}
        """), encoding="utf-8")
    resolved = Pipeline.discover([PLATFORM], [TEAM, str(team)]).resolve("probe")

    def holds_to_the_walk(record: Provenance) -> None:
        paths = {p[:i] for table in (record.setters, record.removers) for p in table for i in range(len(p) + 1)}
        for path in paths:
            under = highest(s for p, s in record.setters.items() if p[:len(path)] == path)
            if path not in record.setters:  # a leaf's own setter is looked up, not worked out
                found = record.setter(path)
                assert (found.index if found else None) == (under.index if under and under.index >= 0 else None), path
            assert record.remover(path) == highest(s for p, s in record.removers.items() if p[:len(path)] == path), path

    # asked after each step, as the locks ask during the merge, and after the last
    record = Provenance(Resolved.initial(resolved.name, target=resolved.target,
                                         kubernetes_version=resolved.kubernetes_version))
    for fragment in resolved.fragments:
        record.apply(merge_step(record.state, fragment), fragment)
        holds_to_the_walk(record)
    record.finish()
    holds_to_the_walk(record)
    assert record.removers, "the layers remove values: the case asks the removers too"
    assert record.setters == provenance(resolved).setters
