"""Property: whatever a valid profile is mutated into, kfdefaults answers with ProfileError, never anything else.

Valid profiles (the builtin ones and the fixtures) are mutated two ways: in their data (a value replaced by random
data, a key deleted or added, with keys drawn from the real field names so that the mutations reach deep into the
PodSpec) and in their text (characters inserted, deleted or replaced, lines duplicated). Each result goes through
``validate_paths`` (which must not raise at all) and through the render path (load, expand, merge, print), where
the only exception allowed is :class:`kfdefaults.ProfileError` with located findings.
"""

from __future__ import annotations

import glob
import json
import os
import tempfile

import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kfdefaults import ProfileError
from kfdefaults.layers import builtin_folder
from kfdefaults.read import read_document

SOURCES = sorted(glob.glob(os.path.join(builtin_folder(), "*")) + glob.glob(os.path.join(FIXTURES, "*", "*")))
TEXTS = {path: open(path, encoding="utf-8").read() for path in SOURCES}
DATA = {path: read_document(path).data for path in SOURCES}

KEYS = [
    "name", "description", "extends", "elastic", "pod_template", "spec", "labels", "annotations", "primary_container_name",
    "nnodes", "nproc_per_node", "start_method", "monitor_interval", "max_restarts", "rdzv_configs", "run_policy",
    "join_timeout", "timeout", "read_timeout", "heartbeat", "is_host", "store_type", "clean_pod_policy", "backoff_limit",
    "containers", "initContainers", "volumes", "volumeMounts", "mountPath", "resources", "limits", "requests", "memory",
    "cpu", "nvidia.com/gpu", "env", "value", "valueFrom", "emptyDir", "medium", "sizeLimit", "tolerations", "operator",
    "effect", "key", "nodeSelector", "affinity", "imagePullPolicy", "ports", "containerPort", "protocol", "args",
    "$patch", "$retainKeys", "$setElementOrder/containers", "$setElementOrder/volumes", "$deleteFromPrimitiveList/args",
    "image", "securityContext", "runAsUser", "priority", "x", "",
]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(["16Gi", "16GB", "1:4", "4:1", "0:0", "replace", "delete", "merge", "Memory", "/dev/shm", "/dev/shm/",
                     "primary", "dshm", "0755", "no", "Exists", "spawn", "gpu-large", "elastic-gpu-default", "tcp"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(KEYS), children, max_size=3),
    max_leaves=8,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _replace(value, path, new):
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        out = dict(value)
        out[head] = _replace(value[head], rest, new)
        return out
    out = list(value)
    out[head] = _replace(value[head], rest, new)
    return out


def _delete(value, path):
    head, rest = path[0], path[1:]
    if rest:
        out = dict(value) if isinstance(value, dict) else list(value)
        out[head] = _delete(value[head], rest)
        return out
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k != head}
    return [v for i, v in enumerate(value) if i != head]


@st.composite
def mutated_data(draw):
    data = DATA[draw(st.sampled_from(SOURCES))]
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(data))
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        target = data
        for part in path:
            target = target[part]
        if action == "delete" and path:
            data = _delete(data, path)
        elif action == "add" and isinstance(target, dict):
            data = _replace(data, path, {**target, draw(st.sampled_from(KEYS)): draw(VALUES)})
        elif action == "add" and isinstance(target, list):
            data = _replace(data, path, target + [draw(VALUES)])
        else:
            data = _replace(data, path, draw(VALUES))
    return json.dumps(data), ".yaml"  # JSON is YAML 1.2


@st.composite
def mutated_text(draw):
    path = draw(st.sampled_from(SOURCES))
    text = TEXTS[path]
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["insert", "delete", "replace", "duplicate-line", "indent"]))
        at = draw(st.integers(0, max(0, len(text) - 1)))
        if action == "insert":
            text = text[:at] + draw(st.text(alphabet=" \t\n-:#[]{}&*!|>'\",.=~0123456789abcxyz$", min_size=1, max_size=4)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 8)):]
        elif action == "replace":
            text = text[:at] + draw(st.characters(codec="utf-8")) + text[at + 1:]
        else:
            lines = text.splitlines(keepends=True)
            i = draw(st.integers(0, max(0, len(lines) - 1)))
            if lines:
                lines.insert(i, lines[i] if action == "duplicate-line" else "  " + lines[i])
            text = "".join(lines)
    return text, os.path.splitext(path)[1]


def check(text: str, suffix: str) -> None:
    from kfdefaults.api import validate_paths
    from kfdefaults.pipeline import Pipeline
    from kfdefaults.show.output import order_profile, to_json, to_yaml
    from kfdefaults.check.merged import check_merged

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "mutant" + suffix)
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
        report = validate_paths([path])  # never raises
        for finding in report.findings:
            assert_located_in(finding, path, text)
        try:
            pipeline = Pipeline.discover(team=[folder], entry_points=False, pyproject=False)
            for name in pipeline.catalog.names():
                if not pipeline.catalog.files(name, "team"):
                    continue
                resolved = pipeline.resolve(name)
                check_merged(resolved)
                to_yaml(order_profile(resolved.to_dict()))
                to_json(resolved.pod_template_manifest())
        except ProfileError as e:
            assert e.findings
            for finding in e.findings:
                assert_located_in(finding, path, text)


def assert_located_in(finding, path: str, text: str) -> None:
    """The one file of the folder is the only one broken (the builtin profiles it may extend are valid): each
    finding is at a line and column of it, as ``FILE:LINE:COLUMN``."""
    location = finding.location
    assert location.file == path, str(finding)
    assert location.line is not None and 1 <= location.line <= text.count("\n") + 1, str(finding)
    assert location.column is not None and location.column >= 1, str(finding)
    assert str(finding).startswith(f"{path}:{location.line}:{location.column}: "), str(finding)


#: The same 150 examples on every run (a CI run must not fail on an example no earlier run drew);
#: ``MUTATION_EXAMPLES=2000 pytest tests/test_profile_mutations.py`` explores that many new random ones.
SETTINGS = settings(max_examples=int(os.environ.get("MUTATION_EXAMPLES", "150")), deadline=None, database=None,
                    derandomize="MUTATION_EXAMPLES" not in os.environ, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@SETTINGS
@given(mutated_data())
def test_data_mutations_raise_only_profile_errors(mutant):
    check(*mutant)


@pytest.mark.slow
@SETTINGS
@given(mutated_text())
def test_text_mutations_raise_only_profile_errors(mutant):
    check(*mutant)


PYTHON_VALUES = st.recursive(
    SCALARS | st.tuples(st.integers()) | st.binary(max_size=2),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(KEYS) | st.integers() | st.none(), children, max_size=3),
    max_leaves=8,
)


@st.composite
def overrides(draw):
    """Task-layer overrides as Python callers pass them (``resolve(overrides=...)``, ``Elastic(**kwargs)``)."""
    base = json.loads(draw(mutated_data())[0])
    if not isinstance(base, dict):
        return {}  # not a mapping at all is a TypeError of the caller, not a profile problem
    section = draw(st.sampled_from(["elastic", "pod_template", "description", "extends", "name"]))
    return {**base, section: draw(PYTHON_VALUES)} if draw(st.booleans()) else base


@pytest.mark.slow
@SETTINGS
@given(overrides())
def test_python_overrides_raise_only_profile_errors(value):
    import kfdefaults

    try:
        kfdefaults.resolve("gpu-large", overrides=value, platform=(), team=())
    except ProfileError as e:
        assert e.findings
