# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The device health board: fed by the handler loop's passes, read by the kubelet's health streams."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

from deckhouse_gpu.domain.inventory.health.device_health import HealthReport
from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.ports.kube import PHYSICAL_GPUS, Unavailable
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.publishing.device_health import DeviceHealthBoard
from deckhouse_gpu.services.publishing.handler import HandlerLoop, HandlerSettings
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from testkit.gpu_objects import ready_card
from tests.services.publishing.test_capabilities import make_card

A30, T4 = "0000:17:00.0", "0000:b1:00.0"
NOON = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)


def current(board: DeviceHealthBoard) -> HealthReport:
    report = board.current()
    assert report is not None
    return report


def test_an_update_that_changes_nothing_wakes_nobody_but_refreshes_the_time():
    board = DeviceHealthBoard("w1")
    assert board.current() is None
    assert board.lines() == []
    assert board.update([ready_card("w1", T4, "t4")], NOON)
    first = board.current()
    assert first is not None
    assert (first.pool, first.checked_at) == ("gpus/w1", int(NOON.timestamp()))
    later = NOON.replace(minute=1)
    assert not board.update([ready_card("w1", T4, "t4")], later)
    assert current(board).devices == first.devices
    assert current(board).checked_at == int(later.timestamp())
    assert board.lines() == ["gpu-0000-b1-00-0: Healthy"]
    assert [d.device for d in board.devices(["gpu-0000-b1-00-0", "gpu-gone"])] == ["gpu-0000-b1-00-0"]


def test_a_subscription_gets_the_first_report_then_changes_then_resends():
    board = DeviceHealthBoard("w1")
    subscription = board.subscribe()
    assert subscription.next(0.01) is None  # no pass yet: nothing to send
    board.update([ready_card("w1", T4, "t4")], NOON)
    assert current(board).devices[0].health == "Healthy"
    assert subscription.next(5) is current(board)  # at once
    started = time.monotonic()
    unchanged = subscription.next(0.05)  # nothing changed: the same report after the timeout
    assert time.monotonic() - started >= 0.05
    assert unchanged is board.current()
    late = board.subscribe()  # a stream opened later gets the current report at once
    assert late.next(5) is board.current()


def test_a_change_wakes_a_waiting_stream_and_close_ends_it():
    board = DeviceHealthBoard("w1")
    board.update([ready_card("w1", T4, "t4")], NOON)
    subscription = board.subscribe()
    subscription.next(0)
    got: list[HealthReport | None] = []
    waiter = threading.Thread(target=lambda: got.append(subscription.next(30)))
    waiter.start()
    board.update([ready_card("w1", T4, "t4", healthy=False)], NOON)
    waiter.join(5)
    assert not waiter.is_alive()
    assert got[0] is current(board)
    assert current(board).devices[0].health == "Unhealthy"

    waiter = threading.Thread(target=lambda: got.append(subscription.next(30)))
    waiter.start()
    subscription.close()
    waiter.join(5)
    assert not waiter.is_alive()
    assert got[1] is None
    assert subscription.next(0) is None


@pytest.fixture
def loop(clock):
    api = MemoryKube()
    nvml = SimulatedNVML({A30: "a30", T4: "t4"}, node_name="w1")
    health = HealthSettings(grace_seconds=0, backoff_seconds=(5,))
    capabilities = CapabilitiesPass(
        api, nvml, "w1", EventRecorder(api, "gpu-handler", "w1", clock), clock, health
    )
    board = DeviceHealthBoard("w1")
    found = HandlerLoop(
        capabilities, HealthState(), clock, HandlerSettings(health=health), device_health=board
    )
    make_card(api, A30)
    make_card(api, T4)
    return found, api, nvml, board


def healths(board: DeviceHealthBoard) -> dict[str, str]:
    return {d.device: d.health for d in current(board).devices}


def test_each_pass_of_the_loop_updates_the_board(loop, clock):
    handler, _, nvml, board = loop
    handler._pass([])
    assert set(healths(board).values()) == {"Healthy"}
    assert len(healths(board)) == 14 + 1  # the A30's whole card and MIG placements, the T4
    nvml.fail_device(A30, "GPU is lost")
    clock.ticks = 10.0
    handler._pass([])
    assert {name: h for name, h in healths(board).items() if h != "Healthy"} == {
        name: "Unhealthy" for name in healths(board) if name.startswith("gpu-0000-17-00-0")
    }
    message = board.devices(["gpu-0000-17-00-0-mig-1g-6gb-0"])[0].message
    assert message == (
        "HardwareHealthy=Unknown (NVMLQueryFailed): 0000:17:00.0: "
        "nvmlDeviceGetHandleByPciBusId failed: GPU is lost"
    )
    nvml.clear_failures()
    clock.ticks = 20.0
    handler._pass([])
    assert set(healths(board).values()) == {"Healthy"}


def test_a_failed_list_leaves_the_board_as_it_was(loop):
    handler, api, _, board = loop
    handler._pass([])
    before = board.current()
    api.fail_next("list", Unavailable("apiserver down"))
    handler._pass([])
    assert board.current() is before  # not "every card is gone"


def test_a_deleted_card_turns_unhealthy(loop):
    handler, api, _, board = loop
    handler._pass([])
    api.delete(PHYSICAL_GPUS, "w1-0000-b1-00-0")
    handler._pass([])
    assert board.devices(["gpu-0000-b1-00-0"])[0].health == "Unhealthy"
