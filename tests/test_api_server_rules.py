"""The API server's cross-field rules on what profiles set, checked on the merged profile: a request above its
limit, an extended resource's request other than its limit, an env var with both ``value`` and ``valueFrom``.

There is no API server here, and neither kubernetes-validate (JSON Schema) nor the kubernetes client checks
anything across fields, so the rules are read from the Go code and the tables below follow its own tests:

* ``validateResourceRequirements`` (k8s.io/kubernetes pkg/apis/core/validation/validation.go): for each
  request, ``quantity.Cmp(limit) != 0 && !helper.IsOvercommitAllowed(name)`` -> "must be equal to NAME limit
  of LIMIT"; ``quantity.Cmp(limit) > 0`` -> "must be less than or equal to NAME limit of LIMIT"; no limit and
  not overcommitable -> "Limit must be set for non overcommitable resources". The cases named as in
  ``TestValidateContainers`` (pkg/apis/core/validation/validation_test.go) are its success and error cases;
  the others take each branch of the function once.
* ``validateEnvVarValueFrom``: no source -> "must specify one of"; a non-empty ``value`` beside a source ->
  "may not be specified when `value` is not empty"; two sources -> "may not have more than one field
  specified at a time". ``value: ""`` beside a source passes (``len(ev.Value) != 0`` is false).

Each rule is checked on one file, and on the same values split across two layers: the error is then at the
higher layer's value and names the lower one's line. The command line runs in a subprocess, on real folders.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import kfdefaults
from kfdefaults import ProfileError
from kfdefaults.api import validate_paths
from kfdefaults.layers.builtin import builtin_folder

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")
BUILTIN_GPU_LARGE = os.path.join(builtin_folder(), "gpu-large.yaml")


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    return subprocess.run([KFDEFAULTS, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def errors_of(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if not line.startswith("kfdefaults")]


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def container_profile(resources: dict, container: str = "worker", field: str = "containers") -> str:
    """A profile whose ``container`` (not the primary container) has ``resources``."""
    spec = {field: [{"name": container, "image": "registry.example.com/w:1", "resources": resources}]}
    return yaml.safe_dump({"pod_template": {"spec": spec}}, sort_keys=False)


# (name, requests, limits, the Go message expected, or None when the API server accepts the container)
RESOURCE_CASES = [
    ("resources-test", {}, {"cpu": "10", "memory": "10G", "my.org/resource": "10"}, None),
    ("resources-test-with-request-and-limit", {"cpu": "10", "memory": "10G"}, {"cpu": "10", "memory": "10G"}, None),
    ("resources-request-limit-simple", {"cpu": "8"}, {"cpu": "10"}, None),
    ("resources-request-limit-edge", {"cpu": "10", "memory": "10G", "my.org/resource": "10"},
     {"cpu": "10", "memory": "10G", "my.org/resource": "10"}, None),
    ("resources-request-limit-partials", {"cpu": "9.5", "memory": "10G"}, {"cpu": "10", "my.org/resource": "10"}, None),
    ("resources-request", {"cpu": "9.5", "memory": "10G"}, {}, None),
    ("Request limit simple invalid", {"cpu": "6", "memory": "3"}, {"cpu": "5", "memory": "3"},
     "must be less than or equal to cpu limit of 5"),
    ("Memory request limit multiple invalid", {"cpu": "5", "memory": "4"}, {"cpu": "5", "memory": "3"},
     "must be less than or equal to memory limit of 3"),
    ("extended request below its limit", {"my.org/resource": "9"}, {"my.org/resource": "10"},
     "must be equal to my.org/resource limit of 10"),
    ("extended request above its limit", {"example.com/gpu": "10"}, {"example.com/gpu": "9"},
     "must be equal to example.com/gpu limit of 9"),
    ("extended request without a limit", {"my.org/resource": "1"}, {}, "Limit must be set for non overcommitable resources"),
    ("hugepages request other than its limit", {"hugepages-2Mi": "2Mi", "memory": "1Gi"},
     {"hugepages-2Mi": "4Mi", "memory": "1Gi"}, "must be equal to hugepages-2Mi limit of 4Mi"),
    ("a kubernetes.io/ resource is native: it may be overcommitted", {"kubernetes.io/resource-foo": "1"},
     {"kubernetes.io/resource-foo": "2"}, None),
    ("a kubernetes.io/ resource above its limit", {"kubernetes.io/resource-foo": "3"}, {"kubernetes.io/resource-foo": "2"},
     "must be less than or equal to kubernetes.io/resource-foo limit of 2"),
    ("quantities compare by value", {"cpu": "1000m", "memory": "1Gi", "my.org/resource": "1k"},
     {"cpu": "1", "memory": "1073741824", "my.org/resource": "1000"}, None),
    ("a limit of 0 under a request", {"cpu": "100m"}, {"cpu": "0"}, "must be less than or equal to cpu limit of 0"),
]


def resource_case_ids() -> list[str]:
    return [case[0] for case in RESOURCE_CASES]


@pytest.mark.parametrize("name, requests, limits, go", RESOURCE_CASES, ids=resource_case_ids())
def test_resource_requirements_as_in_one_file(tmp_path, name, requests, limits, go):
    write(tmp_path / "team", "case.yaml", container_profile({"requests": requests, "limits": limits}))
    errors = [f for f in validate_paths([str(tmp_path / "team")]).errors]
    if go is None:
        assert errors == [], [str(e) for e in errors]
    else:
        [error] = errors
        assert error.layer == "team" and go in error.message, str(error)
        assert "the API server rejects the pod (validateResourceRequirements" in error.message


@pytest.mark.parametrize("name, requests, limits, go", RESOURCE_CASES, ids=resource_case_ids())
def test_resource_requirements_across_two_layers(tmp_path, name, requests, limits, go):
    """The platform sets the requests and the team the limits: the verdict is the one file's, and the error is at
    the team's limit, naming the platform's request."""
    platform = write(tmp_path / "platform", "case.yaml", container_profile({"requests": requests}))
    team = write(tmp_path / "team", "case.yaml", container_profile({"limits": limits}))
    if go is None:
        assert kfdefaults.resolve("case", platform=[str(platform.parent)], team=[str(team.parent)])
        return
    with pytest.raises(ProfileError) as caught:
        kfdefaults.resolve("case", platform=[str(platform.parent)], team=[str(team.parent)])
    [error] = caught.value.findings
    assert go in error.message, str(error)
    if "Limit must be set" in go:  # the team wrote no limit: the platform's request is the one to blame
        assert (error.layer, error.location.file) == ("platform", str(platform)), str(error)
    else:
        assert (error.layer, error.location.file) == ("team", str(team)), str(error)
        assert error.message.startswith("limit ") and f"set at [platform] {platform}:" in error.message, str(error)


@pytest.mark.slow
def test_a_team_lowering_the_gpu_limit_under_the_builtin_request(tmp_path):
    """The builtin gpu-large asks for 8 GPUs (request and limit); a team writes a limit of 4."""
    write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  limits:
                    nvidia.com/gpu: 4
        """)
    expected = (f'team/gpu-large.yaml:7:29: [team] pod_template.spec.containers[name=primary].resources.limits."nvidia.com/gpu": '
                f"limit 4 is below the request 8 set at [builtin] {BUILTIN_GPU_LARGE}:16:29: nvidia.com/gpu cannot be "
                "overcommitted, so its request and limit must be equal; the API server rejects the pod "
                '(validateResourceRequirements: "must be equal to nvidia.com/gpu limit of 4")')
    for args in (["validate", "team"], ["render", "gpu-large", "--team", "team"],
                 ["render", "gpu-large", "--team", "team", "--as", "pytorchjob"]):
        proc = run(args, tmp_path)
        assert proc.returncode == 1 and proc.stdout == "", proc.stderr
        assert errors_of(proc) == [expected], proc.stderr
    with pytest.raises(ProfileError, match="limit 4 is below the request 8"):
        kfdefaults.Elastic(profile="gpu-large", team=[str(tmp_path / "team")])


