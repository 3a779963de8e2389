# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""chaos-real's faults of the network, the credentials and the Node, one at a time on a cluster of
their own (tests/real/chaos_net_faults.py), each followed by the run's probe (a card deleted
behind the components' back) and a claim step (one claim unprepared and one prepared):

- a silent watch is noticed and the probe lands within the idle bound (130 s) and a silenced
  request's read timeout, well before the stream's own end would (330-630 s);
- tokens rotated under the components, the old ones refused at once, keep them working;
- a Node deleted and created anew with claims prepared on it gets its cards and slices back,
  owned by the new Node, and the claims prepared before are unprepared as usual.

And the API server's side of the rotated tokens: the shortest expiry it allows is ten minutes,
and a token asked for with it is not stretched."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.adapters.kube.kube_client import WATCH_IDLE_SECONDS
from testkit.real_cluster import AssetsMissing, RealCluster, assets_required, binaries
from testkit.rotating_tokens import SHORTEST_SECONDS, token_claims
from tests.real import component_world as world
from tests.real.chaos_real import chaos
from tests.real.conftest import cluster_of

VERSION = "1.36"
READ_TIMEOUT = 30.0  # a component's request read timeout: a silenced pooled connection costs it


def run_one(kind: str, watch_cache: bool = True) -> dict[str, Any]:
    try:
        binaries(VERSION, "kube-apiserver", "etcd", "etcdctl", "kube-controller-manager")
    except AssetsMissing as missing:
        if assets_required():
            pytest.fail(str(missing))
        pytest.skip(str(missing))
    workdir = Path(tempfile.mkdtemp(prefix="chnet-"))  # short: the plugin sockets live under it
    try:
        report = chaos(VERSION, 39, 1, workdir, watch_cache=watch_cache, only=(kind,))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(report.faults))
    assert [fault["kind"] for fault in report.faults] == [kind]
    assert report.stop_exit == dict.fromkeys(report.stop_exit, 0), report.replay()
    assert report.claims_allocated >= 1
    return report.faults[0]


def test_a_silent_watch_is_noticed_within_its_idle_bound() -> None:
    fault = run_one("watch-silent")
    assert fault["silenced"][world.NODE_AGENT] >= 1  # its PhysicalGPU watch, at least
    # Two silenced requests' read timeouts on the way (the card written back, its status set).
    assert fault["recoverySeconds"] < WATCH_IDLE_SECONDS + 2 * READ_TIMEOUT + 30


def test_tokens_rotated_under_the_components_keep_them_working() -> None:
    fault = run_one("token-rotation")
    assert fault["rotated"] == 4


def test_a_node_created_anew_gets_its_cards_and_slices_back_owned_by_it() -> None:
    fault = run_one("node-recreate")
    assert fault["preparedClaims"] >= 1


@pytest.mark.parametrize("version", ["1.35", "1.36"])
def test_the_shortest_token_expiry_is_ten_minutes_and_not_stretched(clusters, version: str) -> None:
    cluster: RealCluster = cluster_of(clusters, version)
    cluster.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "token-expiry"}})
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "t", "namespace": "token-expiry"},
    }
    cluster.ensure(account)
    path = "/api/v1/namespaces/token-expiry/serviceaccounts/t/token"

    pod = cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": world.unique("t"), "namespace": "token-expiry"},
            "spec": {
                "serviceAccountName": "t",
                "automountServiceAccountToken": False,
                "containers": [{"name": "main", "image": "registry.example/gpu:test"}],
            },
        }
    )
    bound = {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod["metadata"]["name"],
        "uid": pod["metadata"]["uid"],
    }

    def ask(seconds: int) -> tuple[int, dict[str, Any]]:
        spec = {"expirationSeconds": seconds, "boundObjectRef": bound}
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        status, text = cluster.send("POST", path, body)
        return status, json.loads(text)

    def lifetime(answer: dict[str, Any]) -> int:
        claims = token_claims(answer["status"]["token"])
        return int(claims["exp"] - claims["iat"])

    status, answer = ask(SHORTEST_SECONDS - 1)
    assert status == 422
    assert "10 minutes" in answer["message"]
    status, answer = ask(SHORTEST_SECONDS)
    assert status == 201
    assert lifetime(answer) == SHORTEST_SECONDS
    # --service-account-extend-token-expiration (on by default) stretches only the 3607 s a
    # kubelet asks for (to a year), never the shortest.
    status, answer = ask(3607)
    assert status == 201
    assert lifetime(answer) > 3607
