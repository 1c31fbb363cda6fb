"""``validate`` and ``render`` report what the cluster's PodTemplate would break, at the files that cause it; and
where the cluster's PodTemplate is found."""

from __future__ import annotations

import pytest
from cli_runner import invoke, unfold

PROFILE = """\
description: a task on the data volume
elastic:
  nnodes: 2
pod_template:
  spec:
    hostNetwork: false
    containers:
      - name: primary
        image: registry.example.com/train:1
        securityContext:
          runAsNonRoot: false
        volumeMounts:
          - name: data
            mountPath: /data
    volumes:
      - name: data
        persistentVolumeClaim:
          claimName: datasets
"""

CLUSTER = """\
apiVersion: v1
kind: PodTemplate
metadata:
  name: flyte-default
template:
  spec:
    hostNetwork: true
    containers:
      - name: default
        securityContext:
          runAsNonRoot: true
        volumeMounts:
          - name: data
            mountPath: /data
          - name: scratch
            mountPath: /scratch
      - name: fluent-bit
        image: fluent/fluent-bit:3
    volumes:
      - name: data
        hostPath:
          path: /mnt/data
"""


@pytest.fixture
def folders(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    (team / "data.yaml").write_text(PROFILE, encoding="utf-8")
    (tmp_path / "cluster.yaml").write_text(CLUSTER, encoding="utf-8")
    return str(team), str(tmp_path / "cluster.yaml")


def lines_about(text: str, needle: str) -> list[str]:
    return [line for line in unfold(text).splitlines() if needle in line]  # each warning on one line again


def test_validate_reports_each_problem_at_its_files(folders):
    team, cluster = folders
    result = invoke(["validate", team, "--cluster-template", cluster])
    assert result.exit_code == 0, result.output  # warnings; --strict fails on them
    profile = f"{team}/data.yaml"
    (mounted_twice,) = lines_about(result.stderr, "mounts `/data` 2 times")
    assert mounted_twice.startswith(f"{profile}:13:13: [team] pod_template.spec.containers[name=primary].volumeMounts[mountPath=/data]")
    assert f"container `default`, {cluster}:13:" in mounted_twice
    (two_volumes,) = lines_about(result.stderr, "2 volumes named `data`")
    assert two_volumes.startswith(f"{profile}:16:9: [team] pod_template.spec.volumes[name=data]")
    assert f"{cluster}:20:" in two_volumes
    (missing,) = lines_about(result.stderr, "mounts volume `scratch`")
    assert missing.startswith(f"{cluster}:15:13: [cluster]")
    (host_network,) = lines_about(result.stderr, "pod_template.spec.hostNetwork")
    assert host_network.startswith(f"{profile}:6:18: [team]")
    assert f"gets `true` from the cluster's PodTemplate ({cluster}:7:18), not this profile's `false`" in host_network
    (non_root,) = lines_about(result.stderr, "securityContext.runAsNonRoot")
    assert non_root.startswith(f"{profile}:11:25: [team]") and f"({cluster}:11:25)" in non_root
    (dropped,) = lines_about(result.stderr, "drops the cluster PodTemplate's container `fluent-bit`")
    assert dropped.startswith(f"{cluster}:17:15: [cluster]")
    assert invoke(["validate", team, "--cluster-template", cluster, "--strict"]).exit_code == 1
    assert invoke(["validate", team]).stderr.endswith("0 errors, 0 warnings\n")  # without the template: nothing


def test_render_prints_the_same_warnings(folders):
    team, cluster = folders
    result = invoke(["render", "data", "--team", team, "--cluster-template", cluster])
    assert result.exit_code == 0
    assert len(lines_about(result.stderr, "warning:")) == 6
    assert "hostNetwork: false" in result.stdout  # the profile as it is: the cluster's values are not merged in


def test_a_broken_cluster_template_is_a_located_error(tmp_path):
    bad = tmp_path / "cluster.yaml"
    bad.write_text("apiVersion: v1\nkind: PodTemplate\ntemplate:\n  spec:\n    containers:\n      name: default\n", encoding="utf-8")
    result = invoke(["render", "gpu-large", "--cluster-template", str(bad)])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(f"{bad}:6:7: [cluster] template.spec.containers: must be a list")
    bad.write_text("apiVersion: v1\nkind: Pod\n", encoding="utf-8")
    assert "must be a v1 PodTemplate manifest" in invoke(["render", "gpu-large", "--cluster-template", str(bad)]).stderr
    missing = invoke(["render", "gpu-large", "--cluster-template", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 1 and missing.stderr.startswith(f"{tmp_path / 'nope.yaml'}:1:1: no such file")
    validated = invoke(["validate", "--cluster-template", str(bad)])
    assert validated.exit_code == 1 and "must be a v1 PodTemplate manifest" in validated.stderr


SHM_CLUSTER = """\
apiVersion: v1
kind: PodTemplate
template:
  spec:
    containers:
      - name: default
        volumeMounts:
          - {name: dshm, mountPath: /dev/shm}
    volumes:
      - {name: dshm, emptyDir: {medium: Memory}}
"""


def shm_mounts(rendered: str) -> int:
    return rendered.count("mountPath: /dev/shm")


def test_where_the_cluster_template_is_found(tmp_path, monkeypatch):
    project = tmp_path / "project"
    platform = tmp_path / "platform"
    project.mkdir()
    platform.mkdir()
    (platform / "_cluster-template.yaml").write_text(SHM_CLUSTER, encoding="utf-8")
    monkeypatch.chdir(project)
    # a platform folder's _cluster-template.yaml: the cluster's template, not a profile
    listed = invoke(["list", "--platform", str(platform)])
    assert "_cluster-template" not in listed.output
    assert shm_mounts(invoke(["render", "gpu-large", "--platform", str(platform)]).stdout) == 0
    assert shm_mounts(invoke(["render", "gpu-large"]).stdout) == 1
    # pyproject.toml's cluster_template, relative to it, comes before the platform folder's
    (project / "pyproject.toml").write_text('[tool.kfdefaults]\ncluster_template = "none"\n', encoding="utf-8")
    assert shm_mounts(invoke(["render", "gpu-large", "--platform", str(platform)]).stdout) == 1
    (project / "cluster.yaml").write_text(SHM_CLUSTER, encoding="utf-8")
    (project / "pyproject.toml").write_text('[tool.kfdefaults]\ncluster_template = "cluster.yaml"\n', encoding="utf-8")
    assert shm_mounts(invoke(["render", "gpu-large"]).stdout) == 0
    # the variable, then the flag, come first; "none" says: no template
    assert shm_mounts(invoke(["render", "gpu-large"], env={"KFDEFAULTS_CLUSTER_TEMPLATE": "none"}).stdout) == 1
    assert shm_mounts(invoke(["render", "gpu-large", "--cluster-template", "none"]).stdout) == 1
    (project / "pyproject.toml").write_text('[tool.kfdefaults]\ncluster_template = 3\n', encoding="utf-8")
    wrong = invoke(["render", "gpu-large"])
    assert wrong.exit_code == 1 and wrong.stderr.startswith(f"{project / 'pyproject.toml'}:2:20: tool.kfdefaults.cluster_template: must be")


def test_two_platform_folders_with_a_cluster_template_are_an_error(tmp_path):
    folders = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "_cluster-template.yaml").write_text(SHM_CLUSTER, encoding="utf-8")
        folders += ["--platform", str(folder)]
    result = invoke(["render", "gpu-large", *folders])
    assert result.exit_code == 1 and "two platform folders hold the cluster's PodTemplate" in result.stderr


def test_validate_reads_the_template_of_a_platform_folder_it_checks(tmp_path):
    platform = tmp_path / "platform"
    platform.mkdir()
    (platform / "_cluster-template.yaml").write_text(SHM_CLUSTER.replace("  spec:\n", "  spec:\n    hostNetwork: true\n"),
                                                    encoding="utf-8")
    (platform / "gpu-large.yaml").write_text("pod_template:\n  spec:\n    hostNetwork: false\n", encoding="utf-8")
    result = invoke(["validate", "--layer", "platform", str(platform)])
    assert result.exit_code == 0, result.output
    assert "1 file, 1 profile: 0 errors, 1 warning" in result.stderr  # the template is not a profile file
    assert f"gets `true` from the cluster's PodTemplate ({platform / '_cluster-template.yaml'}:5:18)" in result.stderr
