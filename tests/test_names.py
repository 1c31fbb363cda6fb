"""Names the API server would reject: the apimachinery rules, and where the fragment checks apply them."""

from __future__ import annotations

import textwrap

import pytest

import kfdefaults
from kfdefaults.api import validate_paths
from kfdefaults.k8s.names import (
    annotation_key_problem,
    container_resource_name_problem,
    dns1123_label_hint,
    dns1123_label_problem,
    is_dns1123_subdomain,
    is_extended_resource,
    label_value_problem,
    qualified_name_problem,
)

# --- the rules (k8s.io/apimachinery/pkg/util/validation, validation_test.go cases among them) ------------------


@pytest.mark.parametrize("name", ["a", "0", "primary", "a-b", "a--b", "1-2-3", "a" * 63])
def test_dns1123_labels(name):
    assert dns1123_label_problem(name) is None


@pytest.mark.parametrize("name, why", [
    ("", "it is empty"),
    ("a" * 64, "it has 64 characters"),
    ("Primary", "uppercase"),
    ("bad_name", "`_`"),
    ("a.b", "`.`"),
    ("-a", "starts with `-`"),
    ("a-", "ends with `-`"),
    ("a b", "a space"),
    ("é", "`é`"),
])
def test_not_dns1123_labels(name, why):
    assert why in dns1123_label_problem(name)


def test_dns1123_label_hints():
    assert dns1123_label_hint("Bad_Name") == "bad-name"
    assert dns1123_label_hint("fetch.data") == "fetch-data"
    assert dns1123_label_hint("___") is None


@pytest.mark.parametrize("name", ["a.b", "example.com", "a-1.b-2", "a" * 63 + ".b", ("a" * 63 + ".") * 3 + "a" * 61])
def test_dns1123_subdomains(name):
    assert is_dns1123_subdomain(name)


@pytest.mark.parametrize("name", ["", "A.b", "a..b", ".a", "a.", "a_b.c", "-a.b", ("a" * 63 + ".") * 4 + "a"])
def test_not_dns1123_subdomains(name):
    assert not is_dns1123_subdomain(name)


@pytest.mark.parametrize("name", [
    "simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple", "now-with-dashes/simple",
    "now-with-dashes/now-with-dashes", "now.with.dots/simple", "now-with.dashes-and.dots/simple",
    "1-num.2-num/3-num", "1234/5678", "1.2.3.4/5678", "Uppercase_Is_OK_123", "example.com/Uppercase_Is_OK_123",
    "requests.storage-foo", "a" * 63, "a" * 253 + "/" + "b" * 63,
])
def test_qualified_names(name):
    assert qualified_name_problem(name) is None


@pytest.mark.parametrize("name, why", [
    ("", "it is empty"),
    ("nospecialchars%^=@", "`%`"),
    ("cantendwithadash-", "ends with `-`"),
    ("-cantstartwithadash-", "starts with `-`"),
    ("only/one/slash", "it has 2 '/'"),
    ("Example.com/abc", "its prefix `Example.com` is not a DNS subdomain"),
    ("example_com/abc", "its prefix `example_com` is not a DNS subdomain"),
    ("example.com/", "its name part (after '/') is empty"),
    ("/simple", "its prefix (before '/') is empty"),
    ("example.com/" + "a" * 64, "has 64 characters, more than 63"),
    ("a" * 254 + "/abc", "its prefix has 254 characters"),
])
def test_not_qualified_names(name, why):
    assert why in qualified_name_problem(name)


@pytest.mark.parametrize("value", ["", "simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234",
                                   "a" * 63, "Uppercase_Is_OK_123", "a.b"])
def test_label_values(value):
    assert label_value_problem(value) is None


@pytest.mark.parametrize("value, why", [
    ("nospecialchars%^=@", "`%`"), ("Tama-nui-te-rā.is.Māori.sun", "`ā`"), ("\\backslashes\\", "`\\`"),
    ("-starts-with-dash", "starts with `-`"), ("ends-with-dash-", "ends with `-`"), (".starts.with.dot", "starts with `.`"),
    ("a" * 64, "it has 64 characters"), ("a b", "a space"),
])
def test_not_label_values(value, why):
    assert why in label_value_problem(value)


def test_annotation_keys_are_qualified_names_whatever_their_case():
    assert annotation_key_problem("Example.COM/Key") is None
    assert "it is empty" in annotation_key_problem("")
    assert "it has 2 '/'" in annotation_key_problem("a/b/c")


@pytest.mark.parametrize("name", [
    "cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "hugepages-1Gi", "hugepages-2M", "nvidia.com/gpu",
    "example.com/Foo_Bar", "kubernetes.io/anything", "example.kubernetes.io/x",  # native: not checked further
])
def test_container_resource_names(name):
    assert container_resource_name_problem(name) is None


@pytest.mark.parametrize("name, why", [
    ("gpu", "standard"), ("pods", "standard"), ("storage", "standard"), ("CPU", "standard"),
    ("hugepages-", "is not a page size"), ("hugepages-2MB", "`2MB` is not a page size"), ("hugepages-0", "`0`"),
    ("a/b/c", "it has 2 '/'"), ("UPPER.com/gpu", "its prefix `UPPER.com` is not a DNS subdomain"),
    ("example.com/", "is empty"), ("requests.nvidia.com/gpu", "`requests.` prefix"),
    ("a" * 250 + "/gpu", "too long for an extended resource"),
])
def test_not_container_resource_names(name, why):
    assert why in container_resource_name_problem(name)


