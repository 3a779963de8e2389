# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler runs on every GPU node: what it imports is memory on every one of them."""

from __future__ import annotations

import subprocess
import sys


def test_the_handler_serves_the_kubelet_without_grpcio_or_the_kubernetes_client():
    # grpcio's C core was about 10 MiB of the handler's memory (adapters/unix_grpc serves instead);
    # the kubernetes client package is for the kubeconfig mode only (adapters/kube_client_transport).
    heavy = "('grpc', 'kubernetes', 'pydantic', 'aiohttp')"
    code = (
        "import sys, deckhouse_gpu.cmd.handler; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules if m.split('.')[0] in {heavy}}}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
