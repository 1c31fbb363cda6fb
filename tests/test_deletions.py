"""``delete = [...]``: what ``null`` deletes, written in TOML (which has no null) or in YAML alike."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import kfdefaults
from kfdefaults import ProfileError


def team(tmp_path, name: str, text: str) -> str:
    folder = tmp_path / "team"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return str(folder)


NULLS_YAML = """\
    elastic:
      nnodes: 1
      run_policy: null
    pod_template:
      spec:
        tolerations: null
        containers:
          - name: primary
            resources:
              limits:
                nvidia.com/gpu: null
        volumes:
          - {name: dshm, $patch: delete}
    """

DELETE_TOML = """\
    delete = [
      "elastic.run_policy",
      "pod_template.spec.tolerations",
      'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"',
      "pod_template.spec.volumes[name=dshm]",
    ]

    [elastic]
    nnodes = 1
    """

DELETE_YAML = """\
    delete:
      - elastic.run_policy
      - pod_template.spec.tolerations
      - 'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"'
      - pod_template.spec.volumes[name=dshm]
    elastic:
      nnodes: 1
    """


def test_delete_in_toml_and_in_yaml_merges_as_the_nulls_do(tmp_path):
    expected = kfdefaults.resolve("gpu-large", team=[team(tmp_path / "a", "gpu-large.yaml", NULLS_YAML)])
    for sub, name, text in (("b", "gpu-large.toml", DELETE_TOML), ("c", "gpu-large.yaml", DELETE_YAML)):
        got = kfdefaults.resolve("gpu-large", team=[team(tmp_path / sub, name, text)])
        assert got.to_dict() == expected.to_dict(), name
    merged = expected.to_dict()
    assert "run_policy" not in merged["elastic"] and "tolerations" not in merged["pod_template"]["spec"]
    assert merged["pod_template"]["spec"]["volumes"] == []


@pytest.mark.slow
def test_explain_locates_each_deletion_at_its_entry(tmp_path):
    folder = team(tmp_path, "gpu-large.toml", DELETE_TOML)
    proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", "render", "gpu-large", "--team", folder,
                           "--explain", "-o", "json"], capture_output=True, text=True, check=True)
    removed = {leaf["path"]: leaf["removed_by"] for leaf in json.loads(proc.stdout)["leaves"] if leaf["status"] == "removed"}
    expected_lines = {"elastic.run_policy.backoff_limit": 2, "pod_template.spec.tolerations[0].key": 3,
                      'pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu"': 4,
                      "pod_template.spec.volumes[name=dshm].name": 5}
    for path, line in expected_lines.items():
        assert removed[path]["layer"] == "team" and removed[path]["line"] == line, (path, removed.get(path))
        assert removed[path]["file"].endswith("gpu-large.toml")


@pytest.mark.parametrize("entry, words", [
    ("elastic.nproc", "is not a field (fields of elastic:"),
    ("pod_template.spec.tolerations[0]", "by position"),
    ("pod_template.spec.containers[image=x]", "merged by `name`"),
    ("pod_template.spec.nodeSelectr", "is not a field of PodSpec"),
    ("spec.tolerations", "a path starts with description, elastic or pod_template"),
    ("elastic.rdzv_configs..x", "empty segment"),
    ("pod_template.spec.args[name=x]", "is not a field of PodSpec"),
    ("pod_template.spec.containers[name=primary].args[name=x]", "has no merge key"),
])
def test_a_path_that_names_nothing_to_delete_is_an_error_at_its_entry(tmp_path, entry, words):
    folder = team(tmp_path, "p.toml", f'delete = [\n  "elastic.max_restarts",\n  {json.dumps(entry)},\n]\n')
    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("p", team=[folder])
    [finding] = excinfo.value.findings
    assert (finding.location.line, finding.location.column) == (3, 3), str(finding)
    assert finding.path == "delete[1]" and words in finding.message, str(finding)


def test_a_path_both_set_and_deleted_in_one_file_is_an_error(tmp_path):
    folder = team(tmp_path, "p.toml", 'delete = ["elastic.nnodes"]\n[elastic]\nnnodes = 2\n')
    with pytest.raises(ProfileError, match=r"p.toml:1:11: .*this file also sets `elastic.nnodes` \(line 3\)"):
        kfdefaults.resolve("p", team=[folder])


@pytest.mark.slow
def test_a_toml_warning_offers_the_fix_toml_can_write(tmp_path):
    folder = team(tmp_path, "gpu-large.toml", "[elastic]\nnnodes = 1\n")
    proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", "validate", "--strict", folder],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and 'delete = ["elastic.run_policy"]' in proc.stderr, proc.stderr
    fixed = team(tmp_path / "fixed", "gpu-large.toml", 'delete = ["elastic.run_policy"]\n[elastic]\nnnodes = 1\n')
    proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", "validate", "--strict", fixed],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_a_yaml_warning_offers_null(tmp_path):
    folder = team(tmp_path, "gpu-large.yaml", "elastic: {nnodes: 1}\n")
    proc = subprocess.run([sys.executable, "-m", "kfdefaults.cli", "validate", folder], capture_output=True, text=True)
    assert "`run_policy: null` (or `delete: [elastic.run_policy]`)" in proc.stderr, proc.stderr


def test_the_json_schema_knows_delete():
    from kfdefaults.show.jsonschema import profile_schema

    prop = profile_schema()["properties"]["delete"]
    assert "null would" in json.dumps(prop)