def test_extended_resources_are_the_prefixed_names_outside_kubernetes_io():
    assert is_extended_resource("nvidia.com/gpu")
    assert not is_extended_resource("cpu")
    assert not is_extended_resource("kubernetes.io/foo")
    assert not is_extended_resource("requests.example.com/foo")


# --- where the checks apply -----------------------------------------------------------------------------------


def errors(tmp_path, text: str, **kwargs) -> list[str]:
    path = tmp_path / "names.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return [f"{f.location.line}:{f.location.column} {f.path}: {f.message}"
            for f in validate_paths([str(path)], **kwargs).errors]


def test_valid_names_directives_and_deletions_pass(tmp_path):
    # on top of a parent, so that every directive meets what it acts on
    assert errors(tmp_path, """\
        extends: elastic-gpu-default
        pod_template:
          labels: {team: vision, app.kubernetes.io/name: trainer, empty: "", Gone_Key/x/y: null, $patch: merge}
          annotations: {Example.COM/Owner: "Vision Team", "": null}
          spec:
            $setElementOrder/containers: [{name: primary}]
            containers:
              - name: primary
                resources:
                  limits: {nvidia.com/gpu: 1, kubernetes.io/example: 1, hugepages-2Mi: 2Mi}
                volumeMounts: [{name: dshm, mountPath: /dev/shm}]
              - {name: Old_Sidecar, $patch: delete}
            volumes:
              - {name: dshm, emptyDir: {medium: Memory}}
              - {name: Old_Volume, $patch: delete}
            nodeSelector: {cloud.google.com/gke-accelerator: nvidia-tesla-a100, Bad Key: null}
        """) == []


def test_ephemeral_containers_and_label_selectors_are_checked(tmp_path):
    found = errors(tmp_path, """\
        pod_template:
          spec:
            ephemeralContainers:
              - name: Debug
            topologySpreadConstraints:
              - maxSkew: 1
                topologyKey: kubernetes.io/hostname
                whenUnsatisfiable: DoNotSchedule
                labelSelector:
                  matchLabels: {"app/x/y": trainer}
        """)
    assert len(found) == 2
    assert found[0].startswith("4:15 pod_template.spec.ephemeralContainers[name=Debug].name: container name `Debug`")
    assert found[1].startswith("10:25 pod_template.spec.topologySpreadConstraints[topologyKey=kubernetes.io/hostname]"
                               ".labelSelector.matchLabels.app/x/y: label selector key `app/x/y` is not a valid qualified name")


def test_a_claim_template_asks_for_storage_in_every_schema_version(tmp_path):
    # a PersistentVolumeClaimSpec's resources were a ResourceRequirements before 1.29: not container resources
    text = """\
        pod_template:
          spec:
            volumes:
              - name: scratch
                ephemeral:
                  volumeClaimTemplate:
                    spec:
                      resources: {requests: {storage: 1Gi}}
        """
    assert errors(tmp_path, text, kubernetes_version="1.28") == []
    assert errors(tmp_path, text) == []


def test_annotations_larger_than_256_kib_in_all(tmp_path):
    import kfdefaults
    from kfdefaults import ProfileError

    big = "x" * 60_000
    with pytest.raises(ProfileError) as excinfo:  # data from Python has no file's size budget
        kfdefaults.resolve("gpu-large", overrides={"pod_template": {"annotations": {k: big for k in "abcde"}}})
    [finding] = excinfo.value.findings
    assert str(finding).startswith("overrides: [task] pod_template.annotations: the annotations take 300005 bytes")
    found = errors(tmp_path, f"""\
        pod_template:
          annotations:
            a: &big {big}
            b: *big
            c: *big
            d: *big
            e: *big
        """)
    assert len(found) == 1  # a file cannot hold that much, aliases or not
    assert found[0].startswith("3:5 : document expands to more than 64 KiB of text")


def test_names_in_task_overrides_are_checked():
    import kfdefaults
    from kfdefaults import ProfileError

    with pytest.raises(ProfileError) as excinfo:
        kfdefaults.resolve("cpu-small", overrides={"pod_template": {"labels": {"Bad Key": "x"}}})
    assert any("label key `Bad Key` is not a valid qualified name" in f.message for f in excinfo.value.findings)


def test_names_with_lone_surrogates_are_reported_not_crashed_on():
    """Python strings may hold lone surrogates (JSON's "\\ud800", undecodable file names): a finding, not a UnicodeEncodeError."""
    with pytest.raises(kfdefaults.ProfileError) as excinfo:
        kfdefaults.resolve("cpu-small", overrides={"pod_template": {
            "annotations": {"\ud800": "x"},
            "spec": {"containers": [{"name": "\ud800\udc00"}]}}})
    messages = " ".join(f.message for f in excinfo.value.findings)
    assert "container name" in messages and "annotation" in messages
