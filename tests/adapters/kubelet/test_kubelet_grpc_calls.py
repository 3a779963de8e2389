# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubelet's DRA calls to the plugin over real Unix sockets, from a fake kubelet that uses
protoc's stubs: prepare and unprepare in v1 and v1beta1, the service's failures and omissions as
per-claim errors, retries, the kubelet's deadline, and the node lock on the kubelet's path."""

from __future__ import annotations

import fcntl
import os
import threading
from typing import Any

import grpc
import pytest

from deckhouse_gpu.ports.dra_plugin import ClaimRef, PrepareResult
from testkit.prepare_world import allocate, build_world
from tests.adapters.kubelet import kubelet_plugin_world
from tests.adapters.kubelet.kubelet_plugin_world import (
    CLAIM_A,
    CLAIM_B,
    NEW_POD,
    FakeDRAService,
    plugin_paths,
    prepared_device,
    start_tracked,
)
from tests.support.fake_kubelet import FakeKubelet, retry_until_ok

# A short socket root, the fake kubelet on it, and the plugins a test starts (bound here for pytest).
root, kubelet, plugins = kubelet_plugin_world.root, kubelet_plugin_world.kubelet, kubelet_plugin_world.plugins


def test_prepare_and_unprepare_round_trip_v1(root, kubelet, plugins):
    service = FakeDRAService()
    service.results["uid-a"] = PrepareResult(
        devices=(prepared_device("gpu-0", share_id="share-1"), prepared_device("gpu-1"))
    )
    service.results["uid-b"] = PrepareResult(error="no such device")
    start_tracked(plugins, service, plugin_paths(root))
    (connection,) = kubelet.wait_for_plugins(1)

    results = connection.prepare([CLAIM_A, CLAIM_B])
    assert results == {"uid-a": service.results["uid-a"], "uid-b": service.results["uid-b"]}
    assert service.prepared == [["uid-a", "uid-b"]]

    assert connection.unprepare([CLAIM_A, CLAIM_B]) == {"uid-a": "", "uid-b": ""}
    assert service.unprepared == [["uid-a", "uid-b"]]


def test_v1beta1_path_without_share_id(root, plugins):
    service = FakeDRAService()
    service.results["uid-a"] = PrepareResult(devices=(prepared_device("gpu-0", share_id="share-1"),))
    start_tracked(plugins, service, plugin_paths(root))
    kubelet = FakeKubelet(str(root / "plugins_registry"), versions=("v1beta1.DRAPlugin",), timeout=10.0)
    try:
        (connection,) = kubelet.wait_for_plugins(1)
        assert connection.version == "v1beta1.DRAPlugin"
        assert connection.prepare([CLAIM_A]) == {"uid-a": PrepareResult(devices=(prepared_device("gpu-0"),))}
        assert connection.unprepare([CLAIM_A]) == {"uid-a": ""}
    finally:
        kubelet.close()


def test_service_exception_becomes_every_claims_error(root, kubelet, plugins):
    service = FakeDRAService()
    service.raise_error = RuntimeError("nvml exploded")
    start_tracked(plugins, service, plugin_paths(root))
    (connection,) = kubelet.wait_for_plugins(1)

    results = connection.prepare([CLAIM_A, CLAIM_B])
    assert set(results) == {"uid-a", "uid-b"}
    for result in results.values():
        assert result.error == "prepare failed: RuntimeError: nvml exploded"
        assert result.devices == ()
    errors = connection.unprepare([CLAIM_A, CLAIM_B])
    assert errors == dict.fromkeys(("uid-a", "uid-b"), "unprepare failed: RuntimeError: nvml exploded")


def test_claim_left_out_by_the_service_gets_an_error_and_strays_are_dropped(root, kubelet, plugins):
    service = FakeDRAService()
    service.omit.add("uid-b")
    start_tracked(plugins, service, plugin_paths(root))
    (connection,) = kubelet.wait_for_plugins(1)

    results = connection.prepare([CLAIM_A, CLAIM_B])
    assert set(results) == {"uid-a", "uid-b"}  # "uid-not-asked-for" did not travel
    assert results["uid-a"].error == ""
    assert results["uid-b"].error == "the driver returned no result for this claim"
    assert connection.unprepare([CLAIM_B])["uid-b"] == "the driver returned no result for this claim"


def test_unencodable_device_fails_only_its_claim(root, kubelet, plugins):
    service = FakeDRAService()
    not_a_string: Any = 42
    service.results["uid-b"] = PrepareResult(devices=(prepared_device(not_a_string),))
    start_tracked(plugins, service, plugin_paths(root))
    (connection,) = kubelet.wait_for_plugins(1)

    results = connection.prepare([CLAIM_A, CLAIM_B])
    assert results["uid-a"].error == ""
    assert results["uid-b"].error.startswith("encoding the prepared devices failed: TypeError")


def test_retry_until_no_claim_has_an_error(root, kubelet, plugins):
    service = FakeDRAService()
    service.fail_times["uid-b"] = 2
    start_tracked(plugins, service, plugin_paths(root))
    (connection,) = kubelet.wait_for_plugins(1)

    results = retry_until_ok(connection.prepare, [CLAIM_A, CLAIM_B], attempts=5)
    assert [r.error for r in results.values()] == ["", ""]
    assert service.prepared == [["uid-a", "uid-b"], ["uid-b"], ["uid-b"]]

    service.fail_times["uid-a"] = 10
    results = retry_until_ok(connection.prepare, [CLAIM_A], attempts=3)
    assert results["uid-a"].error == "device busy"
    assert retry_until_ok(connection.unprepare, [CLAIM_A, CLAIM_B]) == {"uid-a": "", "uid-b": ""}


def test_kubelet_deadline_is_a_call_failure(root, plugins):
    service = FakeDRAService()
    service.delay = 0.5
    start_tracked(plugins, service, plugin_paths(root))
    kubelet = FakeKubelet(str(root / "plugins_registry"), timeout=0.1)
    try:
        (connection,) = kubelet.wait_for_plugins(1)
        with pytest.raises(grpc.RpcError) as raised:
            connection.prepare([CLAIM_A])
        assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        kubelet.close()


def test_the_node_lock_is_the_one_lock_on_the_kubelet_path(root, kubelet, plugins):
    # Another plugin pod (here: the test) holds pu.lock: the call waits for it only as long as the
    # node lock's timeout, then answers with an error naming the lock, and the kubelet retries.
    world = build_world(root / "world", {"0000:17:00.0": "a30"})
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0")
    ref = ClaimRef("ns", claim["metadata"]["uid"], "c1")
    start_tracked(plugins, world.service(lock_timeout=0.3), plugin_paths(root, NEW_POD))
    (connection,) = kubelet.wait_for_plugins(1)
    world.lock_path.parent.mkdir(parents=True, exist_ok=True)
    holder = os.open(world.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_EX)
    # Answered once the lock's timeout ran out: a call still waiting at the kubelet's deadline
    # would have failed with DEADLINE_EXCEEDED instead of this error.
    refused = connection.prepare([ref])[ref.uid]
    assert "pu.lock" in refused.error
    assert not world.checkpoint_path.exists() or ref.uid not in world.checkpoint_path.read_text()
    os.close(holder)
    # Two calls at once from the kubelet's workers: the node lock alone keeps them apart.
    other = allocate(world.api, "c2", "gpu-0000-17-00-0-mig-1g-6gb-0")
    second = ClaimRef("ns", other["metadata"]["uid"], "c2")
    answers: dict[str, PrepareResult] = {}
    callers = [
        threading.Thread(target=lambda r=r: answers.update(connection.prepare([r]))) for r in (ref, second)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(10)
    # Both ran, one after the other: the second one to take the lock was refused by the guard
    # (a whole card and a MIG slice of the same card), not corrupted by a race.
    errors = sorted(bool(answers[r.uid].error) for r in (ref, second))
    assert errors == [False, True]
