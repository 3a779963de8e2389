# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler runs on every GPU node: what it imports is memory on every one of them."""

from __future__ import annotations

from tests.support.imported_packages import heavy_packages_imported


def test_the_handler_serves_the_kubelet_without_grpcio_or_the_kubernetes_client():
    # grpcio's C core was about 10 MiB of the handler's memory (adapters/unix_grpc serves instead);
    # the kubernetes client package is for the kubeconfig mode only (adapters/kube_client_transport).
    heavy = ("grpc", "kubernetes", "pydantic", "aiohttp")
    assert heavy_packages_imported("deckhouse_gpu.cmd.handler", heavy) == []
