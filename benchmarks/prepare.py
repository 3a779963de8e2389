# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""NodePrepare/NodeUnprepare latency with the simulated NVML (target: Physical p50 < 10 ms).

Measured on the real pipeline: node lock, checkpoint load and atomic saves with fsync, API reads
of the claim and the node's PhysicalGPUs (in-memory API), MIG create/destroy, CDI discovery and
the atomic write of the claim's spec. Shares add the card's sharing settings (simulated) and, for
MPS, the daemon Pod created, run by a simulated kubelet and polled until Ready, then deleted and
waited for at unprepare; the real figure adds the daemon's own start, which only a card shows.
VFIO adds the checks (sysfs reads of the IOMMU group, NVML's processes), the card and its audio
function moved to vfio-pci by the simulated kernel (each recorded in the checkpoint and the ledger
first), the QEMU hook payload, and at unprepare both given back and NVML seeing the card again; a
real kernel's unbind and probe of the nvidia driver (seconds on a large card) only a node shows.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from deckhouse_gpu.domain.config import features
from deckhouse_gpu.ports.dra_plugin import ClaimRef, PrepareResult
from deckhouse_gpu.services.prepare.service import PrepareService
from testkit.prepare_world import PrepareWorld, allocate, allocate_share, build_world
from testkit.vfio_world import allocate_vfio, build_vfio_world

ROUNDS = 100
CONFIG_API = "gpu.deckhouse.io/v1alpha1"
# One share per round, alone on the card: each prepare sets the card up for its strategy (and
# starts the MPS daemon), each unprepare gives it back, the costliest path of a share.
SHARES: dict[str, tuple[str, dict[str, Any]]] = {
    "MPS share A30 25 %": ("25", {"strategy": "MPS"}),
    "TimeSlicing share A30 50 % (Short)": (
        "50",
        {"strategy": "TimeSlicing", "timeSlicing": {"interval": "Short"}},
    ),
}


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def show(name: str, samples: list[float]) -> None:
    p50, p99 = statistics.median(samples), percentile(samples, 0.99)
    print(f"  {name:<52} p50 {p50:7.2f} ms   p99 {p99:7.2f} ms   n={len(samples)}")


def measure(devices: list[str], label: str, root: Path) -> None:
    measure_claims(label, root, lambda world, name: allocate(world.api, name, *devices))


def measure_share(label: str, percent: str, sharing: dict[str, Any], root: Path) -> None:
    parameters = {"apiVersion": CONFIG_API, "kind": "GPUConfig", "sharing": sharing}
    world = measure_claims(
        label,
        root,
        lambda world, name: allocate_share(world.api, name, "gpu-0000-17-00-0", percent, parameters),
    )
    # Each round must really have set the card up and given it back, or the figure measures nothing.
    strategy = features.named(sharing["strategy"])
    assert strategy is not None
    assert strategy.card_setting is not None
    change = strategy.card_setting.name
    made = sum(1 for call in world.settings.calls if call[0] == change)
    if made != 2 * ROUNDS:
        raise RuntimeError(f"{label}: {made} {change} calls in {ROUNDS} rounds, expected {2 * ROUNDS}")


def measure_claims(
    label: str, root: Path, claim_of: Callable[[PrepareWorld, str], dict[str, Any]]
) -> PrepareWorld:
    world = build_world(root, {"0000:17:00.0": "a30", "0000:31:00.0": "h100-80gb"})
    service = world.service()
    prepare: list[float] = []
    unprepare: list[float] = []
    for round_ in range(ROUNDS):
        claim = claim_of(world, f"{label}-{round_}")
        ref = ClaimRef("ns", claim["metadata"]["uid"], claim["metadata"]["name"])
        prepare.append(timed(partial(prepare_one, service, ref)))
        unprepare.append(timed(partial(service.unprepare, [ref])))
    show(f"{label}: prepare", prepare)
    show(f"{label}: unprepare", unprepare)
    return world


def measure_vfio(label: str, root: Path) -> None:
    """A whole A30 for a virtual machine (VFIOConfig) per round, given back at unprepare."""
    node = build_vfio_world(root, {"0000:17:00.0": "a30", "0000:31:00.0": "h100-80gb"})
    service = node.service()
    prepare: list[float] = []
    unprepare: list[float] = []
    for round_ in range(ROUNDS):
        claim = allocate_vfio(node.world.api, f"vm-{round_}", "gpu-0000-17-00-0")
        ref = ClaimRef("ns", claim["metadata"]["uid"], claim["metadata"]["name"])
        prepare.append(timed(partial(prepare_one, service, ref)))
        unprepare.append(timed(partial(service.unprepare, [ref])))
    # Each round must really have moved both functions there and back, or the figure measures nothing.
    if len(node.events) != 8 * ROUNDS:
        raise RuntimeError(
            f"{label}: {len(node.events)} driver moves in {ROUNDS} rounds, expected {8 * ROUNDS}"
        )
    show(f"{label}: prepare", prepare)
    show(f"{label}: unprepare", unprepare)


def prepare_one(service: PrepareService, ref: ClaimRef) -> PrepareResult:
    return service.prepare([ref])[ref.uid]


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    result = call()
    elapsed = (time.perf_counter() - started) * 1000
    if getattr(result, "error", ""):
        raise RuntimeError(f"prepare failed in the benchmark: {result}")
    return elapsed


def run() -> None:
    print("kubelet plugin: prepare and unprepare (simulated NVML, files on this machine's disk)")
    cases = {
        "Physical A30": ["gpu-0000-17-00-0"],
        "MIG A30 1g.6gb": ["gpu-0000-17-00-0-mig-1g-6gb-0"],
        "MIG H100 2 x 1g.10gb": ["gpu-0000-31-00-0-mig-1g-10gb-0", "gpu-0000-31-00-0-mig-1g-10gb-1"],
    }
    for label, devices in cases.items():
        with tempfile.TemporaryDirectory(prefix="gpu-bench-prepare-") as tmp:
            measure(devices, label, Path(tmp))
    for label, (percent, sharing) in SHARES.items():
        with tempfile.TemporaryDirectory(prefix="gpu-bench-prepare-") as tmp:
            measure_share(label, percent, sharing, Path(tmp))
    with tempfile.TemporaryDirectory(prefix="gpu-bench-prepare-") as tmp:
        measure_vfio("VFIO A30 + audio function (VFIOConfig)", Path(tmp))
