# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubelet plugin over real Unix sockets, driven by a fake kubelet that uses protoc's stubs:
registration and its socket names, a rolling update of two plugin pods, stale and too long socket
paths, and stopping. The DRA calls themselves are in test_kubelet_grpc_calls.py."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.kubelet.kubelet_grpc import start_plugin
from deckhouse_gpu.ports.dra_plugin import PluginPaths
from testkit.waiting import wait_for
from tests.adapters.kubelet import kubelet_plugin_world
from tests.adapters.kubelet.kubelet_plugin_world import (
    CLAIM_A,
    DRIVER,
    NEW_POD,
    OLD_POD,
    FakeDRAService,
    is_socket,
    plugin_paths,
    start_tracked,
)
from tests.support.fake_kubelet import FakeKubelet

# A short socket root, the fake kubelet on it, and the plugins a test starts (bound here for pytest).
root, kubelet, plugins = kubelet_plugin_world.root, kubelet_plugin_world.kubelet, kubelet_plugin_world.plugins


def test_handshake_with_default_socket_names(root, kubelet, plugins):
    paths = plugin_paths(root)
    plugin = start_tracked(plugins, FakeDRAService(), paths)
    assert paths.registration_socket.endswith("/plugins_registry/gpu.deckhouse.io-reg.sock")
    assert paths.dra_socket.endswith(f"/plugins/{DRIVER}/dra.sock")
    assert is_socket(paths.registration_socket)
    assert is_socket(paths.dra_socket)

    (connection,) = kubelet.wait_for_plugins(1)
    assert (connection.name, connection.endpoint, connection.version) == (
        DRIVER,
        paths.dra_socket,
        "v1.DRAPlugin",
    )
    assert plugin.registered.wait(5)
    assert plugin.last_error == ""


def test_handshake_with_pod_uid_socket_names(root, kubelet, plugins):
    paths = plugin_paths(root, OLD_POD)
    plugin = start_tracked(plugins, FakeDRAService(), paths)
    assert os.path.basename(paths.registration_socket) == f"{DRIVER}-{OLD_POD}-reg.sock"
    assert os.path.basename(paths.dra_socket) == f"dra-{OLD_POD}.sock"

    (connection,) = kubelet.wait_for_plugins(1)
    assert connection.endpoint == paths.dra_socket
    assert plugin.registered.wait(5)


def test_rolling_update_two_pods_register_and_the_newest_is_used(root, kubelet, plugins):
    old_service, new_service = FakeDRAService(), FakeDRAService()
    old = start_tracked(plugins, old_service, plugin_paths(root, OLD_POD))
    kubelet.wait_for_plugins(1)
    new = start_tracked(plugins, new_service, plugin_paths(root, NEW_POD))
    kubelet.wait_for_plugins(2)
    assert old.registered.is_set()
    assert new.registered.wait(5)

    assert kubelet.active(DRIVER).endpoint == new.paths.dra_socket
    kubelet.active(DRIVER).prepare([CLAIM_A])
    assert (old_service.prepared, new_service.prepared) == ([], [["uid-a"]])

    # The old pod exits: its sockets go, the kubelet drops it, the new one keeps serving.
    old.stop()
    kubelet.sync()
    assert [p.endpoint for p in kubelet.plugins.values()] == [new.paths.dra_socket]
    assert is_socket(new.paths.registration_socket)
    assert is_socket(new.paths.dra_socket)
    assert kubelet.active(DRIVER).unprepare([CLAIM_A]) == {"uid-a": ""}


def test_rejected_registration_is_recorded(root, plugins):
    plugin = start_tracked(plugins, FakeDRAService(), plugin_paths(root))
    kubelet = FakeKubelet(str(root / "plugins_registry"), versions=("v2.DRAPlugin",), timeout=10.0)
    try:
        kubelet.sync()
        assert kubelet.plugins == {}
        wait_for(lambda: plugin.last_error, what="rejection recorded")
        assert "none of ['v1.DRAPlugin', 'v1beta1.DRAPlugin'] is supported" in plugin.last_error
        assert not plugin.registered.is_set()
    finally:
        kubelet.close()


def _stale_socket(path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with socket.socket(socket.AF_UNIX) as leftover:
        leftover.bind(path)  # closed without unlinking, as after a crash


@pytest.mark.parametrize("pod_uid", [None, OLD_POD], ids=["default", "pod-uid"])
def test_stale_sockets_are_replaced(root, kubelet, plugins, pod_uid):
    paths = plugin_paths(root, pod_uid)
    _stale_socket(paths.registration_socket)
    Path(paths.plugin_dir).mkdir(parents=True)
    Path(paths.dra_socket).write_text("a regular file where the socket goes")
    start_tracked(plugins, FakeDRAService(), paths)
    (connection,) = kubelet.wait_for_plugins(1)
    assert connection.prepare([CLAIM_A])["uid-a"].error == ""


def test_stop_removes_sockets_and_deregisters(root, kubelet, plugins):
    paths = plugin_paths(root, OLD_POD)
    plugin = start_tracked(plugins, FakeDRAService(), paths)
    kubelet.wait_for_plugins(1)
    assert plugin.registered.wait(5)

    plugin.stop()
    assert not os.path.exists(paths.registration_socket)
    assert not os.path.exists(paths.dra_socket)
    assert not plugin.registered.is_set()
    plugin.stop()  # a second stop is harmless
    kubelet.sync()
    assert kubelet.plugins == {}


def test_socket_path_too_long_is_refused_before_binding(root):
    paths = PluginPaths(registry_dir=str(root / ("r" * 120)), plugin_dir=str(root / "p"), driver=DRIVER)
    with pytest.raises(ValueError, match="longer than 107 bytes"):
        start_plugin(FakeDRAService(), paths)
    assert not os.path.exists(paths.dra_socket)
