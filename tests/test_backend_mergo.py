"""The model of Flyte's backend merge against the real mergo, built from tests/mergo_oracle (Go).

The oracle is built with Debian's Go and mergo 0.3.12 (the README's test command installs them:
``apt-get install golang-go golang-github-imdario-mergo-dev``); without them these tests are skipped, and say why.
Each test draws seeded cases (``tests/backend_strategies.py``), runs them through Go and through
``kfdefaults.backend``, and compares both after :func:`kfdefaults.backend.gojson.canonical`.
``BACKEND_PAIRS=5000 BACKEND_SEED=7`` draws more, or others.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from backend_strategies import (
    OTHER_TYPES,
    container,
    maybe,
    object_meta,
    pod_spec,
    security_context,
)

from kfdefaults.backend.gojson import canonical, decode
from kfdefaults.backend.mergo import mergo_merge
from kfdefaults.backend.template_merge import merge_base_pod_spec_onto_template

ORACLE = Path(__file__).parent / "mergo_oracle"
MERGO_SOURCE = Path(os.environ.get("MERGO_GOPATH", "/usr/share/gocode")) / "src/github.com/imdario/mergo/merge.go"
PAIRS = int(os.environ.get("BACKEND_PAIRS", "1000"))
SEED = int(os.environ.get("BACKEND_SEED", "20240611"))


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    """Run cases through the Go oracle: a list of case dicts in, a list of ``{"ok": ...}`` / ``{"err": ...}`` out."""
    if shutil.which("go") is None:
        pytest.skip("no Go toolchain: the differential test of the backend merge needs `go` and Debian's mergo "
                    "(apt-get install golang-go golang-github-imdario-mergo-dev; the README's test command does)")
    if not MERGO_SOURCE.exists():
        pytest.skip(f"no mergo source at {MERGO_SOURCE} (apt-get install golang-github-imdario-mergo-dev)")
    binary = tmp_path_factory.mktemp("oracle") / "mergo_oracle"
    env = dict(os.environ, GOCACHE=str(tmp_path_factory.mktemp("gocache")))
    built = subprocess.run(["sh", str(ORACLE / "build.sh"), str(binary)], capture_output=True, text=True, env=env)
    assert built.returncode == 0, f"building the mergo oracle failed:\n{built.stdout}\n{built.stderr}"

    def run(cases: list[dict]) -> list[dict]:
        proc = subprocess.run([str(binary)], input="".join(json.dumps(c) + "\n" for c in cases),
                              capture_output=True, text=True, check=True)
        results = [json.loads(line) for line in proc.stdout.splitlines()]
        assert len(results) == len(cases), proc.stderr
        return results

    return run


def model_merge(case: dict) -> dict:
    kind = case["type"]
    return canonical(mergo_merge(decode(case["dst"], kind), decode(case["src"], kind), kind), kind)


def model_assemble(case: dict) -> dict:
    merged = merge_base_pod_spec_onto_template(decode(case["template"], "PodSpec"), decode(case["base"], "PodSpec"),
                                               case["primary"], case["primaryInit"], legacy=case.get("legacy", False))
    return canonical(merged, "PodSpec")


def agree(oracle, cases: list[dict], model) -> int:
    """How many cases Go and the model agree on; fails on the first disagreement, showing it."""
    for case, result in zip(cases, oracle(cases)):
        assert "ok" in result, (case, result)
        go = canonical(result["ok"], case.get("type", "PodSpec"))
        assert model(case) == go, json.dumps({"case": case, "go": go, "model": model(case)}, indent=1)
    print(f"[mergo] {len(cases)} pairs agree")
    return len(cases)


def assemble_case(template: dict, base: dict, primary: str = "primary", primary_init: str = "", legacy: bool = False) -> dict:
    return {"op": "assemble", "template": template, "base": base, "primary": primary, "primaryInit": primary_init,
            "legacy": legacy}


@pytest.mark.slow
def test_task_pod_specs_onto_cluster_templates(oracle):
    """(task pod spec, cluster template) pairs through the whole assembly: MergeBasePodSpecOntoTemplate."""
    r = random.Random(SEED)
    cases = [assemble_case(pod_spec(r), pod_spec(r), r.choice(["primary", "main", "pytorch"]), r.choice(["", "init"]),
                           maybe(r, 0.2)) for _ in range(PAIRS)]
    assert agree(oracle, cases, model_assemble) >= 1000


@pytest.mark.slow
def test_duplicate_container_names_share_what_go_shares(oracle):
    """Two task containers of one name: mergo's pointers into the template are shared between their results."""
    r = random.Random(SEED + 1)
    cases = []
    for _ in range(300):
        template = {"containers": [dict(container(r, ["default"]), securityContext=security_context(r)),
                                   dict(container(r, ["primary", "side"]), securityContext=security_context(r))]}
        names = [r.choice(["primary", "side"]) for _ in range(2)]
        base = {"containers": [dict(container(r, [n]), securityContext=security_context(r)) for n in names]}
        cases.append(assemble_case(template, base))
    agree(oracle, cases, model_assemble)