def test_the_gpu_limit_lowered_with_its_request_passes(tmp_path):
    write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  limits: {nvidia.com/gpu: 4}
                  requests: {nvidia.com/gpu: 4}
        """)
    proc = run(["render", "gpu-large", "--team", "team"], tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_a_request_raised_above_a_lower_layers_limit_is_at_the_request(tmp_path):
    write(tmp_path / "platform", "train.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  limits: {cpu: 2}
        """)
    write(tmp_path / "team", "train.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  requests: {cpu: 4}
        """)
    proc = run(["render", "train", "--platform", "platform", "--team", "team"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert errors_of(proc) == [
        "team/train.yaml:6:27: [team] pod_template.spec.containers[name=primary].resources.requests.cpu: request 4 is above "
        "the limit 2 set at [platform] platform/train.yaml:6:25; the API server rejects the pod "
        '(validateResourceRequirements: "must be less than or equal to cpu limit of 2")']


@pytest.mark.slow
def test_requests_cpu_over_limits_cpu_in_one_file_from_set_and_from_python(tmp_path):
    proc = run(["render", "cpu-small", "--set", "pod_template.spec.containers[name=primary].resources.requests.cpu=4",
                "--set", "pod_template.spec.containers[name=primary].resources.limits.cpu=2"], tmp_path)
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    [error] = errors_of(proc)
    assert error.startswith("--set pod_template.spec.containers[name=primary].resources.requests.cpu=4: [task] "), error
    assert "request 4 is above the limit 2 set at [task] --set pod_template.spec.containers[name=primary]" \
           ".resources.limits.cpu=2" in error
    overrides = {"pod_template": {"spec": {"containers": [{"name": "primary", "resources": {"requests": {"cpu": "4"},
                                                                                            "limits": {"cpu": "2"}}}]}}}
    with pytest.raises(ProfileError, match="must be less than or equal to cpu limit of 2"):
        kfdefaults.resolve("cpu-small", overrides=overrides)


def test_init_and_ephemeral_containers_count(tmp_path):
    write(tmp_path / "team", "init.yaml", container_profile({"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}},
                                                            "setup", "initContainers"))
    write(tmp_path / "team", "debug.yaml", """\
        pod_template:
          spec:
            ephemeralContainers:
              - name: debug
                image: busybox:1
                env:
                  - {name: MODE, value: fast, valueFrom: {configMapKeyRef: {name: modes, key: mode}}}
        """)
    paths = sorted(f.path for f in validate_paths([str(tmp_path / "team")]).errors)
    assert paths == ["pod_template.spec.ephemeralContainers[name=debug].env[name=MODE].valueFrom",
                     "pod_template.spec.initContainers[name=setup].resources.requests.memory"]


def test_a_limit_alone_is_its_own_request(tmp_path):
    """``SetDefaults_Pod`` gives a container without a request the request of its limit: no crossing."""
    write(tmp_path / "platform", "alone.yaml", container_profile({"limits": {"cpu": "1", "my.org/resource": "2"}}))
    write(tmp_path / "team", "alone.yaml", container_profile({"limits": {"cpu": "500m", "my.org/resource": "1"}}))
    assert kfdefaults.resolve("alone", platform=[str(tmp_path / "platform")], team=[str(tmp_path / "team")])


@pytest.mark.parametrize("deletion, line", [
    ("        limits:\n          my.org/resource: null\n", 7),
    ("        limits: null\n", 6),
    ("        limits:\n          $patch: delete\n", 7),
    ("        limits:\n          $patch: replace\n          cpu: 1\n", 7),
], ids=["null", "limits: null", "$patch: delete", "$patch: replace"])
def test_a_removed_extended_limit_is_at_the_removal(tmp_path, deletion, line):
    write(tmp_path / "platform", "dev.yaml", container_profile({"requests": {"my.org/resource": "1"},
                                                                "limits": {"my.org/resource": "1"}}))
    team = write(tmp_path / "team", "dev.yaml", "pod_template:\n  spec:\n    containers:\n      - name: worker\n"
                                                "        resources:\n" + textwrap.indent(deletion, "  "))
    with pytest.raises(ProfileError) as caught:
        kfdefaults.resolve("dev", platform=[str(tmp_path / "platform")], team=[str(tmp_path / "team")])
    [error] = caught.value.findings
    assert (error.location.file, error.location.line, error.layer) == (str(team), line, "team"), str(error)
    assert error.message.startswith("removes the my.org/resource limit, leaving the request 1 set at [platform] "), str(error)
    assert "Limit must be set for non overcommitable resources" in error.message


def test_the_primary_containers_gpu_request_alone_gets_its_limit_from_flytes_backend(tmp_path):
    """Flyte's backend gives the primary container's GPU request a limit of its value (``ApplyResourceOverrides``,
    as ``@task(requests=Resources(gpu=...))`` relies on): a layer deleting the GPU limit is no error there."""
    write(tmp_path / "team", "gpu-large.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  limits: {nvidia.com/gpu: null}
        """)
    resolved = kfdefaults.resolve("gpu-large", team=[str(tmp_path / "team")])
    resources = resolved.pod_template_spec["spec"]["containers"][0]["resources"]
    assert resources["requests"] == {"nvidia.com/gpu": 8} and not resources.get("limits")


