# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Fatal Xid errors in the capabilities pass: the board's records become HardwareHealthy=False,
sticky until the card's PhysicalGPU is recreated; unknown Xids become Events, application ones
nothing."""

from __future__ import annotations

import pytest

from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.domain.inventory.health.xid import XidClass
from deckhouse_gpu.ports.kube import EVENTS, PHYSICAL_GPUS
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.publishing.xid_board import XidBoard
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from tests.services.publishing.test_capabilities import A30, T4, health_of, make_card, status_of


@pytest.fixture
def world(clock):
    api = MemoryKube()
    nvml = SimulatedNVML({A30: "a30", T4: "t4"}, node_name="w1")
    board = XidBoard()
    settings = HealthSettings(grace_seconds=30, backoff_seconds=(5, 10))
    events = EventRecorder(api, "gpu-handler", "w1", clock)
    return api, nvml, board, CapabilitiesPass(api, nvml, "w1", events, clock, settings, board)


def message_of(api: MemoryKube, name: str) -> str:
    (found,) = [c for c in status_of(api, name)["conditions"] if c["type"] == "HardwareHealthy"]
    return str(found["message"])


def events(api: MemoryKube) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in api.list(EVENTS, namespace="default").items]


def test_the_board_classifies_and_keeps_fatal_xids_per_card():
    board = XidBoard()
    assert board.record(A30, 13).kind is XidClass.APPLICATION
    assert board.record(A30, 48).kind is XidClass.RESET_REQUIRED
    assert board.record(A30, 154).kind is XidClass.UNCLASSIFIED
    assert board.record(A30, 79).kind is XidClass.CARD_LOST
    assert board.fatal(A30, "uid-1") == (48, 79)
    assert board.fatal(T4, "uid-2") == ()
    assert board.take_notices() == [(A30, 154)]
    assert board.take_notices() == []


def test_a_record_belongs_to_the_object_that_first_read_it():
    board = XidBoard()
    board.record(A30, 48)
    assert board.fatal(A30, "old") == (48,)
    board.record(A30, 79)  # the new card's Xid, before any pass read it
    assert board.fatal(A30, "new") == (79,)  # the old object's Xid is dropped, the new one kept
    assert board.fatal(A30, "new") == (79,)
    board.keep_only([T4])  # the card left the node
    assert board.fatal(A30, "new") == ()


def test_a_fatal_xid_turns_the_card_unhealthy_at_once_and_keeps_its_capabilities(world):
    api, _, board, capabilities = world
    a30, t4 = make_card(api, A30), make_card(api, T4)
    capabilities.run()
    board.record(A30, 79)
    report = capabilities.run()
    assert report.failing == {a30: "XidError"}
    assert health_of(api, a30) == ("False", "XidError")
    assert message_of(api, a30).startswith("Xid 79 (GPU has fallen off the bus): the card is lost")
    assert health_of(api, t4) == ("True", "NVMLHealthy")
    assert status_of(api, a30)["capabilities"]["productName"] == "NVIDIA A30"
    (message,) = [message for reason, message in events(api) if reason == "HardwareHealthyFalse"]
    assert message.startswith("HardwareHealthy True -> False (XidError): Xid 79")


def test_the_xid_wins_over_a_failing_snapshot_without_grace(world):
    api, nvml, board, capabilities = world
    a30 = make_card(api, A30)
    capabilities.run()
    nvml.fail_device(A30, "GPU is lost")
    board.record(A30, 79)
    capabilities.run()
    assert health_of(api, a30) == ("False", "XidError")  # not NVMLQueryFailed after 30 s of grace


def test_a_fatal_xid_is_sticky_until_the_physicalgpu_is_recreated(world):
    api, _, board, capabilities = world
    a30 = make_card(api, A30)
    board.record(A30, 48)
    capabilities.run()
    for _ in range(3):  # heartbeats: NVML answers fine, the card stays unhealthy
        capabilities.run()
        assert health_of(api, a30) == ("False", "XidError")
    api.delete(PHYSICAL_GPUS, a30)  # udev remove ...
    capabilities.run()
    make_card(api, A30)  # ... and add: a new object
    capabilities.run()
    assert health_of(api, a30) == ("True", "NVMLHealthy")


def test_a_quick_remove_and_add_between_passes_also_clears_it(world):
    api, _, board, capabilities = world
    a30 = make_card(api, A30)
    board.record(A30, 48)
    capabilities.run()
    api.delete(PHYSICAL_GPUS, a30)
    make_card(api, A30)  # a new UID, no pass in between
    capabilities.run()
    assert health_of(api, a30) == ("True", "NVMLHealthy")


def test_a_gate_decides_before_the_xid_which_stays(world):
    api, _, board, capabilities = world
    a30 = make_card(api, A30)
    board.record(A30, 48)
    capabilities.run()
    api.patch(PHYSICAL_GPUS, a30, {"status": {"currentState": {"driverType": "VFIO"}}}, subresource="status")
    capabilities.run()
    assert health_of(api, a30) == ("Unknown", "DriverTypeNotNvidia")
    api.patch(
        PHYSICAL_GPUS, a30, {"status": {"currentState": {"driverType": "Nvidia"}}}, subresource="status"
    )
    capabilities.run()
    assert health_of(api, a30) == ("False", "XidError")


def test_unknown_xids_make_an_event_and_application_ones_nothing(world):
    api, _, board, capabilities = world
    a30 = make_card(api, A30)
    capabilities.run()
    before = len(events(api))
    board.record(A30, 13)
    board.record(A30, 154)
    board.record("0000:ca:00.0", 154)  # no such card here: only logged
    capabilities.run()
    assert health_of(api, a30) == ("True", "NVMLHealthy")
    assert len(events(api)) == before + 1
    (notice,) = [message for reason, message in events(api) if reason == "XidError"]
    assert notice.startswith(f"Xid 154 on GPU {A30}: not in the module's Xid table")
    (event,) = [e for e in api.list(EVENTS, namespace="default").items if e["reason"] == "XidError"]
    assert (event["type"], event["involvedObject"]["name"]) == ("Warning", a30)
