# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""`make bench`: figures for the node components, printed, never asserted."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from benchmarks import (
    allocator,
    api_load,
    cel_engines,
    cold_parse,
    controllers,
    fuzz,
    handler,
    kubectl_gpu,
    kubelet_socket,
    mig_packing,
    node_agent,
    prepare,
    real_scheduler,
    slices,
    soak,
    webhook,
)
from benchmarks.common import build_host


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="gpu-bench-") as tmp:
        workdir = Path(tmp)
        host = build_host(workdir / "host")
        node_agent.run(host, workdir)
        handler.run(host, workdir)
        controllers.run(workdir)
        slices.run()
    prepare.run()
    kubelet_socket.run()
    cel_engines.run()
    allocator.run()
    cold_parse.run()
    kubectl_gpu.run()
    webhook.run()
    soak.run()
    fuzz.run()
    # Real binaries: the API load of simulated nodes and the controllers' memory (minutes), then
    # kube-scheduler at 40 nodes (SCHEDULER_NODES=40,200 adds 200: tens of minutes more) and the
    # MIG packing stream.
    api_load.run()
    sizes = tuple(int(n) for n in os.environ.get("SCHEDULER_NODES", "40").split(","))
    real_scheduler.run(sizes, ("claim template", "MIG 1g.10gb"), ("plain", "default", "typical"))
    mig_packing.run()


if __name__ == "__main__":
    main()
