# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's prepare service in a process of its own, for the crash tests.

It builds the service exactly as ``gpu-handler run`` does (the same command line, parsed by the
handler, and ``plugin_wiring.build_prepare``: checkpoint, node lock, CDI root, persistent
simulated MIG state under ``--host-root``, the API through ``--kubeconfig``) but serves no
socket: the test drives it with one JSON object per line on stdin and reads one per line on
stdout. It can SIGKILL itself at a chosen point of one kind of call, or pause there:

    python -m tests.e2e.prepare_launcher --trap-in prepare --trap-at step:create-mig -- \\
        --node-name w1 --kubeconfig K --nvml-sim a30,a30 --host-root ROOT

Points: ``step:<name>`` (a prepare step boundary, the service's ``after_step``), ``save:<n>``
(after the n-th checkpoint save of the call), ``mig:<n>`` (after the n-th MIG change of the
call returned, before anything records it), ``share:<n>`` (after the n-th change of a card's
sharing setting or of an MPS daemon) and ``vfio:<n>`` (after the n-th PCI function moved to
vfio-pci or given back to its driver, before anything records it).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from deckhouse_gpu.adapters.kube.kube_client import load_kube
from deckhouse_gpu.adapters.process import json_logging
from deckhouse_gpu.cmd.gpu_handler import wiring as handler_wiring
from deckhouse_gpu.cmd.gpu_handler.plugin_wiring import build_prepare
from deckhouse_gpu.domain.config.card_setting import CardSetting
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, Decoded
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance
from deckhouse_gpu.domain.prepare.mps import MpsDaemon
from deckhouse_gpu.ports.checkpoint import CheckpointStore
from deckhouse_gpu.ports.clock import SystemClock
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.mig import MigControl
from deckhouse_gpu.ports.sharing import CardSettings, MpsDaemons
from deckhouse_gpu.ports.vfio import VfioHost
from deckhouse_gpu.services.prepare.service import PrepareService
from deckhouse_gpu.simulator import gpu_handler as gpu_handler_sim


class Trap:
    """Fires (kills, or pauses) at one point of the armed call; counts saves and MIG changes."""

    def __init__(self, point: str, hold_seconds: float = 0.0, marker: str | None = None) -> None:
        self.kind, _, self.value = point.partition(":")
        self.hold_seconds, self.marker = hold_seconds, marker
        self.armed = False
        self.counts = {"save": 0, "mig": 0, "share": 0, "vfio": 0}

    def arm(self, armed: bool) -> None:
        self.armed = armed
        self.counts = {"save": 0, "mig": 0, "share": 0, "vfio": 0}

    def step(self, name: str) -> None:
        if self.armed and self.kind == "step" and self.value == name:
            self.fire()

    def count(self, kind: str) -> None:
        if not self.armed:
            return
        self.counts[kind] += 1
        if self.kind == kind and self.counts[kind] == int(self.value):
            self.fire()

    def fire(self) -> None:
        if self.hold_seconds:
            if self.marker:
                Path(self.marker).write_text(str(os.getpid()))
            time.sleep(self.hold_seconds)
            return
        os.kill(os.getpid(), signal.SIGKILL)  # no undo, no finally, no flush: a crash


class TrappedStore:
    """The handler's checkpoint store, counting saves; anything else the port grows is passed on."""

    def __init__(self, inner: CheckpointStore, trap: Trap) -> None:
        self.inner, self.trap = inner, trap

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def load(self) -> Decoded:
        return self.inner.load()

    def corrupted_before(self) -> bool:
        return self.inner.corrupted_before()

    def save(self, checkpoint: Checkpoint) -> None:
        self.inner.save(checkpoint)
        self.trap.count("save")


class TrappedMig:
    """The handler's MIG control, counting changes once they are made, before anyone records them."""

    def __init__(self, inner: MigControl, trap: Trap) -> None:
        self.inner, self.trap = inner, trap

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def mig_enabled(self, card: str) -> bool:
        return self.inner.mig_enabled(card)

    def set_mig_mode(self, card: str, enabled: bool) -> None:
        self.inner.set_mig_mode(card, enabled)
        self.trap.count("mig")

    def card_busy(self, card: str) -> bool:
        return self.inner.card_busy(card)

    def instances(self, card: str) -> list[MigInstance]:
        return self.inner.instances(card)

    def create_instance(self, card: str, profile_id: int, placement_start: int) -> MigInstance:
        instance = self.inner.create_instance(card, profile_id, placement_start)
        self.trap.count("mig")
        return instance

    def destroy_instance(self, card: str, gpu_instance_id: int, compute_instance_id: int) -> None:
        self.inner.destroy_instance(card, gpu_instance_id, compute_instance_id)
        self.trap.count("mig")


class TrappedSettings:
    """The handler's card settings, counting changes ("share") once they are made."""

    def __init__(self, inner: CardSettings, trap: Trap) -> None:
        self.inner, self.trap = inner, trap

    def read(self, card: str, setting: CardSetting) -> str | None:
        return self.inner.read(card, setting)

    def apply(self, card: str, setting: CardSetting, value: str) -> None:
        self.inner.apply(card, setting, value)
        self.trap.count("share")


class TrappedDaemons:
    """The handler's MPS daemons, counting starts and stops ("share") once they are made."""

    def __init__(self, inner: MpsDaemons, trap: Trap) -> None:
        self.inner, self.trap = inner, trap

    def running(self) -> dict[str, MpsDaemon]:
        return self.inner.running()

    def start(self, daemon: MpsDaemon) -> bool:
        created = self.inner.start(daemon)
        self.trap.count("share")
        return created

    def ready(self, daemon: MpsDaemon) -> bool:
        return self.inner.ready(daemon)

    def stop(self, name: str) -> None:
        self.inner.stop(name)
        self.trap.count("share")


class TrappedVfio:
    """The handler's sysfs side of VFIO, counting moves ("vfio") once the kernel made them."""

    def __init__(self, inner: VfioHost, trap: Trap) -> None:
        self.inner, self.trap = inner, trap

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def bind_vfio(self, address: str) -> None:
        self.inner.bind_vfio(address)
        self.trap.count("vfio")

    def restore(self, address: str, driver: str | None) -> None:
        self.inner.restore(address, driver)
        self.trap.count("vfio")


def build(handler_argv: list[str], trap: Trap) -> PrepareService:
    args = gpu_handler_sim.parse_args(["run", *handler_argv])
    api = load_kube(args.kubeconfig)
    addresses = handler_wiring.node_gpu_addresses(args, api)
    nvml = handler_wiring.make_nvml(args, addresses)
    service, _, _ = build_prepare(args, api, nvml, SystemClock(), offers=None)
    service.after_step = trap.step
    service.store = TrappedStore(service.store, trap)
    service.mig = TrappedMig(service.mig, trap)
    if service.sharing is not None:
        host = service.sharing
        settings, daemons = TrappedSettings(host.settings, trap), TrappedDaemons(host.daemons, trap)
        service.sharing = replace(host, settings=settings, daemons=daemons, poll_interval=0.01)
    if service.vfio is not None:
        service.vfio = replace(service.vfio, host=TrappedVfio(service.vfio.host, trap), poll_interval=0.01)
    return service


def serve(service: PrepareService, trap: Trap, armed_in: str, emit: Callable[[Any], None]) -> None:
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        claims = [ClaimRef(*claim) for claim in command.get("claims", [])]
        trap.arm(op == armed_in)
        if op == "start":
            service.start()
            emit("started")
        elif op == "prepare":
            results = service.prepare(claims)
            emit(
                {
                    uid: {
                        "error": r.error,
                        "devices": {d.device_name: list(d.cdi_device_ids) for d in r.devices},
                    }
                    for uid, r in results.items()
                }
            )
        elif op == "unprepare":
            emit(service.unprepare(claims))
        else:
            raise ValueError(f"unknown op {op!r}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="prepare_launcher")
    parser.add_argument("--trap-in", default="", help="start, prepare or unprepare: the call the trap is in")
    parser.add_argument(
        "--trap-at", default="none:0", help="step:<name>, save:<n>, mig:<n>, share:<n>, vfio:<n>"
    )
    parser.add_argument("--hold-seconds", type=float, default=0.0, help="pause there instead of dying")
    parser.add_argument("--hold-marker", help="a file written when the pause begins")
    parser.add_argument("handler_argv", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    json_logging.configure("prepare-launcher", "warning")  # logs to stderr; stdout is the protocol
    trap = Trap(options.trap_at, options.hold_seconds, options.hold_marker)
    service = build([a for a in options.handler_argv if a != "--"], trap)

    def emit(value: Any) -> None:
        print(json.dumps({"result": value}), flush=True)

    emit("ready")
    serve(service, trap, options.trap_in, emit)


if __name__ == "__main__":
    main()
