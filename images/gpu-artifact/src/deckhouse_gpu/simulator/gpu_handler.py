# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler-sim: gpu-handler on a simulated GPU node, against any API server.

gpu-handler-sim run --node-name w1 --kubeconfig ~/.kube/config --nvml-sim a30,a30 --host-root /tmp/host
gpu-handler-sim snapshot --dry-run --nvml-sim a30 --physicalgpus pgpu.yaml [--assume-driver-ready]

Every command and flag of gpu-handler, with ``--nvml-sim MODELS`` in place of ``--nvml-library``.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from deckhouse_gpu.cmd.gpu_handler import main as handler
from deckhouse_gpu.simulator.node_hardware import SIMULATED


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return handler.parse_args(argv, SIMULATED)


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    return handler.main(argv, out, hardware=SIMULATED)


if __name__ == "__main__":
    sys.exit(main())
