# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""docs/VFIO.md and its Russian twin: the examples are objects a 1.34 API server and the module's
webhook accept, the class selects the whole cards a VM may get and nothing else, the VirtualMachine
names the claim as KubeVirt expects, the payload example is the code's, the messages the page shows
are those the code produces, and the example QEMU hook runs on a payload."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from deckhouse_gpu.domain.config.opaque_types import DRIVER
from deckhouse_gpu.domain.prepare import vfio
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.domain.prepare.vfio import CardGroup, PciFunction, PodRef
from deckhouse_gpu.domain.prepare.vfio_payload import payload
from deckhouse_gpu.k8s_semantics.cel import device_view
from deckhouse_gpu.services.allocation.config_admission import review
from deckhouse_gpu.services.prepare.vfio_release import NOT_BACK
from deckhouse_gpu.services.publishing.slice_preview import render_nodes
from testkit.gpu_objects import ready_card
from tests.module.deviceclass_examples import ALLOWED_FUNCTIONS, DEVICE_FIELDS, selectors_of
from tests.support.k8s_versions import SCHEMA_VERSIONS

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "docs" / "VFIO.md", ROOT / "docs" / "VFIO.ru.md"]
HOOK = ROOT / "docs" / "examples" / "vfio-qemu-hook.py"
NODE, A100, A30 = "worker-1", "0000:3b:00.0", "0000:5e:00.0"


