# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's prepared-device info on a simulated node, measured as ``gpu-handler run`` measures
it: a series per prepared device and Pod, with DCGM's labels of the same hardware; gone at
unprepare; the same after a restart, from the checkpoint alone."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.adapters.metrics.handler_metrics import HandlerMetrics
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, RESOURCE_CLAIMS
from testkit.prepare_world import PrepareWorld, allocate, allocate_share, build_world
from tests.services.prepare.test_prepare_metrics import measured, ref

A30 = "0000:17:00.0"
WHOLE = "gpu-0000-17-00-0"
INFO = "d8_gpu_handler_prepared_device_info"


@pytest.fixture
def world(tmp_path) -> PrepareWorld:
    return build_world(tmp_path, {A30: "a30"})


def reserve(world: PrepareWorld, claim: dict[str, Any], device_class: str, *pods: str) -> ClaimRef:
    """As the scheduler leaves a claim it allocated for ``pods``: the request names its class."""
    meta = claim["metadata"]
    name, namespace = meta["name"], meta["namespace"]
    requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or [{"name": "gpu"}]
    exactly = {**(requests[0].get("exactly") or {}), "deviceClassName": device_class}
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}
    world.api.patch(RESOURCE_CLAIMS, name, {"spec": spec}, namespace=namespace)
    reserved = [{"resource": "pods", "name": pod, "uid": f"uid-{pod}"} for pod in pods]
    world.api.patch(
        RESOURCE_CLAIMS,
        name,
        {"status": {"reservedFor": reserved}},
        subresource="status",
        namespace=namespace,
    )
    return ref(claim)


def series(metrics: HandlerMetrics) -> list[dict[str, str]]:
    return sorted(
        (dict(sample.labels) for family in metrics.registry.collect() for sample in family.samples
         if sample.name == INFO and sample.value == 1.0),
        key=lambda labels: sorted(labels.items()),
    )  # fmt: skip


def card_uuid(world: PrepareWorld) -> str:
    (card,) = world.api.list(PHYSICAL_GPUS).items
    return str(card["status"]["currentState"]["nvidia"]["gpuUUID"])


def test_a_whole_card_names_its_claim_and_every_pod_until_unprepared(world):
    metrics = HandlerMetrics()
    service = measured(world, metrics)
    claim = reserve(world, allocate(world.api, "train", WHOLE, namespace="ml"), "gpu-a30", "w-1", "w-0")
    assert series(metrics) == []
    assert service.prepare([claim])[claim.uid].error == ""
    labels = {
        "namespace": "ml", "claim": "train", "device_class": "gpu-a30", "offer_type": "Physical",
        "device": WHOLE, "UUID": card_uuid(world), "pci_bus_id": "00000000:17:00.0", "GPU_I_ID": "",
        "GPU_I_PROFILE": "", "mig_uuid": "", "share_percent": "",
    }  # fmt: skip
    assert series(metrics) == [{**labels, "pod": "w-0"}, {**labels, "pod": "w-1"}]
    assert service.unprepare([claim]) == {claim.uid: ""}
    assert series(metrics) == []


def test_a_mig_instance_carries_its_gpu_instance_and_profile(world):
    metrics = HandlerMetrics()
    service = measured(world, metrics)
    device = f"{WHOLE}-mig-1g-6gb-1"
    claim = reserve(world, allocate(world.api, "small", device), "gpu-a30-mig-1g.6gb", "p")
    assert service.prepare([claim])[claim.uid].error == ""
    (found,) = series(metrics)
    (instance,) = world.mig.instances(A30)
    assert found["offer_type"] == "MIG"
    assert (found["GPU_I_ID"], found["GPU_I_PROFILE"]) == (str(instance.gpu_instance_id), "1g.6gb")
    assert found["mig_uuid"] == instance.uuid
    assert (found["UUID"], found["pci_bus_id"]) == (card_uuid(world), "00000000:17:00.0")  # the parent card


def test_two_shares_of_one_card_each_name_their_share(world):
    metrics = HandlerMetrics()
    service = measured(world, metrics)
    claims = [
        reserve(
            world, allocate_share(world.api, name, WHOLE, percent, None, namespace), "gpu-a30-shared", name
        )
        for name, namespace, percent in (("nb", "ml", "25"), ("lab", "lab", "500m"))
    ]
    results = service.prepare(claims)
    assert [results[c.uid].error for c in claims] == ["", ""]
    found = {
        (s["namespace"], s["pod"]): (s["offer_type"], s["share_percent"], s["pci_bus_id"])
        for s in series(metrics)
    }
    assert found == {
        ("ml", "nb"): ("Shared", "25", "00000000:17:00.0"),
        ("lab", "lab"): ("Shared", "0.5", "00000000:17:00.0"),
    }


def test_a_restarted_handler_shows_what_the_checkpoint_holds_and_nothing_else(world):
    before = HandlerMetrics()
    service = measured(world, before)
    kept = reserve(world, allocate(world.api, "kept", f"{WHOLE}-mig-1g-6gb-0", namespace="ml"), "c", "p1")
    gone = reserve(world, allocate(world.api, "gone", f"{WHOLE}-mig-1g-6gb-1", namespace="ml"), "c", "p2")
    assert all(r.error == "" for r in service.prepare([kept, gone]).values())
    assert service.unprepare([gone]) == {gone.uid: ""}
    after = HandlerMetrics()  # a new process: nothing until the service loads the checkpoint
    restarted = measured(world, after)
    assert series(after) == []
    restarted.start()
    assert series(after) == series(before)
    assert [(s["claim"], s["pod"]) for s in series(after)] == [("kept", "p1")]


def test_a_claim_half_prepared_when_the_handler_crashed_is_not_shown(world):
    metrics = HandlerMetrics()

    def crash(step: str) -> None:
        if step == "create-mig":
            raise KeyboardInterrupt  # as if killed: no undo is recorded beyond the checkpoint

    service = measured(world, metrics, after_step=crash)
    claim = reserve(world, allocate(world.api, "c", f"{WHOLE}-mig-1g-6gb-0"), "c", "p")
    with pytest.raises(KeyboardInterrupt):
        service.prepare([claim])
    assert "PrepareStarted" in world.checkpoint_path.read_text()
    assert series(metrics) == []
