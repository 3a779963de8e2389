# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The whole stack under API server faults (testkit/chaos_world.py), CI-sized (one run at 5 % and
one at 20 %): the state it ends in equals the fault-free run's, no write is duplicated, nothing
crashes or spins (testkit/chaos_checks.py). ``make chaos`` prints the full table
(benchmarks/chaos.py) and fails on the same checks."""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter

import pytest

from benchmarks import chaos as make_chaos
from testkit.chaos import KINDS, Chaos
from testkit.chaos_checks import problems
from testkit.chaos_world import ChaosRun, run_chaos
from testkit.fake_apiserver import RecordedRequest


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


@pytest.mark.parametrize(("seed", "rate"), [(7, 0.05), (11, 0.2)])
def test_the_stack_converges_to_the_fault_free_state(baseline: ChaosRun, seed: int, rate: float) -> None:
    run = run_chaos(seed, rate, baseline)
    assert problems(run, baseline) == []


def test_the_checks_fail_a_run_that_diverges_or_breaks_an_invariant(baseline: ChaosRun) -> None:
    """What ``make chaos`` and the test above judge by can fail: a copy of the fault-free run with
    one claim unprepared, a write made twice, a crash, a dead thread, no fault at 20 %."""
    final = copy.deepcopy(baseline.phases["final"])
    final["claims"]["training"]["devices"] = []
    broken = dataclasses.replace(
        baseline,
        rate=0.2,
        phases={**baseline.phases, "final": final},
        creates=Counter({**baseline.creates, "resourceclaims/x": 2}),
        crashes=["Traceback: boom"],
        dead=[*baseline.dead, "gpu-handler w1"],
    )
    assert problems(broken, baseline) == [
        "end state differs in claims",
        "created more than once: resourceclaims/x",
        "uncaught exception: Traceback: boom",
        "component thread died: gpu-handler w1",
        "no fault injected at rate 0.2: the run proves nothing",
    ]


def test_make_chaos_exits_non_zero_when_a_run_fails(
    monkeypatch: pytest.MonkeyPatch, baseline: ChaosRun
) -> None:
    def broken_run(seed: int, rate: float, reference: ChaosRun | None = None) -> ChaosRun:
        if rate == 0.0:
            return baseline
        return dataclasses.replace(baseline, seed=seed, rate=rate, crashes=["Traceback: boom"])

    monkeypatch.setattr(make_chaos, "run_chaos", broken_run)
    assert make_chaos.main(["--seeds", "1", "--rates", "0.2"]) == 1
    monkeypatch.setattr(make_chaos, "run_chaos", lambda seed, rate, reference=None: baseline)
    assert make_chaos.main(["--seeds", "1", "--rates", "0.0"]) == 0


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