def blocks(doc: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", doc.read_text(), re.DOTALL)


EXAMPLES = [yaml.safe_load(block) for block in blocks(DOCS[0], "yaml")]
BY_KIND = {doc["kind"]: doc for doc in EXAMPLES}


def text(doc: Path = DOCS[0]) -> str:
    return re.sub(r"\s*\n\s*", " ", doc.read_text())


def test_both_languages_show_the_same_examples_in_the_same_structure() -> None:
    def shape(doc: Path) -> list[str]:
        content = doc.read_text()
        headings = re.findall(r"^(#{2,3}) ", content, re.M)
        fences = re.findall(r"^\s*```(\w*)$", content, re.M)
        tables = len(re.findall(r"^\| --- ", content, re.M))
        return [*headings, *fences, str(tables)]

    assert [yaml.safe_load(b) for b in blocks(DOCS[1], "yaml")] == EXAMPLES
    assert blocks(DOCS[1], "json") == blocks(DOCS[0], "json")
    assert shape(DOCS[0]) == shape(DOCS[1])
    assert set(BY_KIND) == {"DeviceClass", "ResourceClaimTemplate", "VirtualMachine"}


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
@pytest.mark.parametrize("kind", ["DeviceClass", "ResourceClaimTemplate"])
def test_each_kubernetes_example_is_valid_and_the_webhook_allows_it(kind: str, version: str) -> None:
    doc = BY_KIND[kind]
    kubernetes_validate.validate(doc, version, strict=True)
    request = {"uid": "u", "operation": "CREATE", "object": doc}
    request["kind"] = {"group": "resource.k8s.io", "version": "v1", "kind": kind}
    assert review(request) == {"uid": "u", "allowed": True}


def on_vfio_pci(card: dict[str, Any]) -> dict[str, Any]:
    card["status"]["currentState"] = {"driverType": "VFIO", "driverName": "vfio-pci"}
    return card


def test_the_class_selects_whole_cards_of_its_model_only() -> None:
    spec = BY_KIND["DeviceClass"]["spec"]
    selectors = selectors_of(spec)
    for selector in selectors:
        assert selector.functions <= ALLOWED_FUNCTIONS
        assert selector.device_fields <= DEVICE_FIELDS - {"allowMultipleAllocations"}  # no gate needed

    def chosen(cards: list[dict[str, Any]], labels: dict[str, str]) -> list[str]:
        devices = [
            d for s in render_nodes(cards, 34, labels, True, True) for d in s["spec"].get("devices") or []
        ]
        return sorted(d["name"] for d in devices if all(s.matches(device_view(DRIVER, d)) for s in selectors))

    cards = [ready_card(NODE, A100, "a100-40gb"), ready_card(NODE, A30, "a30")]
    assert chosen(cards, {}) == ["gpu-0000-3b-00-0"]  # no MIG instance, no other model
    assert chosen(cards, {"gpu.deckhouse.io/sharing": "true"}) == []  # a share is never passed through
    admin = [on_vfio_pci(ready_card(NODE, A100, "a100-40gb"))]
    assert chosen(admin, {}) == ["gpu-0000-3b-00-0"]  # an administrator's vfio-pci card too
    physical_class = 'device.driver == "gpu.deckhouse.io" && device.attributes["gpu.deckhouse.io"]'
    physical_class += '.deviceType == "Physical"'
    physical = selectors_of({"selectors": [{"cel": {"expression": physical_class}}]})[0]
    devices = [d for s in render_nodes(admin, 34, {}, True, True) for d in s["spec"]["devices"]]
    assert not any(physical.matches(device_view(DRIVER, d)) for d in devices)  # but no Pod's class


def test_the_virtual_machine_names_the_templates_claim_and_request() -> None:
    template, vm = BY_KIND["ResourceClaimTemplate"], BY_KIND["VirtualMachine"]
    spec = vm["spec"]["template"]["spec"]
    (claim,) = spec["resourceClaims"]
    assert claim["resourceClaimTemplateName"] == template["metadata"]["name"]
    assert vm["metadata"]["namespace"] == template["metadata"]["namespace"]
    (gpu,) = spec["domain"]["devices"]["gpus"]
    assert gpu["claimName"] == claim["name"]
    requests = template["spec"]["spec"]["devices"]["requests"]
    assert [r["name"] for r in requests] == [gpu["requestName"]]
    assert requests[0]["exactly"].get("count", 1) == 1  # KubeVirt takes one device per request
    assert requests[0]["exactly"]["deviceClassName"] == BY_KIND["DeviceClass"]["metadata"]["name"]


def example_payload() -> dict[str, Any]:
    (document,) = [json.loads(block) for block in blocks(DOCS[0], "json")]
    return dict(document)


def test_the_payload_example_is_what_the_code_writes() -> None:
    shown = example_payload()
    functions = tuple(
        PciFunction(
            f["pciAddress"], f["class"], f["vendorID"], f["deviceID"], f["originalDriver"], 0, "pci0000:3a"
        )
        for f in shown["devices"][0]["functions"]
    )
    claim = {"metadata": shown["claim"]}
    plan = DevicePlan("gpu", f"gpus/{NODE}", "gpu-0000-3b-00-0", A100, "Physical", vfio=True)
    pod = PodRef(**shown["pod"])
    made = payload(
        claim,
        pod,
        NODE,
        [plan],
        {A100: CardGroup(A100, 30, functions)},
        [ready_card(NODE, A100, "a100-40gb")],
    )
    assert made == shown
    fields = {
        row.split("|")[1].strip().strip("`")
        for row in DOCS[0].read_text().splitlines()
        if row.startswith("| `")
    }
    assert {"apiVersion", "kind", "node", "claim", "pod", "devices[]"} <= fields
    assert {f"devices[].{key}" for key in made["devices"][0] if key != "functions"} <= fields
    keys = {f"devices[].functions[].{key}" for key in made["devices"][0]["functions"][0]}
    keys = (keys - {"devices[].functions[].vendorID", "devices[].functions[].deviceID"}) | {
        "devices[].functions[].vendorID`, `deviceID"
    }
    assert keys <= fields


def rows(doc: Path) -> list[str]:
    """The messages of the troubleshooting table, ``...`` where the page leaves a part out."""
    section = doc.read_text().split("\n## ")[-2]  # the one before "Trying it without a GPU"
    return re.findall(r"^\| `([^`]+)`", section, re.M)


def test_the_messages_shown_are_the_codes() -> None:
    card = "0000:3b:00.0"
    plan = DevicePlan("gpu", "p", "gpu-0000-3b-00-0", card, "Physical")
    mig = DevicePlan("gpu", "p", "gpu-0000-3b-00-0-mig-1g-5gb-0", card, "MIG")
    samples = [
        vfio.node_refusal(card, {"nodeInfo": {"nodeName": "w1", "bareMetal": False}}),
        vfio.no_group_refusal(card),
        vfio.no_driver_refusal(card),
        *vfio.group_refusals(CardGroup(card, 30, ()), 2, (7,)),
        vfio.annotation_refusal(mig, PodRef("vms", "p", "u")),
        vfio.prebound_refusal(plan),
        *MORE,
    ]
    messages = [str(sample) for sample in samples]

    def shows(row: str, message: str) -> bool:
        parts = [part.strip() for part in row.replace(" N ", " 2 ").split("...") if len(part.strip()) > 3]
        return all(part in message for part in parts)

    assert rows(DOCS[1]) == rows(DOCS[0])  # the messages are the code's, in English on both pages
    shown = rows(DOCS[0])
    assert len(shown) == len(messages)
    for row in shown:
        assert any(shows(row, message) for message in messages), row
    for message in messages:
        assert any(shows(row, message) for row in shown), message
    for doc in DOCS:
        assert f"`{NOT_BACK}`" in text(doc)


MORE = [
    "IOMMU group 30 of card 0000:3b:00.0 changed between the check and the bind (checked a; now b): x",
    "cannot pass card 0000:3b:00.0 through: cannot write 'vfio-pci' to /sys/x/driver_override: y",
    "cannot read Pod ns/p, which the claim is reserved for, to see whether it asks for VFIO "
    "(gpu.deckhouse.io/vfio): 403; gpu-handler needs get on pods",
    "the claim asks for VFIO, but this gpu-handler runs without VFIO support",
    "IOMMU group 30 of card 0000:3b:00.0 also holds 0000:3c:00.0 (class 0200, driver x), which is not a "
    "function of the card: passing the group through would take it from the host",
]


def run_hook(tmp_path: Path, operation: list[str], on_vfio: bool) -> subprocess.CompletedProcess[str]:
    payloads, sysfs = tmp_path / "payloads", tmp_path / "sys"
    payloads.mkdir(exist_ok=True)
    (payloads / "vm-1-gpu.json").write_text(json.dumps(example_payload()))
    for function in example_payload()["devices"][0]["functions"]:
        target = tmp_path / "drivers" / ("vfio-pci" if on_vfio else "nvidia")
        target.mkdir(parents=True, exist_ok=True)
        link = sysfs / function["pciAddress"] / "driver"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    address = "<address domain='0x0000' bus='0x3b' slot='0x00' function='0x0'/>"
    domain = f"<domain><devices><hostdev type='pci'><source>{address}</source></hostdev></devices></domain>"
    environment = {**os.environ, "GPU_VFIO_PAYLOAD_DIR": str(payloads), "GPU_VFIO_SYSFS": str(sysfs)}
    return subprocess.run(
        [sys.executable, str(HOOK), "vm-1", *operation],
        input=domain,
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )


def test_the_example_hook_reads_the_payload_and_stops_a_start_it_would_fail(tmp_path: Path) -> None:
    started = run_hook(tmp_path, ["prepare", "begin", "-"], on_vfio=True)
    assert started.returncode == 0, started.stderr
    assert "gpu-0000-3b-00-0 (NVIDIA A100-PCIE-40GB, 40960 MiB) IOMMU group 30, NUMA node 0" in started.stderr
    assert "warning" not in started.stderr
    stopped = run_hook(tmp_path, ["prepare", "begin", "-"], on_vfio=False)
    assert stopped.returncode == 1
    assert "gpu.deckhouse.io: 0000:3b:00.1 is not on vfio-pci" in stopped.stderr
    assert run_hook(tmp_path, ["release", "end", "-"], on_vfio=False).returncode == 0
