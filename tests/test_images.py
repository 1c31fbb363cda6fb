"""Which image a task on a profile gets: the task's own image argument > the profile's image > the registration's
default image, serialized by the real SDKs (flytekit's translator, Flyte 2's serializer) and previewed by
``render --as flyte`` and ``render --explain``."""

from __future__ import annotations

import json
import warnings
from collections import OrderedDict

import pytest
from cli_runner import invoke
from conftest import TEAM
from flytekit import PodTemplate, task
from flytekit.configuration import Image, ImageConfig, SerializationSettings
from flytekit.configuration.default_images import DefaultImages
from flytekit.tools.translator import get_serializable
from kubernetes.client import V1Container, V1PodSpec

from kfdefaults import Elastic, KfdefaultsWarning

TEAM_IMAGE = "registry.example.com/vision/train:2.1"
TEAM_IMAGE_AT = f"{TEAM}/gpu-large.yaml:14"
REGISTRATION_IMAGE = "ghcr.io/example/registered:7"
TASK_IMAGE = "registry.example.com/vision/task:9"


def registered(t, default_image: str | None = None) -> tuple[dict, list]:
    """The primary container of the task as registered with ``pyflyte register --image default_image``, and the
    KfdefaultsWarnings serializing it raised."""
    config = (ImageConfig.auto_default_image() if default_image is None
              else ImageConfig(default_image=Image.look_up_image_info("default", default_image)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tt = get_serializable(OrderedDict(), SerializationSettings(image_config=config), t).template
    name = tt.config["primary_container_name"]
    [primary] = [c for c in tt.k8s_pod.pod_spec["containers"] if c["name"] == name]
    return primary, [w for w in caught if issubclass(w.category, KfdefaultsWarning)]


def defined(**kwargs) -> tuple:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        @task(**kwargs)
        def train() -> None: ...
    return train, [w for w in caught if issubclass(w.category, KfdefaultsWarning)]


# --- flytekit ----------------------------------------------------------------------------------------------


def test_the_tasks_container_image_wins_over_the_profiles_with_a_message_at_the_task():
    t, said = defined(task_config=Elastic(profile="gpu-large", team=[TEAM]), container_image=TASK_IMAGE)
    primary, said_when_serialized = registered(t, REGISTRATION_IMAGE)
    assert primary["image"] == TASK_IMAGE and said_when_serialized == []
    assert [str(w.message) for w in said] == [
        f"@task(container_image=...) wins over profile gpu-large's image {TEAM_IMAGE} ({TEAM_IMAGE_AT})"]
    assert said[0].filename == __file__
    assert primary["env"][-1]["name"] == "KFDEFAULTS_ELASTIC"  # the rest of the profile's container stays
    assert {"name": "NCCL_DEBUG", "value": "INFO"} in primary["env"]


def test_the_profiles_image_wins_over_the_registrations_default_with_a_message_when_serialized():
    t, said = defined(task_config=Elastic(profile="gpu-large", team=[TEAM]))
    assert said == []
    primary, said = registered(t, REGISTRATION_IMAGE)
    assert primary["image"] == TEAM_IMAGE
    assert [str(w.message) for w in said] == [
        f"image: profile gpu-large's {TEAM_IMAGE} ({TEAM_IMAGE_AT}) wins over the registration's default image "
        f"{REGISTRATION_IMAGE} (pyflyte --image); @task(container_image=...) would win over it"]
    assert said[0].filename == __file__  # the @task line, though flytekit serialized the task
    primary, said = registered(t)  # flytekit's own default image, which nobody chose: nothing to say
    assert primary["image"] == TEAM_IMAGE and DefaultImages.default_image() != TEAM_IMAGE
    assert said == []


def test_without_a_profile_image_the_registrations_default_is_used_and_nothing_said():
    t, said = defined(task_config=Elastic(profile="gpu-large"))
    primary, said_too = registered(t, REGISTRATION_IMAGE)
    assert primary["image"] == REGISTRATION_IMAGE and said == said_too == []
    t, _ = defined(task_config=Elastic(profile="gpu-large"), container_image=TASK_IMAGE)
    assert registered(t, REGISTRATION_IMAGE)[0]["image"] == TASK_IMAGE


def test_the_tasks_own_pod_template_image_is_the_task_layer_and_stays():
    """flytekit keeps a pod template's image over container_image: both are the task's own, as they are."""
    own = PodTemplate(pod_spec=V1PodSpec(containers=[V1Container(name="primary", image="own/template:1")]))
    t, said = defined(task_config=Elastic(profile="gpu-large", team=[TEAM]), pod_template=own,
                      container_image=TASK_IMAGE)
    primary, said_too = registered(t, REGISTRATION_IMAGE)
    assert primary["image"] == "own/template:1" and said == said_too == []


# --- render --as flyte, render --explain ---------------------------------------------------------------


@pytest.mark.parametrize("target", ["flytekit", "flyte2"])
def test_render_as_flyte_shows_the_image_that_wins_and_says_why(target):
    result = invoke(["render", "gpu-large", "--team", TEAM, "--as", "flyte", "--target", target, "--image",
                     REGISTRATION_IMAGE, "-o", "json"])
    assert result.exit_code == 0, result.stderr
    pod = json.loads(result.stdout)["k8sPod"]["podSpec"]
    assert pod["containers"][0]["image"] == TEAM_IMAGE
    what = "registration" if target == "flytekit" else "deployment"
    assert f"kfdefaults: image: profile gpu-large's {TEAM_IMAGE} ({TEAM_IMAGE_AT}) wins over the {what}'s default " \
           f"image {REGISTRATION_IMAGE}" in result.stderr
    result = invoke(["render", "gpu-large", "--as", "flyte", "--target", target, "--image", REGISTRATION_IMAGE,
                     "-o", "json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["k8sPod"]["podSpec"]["containers"][0]["image"] == REGISTRATION_IMAGE
    assert "image:" not in result.stderr


@pytest.mark.parametrize("target, task_image, default", [
    ("flytekit", "@task(container_image=...)", "the registration's default image (pyflyte --image"),
    ("flyte2", "TaskEnvironment(image=...)", "the deployment's default image (flyte deploy --image"),
])
def test_explain_ends_with_which_image_the_task_gets(target, task_image, default):
    result = invoke(["render", "gpu-large", "--team", TEAM, "--target", target, "--explain"])
    assert result.exit_code == 0, result.stderr
    last = result.stdout.splitlines()[-1]
    assert last.startswith(f"note: image: {TEAM_IMAGE} (team {TEAM_IMAGE_AT}) wins over {default}")
    assert last.endswith(f"; {task_image} wins over it")
    document = json.loads(invoke(["render", "gpu-large", "--team", TEAM, "--target", target, "--explain",
                                  "-o", "json"]).stdout)
    assert document["notes"] == [last]
    plain = invoke(["render", "gpu-large", "--target", target, "--explain", "-o", "json"])
    assert json.loads(plain.stdout)["notes"] == []


def test_explain_says_a_task_layer_image_is_the_tasks_own():
    result = invoke(["render", "gpu-large", "--team", TEAM, "--explain", "--set",
                     "pod_template.spec.containers[name=primary].image=own/template:1"])
    assert result.stdout.splitlines()[-1] == (
        "note: image: own/template:1 (task --set pod_template.spec.containers[name=primary].image=own/template:1) is "
        "the task's own pod template's: the task gets it, over @task(container_image=...) and over the "
        "registration's default image (pyflyte --image, else flytekit's default image)")
