# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The whole stack under API server faults (testkit/chaos_world.py), CI-sized: the state it ends
in equals the fault-free run's, no write is duplicated, nothing crashes or spins. ``make chaos``
prints the full table (benchmarks/chaos.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from testkit.chaos import KINDS, Chaos
from testkit.chaos_world import ChaosRun, run_chaos
from testkit.fake_apiserver import RecordedRequest


def duplicated(run: ChaosRun) -> list[str]:
    # Events are recorded per occurrence; every other object is created once in these runs.
    return [key for key, count in run.creates.items() if count > 1 and not key.startswith("events/")]


def bounded(run: ChaosRun, baseline: ChaosRun) -> list[str]:
    """Components that sent more than twice the fault-free run's requests plus a few per fault."""
    return [
        f"{component}: {sent} requests (fault-free {baseline.requests[component]}, faults {faults})"
        for component, sent in run.requests.items()
        if sent > 2 * baseline.requests[component] + 5 * (faults := run.faults_by_component[component]) + 20
    ]


@pytest.fixture(scope="module")
def baseline() -> ChaosRun:
    return run_chaos(seed=1, rate=0.0)


def test_the_fault_free_run_allocates_and_prepares(baseline: ChaosRun) -> None:
    final = baseline.phases["final"]
    assert len(final["physicalgpus"]) == 5
    assert final["resourceslices"]
    for claim in ("inference", "training"):
        assert final["claims"][claim]["allocation"]
        assert final["claims"][claim]["devices"]
    assert sum(baseline.faults.values()) == 0
    assert baseline.crashes == []


@pytest.mark.parametrize(("seed", "rate"), [(7, 0.05), (11, 0.05)])
def test_the_stack_converges_to_the_fault_free_state(baseline: ChaosRun, seed: int, rate: float) -> None:
    run = run_chaos(seed, rate, baseline)
    assert sum(run.faults.values()) > 0
    assert run.phases["final"] == baseline.phases["final"]
    assert duplicated(run) == []
    assert run.crashes == []
    assert set(run.dead) <= set(baseline.dead), "a component thread died"
    assert bounded(run, baseline) == []


def request(method: str, path: str, watch: bool = False) -> RecordedRequest:
    return RecordedRequest(method, path, {"watch": "true"} if watch else {}, None, None, "Bearer c")


def test_faults_follow_the_seed_and_the_rate_and_fit_the_request() -> None:
    paths = [f"/api/v1/nodes/n{i}" for i in range(2000)]
    first = [Chaos(3, 0.2).choose(request("PATCH", p)) for p in paths]
    assert first == [Chaos(3, 0.2).choose(request("PATCH", p)) for p in paths]
    assert 0.15 < sum(kind is not None for kind in first) / len(paths) < 0.25
    assert set(first) - {None} == set(KINDS) - {"gone"}  # 410 only ends watches
    reads = Counter(Chaos(3, 0.5).choose(request("GET", p)) for p in paths)
    assert "conflict" not in reads  # 409 only answers writes
    assert "gone" not in reads
    watches = Counter(Chaos(3, 0.5).choose(request("GET", p, watch=True)) for p in paths)
    assert watches["gone"] > 0
    assert all(Chaos(3, 0.0).choose(request("GET", p)) is None for p in paths[:50])
    with pytest.raises(ValueError, match="rate"):
        Chaos(1, 1.5)
