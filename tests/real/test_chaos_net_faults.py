# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""chaos-real's faults of the network, the credentials and the Node, one at a time on a cluster of
their own (tests/real/chaos_net_faults.py), each followed by the run's probe (a card deleted
behind the components' back) and a step of the Pod stream (a Pod started under the real kubelet):

- a silent watch is noticed and the probe lands within the idle bound (130 s) and a silenced
  request's read timeout, well before the stream's own end would (330-630 s);
- tokens rotated under the components, the old ones refused at once, keep them working;
- a Node deleted and created anew with claims prepared on it gets its cards and slices back,
  owned by the new Node, the claims prepared before are unprepared as usual, and a new Pod runs
  on it.

And the API server's side of the rotated tokens: the shortest expiry it allows is ten minutes,
a token asked for with it is not stretched, and the tokens the runs live on are renewed at 80 % of
their life (the old one still valid) and rotated away (the old one refused)."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.adapters.kube.kube_client import WATCH_IDLE_SECONDS
from testkit.real_cluster import RealCluster
from testkit.rotating_tokens import SHORTEST_SECONDS, RotatingTokens, bound_reference, token_claims
from tests.real import component_world as world
from tests.real.chaos_real import chaos, require_assets
from tests.real.conftest import cluster_of

VERSION = "1.36"
READ_TIMEOUT = 30.0  # a component's request read timeout: a silenced pooled connection costs it


def run_one(kind: str, watch_cache: bool = True, times: int = 1) -> dict[str, Any]:
    require_assets(VERSION)
    workdir = Path(tempfile.mkdtemp(prefix="chnet-"))  # short: the plugin sockets live under it
    try:
        report = chaos(VERSION, 39, times, workdir, watch_cache=watch_cache, only=(kind,))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(report.faults))
    assert [fault["kind"] for fault in report.faults] == [kind] * times
    assert report.stop_exit == dict.fromkeys(report.stop_exit, 0), report.replay()
    # A Pod of the stream came with each fault, and ran before the next one (or the end).
    assert report.figures()["podsStarted"] == times, report.replay()
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
    """Twice: the second time's Pod must run on the Node created anew (1.36 admits a new Node
    with a not-ready taint, which a run once forgot to take off as the lifecycle controller does)."""
    fault = run_one("node-recreate", times=2)
    assert fault["preparedClaims"] >= 1


@pytest.mark.parametrize("version", ["1.35", "1.36"])
def test_the_shortest_token_expiry_is_ten_minutes_and_not_stretched(clusters, version: str) -> None:
    cluster: RealCluster = cluster_of(clusters, version)
    service_account(cluster, "token-expiry", "t")
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
    bound = bound_reference(pod)

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


def test_tokens_are_renewed_at_80_percent_of_their_life_and_rotated_away(clusters, tmp_path: Path) -> None:
    """testkit/rotating_tokens.py on the real server: what chaos-real's components live on."""
    cluster: RealCluster = cluster_of(clusters, VERSION)
    service_account(cluster, "token-renewal", "r")
    tokens = RotatingTokens(cluster, tmp_path, "token-renewal")
    path = tokens.issue("r")  # bound to a Secret, as a Deployment's token here
    first = path.read_text()
    held = tokens.held["r"]
    assert tokens.renew_due(held.issued_at + 0.79 * SHORTEST_SECONDS) == []
    assert tokens.renew_due(held.issued_at + 0.81 * SHORTEST_SECONDS) == ["r"]
    renewed = path.read_text()
    assert renewed != first
    assert authenticated(cluster, first)  # a renewal leaves the old token valid until it expires
    assert authenticated(cluster, renewed)
    tokens.rotate("r")
    rotated = path.read_text()
    assert authenticated(cluster, rotated)
    # The old Secret is gone: its tokens are refused once the server's 10 s cache lets go.
    cluster.wait_for(lambda: not authenticated(cluster, renewed), 30, "the rotated-away token refused")


def authenticated(cluster: RealCluster, token: str) -> bool:
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    status, _ = cluster.as_token(token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review)
    return status == 201


def service_account(cluster: RealCluster, namespace: str, name: str) -> None:
    cluster.ensure({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    metadata = {"name": name, "namespace": namespace}
    cluster.ensure({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata})
