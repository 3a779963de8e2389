# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What counting claims on a node depends on, as one number (``capacity_of``): nodes with equal
numbers get equal counts, so a cluster of alike nodes is counted once.

Per candidate device: its selector group (which tells every grouped selector's result), its
shape (everything of it the search reads, but its names), whether it is in use and what its
shares hold, and the counter sets it draws from; per counter set, what is left. Names of pools
and counter sets are replaced by their order of appearance, so that alike nodes look the same.

A device's group, shape and counter sets never change: they are computed once per device and
kept in its cache. A node's pool is then read in bulk, by ``map`` over its devices rather than a
Python loop (500 nodes of 8 H100 have 104,000 devices): with a pool's counters (1.35), a pool
whose devices look the same as one seen before, counter sets named alike, is the same number
without numbering its counter sets again.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import compress, count
from operator import attrgetter, itemgetter
from typing import Any

from deckhouse_gpu.k8s_semantics.allocator.gather import Gathered, Pool
from deckhouse_gpu.k8s_semantics.allocator.search_pass import CounterKey
from deckhouse_gpu.k8s_semantics.allocator.selector_groups import SelectorGroups
from deckhouse_gpu.k8s_semantics.resources.model import Device
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState

_CACHE = attrgetter("cache")
_KEY = attrgetter("key")
_LOOKS = ("looks",)  # the kinds of things numbered, so that no two kinds share a number
_POOL = ("pool",)


class NodeLooks:
    """Numbers nodes by what counting on them depends on (see the module docstring)."""

    def __init__(self, semantics: Semantics, state: AllocatedState, groups: SelectorGroups) -> None:
        self.semantics = semantics
        self.state = state
        self.groups = groups
        self._ids: dict[Any, int] = {}  # shapes, looks, pools, counters left and nodes, numbered
        self._cache_key = (_LOOKS, object())  # this instance's entry in the devices' caches
        self._cached = itemgetter(self._cache_key)
        self._shapes: dict[Any, tuple[int, Device]] = {}  # by the identity of their parts (shape)
        self._pools: dict[tuple[Any, ...], tuple[int, tuple[tuple[str, str], ...]]] = {}

    def number(self, gathered: Gathered, available: dict[CounterKey, dict[str, Fraction]]) -> int:
        shown: list[Any] = [bool(gathered.invalid)]
        sets: dict[CounterKey, None] = {}  # in order of appearance
        for pool in gathered.pools:
            pool_key = f"{pool.driver}/{pool.name}"  # as counters.counter_keys names them
            looks, scoped = self._pool(pool)
            sets.update(dict.fromkeys((pool_key, scope, name) for scope, name in scoped))
            shown.append((pool.invalid is not None, pool.incomplete, looks, self._used(pool)))
        for key in sets:
            counters = tuple(sorted(available[key].items())) if key in available else None
            shown.append(self._ids.setdefault(counters, len(self._ids)))
        return self._ids.setdefault(tuple(shown), len(self._ids))

    def _pool(self, pool: Pool) -> tuple[int, tuple[tuple[str, str], ...]]:
        """The pool's devices as one number, and its counter sets (scope, name) in the order of
        the numbers that number gives them."""
        caches = list(map(_CACHE, pool.candidates))
        try:
            statics = tuple(map(self._cached, caches))
        except KeyError:  # devices met for the first time
            for device in pool.candidates:
                if self._cache_key not in device.cache:
                    self.static(device)
            statics = tuple(map(self._cached, caches))
        if self.semantics.pool_counters:  # every device's counters live in the pool: scope ""
            found = self._pools.get(statics)
            if found is None:
                found = self._pools[statics] = self._numbered(statics, [""] * len(statics))
            return found
        # 1.34: a device's counters live in its own slice, named after the node
        return self._numbered(statics, [pool.scope(device, self.semantics) for device in pool.candidates])

    def _numbered(
        self, statics: tuple[Any, ...], scopes: list[str]
    ) -> tuple[int, tuple[tuple[str, str], ...]]:
        numbers: dict[tuple[str, str], int] = {}
        pattern = tuple(
            (looks, tuple([numbers.setdefault((scope, name), len(numbers)) for name in names]))
            for (looks, names), scope in zip(statics, scopes, strict=True)
        )
        return self._ids.setdefault((_POOL, pattern), len(self._ids)), tuple(numbers)

    def _used(self, pool: Pool) -> tuple[Any, ...]:
        """The positions of the devices in use, and of those with shares with what they hold."""
        in_use, shares = self.state.in_use, self.state.shares
        if not in_use and not shares:
            return ()
        keys = list(map(_KEY, pool.candidates))
        taken = tuple(compress(count(), map(in_use.__contains__, keys)))
        if not shares:
            return (taken,)
        held = tuple((i, tuple(sorted(s.items()))) for i, s in enumerate(map(shares.get, keys)) if s)
        return (taken, held)

    def static(self, device: Device) -> tuple[int, tuple[str, ...]]:
        """The device's selector group and shape as one number, and the names of the counter
        sets it draws from: what never changes, computed once per device (its cache keeps it)."""
        consumes = device.consumes
        parts = (tuple([id(c) for _, c in consumes]), id(device.capacity), device.taints)
        flags = (device.allow_multiple, device.binding_conditions)
        known = self._shapes.get((parts, flags))
        if known is None:
            known = self._shapes[parts, flags] = (self.shape(device), device)
        looks = self._ids.setdefault((_LOOKS, self.groups.group(device), known[0]), len(self._ids))
        found = device.cache[self._cache_key] = (looks, tuple([s for s, _ in consumes]))
        return found

    def shape(self, device: Device) -> int:
        """Everything of a device the search reads, but its names, as a number. ``static`` finds
        it by the identity of the device's parts (maps of counters and capacities are shared by
        the devices that declare the same ones, ``model.SliceParts``), with a device holding
        those parts, which keeps them alive and their ids unique."""
        # Quantities by their text: equal values written differently only make shapes differ.
        consumes = tuple(tuple((n, q.text) for n, q in c.items()) for _, c in device.consumes)
        capacity = tuple((n, c.value.text, c.policy) for n, c in device.capacity.items())
        shape = (consumes, capacity, device.taints, device.allow_multiple, device.binding_conditions)
        return self._ids.setdefault(shape, len(self._ids))
