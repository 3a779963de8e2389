# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""KEP-5304 device metadata: what a container reads about its devices, per claim and request."""

import json
from typing import Any

import pytest

from deckhouse_gpu.domain.offers.card_offers import card_offers
from deckhouse_gpu.domain.offers.model import OfferPolicy
from deckhouse_gpu.domain.offers.slice_layout import render
from deckhouse_gpu.domain.prepare.container.cdi_spec import merge_device_edits
from deckhouse_gpu.domain.prepare.container.device_metadata import (
    container_path,
    document,
    mount_edits,
    request_files,
)
from deckhouse_gpu.domain.prepare.mig_instance import MigRecord
from deckhouse_gpu.domain.prepare.plan import plan_claim
from testkit.gpu_objects import ready_card

A30, A30B = "0000:17:00.0", "0000:31:00.0"
CARDS = [ready_card("w1", A30, "a30"), ready_card("w1", A30B, "a30")]
WHOLE = "gpu-0000-17-00-0"
MIG = "gpu-0000-31-00-0-mig-2g-12gb-2"
MIG_UUID = "MIG-adb881af-3d67-5abb-9e3e-7878eb89b6a6"
RECORD = MigRecord(A30B, 5, 0, 5, 2, 2, MIG_UUID)
BASE = "/var/run/kubernetes.io/dra-device-attributes"


