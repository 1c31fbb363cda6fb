"""The pod spec kfdefaults checks without flytekit is the one flytekit registers.

``kfdefaults.backend.registered.registered_pod_spec`` (what ``validate`` and ``render`` check) must be exactly
what a real task on the profile serializes, but for what flytekit itself writes into the primary container
(image, command, args, its environment) and the variable that carries the registered settings. Tasks are
defined with ``kfdefaults.Elastic`` and serialized by flytekit's translator, as ``pyflyte register`` does.
"""

from __future__ import annotations

import copy
from collections import OrderedDict

import pytest
from conftest import PLATFORM, TEAM
from flytekit import task
from flytekit.configuration import ImageConfig, SerializationSettings
from flytekit.tools.translator import get_serializable

from kfdefaults import Elastic
from kfdefaults.backend.registered import registered_pod_spec
from kfdefaults.k8s.models import to_k8s_model, to_plain
from kfdefaults.settings import CLUSTER_TEMPLATE_ENV, RUNTIME_ENV

SETTINGS = SerializationSettings(image_config=ImageConfig.auto_default_image())
FLYTEKIT_FILLS = ("image", "command", "args")
"""What flytekit writes into the primary container (``_serialize_pod_spec``), whatever the pod template says."""

SIDECAR_FIRST = """\
pod_template:
  spec:
    containers:
      - name: log-shipper
        image: registry.example.com/log-shipper:1
        volumeMounts:
          - name: logs
            mountPath: /var/log/app
      - name: primary
        env:
          - name: A
            value: "1"
    volumes:
      - name: logs
        emptyDir: {}
"""

CLUSTER = """\
apiVersion: v1
kind: PodTemplate
metadata: {name: flyte-default, namespace: flyte}
template:
  spec:
    containers:
      - name: default
        volumeMounts:
          - {name: dshm, mountPath: /dev/shm}
    volumes:
      - name: dshm
        emptyDir: {medium: Memory}
"""


def serialized_pod_spec(config: Elastic) -> dict:
    def body() -> None: ...

    defined = task(task_config=config)(body)
    spec = copy.deepcopy(get_serializable(OrderedDict(), SETTINGS, defined).template.k8s_pod.pod_spec)
    return spec


def without_flytekit_fills(spec: dict, primary: str) -> dict:
    for container in spec["containers"]:
        if container["name"] == primary:
            for key in FLYTEKIT_FILLS:
                container.pop(key, None)
            env = [e for e in container.get("env") or [] if e["name"] != RUNTIME_ENV]
            container.pop("env", None)
            if env:
                container["env"] = env
    return spec


def as_the_client_writes(spec: dict) -> dict:
    """Plain data as the kubernetes client writes it back (quantities as strings), as flytekit's output is."""
    return to_plain(to_k8s_model(spec, "V1PodSpec"))


@pytest.fixture
def sidecar_first(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    (team / "gpu-large.yaml").write_text(SIDECAR_FIRST, encoding="utf-8")
    return str(team)


@pytest.mark.parametrize("case", ["gpu-large", "cpu-small", "fixtures", "sidecar-first", "cluster-template"])
def test_registered_pod_spec_is_what_flytekit_registers(case, sidecar_first, tmp_path, monkeypatch):
    kwargs: dict = {"profile": "cpu-small" if case == "cpu-small" else "gpu-large"}
    if case == "fixtures":
        kwargs.update(platform=[PLATFORM], team=[TEAM])
    if case == "sidecar-first":
        kwargs.update(team=[sidecar_first])
    if case == "cluster-template":
        (tmp_path / "cluster.yaml").write_text(CLUSTER, encoding="utf-8")
        monkeypatch.setenv(CLUSTER_TEMPLATE_ENV, str(tmp_path / "cluster.yaml"))
    config = Elastic(**kwargs)
    resolved = config.resolved
    primary = resolved.primary_container_name
    registered = as_the_client_writes(registered_pod_spec(resolved))
    serialized = serialized_pod_spec(config)
    # an image the profile gives the primary container is kept (flytekit only resolves {{.image...}} names in it)
    assert serialized["containers"][0].get("image") == registered["containers"][0].get("image") or \
        "image" not in registered["containers"][0]
    expected = without_flytekit_fills(copy.deepcopy(registered), primary)
    assert without_flytekit_fills(serialized, primary) == expected
    assert expected["containers"][0]["name"] == primary
    if case == "sidecar-first":
        assert [c["name"] for c in expected["containers"]] == ["primary", "log-shipper"]
    if case == "cluster-template":  # the cluster gives /dev/shm: the task registers none of its own
        assert "volumeMounts" not in expected["containers"][0] and "volumes" not in expected
