# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The ValidatingWebhookConfiguration of the opaque config webhook, rendered by the real Helm, its
matchConditions evaluated on admission requests as the API server builds them (cel-python for the
CEL), and the documented examples (docs/examples/claim-configs.yaml) sent through all of it."""

from __future__ import annotations

import base64
import copy
import re
from pathlib import Path
from typing import Any

import celpy
import kubernetes_validate
import pytest
import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel

from deckhouse_gpu.domain.config.opaque_config import decode
from deckhouse_gpu.domain.config.opaque_types import DRIVER
from deckhouse_gpu.services.allocation.config_admission import review
from tests.support.helm_chart import render
from tests.support.k8s_versions import SCHEMA_VERSIONS
from tests.support.module_values import module_values

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples" / "claim-configs.yaml"
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
RESOURCES = {"DeviceClass": "deviceclasses", "ResourceClaim": "resourceclaims"}
RESOURCES["ResourceClaimTemplate"] = "resourceclaimtemplates"


def values_with_ca(ca: str = CA) -> dict[str, Any]:
    values = module_values()
    values["gpu"]["internal"]["webhookCert"] = {"ca": ca, "crt": "CRT PEM", "key": "KEY PEM"}
    return values


WEBHOOK_CONFIGURATION = render(values_with_ca()).get("ValidatingWebhookConfiguration", "d8-gpu-opaque-config")
WEBHOOK = WEBHOOK_CONFIGURATION["webhooks"][0]


def examples() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(EXAMPLES.read_text()) if doc]


# --- the rendered object


def test_rendered_only_with_a_ca() -> None:
    assert render(module_values()).find("ValidatingWebhookConfiguration", "d8-gpu-opaque-config") is None


def test_the_webhook_calls_the_controller_and_trusts_the_hook_ca() -> None:
    assert base64.b64decode(WEBHOOK["clientConfig"]["caBundle"]).decode() == CA
    assert WEBHOOK["clientConfig"]["service"] == {
        "name": "gpu-dra-controller",
        "namespace": "d8-gpu",
        "path": "/validate-opaque-config",
        "port": 443,
    }
    assert WEBHOOK["rules"] == [
        {
            "apiGroups": ["resource.k8s.io"],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["deviceclasses", "resourceclaims", "resourceclaimtemplates"],
            "scope": "*",
        }
    ]


def test_a_controller_that_is_down_never_blocks_claims() -> None:
    assert WEBHOOK["failurePolicy"] == "Ignore"
    assert WEBHOOK["timeoutSeconds"] == 5
    assert WEBHOOK["sideEffects"] == "None"
    assert WEBHOOK["admissionReviewVersions"] == ["v1"]
    assert WEBHOOK["matchPolicy"] == "Equivalent"


def test_metadata_follows_the_deckhouse_conventions() -> None:
    metadata = WEBHOOK_CONFIGURATION["metadata"]
    assert metadata["labels"] == {"heritage": "deckhouse", "module": "gpu", "app": "gpu-dra-controller"}
    assert metadata["annotations"] == {"werf.io/weight": "10"}  # dmt: webhook configurations need one


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
def test_valid_for_the_api_server(version: str) -> None:
    kubernetes_validate.validate(WEBHOOK_CONFIGURATION, version, strict=True)


# --- matchConditions


def evaluate(expression: str, activation: dict[str, Any]) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression)).evaluate(activation)


def sent(obj: dict[str, Any], operation: str = "CREATE", old: dict[str, Any] | None = None) -> bool:
    """Whether the API server calls the webhook: every matchCondition true (an error skips it too,
    with failurePolicy Ignore, so an error must never happen for an object that is ours)."""
    activation = {
        "request": json_to_cel(
            {
                "operation": operation,
                "kind": {"group": "resource.k8s.io", "version": "v1", "kind": obj["kind"]},
                "resource": {"group": "resource.k8s.io", "version": "v1", "resource": RESOURCES[obj["kind"]]},
            }
        ),
        "object": json_to_cel(obj),
        "oldObject": json_to_cel(old),
    }
    results = [evaluate(c["expression"], activation) for c in WEBHOOK["matchConditions"]]
    assert all(isinstance(r, celtypes.BoolType) for r in results), results
    return all(results)


def config(driver: str = DRIVER) -> dict[str, Any]:
    return {"opaque": {"driver": driver, "parameters": {"apiVersion": "x", "kind": "y"}}}


def shaped(kind: str, entries: list[Any] | None, **spec: Any) -> dict[str, Any]:
    place: dict[str, Any] = dict(spec)
    if entries is not None:
        place["config"] = entries
    if kind == "DeviceClass":
        return {"kind": kind, "spec": place}
    devices = {"devices": place}
    return {"kind": kind, "spec": devices if kind == "ResourceClaim" else {"spec": devices}}


@pytest.mark.parametrize("kind", RESOURCES)
def test_objects_with_our_config_are_sent(kind: str) -> None:
    assert sent(shaped(kind, [config()]))
    assert sent(shaped(kind, [config("gpu.nvidia.com"), config()]))
    assert sent(shaped(kind, [{"requests": ["gpu"]}, config()]))  # an entry without opaque is skipped


@pytest.mark.parametrize("kind", RESOURCES)
@pytest.mark.parametrize(
    "entries",
    [None, [], [config("gpu.nvidia.com")], [{"opaque": {"parameters": {}}}], [{"requests": ["gpu"]}]],
)
def test_objects_without_our_config_are_not_sent(kind: str, entries: list[Any] | None) -> None:
    assert not sent(shaped(kind, entries))


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "DeviceClass"},
        {"kind": "DeviceClass", "spec": {}},
        {"kind": "ResourceClaim", "spec": {}},
        {"kind": "ResourceClaim", "spec": {"devices": {}}},
        {"kind": "ResourceClaimTemplate", "spec": {}},
        {"kind": "ResourceClaimTemplate", "spec": {"spec": {}}},
        {"kind": "ResourceClaimTemplate", "spec": {"spec": {"devices": {"requests": []}}}},
    ],
)
def test_every_missing_step_is_guarded(obj: dict[str, Any]) -> None:
    assert not sent(obj)


def test_a_shape_of_another_kind_does_not_count() -> None:
    # a claim's config where a class keeps it, and the other way round
    assert not sent({"kind": "ResourceClaim", "spec": {"config": [config()]}})
    assert not sent({"kind": "DeviceClass", "spec": {"devices": {"config": [config()]}}})


@pytest.mark.parametrize("kind", RESOURCES)
def test_updates_are_sent_only_when_the_spec_changed(kind: str) -> None:
    old = shaped(kind, [config()])
    new = copy.deepcopy(old)
    new["metadata"] = {"finalizers": ["resource.kubernetes.io/delete-protection"]}
    assert not sent(new, "UPDATE", old)
    assert sent(shaped(kind, [config(), config()]), "UPDATE", old)
    assert sent(shaped(kind, [config()]), "UPDATE", shaped(kind, None))


def test_a_class_update_that_changes_only_selectors_is_sent_and_allowed() -> None:
    old = shaped("DeviceClass", [config()], selectors=[])
    new = shaped("DeviceClass", [config()], selectors=[{"cel": {"expression": "true"}}])
    assert sent(new, "UPDATE", old)
    answer = review(
        {
            "uid": "u",
            "operation": "UPDATE",
            "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "DeviceClass"},
            "object": new,
            "oldObject": old,
        }
    )
    assert answer == {"uid": "u", "allowed": True}  # our entry did not change: not judged again


# --- the documented examples


def test_the_examples_cover_every_kind_and_shape() -> None:
    kinds = {doc["kind"] for doc in examples()}
    assert kinds == {"DeviceClass", "ResourceClaimTemplate", "ResourceClaim"}
    parameters = [entry["opaque"]["parameters"] for doc in examples() for entry in config_of(doc)]
    # The docs write the canonical spelling; the legacy one is tested in tests/domain/config.
    assert {p["kind"] for p in parameters} == {"GpuConfig", "MigDeviceConfig", "VfioDeviceConfig"}
    assert {p["apiVersion"] for p in parameters} == {"resource.gpu.deckhouse.io/v1alpha1"}
    assert {p.get("sharing", {}).get("strategy") for p in parameters} == {"TimeSlicing", "MPS", None}


def config_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc["spec"]
    place = (
        spec
        if doc["kind"] == "DeviceClass"
        else spec["devices"]
        if "devices" in spec
        else spec["spec"]["devices"]
    )
    entries: list[dict[str, Any]] = place.get("config", [])
    return entries


@pytest.mark.parametrize("doc", examples(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_each_example_is_sent_decoded_and_allowed(doc: dict[str, Any]) -> None:
    ours = [entry["opaque"]["parameters"] for entry in config_of(doc) if entry["opaque"]["driver"] == DRIVER]
    assert sent(doc) == bool(ours)  # a template whose strategy comes from its class is not sent
    for parameters in ours:
        decode(parameters)
    request = {"uid": "u", "operation": "CREATE", "object": doc}
    request["kind"] = {"group": "resource.k8s.io", "version": "v1", "kind": doc["kind"]}
    assert review(request) == {"uid": "u", "allowed": True}


def test_the_example_classes_select_as_the_tested_classes_do() -> None:
    # test_deviceclass_selection evaluates the selectors of deviceclasses.yaml on every simulated pool
    tested = [doc for doc in yaml.safe_load_all((EXAMPLES.parent / "deviceclasses.yaml").read_text()) if doc]
    known = [doc["spec"]["selectors"] for doc in tested]
    names = {doc["metadata"]["name"] for doc in tested}
    for doc in examples():
        if doc["kind"] == "DeviceClass":
            assert doc["spec"]["selectors"] in known, doc["metadata"]["name"]
        else:
            requests = doc["spec"].get("devices", doc["spec"].get("spec", {}).get("devices"))["requests"]
            for request in requests:
                for choice in [request["exactly"]] if "exactly" in request else request["firstAvailable"]:
                    assert choice["deviceClassName"] in names | {"gpu-a30-mps"}


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
@pytest.mark.parametrize("doc", examples(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_each_example_is_a_valid_object(doc: dict[str, Any], version: str) -> None:
    kubernetes_validate.validate(doc, version, strict=True)


# --- the documentation

DOCS = [ROOT / "docs" / "CLAIM_CONFIG.md", ROOT / "docs" / "CLAIM_CONFIG.ru.md"]


def yaml_blocks(doc: Path) -> list[dict[str, Any]]:
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.DOTALL)]


def test_both_languages_show_the_same_examples() -> None:
    english, russian = (yaml_blocks(doc) for doc in DOCS)
    assert english == russian
    assert len(english) == 3


@pytest.mark.parametrize("doc", yaml_blocks(DOCS[0]), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_each_documented_object_is_allowed(doc: dict[str, Any]) -> None:
    assert sent(doc)
    request = {"uid": "u", "operation": "CREATE", "object": doc}
    request["kind"] = {"group": "resource.k8s.io", "version": "v1", "kind": doc["kind"]}
    assert review(request) == {"uid": "u", "allowed": True}
    for version in SCHEMA_VERSIONS:
        kubernetes_validate.validate(doc, version, strict=True)


def test_front_matter_and_language() -> None:
    for doc in DOCS:
        head = doc.read_text().split("---\n")[1]
        assert list(yaml.safe_load(head)) == ["title"], doc.name
    assert not re.search("[\u0400-\u04ff]", DOCS[0].read_text())
