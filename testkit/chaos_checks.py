# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What makes a chaos run (testkit/chaos_world.py) a failure, for the CI test (tests/e2e/test_chaos.py)
and ``make chaos`` (benchmarks/chaos.py) alike: an end state other than the fault-free run's, a
write made twice, an uncaught exception or a dead component thread, a component that spun (sent far
more requests than the faults explain), or a faulty run in which no fault was injected."""

from __future__ import annotations

from testkit.chaos_world import ChaosRun


def duplicated(run: ChaosRun) -> list[str]:
    # Events are recorded per occurrence; every other object is created once in these runs.
    return [key for key, count in run.creates.items() if count > 1 and not key.startswith("events/")]


def unbounded(run: ChaosRun, baseline: ChaosRun) -> list[str]:
    """Components that sent more than twice the fault-free run's requests plus a few per fault."""
    return [
        f"{component}: {sent} requests (fault-free {baseline.requests[component]}, faults {faults})"
        for component, sent in run.requests.items()
        if sent > 2 * baseline.requests[component] + 5 * (faults := run.faults_by_component[component]) + 20
    ]


def diverging(run: ChaosRun, baseline: ChaosRun) -> list[str]:
    """The parts of the end state that differ from the fault-free run's."""
    final, expected = run.phases.get("final", {}), baseline.phases["final"]
    return [
        f"end state differs in {part}"
        for part in sorted(set(final) | set(expected))
        if final.get(part) != expected.get(part)
    ]


def problems(run: ChaosRun, baseline: ChaosRun) -> list[str]:
    """Everything wrong with ``run`` against the fault-free ``baseline``; empty when it held."""
    found = diverging(run, baseline)
    found += [f"created more than once: {key}" for key in duplicated(run)]
    found += [f"uncaught exception: {crash}" for crash in run.crashes]
    found += [f"component thread died: {name}" for name in sorted(set(run.dead) - set(baseline.dead))]
    found += [f"unbounded requests: {line}" for line in unbounded(run, baseline)]
    if run.rate > 0 and sum(run.faults.values()) == 0:
        found.append(f"no fault injected at rate {run.rate:g}: the run proves nothing")
    return found
