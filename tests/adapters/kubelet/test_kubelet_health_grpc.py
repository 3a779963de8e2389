# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The device health stream on the plugin's DRA socket, driven by a fake kubelet that uses protoc's
stubs: what registration lists, the first report, updates, resends, and how streams end."""

from __future__ import annotations

import copy
import time
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest

from deckhouse_gpu.adapters.kubelet import kubelet_health_grpc
from deckhouse_gpu.adapters.kubelet.kubelet_grpc import RunningPlugin, start_plugin
from deckhouse_gpu.services.publishing.device_health import DeviceHealthBoard
from testkit.gpu_objects import ready_card
from tests.adapters.kubelet import kubelet_plugin_world
from tests.adapters.kubelet.kubelet_plugin_world import CLAIM_A, FakeDRAService, plugin_paths
from tests.support.fake_kubelet_health import V1, V1ALPHA1, negotiated, watch_health

root, kubelet, plugins = kubelet_plugin_world.root, kubelet_plugin_world.kubelet, kubelet_plugin_world.plugins
A30, T4 = "0000:17:00.0", "0000:b1:00.0"
POOL = "gpus/w1"
NOON = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
LOST = "0000:17:00.0: nvmlDeviceGetHandleByPciBusId failed: GPU is lost"


def lost(card: dict[str, Any]) -> dict[str, Any]:
    """The card as the handler leaves it once NVML fails on it past the grace period."""
    changed = copy.deepcopy(card)
    for condition in changed["status"]["conditions"]:
        if condition["type"] == "HardwareHealthy":
            condition.update(status="Unknown", reason="NVMLQueryFailed", message=LOST)
    return changed


def start(plugins: list[RunningPlugin], root: Any, board: DeviceHealthBoard | None) -> RunningPlugin:
    plugin = start_plugin(FakeDRAService(), plugin_paths(root), health=board)
    plugins.append(plugin)
    return plugin


@pytest.fixture
def board() -> DeviceHealthBoard:
    found = DeviceHealthBoard("w1")
    found.update([ready_card("w1", A30, "a30"), ready_card("w1", T4, "t4")], NOON)
    return found


def test_registration_lists_the_health_stream_only_when_it_is_served(root, kubelet, plugins, board):
    start(plugins, root, None)
    (connection,) = kubelet.wait_for_plugins(1)
    assert connection.services == ("v1.DRAPlugin", "v1beta1.DRAPlugin")
    assert negotiated(connection) is None
    plugins.pop().stop(grace=0)
    kubelet.sync()

    start(plugins, root, board)
    (connection,) = kubelet.wait_for_plugins(1)
    assert connection.services == ("v1.DRAPlugin", "v1beta1.DRAPlugin", V1, V1ALPHA1)
    assert connection.version == "v1.DRAPlugin"  # the DRA service is chosen as before
    assert negotiated(connection) == V1


@pytest.mark.parametrize("version", [V1, V1ALPHA1])
def test_the_whole_list_first_then_every_change(root, kubelet, plugins, board, version):
    start(plugins, root, board)
    (connection,) = kubelet.wait_for_plugins(1)
    watch = watch_health(connection, version)
    try:
        first = watch.next()
        assert len(first) == 14 + 1
        assert {pool for pool, _ in first} == {POOL}
        seen = first[(POOL, "gpu-0000-17-00-0-mig-2g-12gb-2")]
        assert (seen.health, seen.message) == ("Healthy", "")
        assert seen.last_updated == int(NOON.timestamp())
        assert seen.timeout_seconds == kubelet_health_grpc.HEALTH_CHECK_TIMEOUT_SECONDS

        board.update([lost(ready_card("w1", A30, "a30")), ready_card("w1", T4, "t4")], NOON)
        changed = watch.next()
        assert set(changed) == set(first)
        broken = {device for (_, device), seen in changed.items() if seen.health == "Unhealthy"}
        assert broken == {device for _, device in first if device.startswith("gpu-0000-17-00-0")}
        assert changed[(POOL, "gpu-0000-17-00-0")].message.endswith("GPU is lost")
        assert changed[(POOL, "gpu-0000-b1-00-0")].health == "Healthy"
    finally:
        watch.close()


def test_an_unchanged_list_is_sent_again_so_the_kubelet_keeps_it_fresh(
    root, kubelet, plugins, board, monkeypatch
):
    monkeypatch.setattr(kubelet_health_grpc, "RESEND_SECONDS", 0.1)
    start(plugins, root, board)
    (connection,) = kubelet.wait_for_plugins(1)
    watch = watch_health(connection)
    try:
        first = watch.next()
        assert watch.next(2) == first
        assert watch.next(2) == first
    finally:
        watch.close()


def test_before_the_first_pass_the_stream_waits(root, kubelet, plugins, monkeypatch):
    monkeypatch.setattr(kubelet_health_grpc, "RESEND_SECONDS", 0.05)
    board = DeviceHealthBoard("w1")
    start(plugins, root, board)
    (connection,) = kubelet.wait_for_plugins(1)
    watch = watch_health(connection, V1ALPHA1)
    try:
        with pytest.raises(AssertionError, match="no health report"):
            watch.next(0.3)  # an empty list would tell the kubelet nothing is known: send none
        board.update([ready_card("w1", T4, "t4")], NOON)
        assert list(watch.next()) == [(POOL, "gpu-0000-b1-00-0")]
    finally:
        watch.close()


def test_the_kubelet_hanging_up_frees_the_stream(root, kubelet, plugins, board):
    plugin = start(plugins, root, board)
    (connection,) = kubelet.wait_for_plugins(1)
    watch = watch_health(connection)
    watch.next()
    assert plugin.health_streams is not None
    assert plugin.health_streams.count == 1
    watch.close()
    deadline = time.monotonic() + 5
    while plugin.health_streams.count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert plugin.health_streams.count == 0


def test_a_third_stream_at_once_is_refused(root, kubelet, plugins, board):
    start(plugins, root, board)
    (connection,) = kubelet.wait_for_plugins(1)
    watches = [watch_health(connection) for _ in range(kubelet_health_grpc.MAX_STREAMS)]
    try:
        for watch in watches:
            watch.next()
        extra = watch_health(connection)
        assert extra.ended.wait(5)
        assert extra.error is not None
        assert extra.error.code() == grpc.StatusCode.UNAVAILABLE
        # The DRA calls still have workers.
        assert connection.prepare([CLAIM_A])[CLAIM_A.uid].error == ""
    finally:
        for watch in watches:
            watch.close()


def test_stopping_the_plugin_ends_the_stream_at_once(root, kubelet, plugins, board):
    plugin = start(plugins, root, board)
    (connection,) = kubelet.wait_for_plugins(1)
    watch = watch_health(connection)
    watch.next()
    started = time.monotonic()
    plugin.stop(grace=1.0)
    assert watch.ended.wait(5)
    assert time.monotonic() - started < kubelet_health_grpc.RESEND_SECONDS
    watch.close()
