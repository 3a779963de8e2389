# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-dra-controller's Prometheus metrics.

Gauges are read from the caches at every scrape (nothing stale outlives a deleted claim) and only
by the leader; the histogram of time to allocation and the attempt counter are recorded as things
happen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from deckhouse_gpu.domain.allocation.audit import KINDS, Violation
from deckhouse_gpu.domain.allocation.metrics import allocated_groups, seconds_to_allocate
from deckhouse_gpu.domain.allocation.not_prepared import not_prepared
from deckhouse_gpu.ports.clock import Clock
from deckhouse_gpu.ports.kube import Object

RESULTS = ("allocated", "unschedulable", "waiting", "error")
# Claims wait for pods, nodes and drivers: seconds to many minutes.
ALLOCATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)


class _Gauges(Collector):
    def __init__(
        self,
        claims: Callable[[], Iterable[Object] | None],
        violations: Callable[[], list[Violation] | None],
        is_leader: Callable[[], bool],
        monotonic: Callable[[], float],
    ) -> None:
        self._claims = claims
        self._violations = violations
        self._is_leader = is_leader
        self._monotonic = monotonic
        # Claim UID -> when a scrape first found it allocated but not prepared. The claim records no
        # time of its allocation, so the age counts from this replica's first sight (a new leader
        # starts afresh: an alert on it comes late, never early).
        self._waiting_since: dict[str, float] = {}

    def collect(self) -> Iterator[Metric]:
        leader = GaugeMetricFamily(
            "d8_gpu_dra_controller_is_leader",
            "1 when this gpu-dra-controller replica holds the lease, else 0",
        )
        leader.add_metric([], 1.0 if self._is_leader() else 0.0)
        yield leader
        claims = self._claims()
        if claims is not None:
            devices = GaugeMetricFamily(
                "d8_gpu_allocated_devices",
                "Devices of gpu.deckhouse.io allocated to claims, by DeviceClass, node and mode",
                labels=["device_class", "node", "mode"],
            )
            for group, count in sorted(allocated_groups(claims).items(), key=lambda item: repr(item[0])):
                devices.add_metric([group.device_class, group.node, group.mode], float(count))
            yield devices
            yield from self._not_prepared(claims)
        violations = self._violations()
        if violations is not None:
            found = GaugeMetricFamily(
                "d8_gpu_allocation_invariant_violations",
                "Violations of the allocation invariant found by the last audit, by kind",
                labels=["kind"],
            )
            for kind in KINDS:
                found.add_metric([kind], float(sum(1 for v in violations if v.kind == kind)))
            yield found

    def _not_prepared(self, claims: Iterable[Object]) -> Iterator[Metric]:
        now = self._monotonic()
        waiting = not_prepared(claims)
        self._waiting_since = {w.uid: self._waiting_since.get(w.uid, now) for w in waiting}
        count = GaugeMetricFamily(
            "d8_gpu_allocated_claims_not_prepared",
            "Claims allocated devices of gpu.deckhouse.io and reserved for a Pod whose devices gpu-handler "
            "has not reported prepared, by node",
            labels=["node"],
        )
        oldest = GaugeMetricFamily(
            "d8_gpu_allocated_claims_not_prepared_max_age_seconds",
            "How long the longest-waiting of those claims has been seen so, by node",
            labels=["node"],
        )
        by_node: dict[str, list[float]] = {}
        for claim in waiting:
            by_node.setdefault(claim.node, []).append(now - self._waiting_since[claim.uid])
        for node, ages in sorted(by_node.items()):
            count.add_metric([node], float(len(ages)))
            oldest.add_metric([node], max(ages))
        yield count
        yield oldest


class DraMetrics:
    def __init__(
        self,
        claims: Callable[[], Iterable[Object] | None],
        violations: Callable[[], list[Violation] | None],
        is_leader: Callable[[], bool],
        clock: Clock,
    ) -> None:
        self.clock = clock
        self.registry = CollectorRegistry()
        self.registry.register(_Gauges(claims, violations, is_leader, clock.monotonic))
        self.attempts = Counter(
            "d8_gpu_dra_controller_allocation_attempts",
            "Allocation attempts of claims the scheduler never allocates, by result",
            ["result"],
            registry=self.registry,
        )
        for result in RESULTS:
            self.attempts.labels(result)
        self.time_to_allocation = Histogram(
            "d8_gpu_claim_allocation_seconds",
            "Time from a claim's creation to its allocation, for claims seen unallocated first",
            buckets=ALLOCATION_BUCKETS,
            registry=self.registry,
        )

    def observe_attempt(self, result: str) -> None:
        self.attempts.labels(result).inc()

    def observe_allocated(self, claim: Object) -> None:
        seconds = seconds_to_allocate(claim, self.clock.now())
        if seconds is not None:
            self.time_to_allocation.observe(seconds)
