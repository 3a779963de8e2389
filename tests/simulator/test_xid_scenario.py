# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The simulator's ``xid`` step: the driver reports an Xid on a card, gpu-handler's watcher gets it
from NVML's event set, and the card turns unhealthy with the taint its Xid calls for, the kubelet's
health stream says Unhealthy; an application Xid changes nothing; remove and add clear it."""

from __future__ import annotations

import io
import time

from deckhouse_gpu.simulator.cli import main
from deckhouse_gpu.simulator.scenario import Step, parse_scenario
from deckhouse_gpu.simulator.simulation import SimulatedCluster
from deckhouse_gpu.simulator.taints import card_taints

LOST, OTHER = "0000:17:00.0", "0000:31:00.0"
SCENARIO = f"""
description: two A30s; the driver reports Xid errors on them
settings: {{healthGraceSeconds: 0.2, heartbeatSeconds: 0.5}}
nodes:
  - name: worker-1
    gpus:
      - {{model: a30, address: "{LOST}"}}
      - {{model: a30, address: "{OTHER}"}}
steps:
  - title: The first A30 falls off the bus
    xid: {{node: worker-1, address: "{LOST}", xid: 79}}
  - title: An application faults on the second (a page fault)
    xid: {{node: worker-1, address: "{OTHER}", xid: 31}}
"""
WAIT = 20.0


def health(cluster: SimulatedCluster, address: str) -> tuple[str, str, str]:
    """The card's HardwareHealthy (status, reason, message); empty while it has none."""
    for card in cluster.physical_gpus():
        if card["status"]["pciInfo"]["address"] == address:
            for found in card["status"].get("conditions") or []:
                if found["type"] == "HardwareHealthy":
                    return found["status"], found["reason"], found["message"]
    return "", "", ""


def taints(cluster: SimulatedCluster) -> dict[str, str]:
    return {address: shown for (_, address), shown in card_taints(cluster.resource_slices()).items()}


def until(cluster: SimulatedCluster, check, seconds: float = WAIT) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, (taints(cluster), health(cluster, LOST))
        cluster.settle()


def test_a_fatal_xid_taints_the_card_no_execute_and_the_kubelet_sees_it_unhealthy():
    with SimulatedCluster(parse_scenario("xid", SCENARIO)) as cluster:
        cluster.health_changes()
        assert taints(cluster) == {LOST: "", OTHER: ""}
        cluster.apply(cluster.scenario.steps[0])
        assert cluster.report == [
            f"  Xid 79 on {LOST}: the driver reports it (GPU has fallen off the bus); "
            "gpu-handler's NVML event set gets it"
        ]
        cluster.settle()
        until(cluster, lambda: taints(cluster)[LOST] != "")
        assert taints(cluster) == {LOST: "gpu.deckhouse.io/unhealthy=GPULost:NoExecute", OTHER: ""}
        status, reason, message = health(cluster, LOST)
        assert (status, reason) == ("False", "XidError")
        assert message.startswith("Xid 79 (GPU has fallen off the bus)")
        (line,) = cluster.health_changes()
        assert line.startswith(f"worker-1: gpu-0000-17-00-0 and 13 MIG devices: Unhealthy: card {LOST}: ")
        assert "HardwareHealthy=False (XidError): Xid 79" in line
        warnings = [e["message"] for e in cluster.events() if e["reason"] == "HardwareHealthyFalse"]
        assert len(warnings) == 1
        assert "tainted gpu.deckhouse.io/unhealthy" in warnings[0]

        # Sticky: heartbeats come and go, NVML answers, the card stays unhealthy.
        time.sleep(1.2)
        cluster.settle()
        assert health(cluster, LOST)[:2] == ("False", "XidError")

        cluster.apply(cluster.scenario.steps[1])  # an application's Xid: nothing changes
        cluster.settle()
        assert health(cluster, OTHER)[:2] == ("True", "NVMLHealthy")
        assert taints(cluster)[OTHER] == ""

        # The card is taken out and put back (udev remove and add): a new PhysicalGPU, healthy.
        cluster.apply(Step("remove", "removeGpu", {"node": "worker-1", "address": LOST}))
        cluster.settle()
        cluster.apply(Step("add", "addGpu", {"node": "worker-1", "address": LOST, "model": "a30"}))
        until(cluster, lambda: health(cluster, LOST)[:2] == ("True", "NVMLHealthy"))
        until(cluster, lambda: taints(cluster).get(LOST) == "")


def test_the_built_in_xid_scenario_shows_each_kind_of_xid():
    out = io.StringIO()
    assert main(["--scenario", "xid"], out=out) == 0
    step = out.getvalue().split("\nStep ")
    assert len(step) == 7
    assert f"Xid 31 on {LOST}: the driver reports it (GPU memory page fault)" in step[1]
    assert "ResourceSlices:" not in step[1]
    assert "  event " not in step[1]  # an application's Xid: nothing changes
    assert (
        f"ResourceSlices: worker-1 card {OTHER} tainted gpu.deckhouse.io/unhealthy=XidError:NoSchedule"
        in (step[2])
    )
    assert "event Warning HardwareHealthyFalse: HardwareHealthy True -> False (XidError): Xid 63" in step[2]
    assert (
        f"ResourceSlices: worker-1 card {LOST} tainted gpu.deckhouse.io/unhealthy=GPULost:NoExecute"
        in step[3]
    )
    health = (
        "device health sent to the kubelet (Pods show it): worker-1: gpu-0000-17-00-0 and 13 MIG devices: "
    )
    assert health + f"Unhealthy: card {LOST}: HardwareHealthy=False (XidError): Xid 79" in step[3]
    # An Xid the table does not know: an Event, no health change.
    assert f"event Warning XidError: Xid 154 on GPU {OTHER}: not in the module's Xid table" in step[4]
    assert "ResourceSlices:" not in step[4]
    assert "device health sent" not in step[4]
    assert f"ResourceSlices: worker-1 card {LOST} no longer offered" in step[5]
    assert health + "Healthy" in step[6]  # the card put back is a new PhysicalGPU: healthy
    assert "ResourceSlices: worker-1 card" not in step[6]  # offered untainted (the other stays tainted)
