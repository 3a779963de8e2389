# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

# ruff: noqa: N802 -- the stand-in library's methods carry the C function names
"""The event functions of the stand-in libnvidia-ml.so (tests/support/fake_pynvml.py): event sets,
registering cards for events, and waiting for the events a test queues with ``xid``.

As NVML does, an event reaches every open set its card is registered in; a wait with nothing queued
answers NVML_ERROR_TIMEOUT at once (the tests never sleep), and ``wait_code`` makes the next wait
fail with that code instead.
"""

from __future__ import annotations

import ctypes
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import pynvml

from tests.support.fake_nvml_cards import NOT_SUPPORTED, Card, decode_handle

TIMEOUT = 10  # NVML_ERROR_TIMEOUT
NO_INSTANCE = 0xFFFFFFFF  # gpuInstanceId and computeInstanceId of an event of the whole card


@dataclass
class EventSet:
    registered: dict[int, int] = field(default_factory=dict)  # card index -> event types
    queue: deque[tuple[int, int, int]] = field(default_factory=deque)  # (card index, type, data)
    freed: bool = False
    waits: list[int] = field(default_factory=list)  # the timeouts asked for, in ms


def _set_id(event_set: Any) -> int:
    return int(ctypes.cast(event_set, ctypes.c_void_p).value or 0)


class EventFunctions:
    """NVML's event calls over ``cards``; ``no_events`` cards answer NOT_SUPPORTED when registered."""

    cards: list[Card]
    event_sets: dict[int, EventSet]
    no_events: set[int]
    wait_code: int

    def nvmlEventSetCreate(self, ref: Any) -> int:
        number = len(self.event_sets) + 1
        self.event_sets[number] = EventSet()
        pointer = ctypes.c_void_p(0x7000 + number)
        ctypes.memmove(ctypes.addressof(ref._obj), ctypes.byref(pointer), ctypes.sizeof(pointer))
        return 0

    def _set(self, event_set: Any) -> EventSet:
        found = self.event_sets[_set_id(event_set) - 0x7000]
        assert not found.freed, "an event set used after nvmlEventSetFree"
        return found

    def nvmlDeviceRegisterEvents(self, handle: Any, types: Any, event_set: Any) -> int:
        index = decode_handle(handle)[0]
        code = self.cards[index].fail.get("nvmlDeviceRegisterEvents", 0)
        if code or index in self.no_events:
            return code or NOT_SUPPORTED
        registered = self._set(event_set).registered
        registered[index] = registered.get(index, 0) | types.value
        return 0

    def nvmlEventSetWait_v2(self, event_set: Any, ref: Any, timeout_ms: Any) -> int:
        found = self._set(event_set)
        found.waits.append(timeout_ms.value)
        if self.wait_code:
            code, self.wait_code = self.wait_code, 0
            return code
        if not found.queue:
            return TIMEOUT
        index, kind, data = found.queue.popleft()
        event = ref._obj
        event.device = ctypes.cast(ctypes.c_void_p(index + 1), pynvml.c_nvmlDevice_t)
        event.eventType, event.eventData = kind, data
        event.gpuInstanceId = event.computeInstanceId = NO_INSTANCE
        return 0

    def nvmlEventSetFree(self, event_set: Any) -> int:
        self._set(event_set).freed = True
        return 0

    def xid(self, index: int, number: int, kind: int = pynvml.nvmlEventTypeXidCriticalError) -> int:
        """The driver reports Xid ``number`` on card ``index``; returns the sets that got it."""
        sets = [s for s in self.event_sets.values() if not s.freed and s.registered.get(index, 0) & kind]
        for found in sets:
            found.queue.append((index, kind, number))
        return len(sets)
