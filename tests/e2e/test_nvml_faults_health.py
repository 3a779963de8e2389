# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""NVML failing at every call of gpu-handler's capabilities and health pass (issue 16, item 2).

The pass (services/publishing/capabilities.py) asks NVML for the driver once and for each card's snapshot;
testkit/nvml_faults.py fails the n-th of those calls, as a lost GPU (until the fault clears) or as
NVML's unknown error or timeout. The failure must reach the card's PhysicalGPU, and only that
card's: HardwareHealthy turns Unknown with NVML's reason and words and the card's address (the
grace period is 0 here), a Warning Event says so, the capabilities already known are kept, and the
other card stays healthy (a failing driver query concerns every card). Once the fault clears, the
card's own retry, after its backoff, makes it healthy again.
"""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.domain.inventory.health.hardware_health import (
    REASON_HEALTHY,
    REASON_NVML_UNAVAILABLE,
    REASON_QUERY_FAILED,
    HealthSettings,
)
from deckhouse_gpu.ports.kube import EVENTS, PHYSICAL_GPUS
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from testkit.nvml_faults import Call, FaultKind, FaultyNVML, NvmlFaults, nvml_text
from tests.services.publishing.test_capabilities import make_card

CARDS = ("0000:17:00.0", "0000:31:00.0")
BACKOFF = 5.0


class World:
    def __init__(self, clock: Any) -> None:
        self.api, self.clock, self.faults = MemoryKube(), clock, NvmlFaults()
        nvml = FaultyNVML(SimulatedNVML(dict.fromkeys(CARDS, "a30"), node_name="w1"), self.faults)
        events = EventRecorder(self.api, "gpu-handler", "w1", clock)
        settings = HealthSettings(grace_seconds=0, backoff_seconds=(BACKOFF,))
        self.names = {address: make_card(self.api, address) for address in CARDS}
        self.capabilities = CapabilitiesPass(self.api, nvml, "w1", events, clock, settings)

    def health(self, address: str) -> tuple[str, str, str]:
        status = self.api.get(PHYSICAL_GPUS, self.names[address])["status"]
        (condition,) = [c for c in status.get("conditions", []) if c["type"] == "HardwareHealthy"]
        return condition["status"], condition["reason"], condition["message"]

    def known_capabilities(self, address: str) -> bool:
        return bool(self.api.get(PHYSICAL_GPUS, self.names[address])["status"].get("capabilities"))

    def warnings(self, address: str) -> list[str]:
        name = self.names[address]
        return [
            e["message"]
            for e in self.api.list(EVENTS).items
            if e["involvedObject"]["name"] == name and e["type"] == "Warning"
        ]


def healthy_pass(world: World) -> list[Call]:
    start = len(world.faults.calls)
    report = world.capabilities.run()
    assert report.ok, report
    assert sorted(report.healthy) == sorted(world.names.values()), report
    return world.faults.calls[start:]


def test_a_pass_reaches_the_driver_query_and_every_cards_snapshot(clock):
    calls = healthy_pass(World(clock))
    assert [(c.site, c.card) for c in calls] == [("nvml.driver", ""), *(("nvml.snapshot", a) for a in CARDS)]


@pytest.mark.parametrize("kind", list(FaultKind))
@pytest.mark.parametrize("index", [0, 1, 2], ids=["driver", "snapshot-a", "snapshot-b"])
def test_every_nvml_call_of_the_pass_can_fail_and_its_card_says_so(clock, index, kind):
    world = World(clock)
    calls = healthy_pass(world)
    world.faults.arm(len(world.faults.calls) + index, kind)
    report = world.capabilities.run()
    assert report.ok  # the API took every write: NVML's failure is no API failure
    failed = calls[index]
    hit = list(CARDS) if failed.card == "" else [failed.card]
    reason = REASON_NVML_UNAVAILABLE if failed.card == "" else REASON_QUERY_FAILED
    words = nvml_text(kind).split(" (")[0]
    for address in CARDS:
        status, why, message = world.health(address)
        if address not in hit:
            assert (status, why) == ("True", REASON_HEALTHY)
            continue
        assert (status, why) == ("Unknown", reason)
        assert words in message, message
        assert failed.card == "" or address in message, message
        assert any(words in warning for warning in world.warnings(address)), world.warnings(address)
        assert world.known_capabilities(address)  # what NVML said before is not thrown away
    if kind is FaultKind.GPU_LOST and failed.card:
        clock.ticks += BACKOFF
        world.capabilities.run()  # lost until the node is fixed: still failing, nothing crashes
        assert world.health(failed.card)[:2] == ("Unknown", reason)
    world.faults.clear()
    clock.ticks += BACKOFF
    world.capabilities.run()
    assert [world.health(address)[:2] for address in CARDS] == [("True", REASON_HEALTHY)] * 2
