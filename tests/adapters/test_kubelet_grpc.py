"""The kubelet plugin over real Unix sockets, driven by a fake kubelet that uses protoc's stubs."""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from deckhouse_gpu.adapters.kubelet_grpc import RunningPlugin, start_plugin
from deckhouse_gpu.ports.dra_plugin import ClaimRef, PluginPaths, PreparedDevice, PrepareResult
from testkit.prepare_world import allocate, build_world
from testkit.waiting import wait_for
from tests.support.fake_kubelet import FakeKubelet, retry_until_ok

DRIVER = "gpu.deckhouse.io"
OLD_POD = "0b5f3c2a-6d7e-4f80-9a1b-2c3d4e5f6a70"
NEW_POD = "7e1d9c8b-5a4f-4e3d-8c2b-1a0f9e8d7c61"
CLAIM_A = ClaimRef(namespace="team-a", uid="uid-a", name="claim-a")
CLAIM_B = ClaimRef(namespace="team-b", uid="uid-b", name="claim-b")


def _device(name: str, share_id: str | None = None) -> PreparedDevice:
    return PreparedDevice(
        request_names=("gpu",),
        pool_name="node-a",
        device_name=name,
        cdi_device_ids=(f"{DRIVER}/gpu={name}",),
        share_id=share_id,
    )


class FakeDRAService:
    """Answers from ``results``; ``fail_times`` makes a claim fail that many calls first."""

    def __init__(self) -> None:
        self.results: dict[str, PrepareResult] = {}
        self.fail_times: dict[str, int] = {}
        self.raise_error: Exception | None = None
        self.omit: set[str] = set()
        self.delay = 0.0
        self.prepared: list[list[str]] = []
        self.unprepared: list[list[str]] = []

    def prepare(self, claims: list[ClaimRef]) -> dict[str, PrepareResult]:
        self.prepared.append([c.uid for c in claims])
        time.sleep(self.delay)
        if self.raise_error:
            raise self.raise_error
        answer = {}
        for claim in claims:
            if self.fail_times.get(claim.uid, 0) > 0:
                self.fail_times[claim.uid] -= 1
                answer[claim.uid] = PrepareResult(error="device busy")
            elif claim.uid not in self.omit:
                answer[claim.uid] = self.results.get(claim.uid, PrepareResult(devices=(_device("gpu-0"),)))
        answer["uid-not-asked-for"] = PrepareResult(devices=(_device("gpu-9"),))
        return answer

    def unprepare(self, claims: list[ClaimRef]) -> dict[str, str]:
        self.unprepared.append([c.uid for c in claims])
        if self.raise_error:
            raise self.raise_error
        return {c.uid: "" for c in claims if c.uid not in self.omit}


