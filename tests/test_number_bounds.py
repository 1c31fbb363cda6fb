"""Numbers read from user text stay within bounds: a quantity of 4,300+ digits, a 5,000-digit fraction, an exponent
past int32, ``nproc_per_node: auto`` over a GPU limit of ``1Ei``. Each is a located error (``FILE:LINE:COLUMN``,
exit 1, no traceback, nothing on standard output) wherever it is written: a profile file, ``--set``, a live
manifest given to ``verify``, ``kfdefaults.resolve(overrides=...)``, ``Elastic(...)``. Before, each of them ended in
``internal error: ValueError`` (Python refuses to convert more than 4,300 digits) or crashed ``render --as flyte``.

The command line runs in a subprocess, on real profile folders, as a user's shell runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kfdefaults
from kfdefaults import ProfileError

KFDEFAULTS = str(Path(sys.executable).parent / "kfdefaults")

HUGE_QUANTITIES = {
    "4,400 digits": "9" * 4400,
    "a 5,000-digit fraction": "0." + "0" * 4999 + "1",
    "0.000...1 with 10,000 zeros": "0." + "0" * 10_000 + "1",
    "4,400 digits and Ki": "9" * 4400 + "Ki",
    "a 5,000-digit exponent": "1e" + "9" * 5000,
}
"""Quantities no parser should convert to an integer; each is longer than the 64 characters read."""

OUT_OF_RANGE = {
    "an exponent past int32": ("1e2147483648", "the exponent is outside int32"),
    "1e999999": ("1e999999", "is above 9223372036854775807"),
    "8Ei, which apimachinery caps silently": ("8Ei", "is above 9223372036854775807"),
    "2^63": ("9223372036854775808", "is above 9223372036854775807"),
}
"""Short quantities whose value no Kubernetes consumer holds: an error, not a number kfdefaults cannot show."""


def run(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KFDEFAULTS_") or k == "KFDEFAULTS_CACHE_DIR"}
    return subprocess.run([KFDEFAULTS, *args], cwd=cwd, env=env, capture_output=True, text=True, input=stdin,
                          timeout=300)


def messages(proc: subprocess.CompletedProcess) -> str:
    """Standard error without ``render``'s line naming its target."""
    return "".join(line for line in proc.stderr.splitlines(keepends=True) if not line.startswith("kfdefaults: target"))


def assert_located_error(proc: subprocess.CompletedProcess, where: str, message: str) -> None:
    """Exit 1, nothing on standard output, no traceback nor internal error, and the first message starts at
    ``where`` and says ``message``."""
    assert proc.returncode == 1, proc.stderr[:2000]
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[:2000]
    first = messages(proc).splitlines()[0]
    assert first.startswith(where), first[:300]
    assert message in first, first[:500]
    assert len(first) < 1000  # the hostile value is quoted short, not copied whole


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def memory_limit(value: str) -> str:
    return f"""\
pod_template:
  spec:
    containers:
      - name: primary
        resources:
          limits:
            memory: "{value}"
"""


# --- quantities -------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("quantity", list(HUGE_QUANTITIES.values()), ids=list(HUGE_QUANTITIES))
def test_a_huge_quantity_in_a_profile_is_located(tmp_path, quantity):
    write(tmp_path / "team", "big.yaml", memory_limit(quantity))
    for args in (["validate", "team/big.yaml"], ["render", "big", "--team", "team"]):
        assert_located_error(run(args, tmp_path), "team/big.yaml:7:21: [team] pod_template.spec.containers[name=primary]"
                             ".resources.limits.memory: ", "is longer than any Kubernetes quantity kfdefaults reads")


@pytest.mark.slow
@pytest.mark.parametrize("quantity, message", list(OUT_OF_RANGE.values()), ids=list(OUT_OF_RANGE))
def test_a_quantity_no_consumer_holds_is_located(tmp_path, quantity, message):
    write(tmp_path / "team", "big.yaml", memory_limit(quantity))
    assert_located_error(run(["validate", "team/big.yaml"], tmp_path), "team/big.yaml:7:21: [team] ", message)


@pytest.mark.slow
@pytest.mark.parametrize("quantity", list(HUGE_QUANTITIES.values()), ids=list(HUGE_QUANTITIES))
def test_a_huge_quantity_in_set_is_located(tmp_path, quantity):
    key = "pod_template.spec.containers[name=primary].resources.limits.memory"
    proc = run(["render", "gpu-large", "--set", f'{key}="{quantity}"'], tmp_path)
    assert_located_error(proc, f'--set {key}="', "is longer than any Kubernetes quantity kfdefaults reads")