@pytest.mark.slow
@pytest.mark.parametrize("kind, make, count", [("PodSpec", pod_spec, 300), ("Container", container, 300),
                                               ("metav1.ObjectMeta", object_meta, 200)])
def test_merges_of_one_type(oracle, kind, make, count):
    r = random.Random(f"{SEED}-{kind}")
    agree(oracle, [{"op": "merge", "type": kind, "dst": make(r), "src": make(r)} for _ in range(count)], model_merge)


def test_types_reached_through_lists_and_pointers(oracle):
    """Volume (inline VolumeSource, *Quantity), EnvVar (a value Quantity), Probe (IntOrString), and others."""
    r = random.Random(SEED + 2)
    cases = [{"op": "merge", "type": kind, "dst": make(r), "src": make(r)} for _ in range(60) for kind, make in OTHER_TYPES.items()]
    agree(oracle, cases, model_merge)


def test_zero_values_never_override_and_named_ports_stay(oracle):
    cases = [
        {"op": "merge", "type": "PodSpec",
         "dst": {"schedulerName": "volcano", "hostNetwork": True, "terminationGracePeriodSeconds": 30,
                 "securityContext": {"runAsNonRoot": True, "runAsUser": 1000}, "nodeSelector": {"a": "1"}},
         "src": {"schedulerName": "", "hostNetwork": False, "terminationGracePeriodSeconds": 0,
                 "securityContext": {"runAsNonRoot": False, "runAsUser": 0}, "nodeSelector": {"a": ""}}},
        {"op": "merge", "type": "Container", "dst": {"name": "c", "livenessProbe": {"httpGet": {"port": "http"}}},
         "src": {"name": "c", "livenessProbe": {"httpGet": {"port": 8080}}}},
    ]
    agree(oracle, cases, model_merge)
    assert model_merge(cases[0]) == {"schedulerName": "volcano", "hostNetwork": True, "terminationGracePeriodSeconds": 30,
                                     "securityContext": {"runAsNonRoot": True, "runAsUser": 1000}, "nodeSelector": {"a": ""}}
    assert model_merge(cases[1])["livenessProbe"]["httpGet"]["port"] == "http"


DSHM_MOUNT = {"name": "dshm", "mountPath": "/dev/shm"}
DSHM_VOLUME = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
PRIMARY = {"name": "primary", "image": "img:1", "args": ["pyflyte-execute"]}
ISSUE_CASES = {
    "template default container mounts /dev/shm": (
        {"containers": [{"name": "default", "volumeMounts": [DSHM_MOUNT]}], "volumes": [DSHM_VOLUME]},
        {"containers": [dict(PRIMARY, volumeMounts=[DSHM_MOUNT])], "volumes": [DSHM_VOLUME]}),
    "template primary container mounts /dev/shm": (
        {"containers": [{"name": "primary", "volumeMounts": [DSHM_MOUNT]}], "volumes": [DSHM_VOLUME]},
        {"containers": [dict(PRIMARY, volumeMounts=[DSHM_MOUNT])], "volumes": [DSHM_VOLUME]}),
    "template with only a dshm volume": (
        {"volumes": [DSHM_VOLUME]}, {"containers": [dict(PRIMARY, volumeMounts=[DSHM_MOUNT])], "volumes": [DSHM_VOLUME]}),
    "renamed primary, sidecar and init container in the template": (
        {"containers": [{"name": "main", "image": "m"}, {"name": "log-shipper", "image": "f"}], "initContainers": [{"name": "fetch"}]},
        {"containers": [PRIMARY, {"name": "log-shipper"}]}),
    "sidecar named pytorch": ({}, {"containers": [PRIMARY, {"name": "pytorch", "image": "s"}]}),
    "sidecar before the primary": ({"containers": [{"name": "default", "image": "noop"}]}, {"containers": [{"name": "side"}, PRIMARY]}),
}


