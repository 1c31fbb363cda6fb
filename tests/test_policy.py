"""What a layer must not do by accident: a container added under a near miss of the primary container's name,
names and ports that the training operator, torch elastic or Flyte own, and deprecated profiles; through the
command line and ``Elastic(profile=...)``, on real profile files."""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path

import pytest
from cli_runner import invoke

import kfdefaults
from kfdefaults.merge.near_names import edit_distance, is_near_miss


def write(folder: Path, name: str, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def run(*args: str):
    result = invoke(list(args))
    assert "Traceback" not in result.output
    return result


def _body() -> None: ...


# --- containers added by a near miss of a name ------------------------------------------------------------------


def test_a_team_file_that_misspells_the_primary_container_and_sets_an_image_fails(tmp_path):
    team = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primay
                image: repo/train:2
        """)
    result = run("render", "gpu-large", "--team", str(tmp_path / "team"))
    assert result.exit_code == 1 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"{team}:4:15: [team] pod_template.spec.containers[name=primay]: adds a new container "
                           "`primay`; did you mean `primary` (the primary container, which runs the task)?")
    assert "what is written here (its image) goes to it, not to `primary`" in line


def test_set_that_misspells_the_primary_container_fails_at_the_set():
    result = run("render", "gpu-large", "--set", "pod_template.spec.containers[name=pirmary].image=repo/train:2")
    assert result.exit_code == 1
    assert result.stderr.startswith("--set pod_template.spec.containers[name=pirmary].image=repo/train:2: [task] "
                                    "pod_template.spec.containers[name=pirmary]: adds a new container `pirmary`; "
                                    "did you mean `primary`")


def test_a_near_miss_of_a_lower_layers_sidecar_fails_too(tmp_path):
    write(tmp_path / "platform", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - {name: log-shipper, image: fluent/fluent-bit:3}
        """)
    team = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - {name: log-shiper, image: fluent/fluent-bit:4}
        """)
    result = run("validate", "--platform", str(tmp_path / "platform"), team)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{team}:4:16: [team] pod_template.spec.containers[name=log-shiper]: adds a new "
                                    "container `log-shiper`; did you mean `log-shipper` (a container of the layers below)?")


def test_a_deliberate_sidecar_is_unaffected(tmp_path):
    write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - {name: primary, image: repo/train:2}
              - {name: log-shipper, image: fluent/fluent-bit:3}
              - {name: worker-1, image: repo/side:1}
              - {name: worker-2, image: repo/side:1}
        """)
    result = run("render", "gpu-large", "--team", str(tmp_path / "team"), "-o", "json")
    assert result.exit_code == 0, result.stderr
    names = [c["name"] for c in json.loads(result.stdout)["pod_template"]["spec"]["containers"]]
    assert names == ["primary", "log-shipper", "worker-1", "worker-2"]


@pytest.mark.parametrize("name, other, near", [
    ("primay", "primary", True), ("pirmary", "primary", True), ("primaryy", "primary", True),
    ("Primary", "primary", True), ("log-shippr", "log-shipper", True), ("trainer", "trainers", True),
    ("log-shipper", "primary", False), ("worker-1", "worker-2", False), ("sidecar-a", "sidecar-b", False),
    ("api", "app", False), ("main", "primary", False), ("primary-debug", "primary", False),
])
def test_near_misses(name, other, near):
    assert is_near_miss(name, other) is near


def test_edit_distance_counts_a_transposition_as_one_edit():
    assert edit_distance("pirmary", "primary") == 1
    assert edit_distance("primary", "primary") == 0
    assert edit_distance("", "abc") == 3


def test_elastic_with_a_team_file_that_misspells_the_primary_container_raises(tmp_path):
    from kfdefaults import Elastic

    team = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primay
                image: repo/train:2
        """)
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        Elastic(profile="gpu-large", team=[str(tmp_path / "team")])
    [finding] = excinfo.value.findings
    assert str(finding.location) == f"{team}:4:15" and "did you mean `primary`" in finding.message


def test_a_task_pod_template_that_misspells_the_primary_container_raises():
    from flytekit import PodTemplate, task
    from kubernetes.client import V1Container, V1PodSpec

    from kfdefaults import Elastic

    template = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="primayr", image="repo/train:2")]))
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        task(task_config=Elastic(profile="gpu-large"), pod_template=template)(_body)
    [finding] = excinfo.value.findings
    assert str(finding.location) == "@task(pod_template=...)"
    assert finding.message.startswith("adds a new container `primayr`; did you mean `primary`")


# --- reserved names and ports ------------------------------------------------------------------------------------


def test_reserved_environment_variables_and_ports_are_errors_with_the_reason(tmp_path):
    team = write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                env:
                  - {name: MASTER_PORT, value: "29500"}
                  - {name: PET_NNODES, value: "4"}
                  - {name: LOCAL_RANK, value: "0"}
                  - {name: FLYTE_INTERNAL_TASK_PROJECT, value: ml}
                  - {name: KFDEFAULTS_ELASTIC, value: "{}"}
                  - {name: NCCL_DEBUG, value: INFO}
                ports:
                  - {containerPort: 23456}
              - name: metrics
                image: repo/metrics:1
                ports:
                  - {containerPort: 9090, name: pytorchjob-port}
        """)
    result = run("validate", team)
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    prefix = f"{team}:"
    assert lines[0].startswith(prefix + "6:20: [team] pod_template.spec.containers[name=primary].env[name=MASTER_PORT]"
                               ".name: `MASTER_PORT` is reserved: the training operator sets `MASTER_PORT`")
    assert lines[1].startswith(prefix + "7:20: [team] pod_template.spec.containers[name=primary].env[name=PET_NNODES].name: "
                               "`PET_NNODES` is reserved: the training operator sets `PET_NNODES`")
    assert lines[1].endswith("set `elastic.nnodes` instead")
    assert "torch elastic's agent sets `LOCAL_RANK` for every worker process" in lines[2]
    assert "Flyte's backend sets `FLYTE_INTERNAL_*`" in lines[3]
    assert "kfdefaults sets `KFDEFAULTS_ELASTIC`" in lines[4]
    assert lines[5].startswith(prefix + "13:29: [team] pod_template.spec.containers[name=primary]"
                               ".ports[containerPort=23456].containerPort: port 23456 is reserved")
    assert lines[6].startswith(prefix + "17:41: [team] pod_template.spec.containers[name=metrics]"
                               ".ports[containerPort=9090].name: the port name `pytorchjob-port` is reserved")
    assert lines[-1] == "kfdefaults validate: 1 file, 1 profile: 7 errors, 0 warnings"  # NCCL_DEBUG is the user's


