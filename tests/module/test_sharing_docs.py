# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""docs/SHARING.md and its Russian twin: the YAML examples are objects a 1.34 API server and the
module's webhook accept, the classes select shared offers only, and the limits, names and error
texts the page shows are those the code produces."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from deckhouse_gpu.domain.allocation.audit import MIXED_SHARING, audit
from deckhouse_gpu.domain.allocation.card_sharing import card_sharing
from deckhouse_gpu.domain.config.mps_sharing import MpsPlan
from deckhouse_gpu.domain.config.opaque_config import decode
from deckhouse_gpu.domain.config.opaque_types import DRIVER, GPUConfig
from deckhouse_gpu.domain.prepare.checkpoint import ClaimEntry
from deckhouse_gpu.domain.prepare.mps import client_edits, daemon_for, one_daemon_per_claim
from deckhouse_gpu.domain.prepare.mps_pod import daemon_pod
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.sharing import SharingRefused, device_sharing, sharing_conflicts
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.cel import device_view
from deckhouse_gpu.k8s_semantics.resources.model import build_inventory
from deckhouse_gpu.services.allocation.config_admission import review
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from testkit.gpu_objects import ready_card
from tests.module.deviceclass_examples import ALLOWED_FUNCTIONS, CLASSES, DEVICE_FIELDS, selectors_of
from tests.module.test_opaque_config_webhook import sent
from tests.support.k8s_versions import SCHEMA_VERSIONS

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "docs" / "SHARING.md", ROOT / "docs" / "SHARING.ru.md"]
NODE, PLUGIN_DIR = "worker-1", "/var/lib/kubelet/plugins/gpu.deckhouse.io"
A30, T4 = "0000:17:00.0", "0000:31:00.0"
SHARING_LABEL = {"gpu.deckhouse.io/sharing": "true"}


def yaml_blocks(doc: Path) -> list[dict[str, Any]]:
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.DOTALL)]


def text(doc: Path = DOCS[0]) -> str:
    """The page with its lines joined, so that a message wrapped in a list item reads as one."""
    return re.sub(r"\s*\n\s*", " ", doc.read_text())


EXAMPLES = yaml_blocks(DOCS[0])
BY_NAME = {doc["metadata"]["name"]: doc for doc in EXAMPLES}
DOC_CLASSES = {name: doc for name, doc in BY_NAME.items() if doc["kind"] == "DeviceClass"}


def ids(doc: dict[str, Any]) -> str:
    return f"{doc['kind']}/{doc['metadata']['name']}"


def devices_of(doc: dict[str, Any]) -> dict[str, Any]:
    """Where a DeviceClass keeps its config, or a claim or template its requests and config."""
    if doc["kind"] == "DeviceClass":
        spec: dict[str, Any] = doc["spec"]
        return spec
    found: dict[str, Any] = (
        doc["spec"]["devices"] if doc["kind"] == "ResourceClaim" else doc["spec"]["spec"]["devices"]
    )
    return found


def requests_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = devices_of(doc)["requests"]
    return found


def device_name(card: str) -> str:
    return "gpu-" + card.replace(":", "-").replace(".", "-")


def test_both_languages_show_the_same_examples_in_the_same_structure() -> None:
    def shape(doc: Path) -> list[str]:
        content = doc.read_text()
        headings = re.findall(r"^(#{2,3}) ", content, re.M)
        fences = re.findall(r"^\s*```(\w*)$", content, re.M)
        tables = len(re.findall(r"^\| --- ", content, re.M))
        return [*headings, *fences, str(tables)]

    assert yaml_blocks(DOCS[1]) == EXAMPLES
    assert shape(DOCS[0]) == shape(DOCS[1])
    assert [d["kind"] for d in EXAMPLES].count("DeviceClass") == 2
    assert {d["kind"] for d in EXAMPLES} == {"DeviceClass", "ResourceClaim", "ResourceClaimTemplate"}


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
@pytest.mark.parametrize("doc", EXAMPLES, ids=ids)
def test_each_example_is_a_valid_object(doc: dict[str, Any], version: str) -> None:
    kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("doc", EXAMPLES, ids=ids)
