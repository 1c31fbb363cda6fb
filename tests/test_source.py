"""Reading YAML and TOML profile files: values, positions, and located errors."""

from __future__ import annotations

from kfdefaults.errors import AmbiguousScalar
import pytest

from kfdefaults import ProfileError
from kfdefaults.read import MAX_FILE_BYTES, read_document
from kfdefaults.read.scalars import resolve_plain_scalar


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def only_error(excinfo) -> str:
    [finding] = excinfo.value.findings
    return str(finding)


@pytest.mark.parametrize(
    "text, value",
    [
        ("no", "no"), ("on", "on"), ("y", "y"), ("Yes", "Yes"), ("off", "off"),
        ("true", True), ("False", False), ("~", None), ("null", None), ("", None),
        ("1234567", 1234567), ("0x1F", 31), ("0o17", 15), ("1_000", "1_000"),
        ("1.5", 1.5), ("1e3", 1000.0), ("2024-01-01", "2024-01-01"), ("12:30", "12:30"), ("8Gi", "8Gi"),
    ],
)
def test_plain_scalars_follow_the_yaml_1_2_core_schema(text, value):
    assert resolve_plain_scalar(text) == value
    assert type(resolve_plain_scalar(text)) is type(value)


def test_yaml_values_and_positions(tmp_path):
    path = write(tmp_path, "p.yaml", """\
name: p
elastic:
  nnodes: "1:4"
  rdzv_configs: {join_timeout: 900}
pod_template:
  spec:
    containers:
      - name: primary
        env:
          - {name: FLAG, value: 'no'}
          - name: OTHER
            value: on
""")
    doc = read_document(path)
    env = doc.data["pod_template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "FLAG", "value": "no"}, {"name": "OTHER", "value": "on"}]
    assert str(doc.location(("elastic", "nnodes"))) == f"{path}:3:11"
    assert str(doc.location(("elastic", "nnodes"), key=True)) == f"{path}:3:3"
    assert str(doc.location(("elastic", "rdzv_configs", "join_timeout"))) == f"{path}:4:32"
    assert str(doc.location(("pod_template", "spec", "containers", 0, "env", 1, "value"))) == f"{path}:12:20"
    # a path the file does not have falls back to the nearest enclosing value
    assert str(doc.location(("pod_template", "spec", "containers", 0, "image"))) == f"{path}:8:9"


def test_toml_values_and_positions(tmp_path):
    path = write(tmp_path, "p.toml", """\
name = "p"
[elastic]
nnodes = "1:4"
rdzv_configs = { join_timeout = 900, "read_timeout" = 60 }

[[pod_template.spec.containers]]
name = "primary"

[[pod_template.spec.containers.volumeMounts]]
name = "dshm"
mountPath = '/dev/shm'

[[pod_template.spec.containers]]
name = "sidecar"
""")
    doc = read_document(path)
    containers = doc.data["pod_template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["primary", "sidecar"]
    assert containers[0]["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
    assert str(doc.location(("elastic", "nnodes"))) == f"{path}:3:10"
    assert str(doc.location(("elastic", "rdzv_configs", "read_timeout"))) == f"{path}:4:55"
    assert str(doc.location(("pod_template", "spec", "containers", 0, "volumeMounts", 0, "mountPath"), key=True)) == f"{path}:11:1"
    assert str(doc.location(("pod_template", "spec", "containers", 1, "name"))) == f"{path}:14:8"


@pytest.mark.parametrize(
    "text, where, words",
    [
        ("a: 1\nb: [1, 2\n", ":3:1:", "invalid YAML"),
        ("a: 1\na: 2\n", ":2:1:", "duplicate key 'a' (first at line 1)"),
        ("a: !!python/object:os.system x\n", ":1:4:", "tags are not supported"),
        ("a: 1\n---\nb: 2\n", ":3:1:", "one profile per file"),
        ("<<: {a: 1}\n", ":1:1:", "merge keys"),
        ("a:\n  - name: x\n   image: y\n", ":3:4:", "indented differently from the lines around it"),
        ("a:\n  b: 1\n c: 2\n", ":3:2:", "indented differently"),
        ("a:\n\tb: 1\n", ":2:1:", "a tab; YAML indents with spaces only"),
        ("a:\n  b: 2\n    c: 3\n", ":3:6:", "`key: value` where a plain value was expected"),
    ],
)
def test_yaml_errors_are_located(tmp_path, text, where, words):
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(ProfileError) as excinfo:
        read_document(path)
    message = only_error(excinfo)
    assert message.startswith(path + where)
    assert words in message


def test_toml_syntax_error_is_located(tmp_path):
    path = write(tmp_path, "bad.toml", 'a = 1\nb = "unterminated\n')
    with pytest.raises(ProfileError) as excinfo:
        read_document(path)
    message = only_error(excinfo)
    assert message.startswith(path + ":2:")
    assert "invalid TOML" in message


def test_alias_expansion_is_capped(tmp_path):
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdef", "bcdefg"):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    path = write(tmp_path, "laughs.yaml", "\n".join(lines) + "\n")
    with pytest.raises(ProfileError) as excinfo:
        read_document(path)
    assert "expands to more than" in only_error(excinfo)


def test_file_size_is_capped(tmp_path):
    path = write(tmp_path, "big.yaml", "a: " + "x" * (MAX_FILE_BYTES + 1) + "\n")
    with pytest.raises(ProfileError) as excinfo:
        read_document(path)
    assert "larger than" in only_error(excinfo)


def test_non_utf8_file_is_an_error(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(ProfileError) as excinfo:
        read_document(str(path))
    assert only_error(excinfo).startswith(f"{path}:2:1: file is not UTF-8")


@pytest.mark.parametrize("text", ["017", "0755", "-010", "1" * 31])
def test_ambiguous_or_huge_integers_are_errors(text):

    with pytest.raises(AmbiguousScalar):
        resolve_plain_scalar(text)