def test_a_reserved_name_through_set_or_elastic(tmp_path):
    result = run("render", "gpu-large", "--set", "pod_template.spec.containers[name=primary].env=[{name: RANK, value: '0'}]")
    assert result.exit_code == 1
    assert result.stderr.startswith("--set pod_template.spec.containers[name=primary].env=[{name: RANK, value: '0'}]: "
                                    "[task] pod_template.spec.containers[name=primary].env[name=RANK].name: `RANK` is reserved")
    write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                env: [{name: WORLD_SIZE, value: "16"}]
        """)
    from kfdefaults import Elastic

    with pytest.raises(kfdefaults.ProfileError, match="`WORLD_SIZE` is reserved"):
        Elastic(profile="gpu-large", team=[str(tmp_path / "team")])


# --- deprecated profiles ------------------------------------------------------------------------------------------


@pytest.fixture
def deprecated_platform(tmp_path: Path) -> Path:
    write(tmp_path / "platform", "gpu-large.yaml", """\
        deprecated: use gpu-large-v2 (8 x H100)
        elastic:
          max_restarts: 1
        """)
    write(tmp_path / "platform", "gpu-large-v2.yaml", "extends: gpu-large\ndescription: 8 x H100\n")
    return tmp_path / "platform"


def test_render_warns_about_a_deprecated_profile_and_one_it_extends(deprecated_platform):
    file = deprecated_platform / "gpu-large.yaml"
    result = run("render", "gpu-large", "--platform", str(deprecated_platform))
    assert result.exit_code == 0 and result.stdout.startswith("name: gpu-large")
    assert result.messages == (f"{file}:1:13: [platform] deprecated: warning: profile `gpu-large` is deprecated: "
                             "use gpu-large-v2 (8 x H100)\n")
    child = run("render", "gpu-large-v2", "--platform", str(deprecated_platform))
    assert child.messages == (f"{file}:1:13: [platform] deprecated: warning: profile `gpu-large-v2` extends "
                            "`gpu-large`, which is deprecated: use gpu-large-v2 (8 x H100)\n")


def test_list_marks_a_deprecated_profile(deprecated_platform):
    result = run("list", "--platform", str(deprecated_platform))
    assert result.exit_code == 0
    rows = {line.split()[0]: line for line in result.stdout.splitlines()}
    assert rows["gpu-large"].endswith("(deprecated: use gpu-large-v2 (8 x H100))")
    assert "deprecated" not in rows["gpu-large-v2"]
    assert "profile `gpu-large` is deprecated" in result.unfolded
    data = {row["name"]: row for row in json.loads(run("list", "--platform", str(deprecated_platform), "-o", "json").stdout)}
    assert data["gpu-large"]["deprecated"] == "use gpu-large-v2 (8 x H100)" and "deprecated" not in data["cpu-small"]


def test_validate_notes_its_own_deprecation_and_warns_about_a_user(deprecated_platform, tmp_path):
    own = run("validate", "--strict", "--layer", "platform", str(deprecated_platform))
    assert own.exit_code == 0  # the owners deprecated it on purpose: a note, which --strict does not count
    assert "[platform] deprecated: note: profile `gpu-large` is deprecated" in own.unfolded
    assert own.stderr.splitlines()[-1] == "kfdefaults validate: 2 files, 2 profiles: 0 errors, 0 warnings, 2 notes"
    team = write(tmp_path / "team", "gpu-large.yaml", "elastic:\n  max_restarts: 2\n")
    user = run("validate", "--strict", "--platform", str(deprecated_platform), team)
    assert user.exit_code == 1
    assert "[platform] deprecated: warning: profile `gpu-large` is deprecated" in user.unfolded


def test_elastic_warns_about_a_deprecated_profile_at_the_users_line(deprecated_platform):
    from kfdefaults import Elastic
    from kfdefaults.errors import KfdefaultsWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Elastic(profile="gpu-large", platform=[str(deprecated_platform)])
    [warning] = [w for w in caught if issubclass(w.category, KfdefaultsWarning)]
    # the one way a finding is written, as the command line writes it
    assert str(warning.message) == (f"{deprecated_platform / 'gpu-large.yaml'}:1:13: [platform] deprecated: warning: "
                                    "profile `gpu-large` is deprecated: use gpu-large-v2 (8 x H100)")
    assert warning.filename == __file__


def test_deprecated_belongs_to_a_file_and_says_something(tmp_path):
    with pytest.raises(kfdefaults.ProfileError, match="`deprecated` belongs to a profile file"):
        kfdefaults.resolve("gpu-large", overrides={"deprecated": "no"})
    path = write(tmp_path, "p.yaml", 'deprecated: ""\n')
    result = run("validate", path)
    assert result.exit_code == 1 and result.stderr.startswith(f"{path}:1:13: [team] deprecated: ")
