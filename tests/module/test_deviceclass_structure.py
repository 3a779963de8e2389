# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The example DeviceClasses (docs/examples/deviceclasses.yaml) are valid objects (KUBERNETES-FACTS.md F2.1):
their names, fields and limits, and extended resource names the API server accepts."""

from __future__ import annotations

import re

import pytest

from tests.module.deviceclass_examples import CLASSES, DRIVER, example_docs

_NAME = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"{_NAME}(\.{_NAME})*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def extended_resource_problem(name: str) -> str | None:
    """The core IsExtendedResourceName check (KUBERNETES-FACTS.md F2.1), None when the name is valid."""
    if "/" not in name or "kubernetes.io/" in name:
        return "needs a domain outside kubernetes.io"
    if name.startswith("requests."):
        return "must not start with requests."
    prefix, _, part = f"requests.{name}".partition("/")
    if "/" in part or len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix):
        return "requests.<name> is not a qualified name: bad prefix"
    if len(part) > 63 or not _QUALIFIED_NAME_PART.fullmatch(part):
        return "requests.<name> is not a qualified name: bad name"
    return None


def test_device_classes_are_valid_objects() -> None:
    names = [doc["metadata"]["name"] for doc in example_docs("deviceclasses.yaml")]
    assert len(names) == len(set(names)), "duplicate DeviceClass names"
    resources = []
    for name, cls in CLASSES.items():
        assert (cls["apiVersion"], cls["kind"]) == ("resource.k8s.io/v1", "DeviceClass")
        assert len(name) <= 253, name
        assert _SUBDOMAIN.fullmatch(name), name
        spec = cls["spec"]
        assert set(spec) <= {"selectors", "config", "extendedResourceName"}, name
        assert 1 <= len(spec["selectors"]) <= 32, name
        assert len(spec.get("config") or []) <= 32, name
        assert all(set(s) == {"cel"} and set(s["cel"]) == {"expression"} for s in spec["selectors"]), name
        if "extendedResourceName" in spec:
            resource = spec["extendedResourceName"]
            assert extended_resource_problem(resource) is None, (name, extended_resource_problem(resource))
            assert resource.startswith(f"{DRIVER}/"), name
            resources.append(resource)
    assert len(resources) == len(set(resources)), "two classes claim one extended resource"


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("gpu.deckhouse.io/a30", True),
        ("gpu.deckhouse.io/a100-40gb-1g.5gb-me", True),
        ("gpu.deckhouse.io/a30-1g.6gb+me", False),
        ("a30", False),
        ("kubernetes.io/a30", False),
        ("requests.gpu.deckhouse.io/a30", False),
        ("gpu.deckhouse.io/-a30", False),
        (f"gpu.deckhouse.io/{'a' * 64}", False),
    ],
)
def test_extended_resource_name_check(name: str, valid: bool) -> None:
    assert (extended_resource_problem(name) is None) is valid
