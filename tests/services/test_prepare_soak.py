# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A short soak of the kubelet plugin (testkit/soak.py; ``make bench`` runs 10,000 cycles): 200
cycles of two mixed claims on a simulated node, a whole card, a MIG instance, an MPS share and a
time-slicing share each prepared and unprepared 100 times. Nothing may be left behind: no open
file, thread, CDI spec, plugin file, checkpoint entry, claim or MPS daemon Pod more than after
the warm-up, and resident memory (this process holds the in-memory API server too) grows by
little."""

from __future__ import annotations

from pathlib import Path

from testkit.soak import soak

CYCLES = 200
RSS_GROWTH_MIB = 8.0  # the API's bounded history of changes fills up; a leak of 1 kB a claim is 0.4


def test_prepare_and_unprepare_leave_nothing_behind(tmp_path: Path) -> None:
    result = soak(tmp_path, CYCLES)
    assert result.kinds == {"whole": 100, "MIG": 100, "MPS share": 100, "time-slicing share": 100}
    drift = result.drift()
    assert {key: value for key, value in drift.items() if key != "rss_mib" and value} == {}
    assert drift["rss_mib"] < RSS_GROWTH_MIB, result.rss_trend