def test_each_example_is_sent_to_the_webhook_and_allowed(doc: dict[str, Any]) -> None:
    config = devices_of(doc).get("config") or []
    ours = [entry["opaque"]["parameters"] for entry in config if entry["opaque"]["driver"] == DRIVER]
    assert sent(doc) == bool(ours)  # a template whose strategy comes from its class is not sent
    request = {"uid": "u", "operation": "CREATE", "object": doc}
    request["kind"] = {"group": "resource.k8s.io", "version": "v1", "kind": doc["kind"]}
    assert review(request) == {"uid": "u", "allowed": True}


def offers(labels: dict[str, str]) -> list[dict[str, Any]]:
    cards = [ready_card(NODE, A30, "a30"), ready_card(NODE, T4, "t4")]
    return [
        d for piece in render_nodes(cards, 34, labels, True, True) for d in piece["spec"].get("devices") or []
    ]


@pytest.mark.parametrize("name", DOC_CLASSES)
def test_each_class_selects_the_shared_offers_of_its_model_only(name: str) -> None:
    spec = DOC_CLASSES[name]["spec"]
    # The selectors are those of a tested class of deviceclasses.yaml (test_deviceclass_selection).
    assert spec["selectors"] in [c["spec"]["selectors"] for n, c in CLASSES.items() if n.endswith("-shared")]
    selectors = selectors_of(spec)
    for selector in selectors:
        assert selector.functions <= ALLOWED_FUNCTIONS
        assert selector.device_fields <= DEVICE_FIELDS

    def chosen(labels: dict[str, str]) -> list[str]:
        return [
            d["name"] for d in offers(labels) if all(s.matches(device_view(DRIVER, d)) for s in selectors)
        ]

    card = A30 if "a30" in name else T4
    assert chosen(SHARING_LABEL) == [device_name(card)]
    assert chosen({}) == []  # a node without sharing offers whole cards, which these classes skip


@pytest.mark.parametrize("doc", [d for d in EXAMPLES if d["kind"] != "DeviceClass"], ids=ids)
def test_each_claim_asks_a_documented_class_for_a_share_its_offer_allows(doc: dict[str, Any]) -> None:
    shared = {d["name"]: d for d in offers(SHARING_LABEL)}
    for request in requests_of(doc):
        assert request["exactly"]["deviceClassName"] in DOC_CLASSES
        share = Quantity.parse(request["exactly"]["capacity"]["requests"]["sharePercent"]).value
        policy = shared[device_name(A30)]["capacity"]["sharePercent"]
        valid = {k: Quantity.parse(v).value for k, v in policy["requestPolicy"]["validRange"].items()}
        assert valid["min"] <= share <= valid["max"]
        assert (share - valid["min"]) % valid["step"] == 0


# --- what the page says the code does


def a30_memory() -> int:
    memory: int = ready_card(NODE, A30, "a30")["status"]["capabilities"]["memoryMiB"]
    return memory


def plan(card: str, share_id: str, **sharing: Any) -> DevicePlan:
    device = device_name(card)
    uuid = "GPU-4b3a6b1e-2f0e-8c51-9d7e-0a1b2c3d4e5f"
    return DevicePlan(
        "gpu", f"gpus/{NODE}", device, card, "Physical", share_id=share_id, uuid=uuid, **sharing
    )


def test_a_quarter_of_an_a30_gets_the_limits_shown() -> None:
    assert a30_memory() == 24576
    config = decode(DOC_CLASSES["gpu-a30-shared-mps"]["spec"]["config"][0]["opaque"]["parameters"])
    sharing = device_sharing(config, Fraction(25), a30_memory())
    assert sharing is not None
    quarter = plan(A30, "s1", sharing=sharing)
    daemon = daemon_for(quarter, NODE, PLUGIN_DIR, str(quarter.uuid))
    env = client_edits(quarter, daemon)["env"]
    for doc in DOCS:
        assert "```text\n" + "\n".join(env) + "\n```" in doc.read_text()
    assert all(f"`{daemon.name}`" in text(doc) for doc in DOCS)
    assert daemon.host_dir == f"{PLUGIN_DIR}/mps/gpu-0000-17-00-0"
    # The claim that caps itself below its share is one prepare accepts.
    capped = requests_of(BY_NAME["a30-half-capped"])
    parameters = BY_NAME["a30-half-capped"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]
    share = Fraction(capped[0]["exactly"]["capacity"]["requests"]["sharePercent"])
    limited = device_sharing(decode(parameters), share, a30_memory())
    assert limited == MpsPlan(40, 8192)


