# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What ClientKube's tests share: a fake API server, a client logged in to it, and small bodies."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deckhouse_gpu.adapters.kube_client import ClientKube, load_kube
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, Resource
from testkit import kubeconfig as support_kubeconfig
from testkit.fake_apiserver import FakeApiServer, RecordedRequest

WIDGETS = Resource("example.com", "v1", "widgets", "Widget", namespaced=True)
RESOURCES = (NODES, EVENTS, PHYSICAL_GPUS, WIDGETS)
GPUS_PATH = "/apis/gpu.deckhouse.io/v1alpha1/physicalgpus"
TOKEN = "secret-token"


def write_kubeconfig(directory, server_url: str) -> str:
    return support_kubeconfig.write_kubeconfig(directory, server_url, TOKEN)


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(resources=RESOURCES) as running:
        yield running


@pytest.fixture
def kube(server, tmp_path) -> Iterator[ClientKube]:
    client = load_kube(write_kubeconfig(tmp_path, server.url), connect_timeout=1, read_timeout=5)
    yield client
    client.close()


def gpu(name, labels=None):
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"index": 0}}


def last(server: FakeApiServer) -> RecordedRequest:
    return server.requests[-1]
