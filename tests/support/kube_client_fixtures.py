# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What ClientKube's tests share: a fake API server, a client logged in to it, and small bodies.

Every test that takes ``kube`` runs twice: through a kubeconfig (plain HTTP) and as in a pod (the
in-cluster configuration: HTTPS with the pod's CA and token), so both ways the ``kubernetes`` client
is configured answer to the same behaviour."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.kube.kube_client import ClientKube, load_kube
from deckhouse_gpu.adapters.kube.kube_transport import in_cluster_transport
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, Resource
from testkit import kubeconfig as support_kubeconfig
from testkit.fake_apiserver import FakeApiServer, RecordedRequest
from tests.adapters.process.admission_tls import issue

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", namespaced=True)
RESOURCES = (NODES, EVENTS, PHYSICAL_GPUS, WIDGETS)
GPUS_PATH = "/apis/gpu.deckhouse.io/v1alpha1/physicalgpus"
TOKEN = "secret-token"


def write_kubeconfig(directory, server_url: str) -> str:
    return support_kubeconfig.write_kubeconfig(directory, server_url, TOKEN)


@pytest.fixture(params=["kubeconfig", "in-cluster"])
def server(request, tmp_path: Path) -> Iterator[FakeApiServer]:
    tls = None
    if request.param == "in-cluster":
        issued = issue("kubernetes.default.svc")
        for name, content in (("ca.crt", issued.ca), ("tls.crt", issued.crt), ("tls.key", issued.key)):
            (tmp_path / name).write_bytes(content)
        (tmp_path / "token").write_text(TOKEN)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    with FakeApiServer(resources=RESOURCES, tls=tls) as running:
        yield running


@pytest.fixture
def kube(server, tmp_path) -> Iterator[ClientKube]:
    if server.url.startswith("https://"):
        host, _, port = server.url.removeprefix("https://").rpartition(":")
        env = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
        client = ClientKube(in_cluster_transport(env, tmp_path), connect_timeout=1, read_timeout=5)
    else:
        client = load_kube(write_kubeconfig(tmp_path, server.url), connect_timeout=1, read_timeout=5)
    yield client
    client.close()


def gpu(name, labels=None):
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"index": 0}}


def last(server: FakeApiServer) -> RecordedRequest:
    return server.requests[-1]
