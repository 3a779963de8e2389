# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A full or read-only disk at every change gpu-handler makes to its files (issue 16, item 2).

A fault-free prepare and unprepare of each scenario counts the changes (testkit/disk_faults.py):
the node lock, each checkpoint save, the CDI spec, the device metadata files, a VFIO payload and
ledger entry, each delete. Then, on a fresh node each time, the disk fills up (ENOSPC) or turns
read-only (EROFS) at the n-th change and stays so. After the call:

- the kubelet gets an error naming the file and the system's words ("No space left on device",
  "Read-only file system");
- no file is torn: every file whose write failed holds what it held before (or is still absent),
  no temporary file is left, the checkpoint decodes;
- the node and the checkpoint agree as after an NVML fault (tests/e2e/fault_checks.py), and once
  there is room again the kubelet's next calls converge where a fault-free run does.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.files.checkpoint_file import FileCheckpointStore
from testkit.disk_faults import ENOSPC, EROFS, DiskFaults
from testkit.kubeconfig import write_kubeconfig
from tests.e2e.fault_checks import Reference, after_prepare_failed, converge, reference, same
from tests.e2e.fault_node import SCENARIOS, FaultNode, Scenario
from tests.e2e.sim_node import PLUGIN_DIR
from tests.e2e.test_prepare_crash_vfio import server

__all__ = ["server"]  # the module's fake API server (bound here for pytest)

# Whole cards and shares write the same files as a MIG claim, with fewer checkpoint saves.
DISK_SCENARIOS = [s for s in SCENARIOS if s.name in ("mig", "mps", "vfio")]


def roots(node: FaultNode) -> tuple[Path, Path]:
    return node.root / PLUGIN_DIR, node.root / "etc/cdi"


def changes_of(node: FaultNode, disk: DiskFaults) -> tuple[int, int]:
    """How many changes a fault-free prepare and its unprepare make."""
    service = node.service()
    assert node.prepare(service) == ""
    prepared = len(disk.changes)
    assert node.unprepare(service) == ""
    return prepared, len(disk.changes) - prepared


def torn(node: FaultNode, disk: DiskFaults) -> list[str]:
    problems = []
    for base in roots(node):
        problems += [f"temporary file left: {p}" for p in base.rglob(".*.tmp")]
    for target, before in disk.failed_writes.items():
        now = Path(target).read_bytes() if Path(target).exists() else None
        if now != before:
            problems.append(f"{target} changed by a failed write: {before!r} -> {now!r}")
    store = FileCheckpointStore(node.root / PLUGIN_DIR / "checkpoint.json", host_root=node.root)
    if reason := store.load().corrupt_reason:
        problems.append(f"the checkpoint does not decode: {reason}")
    return problems


def one_fault(node: FaultNode, disk: DiskFaults, ref: Reference, op: str, index: int, code: int) -> list[str]:
    service = node.service()
    if op == "unprepare" and node.prepare(service):
        return ["the fault-free prepare before the unprepare failed"]
    disk.arm(len(disk.changes) + index, code)
    error = node.prepare(service) if op == "prepare" else node.unprepare(service)
    if not disk.active:
        return ["the change was not reached"]
    problems = torn(node, disk) + node.leaks()
    if not error:
        # ENOSPC met only deletes from there on, which a full disk allows.
        if code != ENOSPC:
            return [*problems, "the fault was swallowed: the call succeeded"]
        return problems + same(
            node, ref.prepared if op == "prepare" else ref.released, "after the harmless fault"
        )
    if os.strerror(code) not in error or str(node.root) not in error:
        problems.append(f"the error does not name the file and the failure: {error!r}")
    if op == "prepare":
        problems += after_prepare_failed(node, ref)
    if op == "unprepare" and node.entry() is None:
        problems.append(
            "a failed unprepare dropped the entry: the kubelet's retry would find nothing to undo"
        )
    return problems + converge(node, service, ref, op, disk.clear)


@pytest.mark.parametrize("op", ["prepare", "unprepare"])
@pytest.mark.parametrize("scenario", DISK_SCENARIOS, ids=[s.name for s in DISK_SCENARIOS])
def test_a_full_or_read_only_disk_at_every_file_change(server, tmp_path, monkeypatch, scenario: Scenario, op):
    ref = reference(server, tmp_path, scenario)
    kubeconfig = write_kubeconfig(tmp_path, server.url)
    disk = DiskFaults(())
    disk.install(monkeypatch)
    counted = FaultNode(tmp_path / "count", kubeconfig, server, scenario)
    disk.reset(roots(counted))
    in_prepare, in_unprepare = changes_of(counted, disk)
    problems = []
    for index in range(in_prepare if op == "prepare" else in_unprepare):
        for code in (ENOSPC, EROFS):
            node = FaultNode(tmp_path / f"{index}-{code}", kubeconfig, server, scenario)
            disk.reset(roots(node))
            found = one_fault(node, disk, ref, op, index, code)
            problems += [
                f"#{index} {os.strerror(code)}: {problem} ({disk.changes[-1:]})" for problem in found
            ]
    assert not problems, "\n".join(problems)