@pytest.fixture
def root() -> Iterator[Path]:
    # Not tmp_path: a socket path must fit sun_path (107 bytes), and pytest's paths are long.
    path = Path(tempfile.mkdtemp(prefix="kgrpc", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _paths(root: Path, pod_uid: str | None = None) -> PluginPaths:
    return PluginPaths(
        registry_dir=str(root / "plugins_registry"),
        plugin_dir=str(root / "plugins" / DRIVER),
        driver=DRIVER,
        pod_uid=pod_uid,
    )


@pytest.fixture
def kubelet(root: Path) -> Iterator[FakeKubelet]:
    fake = FakeKubelet(str(root / "plugins_registry"), timeout=10.0)
    yield fake
    fake.close()


@pytest.fixture
def plugins() -> Iterator[list[RunningPlugin]]:
    started: list[RunningPlugin] = []
    yield started
    for plugin in started:
        plugin.stop(grace=0)


def _start(plugins: list[RunningPlugin], service: Any, paths: PluginPaths) -> RunningPlugin:
    plugin = start_plugin(service, paths)
    plugins.append(plugin)
    return plugin


def _is_socket(path: str) -> bool:
    return os.path.exists(path) and stat.S_ISSOCK(os.lstat(path).st_mode)


def test_handshake_with_default_socket_names(root, kubelet, plugins):
    paths = _paths(root)
    plugin = _start(plugins, FakeDRAService(), paths)
    assert paths.registration_socket.endswith("/plugins_registry/gpu.deckhouse.io-reg.sock")
    assert paths.dra_socket.endswith(f"/plugins/{DRIVER}/dra.sock")
    assert _is_socket(paths.registration_socket)
    assert _is_socket(paths.dra_socket)

    (connection,) = kubelet.wait_for_plugins(1)
    assert (connection.name, connection.endpoint, connection.version) == (
        DRIVER,
        paths.dra_socket,
        "v1.DRAPlugin",
    )
    assert plugin.registered.wait(5)
    assert plugin.last_error == ""


def test_handshake_with_pod_uid_socket_names(root, kubelet, plugins):
    paths = _paths(root, OLD_POD)
    plugin = _start(plugins, FakeDRAService(), paths)
    assert os.path.basename(paths.registration_socket) == f"{DRIVER}-{OLD_POD}-reg.sock"
    assert os.path.basename(paths.dra_socket) == f"dra-{OLD_POD}.sock"

    (connection,) = kubelet.wait_for_plugins(1)
    assert connection.endpoint == paths.dra_socket
    assert plugin.registered.wait(5)


def test_rolling_update_two_pods_register_and_the_newest_is_used(root, kubelet, plugins):
    old_service, new_service = FakeDRAService(), FakeDRAService()
    old = _start(plugins, old_service, _paths(root, OLD_POD))
    kubelet.wait_for_plugins(1)
    new = _start(plugins, new_service, _paths(root, NEW_POD))
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
    assert _is_socket(new.paths.registration_socket)
    assert _is_socket(new.paths.dra_socket)
    assert kubelet.active(DRIVER).unprepare([CLAIM_A]) == {"uid-a": ""}


def test_prepare_and_unprepare_round_trip_v1(root, kubelet, plugins):
    service = FakeDRAService()
    service.results["uid-a"] = PrepareResult(devices=(_device("gpu-0", share_id="share-1"), _device("gpu-1")))
    service.results["uid-b"] = PrepareResult(error="no such device")
    _start(plugins, service, _paths(root))
    (connection,) = kubelet.wait_for_plugins(1)

    results = connection.prepare([CLAIM_A, CLAIM_B])
    assert results == {"uid-a": service.results["uid-a"], "uid-b": service.results["uid-b"]}
    assert service.prepared == [["uid-a", "uid-b"]]

    assert connection.unprepare([CLAIM_A, CLAIM_B]) == {"uid-a": "", "uid-b": ""}
    assert service.unprepared == [["uid-a", "uid-b"]]


def test_v1beta1_path_without_share_id(root, plugins):
    service = FakeDRAService()
    service.results["uid-a"] = PrepareResult(devices=(_device("gpu-0", share_id="share-1"),))
    _start(plugins, service, _paths(root))
    kubelet = FakeKubelet(str(root / "plugins_registry"), versions=("v1beta1.DRAPlugin",), timeout=10.0)
    try:
        (connection,) = kubelet.wait_for_plugins(1)
        assert connection.version == "v1beta1.DRAPlugin"
        assert connection.prepare([CLAIM_A]) == {"uid-a": PrepareResult(devices=(_device("gpu-0"),))}
        assert connection.unprepare([CLAIM_A]) == {"uid-a": ""}
    finally:
        kubelet.close()


def test_service_exception_becomes_every_claims_error(root, kubelet, plugins):
    service = FakeDRAService()
    service.raise_error = RuntimeError("nvml exploded")
    _start(plugins, service, _paths(root))
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
    _start(plugins, service, _paths(root))
    (connection,) = kubelet.wait_for_plugins(1)

    results = connection.prepare([CLAIM_A, CLAIM_B])
    assert set(results) == {"uid-a", "uid-b"}  # "uid-not-asked-for" did not travel
    assert results["uid-a"].error == ""
    assert results["uid-b"].error == "the driver returned no result for this claim"
    assert connection.unprepare([CLAIM_B])["uid-b"] == "the driver returned no result for this claim"


def test_unencodable_device_fails_only_its_claim(root, kubelet, plugins):
    service = FakeDRAService()
    not_a_string: Any = 42
    service.results["uid-b"] = PrepareResult(devices=(_device(not_a_string),))
    _start(plugins, service, _paths(root))
    (connection,) = kubelet.wait_for_plugins(1)

    results = connection.prepare([CLAIM_A, CLAIM_B])
    assert results["uid-a"].error == ""
    assert results["uid-b"].error.startswith("encoding the prepared devices failed: TypeError")


def test_retry_until_no_claim_has_an_error(root, kubelet, plugins):
    service = FakeDRAService()
    service.fail_times["uid-b"] = 2
    _start(plugins, service, _paths(root))
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
    _start(plugins, service, _paths(root))
    kubelet = FakeKubelet(str(root / "plugins_registry"), timeout=0.1)
    try:
        (connection,) = kubelet.wait_for_plugins(1)
        with pytest.raises(grpc.RpcError) as raised:
            connection.prepare([CLAIM_A])
        assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        kubelet.close()


def test_rejected_registration_is_recorded(root, plugins):
    plugin = _start(plugins, FakeDRAService(), _paths(root))
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
    paths = _paths(root, pod_uid)
    _stale_socket(paths.registration_socket)
    Path(paths.plugin_dir).mkdir(parents=True)
    Path(paths.dra_socket).write_text("a regular file where the socket goes")
    _start(plugins, FakeDRAService(), paths)
    (connection,) = kubelet.wait_for_plugins(1)
    assert connection.prepare([CLAIM_A])["uid-a"].error == ""


def test_stop_removes_sockets_and_deregisters(root, kubelet, plugins):
    paths = _paths(root, OLD_POD)
    plugin = _start(plugins, FakeDRAService(), paths)
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


def test_the_node_lock_is_the_one_lock_on_the_kubelet_path(root, kubelet, plugins):
    # Another plugin pod (here: the test) holds pu.lock: the call waits for it only as long as the
    # node lock's timeout, then answers with an error naming the lock, and the kubelet retries.
    world = build_world(root / "world", {"0000:17:00.0": "a30"})
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0")
    ref = ClaimRef("ns", claim["metadata"]["uid"], "c1")
    _start(plugins, world.service(lock_timeout=0.3), _paths(root, NEW_POD))
    (connection,) = kubelet.wait_for_plugins(1)
    world.lock_path.parent.mkdir(parents=True, exist_ok=True)
    holder = os.open(world.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_EX)
    started = time.monotonic()
    refused = connection.prepare([ref])[ref.uid]
    assert time.monotonic() - started < 5
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
