# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A node's MPS daemons as Pods: listed back, created once, ready as the kubelet reports, deleted,
and every API failure told as a SharingError; through the in-memory API server and the real client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from deckhouse_gpu.adapters.kube.kube_client import ClientKube, load_kube
from deckhouse_gpu.adapters.kube.mps_daemon_pods import KubeMpsDaemons, pod_failure
from deckhouse_gpu.domain.prepare.mps import MpsDaemon, daemon_for
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.ports.kube import PODS, Forbidden, Invalid, KubeAPI, Unavailable
from deckhouse_gpu.ports.sharing import MpsDaemons, SharingError
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from testkit.fake_apiserver import FakeApiServer
from tests.support.kube_client_fixtures import write_kubeconfig

NS = "d8-gpu"
IMAGE = "registry.example.com/gpu@sha256:" + "a" * 64
PLUGIN = "/var/lib/kubelet/plugins/gpu.deckhouse.io"
CARDS = ("0000:17:00.0", "0000:b1:00.0")


def daemon(node: str = "w1", card: str = CARDS[0], uuid: str = "GPU-1") -> MpsDaemon:
    slug = card.replace(":", "-").replace(".", "-")
    plan = DevicePlan("gpu", node, f"gpu-{slug}", card, "Physical", share_id="s", uuid=uuid)
    return daemon_for(plan, node, PLUGIN, uuid)


def daemons(api: KubeAPI, node: str = "w1") -> KubeMpsDaemons:
    return KubeMpsDaemons(api, NS, node, IMAGE, "/")


def set_status(api: KubeAPI, name: str, status: dict[str, Any]) -> None:
    api.patch(PODS, name, {"status": status}, subresource="status", namespace=NS)


READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}


@pytest.fixture
def kube() -> MemoryKube:
    return MemoryKube()


def test_it_is_the_port_and_starts_each_daemon_once(kube):
    port: MpsDaemons = daemons(kube)
    first = daemon()
    assert port.running() == {}
    assert port.start(first) is True
    assert port.start(first) is False  # already there: not an error
    assert port.running() == {first.name: first}
    created = kube.get(PODS, first.name, NS)
    assert created["spec"]["nodeName"] == "w1"
    assert created["spec"]["containers"][0]["image"] == IMAGE


def test_running_is_this_nodes_daemons_only(kube):
    mine, other_card = daemon(), daemon(card=CARDS[1], uuid="GPU-2")
    daemons(kube).start(mine)
    daemons(kube).start(other_card)
    daemons(kube, "w2").start(daemon("w2"))
    kube.create(
        PODS, {"metadata": {"name": "stranger", "namespace": NS, "labels": {"gpu.deckhouse.io/node": "w1"}}}
    )
    assert daemons(kube).running() == {mine.name: mine, other_card.name: other_card}


def test_a_pod_being_deleted_is_not_running_and_not_ready(kube):
    port, first = daemons(kube), daemon()
    port.start(first)
    # As the API server shows a Pod the kubelet is still stopping (MemoryKube deletes at once).
    kube.patch(PODS, first.name, {"metadata": {"deletionTimestamp": "2026-11-21T12:00:00Z"}}, namespace=NS)
    assert port.running() == {}
    with pytest.raises(SharingError, match="is being deleted"):
        port.ready(first)


def test_ready_follows_the_pods_ready_condition(kube):
    port, first = daemons(kube), daemon()
    assert port.ready(first) is False  # no Pod (yet)
    port.start(first)
    assert port.ready(first) is False  # created, not run yet
    set_status(kube, first.name, {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]})
    assert port.ready(first) is False
    set_status(kube, first.name, READY)
    assert port.ready(first) is True