# --- environment variables --------------------------------------------------------------------------------------


def env_profile(entry: str, extends: str | None = None) -> str:
    head = f"extends: {extends}\n" if extends else ""
    return head + "pod_template:\n  spec:\n    containers:\n      - name: primary\n        env:\n          - " + entry + "\n"


CONFIG_MAP = "{configMapKeyRef: {name: nccl, key: debug}}"


@pytest.mark.slow
def test_a_value_below_and_a_value_from_above(tmp_path):
    write(tmp_path / "team", "base.yaml", env_profile("{name: NCCL_DEBUG, value: WARN}"))
    write(tmp_path / "team", "train.yaml", env_profile(f"{{name: NCCL_DEBUG, valueFrom: {CONFIG_MAP}}}", "base"))
    proc = run(["render", "train", "--team", "team"], tmp_path)
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert errors_of(proc) == [
        "team/train.yaml:7:43: [team] pod_template.spec.containers[name=primary].env[name=NCCL_DEBUG].valueFrom: "
        "`valueFrom` beside the `value` set at [team] team/base.yaml:6:39: the API server rejects the pod "
        '(validateEnvVarValueFrom: "may not be specified when `value` is not empty"); to replace the other one, '
        "delete it here: `value: null` (or `delete: [pod_template.spec.containers[name=primary].env[name=NCCL_DEBUG]"
        ".value]`)"]


