# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler runs on every GPU node: what it imports is memory on every one of them."""

from __future__ import annotations

from tests.support.imported_packages import heavy_packages_imported

# aiohttp (the kubernetes client's asyncio variant) and h2 (a second HTTP/2 stack) have no place in
# any mode of the handler. pydantic is not listed: it comes with the kubernetes client's models.
NEVER = ("aiohttp", "h2")


def test_the_kubelet_plugin_is_served_by_grpcio():
    found = heavy_packages_imported("deckhouse_gpu.adapters.kubelet.kubelet_grpc", ("grpc", *NEVER))
    assert found == ["grpc"]


def test_the_command_loads_grpcio_only_for_the_plugin():
    # The driver validator DaemonSet (validate-driver) and the prestart init container run the same
    # command on every GPU node without serving the kubelet: grpcio (about 11 MiB) waits for `run`.
    assert heavy_packages_imported("deckhouse_gpu.cmd.gpu_handler.main", ("grpc", *NEVER)) == []
