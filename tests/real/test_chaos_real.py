# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module's four components survive faults of a real control plane (tests/real/chaos_real.py).

A real kubelet of the version runs the stream's Pods (whole, MIG, VFIO, MPS and time-sliced
claims). A short seeded run per version here; ``make chaos-real`` runs longer ones and collects the
figures of docs/RELIABILITY.md. Replay a failure with ``CHAOS_REAL_SEED`` (and
``CHAOS_REAL_FAULTS``), both printed with it. The watch cache is off on the 1.36 run; the 1.35
run may be upgraded to 1.36 under the components. The 1.36 run's node starts with the sharing label.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

from testkit.real_cluster import KUBELET_VERSIONS
from tests.real.chaos_real import chaos, require_assets

FAULTS = int(os.environ.get("CHAOS_REAL_FAULTS", "3"))


@pytest.mark.parametrize("version", KUBELET_VERSIONS, ids=[f"k8s-{v}" for v in KUBELET_VERSIONS])
def test_components_survive_a_seeded_run_of_control_plane_faults(version: str) -> None:
    require_assets(version)
    seed = int(os.environ.get("CHAOS_REAL_SEED", random.randrange(1 << 30)))  # noqa: S311
    print(f"chaos-real: CHAOS_REAL_SEED={seed} CHAOS_REAL_FAULTS={FAULTS} on {version}")
    # Short: gpu-handler's kubelet sockets live under the simulated host root (107 bytes).
    workdir = Path(tempfile.mkdtemp(prefix="chaos-"))
    try:
        # The 1.36 run starts on a sharing node (MPS and time-sliced shares first), the 1.35 run on
        # whole cards, MIG and VFIO: the short runs together see every kind of claim.
        report = chaos(
            version, seed, FAULTS, workdir, watch_cache=version != "1.36", sharing_first=version == "1.36"
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    figures = report.figures()
    print(json.dumps(figures))
    if target := os.environ.get("CHAOS_REAL_REPORT"):
        with Path(target).open("a") as out:
            out.write(json.dumps(figures | {"faults": report.faults}) + "\n")
    assert len(report.faults) == FAULTS
    assert all("recoverySeconds" in fault for fault in report.faults)
    # Every fault came with a Pod of the stream started before it (or, mid-prepare, under it).
    assert figures["podsStarted"] == FAULTS, report.replay()
    assert report.stop_exit == dict.fromkeys(report.stop_exit, 0), report.replay()
    assert len(report.stop_exit) == 4
    # Flat, with room for a pooled connection or a cache that filled: a watch or memory leaked per
    # fault would grow with the run (make chaos-real's longer runs make the margin small).
    for name, (first, last) in report.connections.items():
        assert last <= 2 * first + 2, f"{name}: {first} connections open at the start, {last} at the end"
    for name, (first, last) in report.rss_kib.items():
        assert last <= 1.5 * first, f"{name}: {first} KiB resident at the start, {last} KiB at the end"
