# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""RealXidEvents: NVML event sets for critical Xid errors, through the real nvidia-ml-py bindings
over the stand-in libnvidia-ml.so (tests/support/fake_pynvml.py, fake_nvml_events.py)."""

from __future__ import annotations

import logging

import pynvml
import pytest

from deckhouse_gpu.adapters.nvml.nvml_events import RealXidEvents
from deckhouse_gpu.ports.nvml import NVMLError, NVMLUnavailable, XidEvent
from tests.support import fake_pynvml
from tests.support.fake_nvml_events import TIMEOUT
from tests.support.fake_pynvml import DRIVER_NOT_LOADED, GPU_IS_LOST, Card, FakeLibrary, real_nvml

fresh_bindings = fake_pynvml.fresh_bindings

A30, T4, GONE = "0000:17:00.0", "0000:b1:00.0", "0000:ca:00.0"


def library() -> FakeLibrary:
    return FakeLibrary(Card(), Card(bus_id="00000000:B1:00.0", uuid="GPU-t4", mig=None, profiles=[]))


def test_cards_are_registered_for_critical_xids_and_events_name_the_card():
    fake = library()
    subscription = RealXidEvents(real_nvml(fake)).open_xid_events([A30, T4])
    assert subscription.registered == (A30, T4)
    (event_set,) = fake.event_sets.values()
    assert event_set.registered == {
        0: pynvml.nvmlEventTypeXidCriticalError,
        1: pynvml.nvmlEventTypeXidCriticalError,
    }

    assert subscription.wait(0.5) is None  # NVML_ERROR_TIMEOUT: nothing happened
    assert fake.xid(1, 79) == 1
    fake.xid(0, 48)
    assert subscription.wait(0.5) == XidEvent(T4, 79)
    assert subscription.wait(0.5) == XidEvent(A30, 48)
    assert event_set.waits == [500, 500, 500]  # the timeout reaches NVML in milliseconds

    subscription.close()
    subscription.close()  # twice is harmless
    assert event_set.freed


def test_a_card_without_event_support_is_skipped_with_one_line(caplog):
    fake = library()
    fake.no_events.add(1)
    with caplog.at_level(logging.INFO, logger="deckhouse_gpu.adapters.nvml.nvml_events"):
        subscription = RealXidEvents(real_nvml(fake)).open_xid_events([A30, T4])
    assert subscription.registered == (A30,)
    lines = [r.getMessage() for r in caplog.records if getattr(r, "pciAddress", None) == T4]
    assert lines == ["Xid events: the card does not support them; its Xid errors are not watched"]
    assert fake.xid(1, 79) == 0  # not registered: NVML delivers nothing for it


def test_a_lost_or_unknown_card_is_skipped_and_the_others_are_watched():
    fake = library()
    fake.cards[1].fail["nvmlDeviceRegisterEvents"] = GPU_IS_LOST
    subscription = RealXidEvents(real_nvml(fake)).open_xid_events([GONE, A30, T4])
    assert subscription.registered == (A30,)


def test_nvml_unavailable_fails_the_whole_call():
    fake = FakeLibrary(Card(), init_code=DRIVER_NOT_LOADED)
    with pytest.raises(NVMLUnavailable, match="modprobe nvidia"):
        RealXidEvents(real_nvml(fake)).open_xid_events([A30])
    assert fake.event_sets == {}


def test_a_failed_wait_is_an_nvml_error_and_the_set_can_still_be_closed():
    fake = library()
    subscription = RealXidEvents(real_nvml(fake)).open_xid_events([A30])
    fake.wait_code = GPU_IS_LOST
    with pytest.raises(NVMLError, match=r"nvmlEventSetWait_v2 failed: .*code 15"):
        subscription.wait(1)
    assert fake.wait_code == 0
    assert subscription.wait(1) is None
    subscription.close()


def test_events_of_other_types_are_not_reported():
    fake = library()
    subscription = RealXidEvents(real_nvml(fake)).open_xid_events([A30])
    fake.event_sets[1].registered[0] |= pynvml.nvmlEventTypeClock
    fake.xid(0, 0, kind=pynvml.nvmlEventTypeClock)
    assert subscription.wait(1) is None


def test_the_timeout_code_is_the_bindings_own():
    assert pynvml.NVML_ERROR_TIMEOUT == TIMEOUT
