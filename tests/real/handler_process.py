# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""``gpu-handler run`` in a process of its own, for the real-kubelet tests, with a way into its
simulated NVML: the only thing added to the real command is a reader of stdin that breaks and
repairs the simulated cards of this very process (a card's NVML is in the handler's memory; no
other process can reach it). Everything else is ``deckhouse_gpu.simulator.gpu_handler.main``:

    python -m tests.real.handler_process run --node-name N --kubeconfig K --nvml-sim a30,a30 ...

Commands, one per line: ``fail_device <PCI address>`` (the card stays enumerated, every query of
it fails, as a card fallen off the bus) and ``clear`` (every failure repaired). Each is answered
on stdout with ``ok <command>`` once applied.
"""

from __future__ import annotations

import argparse
import sys
import threading

from deckhouse_gpu.cmd.gpu_handler import wiring as handler_wiring
from deckhouse_gpu.ports.nvml import NVML
from deckhouse_gpu.simulator import gpu_handler
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML

_made: list[SimulatedNVML] = []
_ready = threading.Event()
_real_make_nvml = handler_wiring.make_nvml


def _make_nvml(args: argparse.Namespace, addresses: list[str]) -> NVML:
    nvml = _real_make_nvml(args, addresses)
    if isinstance(nvml, SimulatedNVML):
        _made.append(nvml)
        _ready.set()
    return nvml


def _control() -> None:
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        _ready.wait()
        nvml = _made[0]
        if words[0] == "fail_device":
            nvml.fail_device(words[1], "GPU is lost")
        elif words[0] == "clear":
            nvml.clear_failures()
        else:
            print(f"unknown {line.strip()}", flush=True)
            continue
        print(f"ok {line.strip()}", flush=True)


def main() -> int:
    handler_wiring.make_nvml = _make_nvml  # the handler looks it up on the module at each call
    threading.Thread(target=_control, daemon=True, name="sim-control").start()
    return gpu_handler.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
