"""Kubernetes quantities, enumerations read from the schema, and the rules the PodSpec walker takes from it."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kfdefaults.k8s.quantity import (
    is_quantity,
    quantity_problem,
    quantity_value,
    suggest_quantity,
)
from kfdefaults.smp.schema import available_versions, definitions
from kfdefaults.validate.enums import enum_values


@pytest.mark.parametrize("text", ["8", "0", "+1", "-1", "1.5", ".5", "1.", "500m", "100u", "3n", "16Gi", "16G", "1k",
                                  "2Ki", "1e3", "1E-3", "1.5e+2", "7Ei", "1P", 8, 0.25, 2**63 - 1])
def test_valid_quantities(text):
    assert is_quantity(text)
    assert quantity_problem(text) is None


@pytest.mark.parametrize("text", ["16GB", "16gb", "16 Gi", "1,5", "Gi", "", "1.5.2", "16K", "1e3M", "1e", "0x10", "16iB",
                                  "m", "1 ", " 1", "1_000", True, None, float("inf"), float("nan"), [1],
                                  2**63, "8Ei", "1e19", "1" * 65, "1e2147483648"])
def test_invalid_quantities(text):
    assert not is_quantity(text)
    assert quantity_problem(text)


@pytest.mark.parametrize("text, value", [("16Gi", 16 * 2**30), ("16G", 16 * 10**9), ("500m", Fraction(1, 2)),
                                         ("1.5Ki", 1536), ("1e3", 1000), ("2.5E-1", Fraction(1, 4)), ("-1Mi", -(2**20)),
                                         (8, 8), ("100u", Fraction(1, 10**4)), ("3n", Fraction(3, 10**9))])
def test_quantity_values(text, value):
    assert quantity_value(text) == value


@pytest.mark.parametrize("text, hints", [("16GB", ["16G", "16Gi"]), ("16gb", ["16G", "16Gi"]), ("16gi", ["16Gi"]),
                                         ("16GiB", ["16Gi"]), ("500mb", ["500M", "500Mi"]), ("2K", ["2k", "2Ki"]),
                                         ("1,5 Gi", ["1.5Gi"]), ("8 bytes", ["8"]), ("eight", [])])
def test_near_misses(text, hints):
    assert suggest_quantity(text) == hints


def test_16gb_message():
    assert quantity_problem("16GB") == (
        "`16GB` is not a Kubernetes quantity; did you mean `16G` (powers of 1000) or `16Gi` (powers of 1024)?")


KNOWN_ENUMS = {
    ("io.k8s.api.core.v1.Container", "imagePullPolicy"): {"Always", "IfNotPresent", "Never"},
    ("io.k8s.api.core.v1.PodSpec", "restartPolicy"): {"Always", "OnFailure", "Never"},
    ("io.k8s.api.core.v1.PodSpec", "dnsPolicy"): {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"},
    ("io.k8s.api.core.v1.PodSpec", "preemptionPolicy"): {"Never", "PreemptLowerPriority"},
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): {"TCP", "UDP", "SCTP"},
    ("io.k8s.api.core.v1.EmptyDirVolumeSource", "medium"): {"", "Memory"},
    ("io.k8s.api.core.v1.Toleration", "effect"): {"NoSchedule", "PreferNoSchedule", "NoExecute"},
    ("io.k8s.api.core.v1.NodeSelectorRequirement", "operator"): {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"},
}


@pytest.mark.parametrize("version", available_versions())
def test_enumerations_are_read_from_every_schema_version(version):
    defs = definitions(version, strict=True)
    for (definition, field), values in KNOWN_ENUMS.items():
        assert enum_values(defs[definition]["properties"][field]["description"]) == values, (version, field)
    operators = enum_values(defs["io.k8s.api.core.v1.Toleration"]["properties"]["operator"]["description"])
    assert operators >= {"Exists", "Equal"}  # Lt and Gt from 1.35


@pytest.mark.parametrize("version", available_versions())
def test_enumerations_are_never_prose(version):
    """Whatever is taken for an enumeration is a list of identifiers, never words of a sentence; and the check
    runs over every enumeration the schema states (the known ones among them), not over none."""
    defs = definitions(version, strict=True)
    found = {(name, field): enum_values(prop.get("description", ""))
             for name, definition in defs.items() for field, prop in (definition.get("properties") or {}).items()}
    found = {where: values for where, values in found.items() if values}
    assert set(KNOWN_ENUMS) <= set(found), sorted(set(KNOWN_ENUMS) - set(found))
    for where, values in found.items():
        assert all(v == "" or v[0].isupper() or v[0].isdigit() for v in values), (where, values)
        assert not values & {"A", "An", "The", "In some", "Defaults", "If"}, (where, values)


@pytest.mark.parametrize("description", [
    "Must be a filesystem type supported by the host operating system.",
    "Must be a DNS_LABEL and unique within the pod.",
    "Possible values are: Always: the kubelet always pulls. Never: the kubelet never pulls.",
    "The currently supported values are linux and windows.",
    "One of Always.",
])
def test_sentences_that_are_not_enumerations(description):
    assert enum_values(description) is None