def test_the_daemon_pod_is_named_labelled_and_mounted_as_shown() -> None:
    daemon = daemon_for(plan(A30, "s1", sharing=MpsPlan()), NODE, PLUGIN_DIR, "GPU-x")
    pod = daemon_pod(daemon, "d8-gpu", "image", "/")
    page = text()
    assert f"`{pod['metadata']['namespace']}`" in page
    assert f"`{pod['metadata']['name']}`" in page
    placeholders = {NODE: "<node>", daemon.unit: "<device>"}
    for key in ("app", "gpu.deckhouse.io/node", "gpu.deckhouse.io/mps-unit"):
        value = pod["metadata"]["labels"][key]
        assert f"`{key}={placeholders.get(value, value)}`" in page
    host_paths = {v["hostPath"]["path"] for v in pod["spec"]["volumes"]}
    assert {f"{PLUGIN_DIR}/mps/{daemon.unit}/{d}" for d in ("pipe", "shm", "log")} <= host_paths
    assert pod["spec"]["nodeName"] == NODE


def gpu_config(**sharing: Any) -> dict[str, Any]:
    return {"apiVersion": "gpu.deckhouse.io/v1alpha1", "kind": "GPUConfig", "sharing": sharing}


def webhook_denial() -> str:
    """The webhook's answer to a claim for 25 % whose own config gives MPS clients 50 %."""
    exactly = {"deviceClassName": "x", "capacity": {"requests": {"sharePercent": "25"}}}
    parameters = gpu_config(strategy="MPS", mps={"defaultActiveThreadPercentage": 50})
    devices = {
        "requests": [{"name": "gpu", "exactly": exactly}],
        "config": [{"opaque": {"driver": DRIVER, "parameters": parameters}}],
    }
    kind = {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"}
    obj = {"kind": "ResourceClaim", "spec": {"devices": devices}}
    answer = review({"uid": "u", "operation": "CREATE", "kind": kind, "object": obj})
    message: str = answer["status"]["message"]
    return message


def test_the_errors_shown_are_those_of_the_code() -> None:
    # prepare: one card, one strategy (with the guard's ending), and one daemon per claim
    mps = plan(A30, "s1", sharing=MpsPlan())
    first = ClaimEntry("0c6f2f4e-1d2b-4c55-9a1e-3f1c2b7d8e90", "ml", "train-a", "PrepareCompleted", (mps,))
    conflict = sharing_conflicts("other", [plan(A30, "s2")], [first])
    assert len(conflict) == 1
    several = one_daemon_per_claim([mps, plan(T4, "s3", sharing=MpsPlan())])
    # prepare: a memory limit above the share
    eight = decode(gpu_config(strategy="MPS", mps={"defaultPinnedDeviceMemoryLimit": "8Gi"}))
    assert isinstance(eight, GPUConfig)
    with pytest.raises(SharingRefused) as refused:
        device_sharing(eight, Fraction(25), a30_memory())
    shown = [
        f"NodePrepareResources failed for claim ml/train-b: {conflict[0]}: unprepare the other claim first",
        f"`{several}`",
        f"`device gpu-0000-17-00-0: {refused.value}`",
        f"`{webhook_denial()}`",
    ]
    for doc in DOCS:
        page = text(doc)
        for message in shown:
            assert message in page, f"{doc.name}: {message}"


def test_the_audit_message_shown_is_the_audits() -> None:
    slices = render_nodes([ready_card(NODE, A30, "a30")], 35, SHARING_LABEL, True, True)
    mps = {"apiVersion": "gpu.deckhouse.io/v1alpha1", "kind": "GPUConfig", "sharing": {"strategy": "MPS"}}

    def share(name: str, parameters: dict[str, Any] | None) -> dict[str, Any]:
        result = {
            "request": "gpu",
            "driver": DRIVER,
            "pool": f"gpus/{NODE}",
            "device": "gpu-0000-17-00-0",
            "shareID": name,
        }
        devices: dict[str, Any] = {"results": [result]}
        if parameters:
            devices["config"] = [
                {"source": "FromClass", "opaque": {"driver": DRIVER, "parameters": parameters}}
            ]
        return {"metadata": {"namespace": "ml", "name": name}, "status": {"allocation": {"devices": devices}}}

    found = audit(build_inventory(slices), [share("train-a", mps), share("train-b", None)], card_sharing)
    assert [v.kind for v in found] == [MIXED_SHARING]
    for doc in DOCS:
        assert "```text\n" + found[0].message + "\n```" in doc.read_text()
