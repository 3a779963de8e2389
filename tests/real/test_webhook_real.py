# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The admission webhook called by the real API server (issue 38, item 3), on 1.34, 1.35 and 1.36.

A ``gpu-dra-controller run`` process serves its webhook on loopback with a certificate of a test
CA; the chart's ValidatingWebhookConfiguration (rendered with that CA as the webhook certificate
hook would give it) is applied with its service reference replaced by the loopback URL, and
narrowed to this test's objects (an object selector on a label of ours, a namespace selector on
its namespace): nothing another test creates on the shared cluster reaches it. Then the server
decides: ResourceClaims, ResourceClaimTemplates and DeviceClasses with a bad gpu.deckhouse.io
config are refused with our message, as the server words a webhook's denial; good ones and
another driver's config (the chart's match conditions) are stored.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deckhouse_gpu.services.allocation.config_admission import review
from testkit.real_cluster import VERSIONS, ApiError, Clusters, RealCluster
from testkit.real_pki import Pki
from testkit.waiting import free_port
from tests.module.helm_render_sets import with_webhook_values
from tests.real.component_world import Component, start
from tests.real.conftest import cluster_of
from tests.services.allocation.config_admission_objects import MAKERS, MPS, NVIDIA, TOO_HIGH, ours, theirs
from tests.services.allocation.config_admission_objects import request as admission_request
from tests.support.helm_chart import render

WEBHOOK = "opaque-config.gpu.deckhouse.io"
RESOURCE = "resource.k8s.io/v1"
ADMISSION = "admissionregistration.k8s.io/v1"


def webhook_configuration(
    ca: str, crt: str, key: str, url: str, token: str, namespace: str
) -> dict[str, Any]:
    """The chart's ValidatingWebhookConfiguration with our CA, calling ``url``, for our objects only."""
    values = with_webhook_values()
    values["gpu"]["internal"]["webhookCert"] = {"ca": ca, "crt": crt, "key": key}
    (config,) = [o for o in render(values).objects if o["kind"] == "ValidatingWebhookConfiguration"]
    config = copy.deepcopy(config)
    config["metadata"]["name"] = f"{config['metadata']['name']}-{token}"
    for hook in config["webhooks"]:
        client = hook["clientConfig"]
        hook["clientConfig"] = {"url": f"{url}{client['service']['path']}", "caBundle": client["caBundle"]}
        hook["objectSelector"] = {"matchLabels": {"gpu-test/webhook": token}}
        hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return config


class Webhook:
    def __init__(self, cluster: RealCluster, directory: Path) -> None:
        self.cluster = cluster
        self.token = secrets.token_hex(3)
        self.namespace = f"whk-{self.token}"
        pki = Pki(directory / "webhook-pki")  # the test CA: not the cluster's
        served = pki.issue("webhook", "gpu-dra-controller", hosts=["127.0.0.1"])
        port = free_port()
        self.controller: Component = start(
            "gpu-dra-controller",
            "deckhouse_gpu.cmd.gpu_dra_controller.main",
            ["run", "--kubeconfig", str(cluster.admin_kubeconfig), "--no-leader-elect",
             "--namespace", self.namespace, f"--webhook-address=127.0.0.1:{port}",
             "--tls-cert-file", str(served.crt), "--tls-key-file", str(served.key)],
            directory / "logs",
            probes_flag="--listen-address",
        )  # fmt: skip
        self.config = webhook_configuration(
            pki.ca.read_text(),
            served.crt.read_text(),
            served.key.read_text(),
            f"https://127.0.0.1:{port}",
            self.token,
            self.namespace,
        )

    def start(self) -> None:
        self.cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})
        self.controller.wait_ready(90)
        self.cluster.create(self.config)

    def stop(self) -> None:
        try:
            self.cluster.delete(
                "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", self.name
            )
            self.cluster.delete("v1", "Namespace", self.namespace)
        finally:
            self.controller.stop()

    @property
    def name(self) -> str:
        return str(self.config["metadata"]["name"])

    def labelled(self, obj: dict[str, Any], name: str) -> dict[str, Any]:
        labelled = copy.deepcopy(obj)
        labelled["metadata"] = {"name": f"{name}-{self.token}", "labels": {"gpu-test/webhook": self.token}}
        if obj["kind"] != "DeviceClass":
            labelled["metadata"]["namespace"] = self.namespace
        return labelled

    def create(self, obj: dict[str, Any]) -> Any:
        """Creates ``obj`` for real and deletes it again (the test keeps nothing)."""
        created = self.cluster.create(obj)
        self.cluster.delete(RESOURCE, obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
        return created

    def refusal(self, obj: dict[str, Any]) -> ApiError:
        with pytest.raises(ApiError) as refused:
            self.create(obj)
        return refused.value


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"k8s-{v}" for v in VERSIONS])
def webhook(
    request: pytest.FixtureRequest, clusters: Clusters, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Webhook]:
    """One gpu-dra-controller and one webhook configuration per version, for every case."""
    cluster = cluster_of(clusters, str(request.param))
    started = Webhook(cluster, tmp_path_factory.mktemp(f"webhook-{cluster.version}"))
    try:
        started.start()
        yield started
    finally:
        started.stop()


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_the_api_server_refuses_a_bad_config_with_the_webhooks_answer(webhook: Webhook, kind: str) -> None:
    bad = webhook.labelled(MAKERS[kind](theirs(), ours(TOO_HIGH)), "bad")
    refused = webhook.refusal(bad)
    ours_said = review(admission_request(bad))
    assert ours_said["allowed"] is False
    # The server passes on our status: its code and our message, after the webhook's name.
    assert refused.status == ours_said["status"]["code"] == 422
    expected = f'admission webhook "{WEBHOOK}" denied the request: {ours_said["status"]["message"]}'
    assert refused.body["message"] == expected, refused.body
    assert "150 is above the maximum 100" in expected


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_the_api_server_stores_a_good_config_and_another_drivers(webhook: Webhook, kind: str) -> None:
    good = webhook.labelled(MAKERS[kind](theirs(), ours(MPS)), "good")
    assert webhook.create(good)["metadata"]["name"] == good["metadata"]["name"]
    # Another driver's nonsense is not ours to judge: the chart's match conditions skip the call.
    assert review(admission_request(MAKERS[kind](theirs(NVIDIA))))["allowed"] is True
    other = webhook.labelled(MAKERS[kind](theirs(NVIDIA)), "other")
    webhook.create(other)


def test_the_webhook_is_called_only_for_the_objects_it_selects(webhook: Webhook) -> None:
    """Unlabelled, the same bad claim is stored: the refusals above came from this webhook, and
    it cannot disturb the other tests of the shared cluster."""
    bad = webhook.labelled(MAKERS["ResourceClaim"](ours(TOO_HIGH)), "unlabelled")
    del bad["metadata"]["labels"]
    webhook.create(bad)


pytestmark = pytest.mark.real_cluster