def test_a_value_from_below_and_a_value_above_in_toml(tmp_path):
    write(tmp_path / "team", "base.yaml", env_profile(f"{{name: NCCL_DEBUG, valueFrom: {CONFIG_MAP}}}"))
    write(tmp_path / "team", "train.toml", """\
        extends = "base"

        [[pod_template.spec.containers]]
        name = "primary"
        env = [{name = "NCCL_DEBUG", value = "INFO"}]
        """)
    [error] = validate_paths([str(tmp_path / "team")]).errors
    assert (Path(error.location.file).name, error.location.line) == ("train.toml", 5), str(error)
    assert error.path == "pod_template.spec.containers[name=primary].env[name=NCCL_DEBUG].value"
    assert error.message.startswith("`value` beside the `valueFrom` set at [team] ")
    assert error.message.endswith('delete it here: `delete = ["pod_template.spec.containers[name=primary].env'
                                  '[name=NCCL_DEBUG].valueFrom"]`')


@pytest.mark.parametrize("lower, upper, go", [
    ("{name: NCCL_DEBUG, value: WARN}", f'{{name: NCCL_DEBUG, value: "", valueFrom: {CONFIG_MAP}}}', None),
    ("{name: NCCL_DEBUG, value: WARN}", f"{{name: NCCL_DEBUG, value: null, valueFrom: {CONFIG_MAP}}}", None),
    (f"{{name: NCCL_DEBUG, valueFrom: {CONFIG_MAP}}}", "{name: NCCL_DEBUG, valueFrom: {secretKeyRef: {name: s, key: k}}}",
     "may not have more than one field specified at a time"),
    (f"{{name: NCCL_DEBUG, valueFrom: {CONFIG_MAP}}}", "{name: NCCL_DEBUG, valueFrom: {configMapKeyRef: null}}",
     "must specify one of"),
], ids=["an empty value", "the value deleted", "a second source", "the only source deleted"])
def test_value_from_rules(tmp_path, lower, upper, go):
    write(tmp_path / "team", "base.yaml", env_profile(lower))
    write(tmp_path / "team", "train.yaml", env_profile(upper, "base"))
    errors = validate_paths([str(tmp_path / "team")]).errors
    if go is None:
        assert errors == [], [str(e) for e in errors]
    else:
        [error] = errors
        assert go in error.message and error.location.file.endswith("train.yaml"), str(error)


@pytest.mark.slow
@pytest.mark.parametrize("name, accepted", [
    ("GOOD.name-1", True), ("with space", True), ("~tilde", True),  # the relaxed rule of Kubernetes 1.32
    ("A=B", False), ("E\x1b", False), ("caf\u00e9", False), ("", False), ("line\nbreak", False),
])
def test_an_environment_variable_name_follows_validate_env_var_name(tmp_path, name, accepted):
    """pkg/apis/core/validation validateEnvVarName, with apimachinery's IsRelaxedEnvVarName (on by default since
    1.32): printable ASCII but '='; anything else is refused where the pod is created."""
    write(tmp_path / "team", "p.yaml", "pod_template:\n  spec:\n    containers:\n      - name: primary\n        env:\n"
          f"          - {{name: {yaml.safe_dump(name, default_style=chr(34)).strip()}, value: x}}\n")
    proc = run(["validate", str(tmp_path / "team")], tmp_path)
    if accepted:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 1
        [error] = errors_of(proc)
        assert ":6:" in error and "is not an environment variable name" in error and "validateEnvVarName" in error
