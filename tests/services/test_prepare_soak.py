# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A short soak of the kubelet plugin (testkit/soak.py; ``make bench`` runs 10,000 cycles): after a
warm-up long enough for the in-memory API server's bounded history of changes to fill, 160 cycles
of two mixed claims on a simulated node, a whole card, a MIG instance, an MPS share and a
time-slicing share each prepared and unprepared 80 times. Nothing may be left behind: no open file,
thread, CDI spec, plugin file, checkpoint entry, claim or MPS daemon Pod more than after the
warm-up, and resident memory grows by little (docs/RELIABILITY.md: about 130 bytes a claim, which
CPython 3.12's pathlib keeps)."""

from __future__ import annotations

from pathlib import Path

from testkit.soak import soak

CYCLES = 160
WARMUP = 150  # about 7 API changes a cycle: the history of 1000 is full by then
RSS_GROWTH_MIB = 2.0  # 320 claims: a leak of 7 kB a claim or more fails


def test_prepare_and_unprepare_leave_nothing_behind(tmp_path: Path) -> None:
    result = soak(tmp_path, CYCLES, warmup=WARMUP)
    assert result.kinds == {"whole": 80, "MIG": 80, "MPS share": 80, "time-slicing share": 80}
    drift = result.drift()
    assert {key: value for key, value in drift.items() if key != "rss_mib" and value} == {}
    assert drift["rss_mib"] < RSS_GROWTH_MIB, result.rss_trend