def claim(*results: dict[str, Any], name: str = "c1", pod_claim: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": "0a1a73f3-aaaa-bbbb-cccc-000000000001"}
    if pod_claim is not None:
        meta["annotations"] = {"resource.kubernetes.io/pod-claim-name": pod_claim}
    return {"metadata": meta, "status": {"allocation": {"devices": {"results": list(results)}}}}


def result(device: str, request: str = "gpu") -> dict[str, Any]:
    return {"request": request, "driver": "gpu.deckhouse.io", "pool": "gpus/w1", "device": device}


def stream(data: bytes) -> list[dict[str, Any]]:
    """Decodes a JSON stream the way a Go json.Decoder reads one: object after object."""
    text, decoder, found, at = data.decode(), json.JSONDecoder(), [], 0
    while text[at:].strip():
        while text[at].isspace():
            at += 1
        obj, at = decoder.raw_decode(text, at)
        found.append(obj)
    return found


def published(card: dict[str, Any], device: str, policy: OfferPolicy) -> dict[str, Any]:
    """The device's attributes in the ResourceSlices the handler renders for the card (1.35 layout)."""
    for manifest in render("w1", [card_offers(card, policy)], 35, 1, None):
        for entry in manifest["spec"].get("devices", []):
            if entry["name"] == device:
                return dict(entry["attributes"])
    raise AssertionError(f"{device} is not published")


def files_of(found: dict[str, Any], mig: tuple[MigRecord, ...] = ()) -> dict[str, list[dict[str, Any]]]:
    plans = plan_claim(found, "gpus/w1", CARDS)
    return {request: stream(data) for request, data in request_files(found, plans, CARDS, mig).items()}


def test_a_whole_card_gets_one_file_with_its_published_attributes_in_both_versions():
    found = claim(result(WHOLE))
    files = files_of(found)
    assert list(files) == ["gpu"]
    beta, alpha = files["gpu"]
    assert beta["apiVersion"] == "metadata.resource.k8s.io/v1beta1"
    assert alpha["apiVersion"] == "metadata.resource.k8s.io/v1alpha1"
    assert {**beta, "apiVersion": "x"} == {**alpha, "apiVersion": "x"}  # the same content twice
    assert alpha["kind"] == "DeviceMetadata"
    assert alpha["metadata"] == {
        "name": "c1",
        "namespace": "ns",
        "uid": "0a1a73f3-aaaa-bbbb-cccc-000000000001",
        "generation": 1,
    }
    assert "podClaimName" not in alpha
    ((request,),) = [alpha["requests"]]
    assert request["name"] == "gpu"
    (device,) = request["devices"]
    assert (device["driver"], device["pool"], device["name"]) == ("gpu.deckhouse.io", "gpus/w1", WHOLE)
    attributes = device["attributes"]
    assert attributes == published(CARDS[0], WHOLE, OfferPolicy())
    # What KubeVirt's virt-launcher takes for passthrough, and the card's identity.
    assert attributes["resource.kubernetes.io/pciBusID"] == {"string": A30}
    assert attributes["uuid"] == {"string": CARDS[0]["status"]["currentState"]["nvidia"]["gpuUUID"]}
    assert attributes["deviceType"] == {"string": "Physical"}
    assert list(attributes) == sorted(attributes)  # map keys sorted, as Go writes them


def test_a_shared_card_publishes_the_same_attributes():
    sharing = OfferPolicy(sharing=True)
    assert card_offers(CARDS[0], sharing).offers[0].shared  # the offer differs, its attributes not
    (alpha,) = files_of(claim(result(WHOLE)))["gpu"][1:]
    assert alpha["requests"][0]["devices"][0]["attributes"] == published(CARDS[0], WHOLE, sharing)


def test_a_mig_device_gets_its_published_attributes_and_the_instance_uuid():
    (_, alpha) = files_of(claim(result(MIG)), (RECORD,))["gpu"]
    attributes = alpha["requests"][0]["devices"][0]["attributes"]
    expected = published(CARDS[1], MIG, OfferPolicy())
    assert {key: value for key, value in attributes.items() if key != "migUUID"} == expected
    assert attributes["migUUID"] == {"string": MIG_UUID}
    assert attributes["migProfile"] == {"string": "2g.12gb"}
    assert attributes["migPlacementStart"] == {"int": 2}
    assert "resource.kubernetes.io/pciBusID" not in attributes  # a MIG instance is no PCI function


def test_two_requests_get_a_file_each_holding_only_their_own_devices():
    found = claim(result(WHOLE, "train"), result(MIG, "infer"))
    files = files_of(found, (RECORD,))
    assert sorted(files) == ["infer", "train"]
    assert [d["name"] for d in files["train"][1]["requests"][0]["devices"]] == [WHOLE]
    assert [d["name"] for d in files["infer"][1]["requests"][0]["devices"]] == [MIG]
    assert [r["name"] for r in files["train"][1]["requests"]] == ["train"]
    plans = plan_claim(found, "gpus/w1", CARDS)
    edits = mount_edits(found, plans, lambda request: f"/host/{request}/metadata.json")
    assert edits == {
        WHOLE: {
            "mounts": [
                {
                    "hostPath": "/host/train/metadata.json",
                    "containerPath": f"{BASE}/resourceclaims/c1/train/gpu.deckhouse.io-metadata.json",
                    "options": ["ro", "bind"],
                }
            ]
        },
        MIG: {
            "mounts": [
                {
                    "hostPath": "/host/infer/metadata.json",
                    "containerPath": f"{BASE}/resourceclaims/c1/infer/gpu.deckhouse.io-metadata.json",
                    "options": ["ro", "bind"],
                }
            ]
        },
    }


def test_a_claim_from_a_template_is_found_under_its_pod_claim_name():
    found = claim(result(WHOLE), name="train-pod-gpu-6kx2p", pod_claim="gpu")
    (_, alpha) = files_of(found)["gpu"]
    assert alpha["podClaimName"] == "gpu"
    assert alpha["metadata"]["name"] == "train-pod-gpu-6kx2p"  # the claim itself, as generated
    assert (
        container_path(found, "gpu")
        == f"{BASE}/resourceclaimtemplates/gpu/gpu/gpu.deckhouse.io-metadata.json"
    )
    direct = claim(result(WHOLE), name="shared-gpu")
    assert (
        container_path(direct, "gpu")
        == f"{BASE}/resourceclaims/shared-gpu/gpu/gpu.deckhouse.io-metadata.json"
    )


def test_a_subrequest_keeps_its_full_name_inside_and_the_request_in_the_path():
    found = claim(result(WHOLE, "gpu/large"))
    files = files_of(found)
    assert list(files) == ["gpu"]
    assert files["gpu"][1]["requests"][0]["name"] == "gpu/large"
    assert container_path(found, "gpu/large").endswith(
        "/resourceclaims/c1/gpu/gpu.deckhouse.io-metadata.json"
    )


def test_two_devices_of_one_request_share_a_file_and_each_mounts_it():
    found = claim(result(WHOLE), result("gpu-0000-31-00-0"))
    (_, alpha) = files_of(found)["gpu"]
    assert [d["name"] for d in alpha["requests"][0]["devices"]] == [WHOLE, "gpu-0000-31-00-0"]
    plans = plan_claim(found, "gpus/w1", CARDS)
    edits = mount_edits(found, plans, lambda request: f"/host/{request}")
    assert edits[WHOLE] == edits["gpu-0000-31-00-0"]
    assert len(edits[WHOLE]["mounts"]) == 1


def test_a_card_that_no_longer_describes_itself_gives_the_device_without_attributes():
    plans = plan_claim(claim(result(WHOLE)), "gpus/w1", CARDS)
    broken = ready_card("w1", A30, "a30")
    del broken["status"]["currentState"]["nvidia"]
    found = document(claim(result(WHOLE)), plans, [broken], (), "metadata.resource.k8s.io/v1alpha1")
    assert found["requests"][0]["devices"] == [
        {"driver": "gpu.deckhouse.io", "pool": "gpus/w1", "name": WHOLE}
    ]


def test_the_file_is_a_stream_of_indented_objects_one_per_version():
    data = request_files(claim(result(WHOLE)), plan_claim(claim(result(WHOLE)), "gpus/w1", CARDS), CARDS)[
        "gpu"
    ]
    text = data.decode()
    assert text.startswith(
        '{\n  "kind": "DeviceMetadata",\n  "apiVersion": "metadata.resource.k8s.io/v1beta1"'
    )
    assert text.count('\n{\n  "kind": "DeviceMetadata"') == 1  # the second object starts on its own line
    assert text.endswith("}\n")


def test_device_edits_of_several_sources_are_combined_not_replaced():
    mps: dict[str, dict[str, Any]] = {
        WHOLE: {
            "env": ["CUDA_MPS_PIPE_DIRECTORY=/mps/pipe"],
            "mounts": [{"hostPath": "/a", "containerPath": "/a"}],
        }
    }
    metadata: dict[str, dict[str, Any]] = {
        WHOLE: {"mounts": [{"hostPath": "/m", "containerPath": "/m"}]},
        MIG: {"mounts": []},
    }
    merged = merge_device_edits(mps, metadata)
    assert merged[WHOLE] == {
        "env": ["CUDA_MPS_PIPE_DIRECTORY=/mps/pipe"],
        "mounts": [{"hostPath": "/a", "containerPath": "/a"}, {"hostPath": "/m", "containerPath": "/m"}],
    }
    assert merged[MIG] == {"mounts": []}
    assert mps[WHOLE]["mounts"] == [{"hostPath": "/a", "containerPath": "/a"}]  # the sources stay
    with pytest.raises(ValueError, match="two edits set intelRdt differently"):
        merge_device_edits({WHOLE: {"intelRdt": {"closID": "a"}}}, {WHOLE: {"intelRdt": {"closID": "b"}}})
