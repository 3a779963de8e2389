# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler runs on every GPU node: what it imports is memory on every one of them."""

from __future__ import annotations

from tests.support.imported_packages import heavy_packages_imported


def test_the_handler_serves_the_kubelet_with_grpcio_and_loads_no_asyncio_http_stack():
    # grpcio serves the kubelet's sockets (adapters/kubelet_grpc), so it is expected. aiohttp (the
    # kubernetes client's asyncio variant) and h2 (a second HTTP/2 stack) have nothing to do in the
    # handler. pydantic is not listed: it comes with the kubernetes client's models.
    found = heavy_packages_imported("deckhouse_gpu.cmd.handler", ("grpc", "aiohttp", "h2"))
    assert found == ["grpc"]
