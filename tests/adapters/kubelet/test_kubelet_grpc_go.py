# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The plugin's sockets as the kubelet reaches them: through grpc-go, the kubelet's gRPC
implementation (.tools/grpc-go-kubelet, built by tools/fetch-grpc-go from Debian's grpc-go), not
through grpcio like the other tests. Registration, both DRA versions, the health stream and its
hang-up, unknown methods, and answers larger than grpc-go's first flow-control window."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.kubelet.kubelet_grpc import RunningPlugin, start_plugin
from deckhouse_gpu.adapters.kubelet_gen import dra_health_v1_pb2 as health_v1
from deckhouse_gpu.adapters.kubelet_gen import dra_health_v1alpha1_pb2 as health_v1alpha1
from deckhouse_gpu.adapters.kubelet_gen import dra_v1_pb2 as v1
from deckhouse_gpu.adapters.kubelet_gen import dra_v1beta1_pb2 as v1beta1
from deckhouse_gpu.adapters.kubelet_gen import pluginregistration_v1_pb2 as registration
from deckhouse_gpu.ports.dra_plugin import PreparedDevice, PrepareResult
from deckhouse_gpu.services.publishing.device_health import DeviceHealthBoard
from testkit.gpu_objects import ready_card
from tests.adapters.kubelet import kubelet_plugin_world
from tests.adapters.kubelet.kubelet_plugin_world import FakeDRAService, plugin_paths

root = kubelet_plugin_world.root
CLIENT = Path(__file__).resolve().parents[3] / ".tools" / "grpc-go-kubelet"
REGISTRATION = "/pluginregistration.Registration"
DRA_V1 = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
DRA_V1BETA1 = "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"


def grpc_go(*args: str) -> list[str]:
    assert CLIENT.exists(), f"{CLIENT} is missing: run tools/fetch-grpc-go (make test does)"
    done = subprocess.run([str(CLIENT), *args], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def call(socket: str, method: str, request: bytes) -> bytes:
    (line,) = grpc_go("unary", socket, method, request.hex())
    assert line.startswith("ok "), line
    return bytes.fromhex(line.removeprefix("ok "))


@pytest.fixture
def plugin(root: Path) -> Iterator[RunningPlugin]:
    board = DeviceHealthBoard("w1")
    board.update([ready_card("w1", "0000:17:00.0", "a30")], datetime(2026, 11, 26, tzinfo=UTC))
    service = FakeDRAService()
    running = start_plugin(service, plugin_paths(root), health=board)
    yield running
    running.stop(grace=0)


def test_registration_through_grpc_go(plugin: RunningPlugin):
    socket = plugin.paths.registration_socket
    info = registration.PluginInfo.FromString(
        call(socket, f"{REGISTRATION}/GetInfo", registration.InfoRequest().SerializeToString())
    )
    assert (info.type, info.name, info.endpoint) == ("DRAPlugin", "gpu.deckhouse.io", plugin.paths.dra_socket)
    assert list(info.supported_versions)[:2] == ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
    accepted = registration.RegistrationStatus(plugin_registered=True).SerializeToString()
    assert call(socket, f"{REGISTRATION}/NotifyRegistrationStatus", accepted) == b""
    assert plugin.registered.is_set()


@pytest.mark.parametrize(("api", "service"), [(v1, DRA_V1), (v1beta1, DRA_V1BETA1)])
def test_prepare_and_unprepare_through_grpc_go(plugin: RunningPlugin, api, service):
    claims = [api.Claim(namespace="team-a", uid=f"uid-{i}", name=f"claim-{i}") for i in range(3)]
    prepared = api.NodePrepareResourcesResponse.FromString(
        call(
            plugin.paths.dra_socket,
            f"{service}/NodePrepareResources",
            api.NodePrepareResourcesRequest(claims=claims).SerializeToString(),
        )
    )
    assert sorted(prepared.claims) == ["uid-0", "uid-1", "uid-2"]  # the stray answer is dropped
    assert all(
        entry.devices[0].device_name == "gpu-0" and not entry.error for entry in prepared.claims.values()
    )
    unprepared = api.NodeUnprepareResourcesResponse.FromString(
        call(
            plugin.paths.dra_socket,
            f"{service}/NodeUnprepareResources",
            api.NodeUnprepareResourcesRequest(claims=claims).SerializeToString(),
        )
    )
    assert {uid: entry.error for uid, entry in unprepared.claims.items()} == {
        f"uid-{i}": "" for i in range(3)
    }


def test_an_unknown_method_is_unimplemented_for_grpc_go(plugin: RunningPlugin):
    (line,) = grpc_go("unary", plugin.paths.dra_socket, f"{DRA_V1}/NodeReserveResources", "")
    assert line.startswith("status 12 "), line  # UNIMPLEMENTED, in grpcio's words


@pytest.mark.parametrize(
    ("api", "service"),
    [(health_v1alpha1, "/v1alpha1.DRAResourceHealth"), (health_v1, "/v1.DRAResourceHealth")],
)
def test_the_health_stream_and_the_kubelet_hanging_up(plugin: RunningPlugin, api, service):
    lines = grpc_go(
        "stream",
        plugin.paths.dra_socket,
        f"{service}/NodeWatchResources",
        api.NodeWatchResourcesRequest().SerializeToString().hex(),
        "1",
    )
    assert lines[-1] == "cancelled"
    (report,) = (
        api.NodeWatchResourcesResponse.FromString(bytes.fromhex(x[4:])) for x in lines if x[:4] == "msg "
    )
    # The A30's whole card and its MIG placements, every one healthy.
    assert len(report.devices) > 1
    assert {(d.device.pool_name, d.health) for d in report.devices} == {("gpus/w1", api.HEALTHY)}
    streams = plugin.health_streams
    assert streams is not None
    deadline = time.monotonic() + 5
    while streams.count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert streams.count == 0, "the stream the kubelet left still holds its subscription"


def test_answers_beyond_grpc_gos_first_window_and_its_message_limit(root: Path):
    # A prepare answer of the plugin's own server, made large by one long CDI device id.
    service = FakeDRAService()
    running = start_plugin(service, plugin_paths(root))

    def prepare_answer(size: int) -> list[str]:
        device = PreparedDevice(("gpu",), "node-a", "gpu-0", ("z" * size,))
        service.results["uid-a"] = PrepareResult(devices=(device,))
        request = v1.NodePrepareResourcesRequest(claims=[v1.Claim(namespace="a", uid="uid-a", name="a")])
        return grpc_go(
            "unary",
            running.paths.dra_socket,
            f"{DRA_V1}/NodePrepareResources",
            request.SerializeToString().hex(),
        )

    def cdi_id(lines: list[str]) -> str:
        (line,) = lines
        assert line.startswith("ok "), line[:200]
        answer = v1.NodePrepareResourcesResponse.FromString(bytes.fromhex(line.removeprefix("ok ")))
        (cdi,) = answer.claims["uid-a"].devices[0].cdi_device_ids
        return cdi

    try:
        assert cdi_id(prepare_answer(3145728)) == "z" * 3145728
        # Past grpc-go's 4 MiB receive limit the client refuses, and the server is not harmed.
        (line,) = prepare_answer(5000000)
        assert line.startswith("status 8 "), line
        assert cdi_id(prepare_answer(10)) == "z" * 10
    finally:
        running.stop(grace=0)