@pytest.mark.slow
@pytest.mark.parametrize("quantity", list(HUGE_QUANTITIES.values()), ids=list(HUGE_QUANTITIES))
def test_a_huge_quantity_in_a_live_manifest_is_located(tmp_path, quantity):
    pod = textwrap.dedent(f"""\
        apiVersion: v1
        kind: Pod
        metadata:
          name: train-0
          annotations:
            kfdefaults.io/profile: gpu-large
        spec:
          containers:
            - name: primary
              image: registry.example.com/train:1
              resources:
                limits:
                  nvidia.com/gpu: "{quantity}"
        """)
    (tmp_path / "pod.yaml").write_text(pod)
    assert_located_error(run(["verify", "pod.yaml"], tmp_path), 'pod.yaml:13:27: spec.containers[0].resources.limits.'
                         '"nvidia.com/gpu": ', "is longer than any Kubernetes quantity kfdefaults reads")
    assert_located_error(run(["verify", "-"], tmp_path, stdin=pod), "-:13:27: ", "is longer than any")


@pytest.mark.slow
def test_a_huge_quantity_in_the_clusters_pod_template_is_located(tmp_path):
    (tmp_path / "template.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: v1
        kind: PodTemplate
        metadata: {{name: default}}
        template:
          spec:
            containers:
              - name: default
                image: registry.example.com/base:1
                resources:
                  limits:
                    memory: "{HUGE_QUANTITIES['4,400 digits']}"
        """))
    for args in (["render", "gpu-large", "--cluster-template", "template.yaml", "--target", "flytekit"],
                 ["validate", "--cluster-template", "template.yaml", "--target", "flytekit"]):
        assert_located_error(run(args, tmp_path), "template.yaml:11:21: [cluster] template.spec.containers[0].resources"
                             ".limits.memory: ", "is longer than any Kubernetes quantity kfdefaults reads")


@pytest.mark.parametrize("quantity", list(HUGE_QUANTITIES.values()), ids=list(HUGE_QUANTITIES))
def test_a_huge_quantity_from_python_raises_profile_error(quantity):
    overrides = {"pod_template": {"spec": {"containers": [{"name": "primary", "resources": {"limits": {"memory": quantity}}}]}}}
    with pytest.raises(ProfileError) as caught:
        kfdefaults.resolve("gpu-large", overrides=overrides)
    assert "is longer than any Kubernetes quantity kfdefaults reads" in str(caught.value)


@pytest.mark.parametrize("overrides, path", [
    ({"pod_template": {"spec": {"containers": [{"name": "primary", "resources": {"limits": {"cpu": 10**5000}}}]}}},
     "pod_template.spec.containers[0].resources.limits.cpu"),
    ({"elastic": {"rdzv_configs": {"join_timeout": 10**5000}}}, "elastic.rdzv_configs.join_timeout"),
    ({"pod_template": {"spec": {"terminationGracePeriodSeconds": -(10**5000)}}}, "pod_template.spec.terminationGracePeriodSeconds"),
    ({"pod_template": {"spec": {"schedulerName": 10**5000}}}, "pod_template.spec.schedulerName"),
], ids=["a quantity", "a rendezvous timeout", "an int64 field", "a string field"])
def test_a_huge_integer_from_python_raises_profile_error(overrides, path):
    """Python hands over an int of any size, whose text no message may make (``str()`` of more than 4,300 digits
    raises): it is held to the 30 digits a file may write, at its path."""
    with pytest.raises(ProfileError) as caught:
        kfdefaults.resolve("gpu-large", overrides=overrides)
    [finding] = caught.value.findings
    assert (str(finding.location), finding.path) == ("overrides", path)
    assert finding.message == ("an integer of about 5,001 digits; no profile value is that large (at most 30 digits "
                               "are read, as in a file)")


@pytest.mark.slow
def test_quantities_compare_as_the_api_server_rounds_them(tmp_path):
    """``ParseQuantity`` rounds up to nano units: a request of ``2n`` is not above a limit of ``1.5n`` (both are
    ``2n``), and ``1e-999999`` is ``1n``, which the API server keeps as such."""
    write(tmp_path / "team", "tiny.yaml", """\
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  requests: {cpu: 2n, memory: "1e-999999"}
                  limits: {cpu: 1.5n, memory: 1n}
        """)
    proc = run(["validate", "team/tiny.yaml"], tmp_path)
    assert proc.returncode == 0, proc.stderr


# --- nproc_per_node: auto ---------------------------------------------------------------------------------------

GPU_AUTO = """\
extends: gpu-large
elastic:
  nproc_per_node: auto
pod_template:
  spec:
    containers:
      - name: primary
        resources:
          requests:
            nvidia.com/gpu: {gpus}
          limits:
            nvidia.com/gpu: {gpus}
"""


@pytest.mark.slow
def test_auto_over_a_gpu_limit_of_1ei_is_located_at_the_gpu_limit(tmp_path):
    write(tmp_path / "team", "gpu-auto.yaml", GPU_AUTO.format(gpus="1Ei"))
    where = "team/gpu-auto.yaml:12:29: [team] pod_template.spec.containers[name=primary].resources.limits.\"nvidia.com/gpu\": "
    for args in (["render", "gpu-auto", "--team", "team"], ["render", "gpu-auto", "--team", "team", "--as", "flyte"],
                 ["render", "gpu-auto", "--team", "team", "--as", "pytorchjob"], ["validate", "team"]):
        proc = run(args, tmp_path)
        assert_located_error(proc, where, "`nproc_per_node: auto` ([team] team/gpu-auto.yaml:3:19) makes this "
                             "nvidia.com/gpu 1,152,921,504,606,846,976 workers per node, above 2,147,483,647")
        assert proc.stdout == ""


@pytest.mark.slow
def test_auto_is_held_to_the_bound_of_a_written_value(tmp_path):
    """2,147,483,647 workers is the most ``nproc_per_node`` may be written; ``auto`` may make as many, not one more."""
    write(tmp_path / "team", "gpu-auto.yaml", GPU_AUTO.format(gpus=2**31 - 1))
    proc = run(["render", "gpu-auto", "--team", "team", "-o", "json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["elastic"]["nproc_per_node"] == 2**31 - 1
    write(tmp_path / "team", "gpu-auto.yaml", GPU_AUTO.format(gpus=2**31))
    assert_located_error(run(["render", "gpu-auto", "--team", "team"], tmp_path), "team/gpu-auto.yaml:12:29: [team] ",
                         "2,147,483,648 workers per node, above 2,147,483,647")
    write(tmp_path / "team", "written.yaml", "elastic:\n  nproc_per_node: 2147483648\n")
    assert_located_error(run(["validate", "team/written.yaml"], tmp_path), "team/written.yaml:2:19: [team] "
                         "elastic.nproc_per_node: ", "at most 2147483647")


@pytest.mark.slow
def test_auto_from_a_cpu_request_is_located_at_the_cpu_request(tmp_path):
    write(tmp_path / "team", "cpu-auto.yaml", """\
        elastic:
          nproc_per_node: auto
        pod_template:
          spec:
            containers:
              - name: primary
                resources:
                  requests: {cpu: 1e15}
        """)
    assert_located_error(run(["render", "cpu-auto", "--team", "team"], tmp_path),
                         "team/cpu-auto.yaml:8:27: [team] pod_template.spec.containers[name=primary].resources.requests.cpu: ",
                         "makes this cpu 1,000,000,000,000,000 workers per node")


def test_auto_over_1ei_raises_profile_error_in_resolve_and_elastic(tmp_path):
    write(tmp_path / "team", "gpu-auto.yaml", GPU_AUTO.format(gpus="1Ei"))
    with pytest.raises(ProfileError) as caught:
        kfdefaults.resolve("gpu-auto", team=[str(tmp_path / "team")])
    [finding] = caught.value.findings
    assert (finding.location.file, finding.location.line, finding.location.column) == (str(tmp_path / "team" / "gpu-auto.yaml"), 12, 29)
    # the task layer: Elastic(nproc_per_node="auto") over a team's 1Ei GPUs
    write(tmp_path / "team", "gpus.yaml", GPU_AUTO.format(gpus="1Ei").replace("  nproc_per_node: auto\n", "  nnodes: 1\n"))
    with pytest.raises(ProfileError, match="makes this nvidia.com/gpu 1,152,921,504,606,846,976 workers per node"):
        kfdefaults.Elastic(profile="gpus", team=[str(tmp_path / "team")], nproc_per_node="auto")


# --- other numbers read from text -------------------------------------------------------------------------------


@pytest.mark.slow
def test_nnodes_of_5000_digits_is_located(tmp_path):
    write(tmp_path / "team", "nodes.yaml", f'elastic:\n  nnodes: "{"9" * 5000}"\n')
    write(tmp_path / "team", "range.yaml", f'elastic:\n  nnodes: "1:{"9" * 5000}"\n')
    for name, message in (("nodes", "nnodes must be between 1 and 2147483647"), ("range", "needs 1 <= MIN <= MAX")):
        assert_located_error(run(["validate", f"team/{name}.yaml"], tmp_path),
                             f"team/{name}.yaml:2:11: [team] elastic.nnodes: ", message)
    with pytest.raises(ProfileError, match="nnodes must be between 1 and 2147483647"):
        kfdefaults.Elastic(profile="gpu-large", nnodes="9" * 5000)


@pytest.mark.slow
@pytest.mark.parametrize("variable", ["TORCH_ELASTIC_SHUTDOWN_TIMEOUT", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"])
def test_a_torch_setting_of_5000_digits_is_located(tmp_path, variable):
    write(tmp_path / "team", "env.yaml", f"""\
        pod_template:
          spec:
            containers:
              - name: primary
                env:
                  - name: {variable}
                    value: "{"9" * 5000}"
        """)
    assert_located_error(run(["validate", "team/env.yaml"], tmp_path), "team/env.yaml:7:20: [team] ",
                         "up to 2,147,483,647, got 99999999999999999999... (5,000 characters)")
