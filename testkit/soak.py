# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The prepare soak: many prepare/unprepare cycles of mixed claims on one simulated node, and what
the process and the node hold before and after (``make bench`` prints it, tests/services/
test_prepare_soak.py asserts it on a short run).

The node (testkit/prepare_world.py) has two A30s. Every cycle prepares two claims, one per card,
then unprepares both and deletes them; the pairs rotate so that each card sees every kind, and
every change of mode in both directions: a whole card, a MIG 1g.6gb instance (the card switched
to MIG mode and back), an MPS share (a daemon Pod started and stopped) and a time-slicing share
(the interval set and reset). A snapshot counts this process's open file descriptors, threads and
resident memory, the files under the CDI root and the plugin directories, the checkpoint's size
and the API objects the cycles leave (claims, MPS daemon Pods); the first one is taken after a
short warm-up that fills the caches and imports.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import PODS, RESOURCE_CLAIMS
from deckhouse_gpu.services.prepare.service import PrepareService
from testkit.prepare_world import (
    MPS_NAMESPACE,
    PLUGIN_DIR,
    PrepareWorld,
    allocate,
    allocate_share,
    build_world,
)

CARDS = {"0000:17:00.0": "a30", "0000:31:00.0": "a30"}
API = "gpu.deckhouse.io/v1alpha1"
WARMUP_CYCLES = 20


def _whole(card: str) -> Callable[[PrepareWorld, str], dict[str, Any]]:
    return lambda world, name: allocate(world.api, name, f"gpu-{card}")


def _mig(card: str) -> Callable[[PrepareWorld, str], dict[str, Any]]:
    return lambda world, name: allocate(world.api, name, f"gpu-{card}-mig-1g-6gb-0")


def _share(card: str, sharing: dict[str, Any]) -> Callable[[PrepareWorld, str], dict[str, Any]]:
    parameters = {"apiVersion": API, "kind": "GPUConfig", "sharing": sharing}
    return lambda world, name: allocate_share(world.api, name, f"gpu-{card}", "50", parameters)


_A, _B = "0000-17-00-0", "0000-31-00-0"
MPS = {"strategy": "MPS"}
SLICED = {"strategy": "TimeSlicing", "timeSlicing": {"interval": "Short"}}
# (kind, claim builder) per card, one pair per cycle in turn.
PAIRS = [
    (("whole", _whole(_A)), ("MPS share", _share(_B, MPS))),
    (("MIG", _mig(_A)), ("time-slicing share", _share(_B, SLICED))),
    (("MPS share", _share(_A, MPS)), ("whole", _whole(_B))),
    (("time-slicing share", _share(_A, SLICED)), ("MIG", _mig(_B))),
]


@dataclass(frozen=True)
class Snapshot:
    # Which descriptors and threads exist, not how many: a leak is one that was not there before
    # and still is; what other tests of the same process close or end meanwhile is not a drift.
    open_fds: frozenset[str]
    threads: frozenset[int]
    rss_mib: float
    cdi_files: int
    plugin_files: int
    checkpoint_bytes: int
    claims: int
    daemon_pods: int


def _files(*roots: Path) -> int:
    return sum(len(files) for root in roots for _, _, files in os.walk(root))


def _descriptors() -> frozenset[str]:
    """Each open descriptor as ``<number>:<what it points at>``, so a reused number counts anew."""
    found = set()
    for number in os.listdir("/proc/self/fd"):
        try:
            found.add(f"{number}:{os.readlink(f'/proc/self/fd/{number}')}")
        except OSError:  # the one listdir itself had open, closed already
            continue
    return frozenset(found)


def _rss_mib() -> float:
    for entry in Path("/proc/self/status").read_text().splitlines():
        if entry.startswith("VmRSS:"):
            return int(entry.split()[1]) / 1024
    return 0.0


class SoakNode:
    def __init__(self, root: Path) -> None:
        self.world = build_world(root, CARDS)
        self.service: PrepareService = self.world.service()
        self.service.start()
        self.cycles = 0
        self.kinds: dict[str, int] = {}

    def cycle(self) -> None:
        """One cycle: two claims prepared, both unprepared and deleted; raises on any error."""
        refs = []
        for index, (kind, build) in enumerate(PAIRS[self.cycles % len(PAIRS)]):
            claim = build(self.world, f"soak-{self.cycles}-{index}")
            ref = ClaimRef("ns", claim["metadata"]["uid"], claim["metadata"]["name"])
            result = self.service.prepare([ref])[ref.uid]
            if result.error:
                raise RuntimeError(f"cycle {self.cycles}: prepare of {kind} failed: {result.error}")
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
            refs.append(ref)
        errors = self.service.unprepare(refs)
        if any(errors.values()):
            raise RuntimeError(f"cycle {self.cycles}: unprepare failed: {errors}")
        for ref in refs:
            self.world.api.delete(RESOURCE_CLAIMS, ref.name, namespace=ref.namespace)
        self.world.settings.calls.clear()  # the simulated card settings' log of calls, for tests
        self.cycles += 1

    def snapshot(self) -> Snapshot:
        gc.collect()
        world = self.world
        plugin_dirs = (world.checkpoint_path.parent, world.root / "host" / PLUGIN_DIR.lstrip("/"))
        checkpoint = world.checkpoint_path
        return Snapshot(
            open_fds=_descriptors(),
            threads=frozenset(thread.ident or 0 for thread in threading.enumerate()),
            rss_mib=round(_rss_mib(), 1),
            cdi_files=_files(world.cdi_root),
            plugin_files=_files(*plugin_dirs),
            checkpoint_bytes=checkpoint.stat().st_size if checkpoint.exists() else 0,
            claims=len(world.api.list(RESOURCE_CLAIMS).items),
            daemon_pods=len(world.api.list(PODS, namespace=MPS_NAMESPACE).items),
        )


@dataclass(frozen=True)
class SoakResult:
    cycles: int
    seconds: float
    start: Snapshot
    end: Snapshot
    kinds: dict[str, int]
    rss_trend: list[float]  # resident MiB after each tenth of the cycles: flat, or a leak

    def drift(self) -> dict[str, float]:
        """The change of each figure; for descriptors and threads, how many are new and still open."""
        before, after = asdict(self.start), asdict(self.end)
        return {
            key: len(after[key] - before[key])
            if isinstance(before[key], frozenset)
            else round(after[key] - before[key], 1)
            for key in before
        }


def soak(root: Path, cycles: int, warmup: int = WARMUP_CYCLES) -> SoakResult:
    """``cycles`` cycles after ``warmup`` ones, with the snapshots around them."""
    node = SoakNode(root)
    for _ in range(warmup):
        node.cycle()
    node.kinds.clear()
    start = node.snapshot()
    started = time.perf_counter()
    trend = []
    for index in range(cycles):
        node.cycle()
        if (index + 1) % max(1, cycles // 10) == 0:
            trend.append(round(_rss_mib(), 1))
    seconds = time.perf_counter() - started
    return SoakResult(cycles, seconds, start, node.snapshot(), dict(node.kinds), trend)
