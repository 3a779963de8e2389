# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Selector results for a whole cluster, evaluated once per group of devices that look alike.

A class's selector is evaluated on every device of every node when a report asks about every
class at once (``kubectl gpu capacity``, DESIGN.md D12): a hundred thousand devices times tens of
classes. Most selectors read a few values of ``device`` (its driver, ``deviceType``, ``device``, a
capacity), which ``CompiledSelector.device_reads`` names; devices holding the same values there,
and whose CEL view is valid, get the same result from each such selector (KUBERNETES-FACTS.md F3.1). So
devices are grouped once by the values every selector reads, each selector is evaluated on one
device per group, and the result is what the allocator would compute for every device of the
group. A selector that may read anything is evaluated device by device.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from deckhouse_gpu.k8s_semantics.allocator.cel_matcher import CelMatcher
from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorFailure
from deckhouse_gpu.k8s_semantics.cel import SelectorError
from deckhouse_gpu.k8s_semantics.cel.device_reads import ReadPlan
from deckhouse_gpu.k8s_semantics.resources.model import Device

FAILS: Final = None  # a selector that fails to evaluate: the allocator's attempt ends there

Verdict = bool | None  # True, False or FAILS


class SelectorGroups:
    """Groups devices by what ``expressions`` read, and evaluates them per group."""

    def __init__(self, matcher: CelMatcher, expressions: Iterable[str]) -> None:
        self.matcher = matcher
        self._per_device: set[str] = set()
        reads: set[tuple[str, ...]] = set()
        for expression in expressions:
            try:
                compiled = matcher.engine.compile(expression)
            except SelectorError:
                continue  # fails alike on every device: any one of a group shows it
            if compiled.device_reads is None:
                self._per_device.add(expression)
            else:
                reads |= compiled.device_reads
        self._reads = tuple(sorted(reads))
        self._plans: dict[str, ReadPlan] = {}  # per driver
        self._ids: dict[tuple[Any, ...], int] = {}
        self.first: list[Device] = []  # the device each group was first seen with
        self._verdicts: dict[tuple[str, int], Verdict] = {}
        self._cache_key = ("selector-group", object())  # this instance's entry in device caches

    def group(self, device: Device) -> int:
        """The device's group, computed once per device."""
        found: int | None = device.cache.get(self._cache_key)
        if found is None:
            plan = self._plans.get(device.driver)
            if plan is None:
                plan = self._plans[device.driver] = ReadPlan(self._reads, device.driver)
            ids = self._ids
            found = ids.setdefault((device.driver, plan.key(device.raw)), len(ids))
            if found == len(self.first):
                self.first.append(device)
            device.cache[self._cache_key] = found
        return found

    def per_group(self, expressions: Sequence[str]) -> bool:
        """Whether every one of ``expressions`` can be judged per group."""
        return not any(expression in self._per_device for expression in expressions)

    def verdict(self, expression: str, group: int) -> Verdict:
        """The expression's result on every device of the group."""
        key = (expression, group)
        if key not in self._verdicts:
            self._verdicts[key] = self.evaluate(expression, self.first[group])
        return self._verdicts[key]

    def evaluate(self, expression: str, device: Device) -> Verdict:
        """The expression on one device, with the allocator's per-device cache."""
        cached: bool | None = device.cache.get(expression)
        if cached is None:
            try:
                cached = device.cache[expression] = self.matcher.matches(expression, device)
            except SelectorFailure:
                return FAILS
        return cached

    def all_of(self, expressions: Sequence[str], device: Device) -> Verdict:
        """The selectors in the allocator's order (``checks.selectors_match``): the first that is
        false decides, a failure before any false one fails."""
        grouped = self.per_group(expressions)
        group = self.group(device) if grouped else -1
        for expression in expressions:
            verdict = self.verdict(expression, group) if grouped else self.evaluate(expression, device)
            if verdict is not True:
                return verdict
        return True

    def warm(self, expressions: Sequence[str], devices: Iterable[Device]) -> None:
        """Puts every result the group knows into the devices' own caches, so that the allocator
        (which looks there first) evaluates none of them again; failures stay uncached, so the
        allocator meets them itself, where the scheduler would."""
        if not self.per_group(expressions):
            return
        for device in devices:
            group = self.group(device)
            for expression in expressions:
                verdict = self.verdict(expression, group)
                if verdict is FAILS:
                    break
                device.cache[expression] = verdict
                if not verdict:
                    break