@pytest.mark.parametrize("name", list(ISSUE_CASES))
def test_the_cases_of_the_backend_page_agree_with_go(oracle, name):
    template, base = ISSUE_CASES[name]
    agree(oracle, [assemble_case(template, base), assemble_case(template, base, legacy=True)], model_assemble)


def test_the_go_mirror_and_the_kind_table_are_one_generation():
    """scripts/gen_k8s_kinds.py writes both from the Kubernetes sources: the oracle merges the types the model reads."""
    import re

    from kfdefaults.backend.k8s_kinds import KINDS

    def kind(go: str) -> str:
        for prefix, written in (("*", "*"), ("[]byte", None), ("[]", "[]"), ("map[string]", "map[string]")):
            if go.startswith(prefix):
                return "bytes" if written is None else written + kind(go[len(prefix):])
        simple = {"string": "string", "int64": "int", "bool": "bool", "float64": "float", "RawJSON": "opaque"}
        return simple.get(go, go.replace("Meta", "metav1.", 1) if go.startswith("Meta") else go)

    mirror: dict[str, dict] = {}
    for name, body in re.findall(r"^type (\w+) struct \{\n(.*?)^\}", (ORACLE / "k8stypes.go").read_text(), re.M | re.S):
        fields = mirror.setdefault(kind(name), {})
        for line in body.splitlines():
            inline = re.fullmatch(r'\t(\w+) `json:",inline"`', line)
            if inline:
                fields.setdefault("__inline__", []).append(kind(inline.group(1)))
                continue
            field = re.fullmatch(r'\t\w+ (\S+) `json:"([^,"]+)[^"]*"`', line)
            fields[field.group(2)] = kind(field.group(1))
    assert mirror == KINDS


TEMPLATE_WITH_A_DSHM_VOLUME = """\
apiVersion: v1
kind: PodTemplate
metadata: {name: flyte-template, namespace: flyte}
template:
  spec:
    containers: [{name: default, image: docker.io/rwgrim/docker-noop}]
    volumes:
      - name: dshm
        emptyDir: {medium: Memory, sizeLimit: 64Gi}
"""


def test_a_template_that_defines_the_dshm_volume_warns_of_the_size_it_replaces_not_of_a_missing_volume(oracle, tmp_path):
    """cpu-small mounts its `dshm` (sizeLimit 1Gi); the cluster's template defines a `dshm` of 64Gi. kfdefaults
    leaves the profile's volume out, the backend adds the template's: the pod Go's mergo builds from the task
    flytekit registers mounts a volume that is there, once. render says the size that is replaced, and not that
    Kubernetes rejects the pod."""
    from cli_runner import invoke

    template = tmp_path / "template.yaml"
    template.write_text(TEMPLATE_WITH_A_DSHM_VOLUME, encoding="utf-8")
    args = ["render", "cpu-small", "--cluster-template", str(template), "--set", "elastic.nnodes=2", "-o", "json"]
    registered = invoke([*args, "--as", "flyte"])
    assert registered.exit_code == 0, registered.output
    pod_spec = json.loads(registered.stdout)["k8sPod"]["podSpec"]
    [built] = oracle([assemble_case(yaml_spec(template), pod_spec)])
    pod = canonical(built["ok"], "PodSpec")
    assert pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}]
    [primary] = [c for c in pod["containers"] if c["name"] == "primary"]
    assert primary["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]

    job = invoke([*args, "--as", "pytorchjob"])  # the replayed backend builds the same pod
    worker = json.loads(job.stdout)["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert worker["volumes"] == pod["volumes"] and worker["containers"][0]["volumeMounts"] == primary["volumeMounts"]

    for result in (registered, job, invoke(args[:-2])):
        assert "no layer defines that volume" not in result.stderr and "rejects the pod" not in result.stderr
        said = " ".join(result.stderr.split())  # a warning's words, however its lines are wrapped
        assert said.count("emptyDir.sizeLimit: warning") == 1, result.stderr
        assert (f"{kfdefaults_profiles()}/cpu-small.yaml:30:22: [builtin] "
                "pod_template.spec.volumes[name=dshm].emptyDir.sizeLimit: warning: /dev/shm is the "
                f"cluster's PodTemplate's volume `dshm` ({template}:8:15), not this profile's `dshm`: "
                "sizeLimit 64Gi in place of 1Gi.") in said, result.stderr


def yaml_spec(path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8"))["template"]["spec"]


def kfdefaults_profiles() -> str:
    from kfdefaults.layers.builtin import builtin_folder

    return builtin_folder()