CRASHED = {
    "phase": "Running",
    "containerStatuses": [
        {
            "name": "mps-control",
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
            "lastState": {
                "terminated": {"reason": "Error", "exitCode": 1, "message": "libcuda.so.1 not found"}
            },
        }
    ],
}


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (CRASHED, "CrashLoopBackOff: back-off 40s; last run: Error (exit code 1): libcuda.so.1 not found"),
        (
            {
                "containerStatuses": [
                    {"state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}}
                ]
            },
            "ImagePullBackOff: not found",
        ),
        (
            {"containerStatuses": [{"state": {"terminated": {"reason": "Error", "exitCode": 2}}}]},
            "Error (exit code 2)",
        ),
        (
            {"phase": "Failed", "reason": "OutOfcpu", "message": "Node didn't have enough resource"},
            "is Failed",
        ),
    ],
)
def test_a_failed_daemon_is_an_error_with_the_kubelets_reason(kube, status, expected):
    port, first = daemons(kube), daemon()
    port.start(first)
    set_status(kube, first.name, status)
    with pytest.raises(SharingError) as raised:
        port.ready(first)
    message = str(raised.value)
    assert expected in message
    assert first.name in message
    assert CARDS[0] in message
    assert f"kubectl -n {NS} logs {first.name}" in message


@pytest.mark.parametrize(
    "status",
    [
        {},
        {"phase": "Pending", "containerStatuses": [{"state": {"waiting": {"reason": "ContainerCreating"}}}]},
        {"containerStatuses": [{"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]},
        {"containerStatuses": [{"state": {"running": {}}, "lastState": {"terminated": {"exitCode": 1}}}]},
    ],
)
def test_a_daemon_still_starting_is_no_failure(status):
    assert pod_failure({"status": status}) is None


def test_stop_deletes_and_a_missing_pod_is_fine(kube):
    port, first = daemons(kube), daemon()
    port.start(first)
    port.stop(first.name)
    assert port.running() == {}
    port.stop(first.name)
    assert port.start(first) is True  # the name is free again


@pytest.mark.parametrize(
    ("verb", "call"),
    [
        ("list", lambda port: port.running()),
        ("create", lambda port: port.start(daemon())),
        ("get", lambda port: port.ready(daemon())),
        ("delete", lambda port: port.stop(daemon().name)),
    ],
)
def test_api_failures_are_sharing_errors(kube, verb, call):
    port = daemons(kube)
    if verb in ("get", "delete"):
        port.start(daemon())
    kube.fail_next(verb, Unavailable("connection refused"))
    with pytest.raises(SharingError, match="connection refused"):
        call(port)


def test_a_refusal_names_the_rbac_and_the_policy(kube):
    kube.fail_next("create", Forbidden("pods is forbidden"))
    with pytest.raises(SharingError) as raised:
        daemons(kube).start(daemon())
    assert "Role gpu-handler:mps-daemons" in str(raised.value)
    assert "d8-gpu-mps-pods" in str(raised.value)
    kube.fail_next("create", Invalid("spec.containers[0].image: Required value"))
    with pytest.raises(
        SharingError, match=r"cannot create the MPS daemon Pod d8-gpu/gpu-mps-w1-.*Required value"
    ):
        daemons(kube).start(daemon())


def test_no_image_is_refused_before_the_api(kube):
    with pytest.raises(SharingError, match="--mps-image"):
        KubeMpsDaemons(kube, NS, "w1", "", "/").start(daemon())
    assert kube.calls["create"] == 0


@pytest.fixture
def client(tmp_path) -> Iterator[tuple[FakeApiServer, ClientKube]]:
    with FakeApiServer(resources=(PODS,)) as server:
        api = load_kube(write_kubeconfig(tmp_path, server.url), connect_timeout=1, read_timeout=5)
        yield server, api
        api.close()


def test_the_real_client_reaches_the_pods_api(client):
    server, api = client
    port, first = daemons(api), daemon()
    assert port.start(first) is True
    assert port.start(first) is False  # 409 AlreadyExists
    assert port.running() == {first.name: first}
    listing = next(
        r for r in server.requests if r.method == "GET" and r.path == f"/api/v1/namespaces/{NS}/pods"
    )
    assert listing.query["labelSelector"] == "gpu.deckhouse.io/node=w1,app=gpu-mps"
    set_status(api, first.name, READY)
    assert port.ready(first) is True
    port.stop(first.name)
    port.stop(first.name)  # 404
    assert port.ready(first) is False
    assert server.kube.list(PODS, namespace=NS).items == []
