# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Simulated Xid events: injected on a card, delivered to the event sets that registered it."""

from __future__ import annotations

import threading
import time

import pytest

from deckhouse_gpu.ports.nvml import NVMLUnavailable, XidEvent
from deckhouse_gpu.simulator.host.sim_nvml import SimNVMLConfigError, SimulatedNVML
from deckhouse_gpu.simulator.scenario import ScenarioError, parse_scenario

A30, T4 = "0000:17:00.0", "0000:b1:00.0"


def nvml() -> SimulatedNVML:
    return SimulatedNVML({A30: "a30", T4: "t4"})


def test_an_injected_xid_reaches_each_set_that_watches_the_card():
    sim = nvml()
    both, a30_only = sim.open_xid_events([A30, T4]), sim.open_xid_events([A30])
    assert (both.registered, a30_only.registered) == ((A30, T4), (A30,))
    assert sim.inject_xid(T4, 79) == 1
    assert sim.inject_xid(A30, 48) == 2
    assert sim.xids.pending() == 3
    assert both.wait(0) == XidEvent(T4, 79)
    assert both.wait(0) == XidEvent(A30, 48)
    assert a30_only.wait(0) == XidEvent(A30, 48)
    assert both.wait(0.01) is None  # timed out
    both.close()
    assert sim.inject_xid(T4, 79) == 0  # nobody watches it any more: lost, as in NVML


WAIT = 60.0


def test_a_wait_wakes_when_the_xid_comes():
    sim = nvml()
    subscription = sim.open_xid_events([A30])
    threading.Timer(0.05, sim.inject_xid, (A30, 79)).start()
    started = time.monotonic()
    assert subscription.wait(WAIT) == XidEvent(A30, 79)
    assert time.monotonic() - started < WAIT / 2  # woken by the event, not at the end of the wait


def test_lost_unknown_and_unsupported_cards_are_not_registered():
    sim = nvml()
    sim.fail_device(T4)
    sim.xids.no_events(A30)
    assert sim.open_xid_events([A30, T4, "0000:ca:00.0"]).registered == ()


def test_a_broken_library_fails_opening_and_waiting():
    sim = nvml()
    subscription = sim.open_xid_events([A30])
    sim.fail_library()
    with pytest.raises(NVMLUnavailable):
        sim.open_xid_events([A30])
    with pytest.raises(NVMLUnavailable):
        subscription.wait(0)


def test_an_xid_on_a_card_that_is_not_simulated_is_a_config_error():
    with pytest.raises(SimNVMLConfigError, match=r"no simulated card at 0000:ca:00\.0"):
        nvml().inject_xid("0000:ca:00.0", 79)


def test_the_scenario_step_needs_an_address_and_a_number():
    head = "nodes: [{name: w1, gpus: [{model: a30, address: '0000:17:00.0'}]}]\nsteps:\n"
    scenario = parse_scenario("x", head + "  - xid: {node: w1, address: '0000:17:00.0', xid: 79}\n")
    assert (scenario.steps[0].kind, scenario.steps[0].args["xid"]) == ("xid", 79)
    for bad in (
        "{node: w1, xid: 79}",
        "{node: w1, address: '0000:17:00.0'}",
        "{node: w1, address: x, xid: 79}",
    ):
        with pytest.raises(ScenarioError, match="xid needs the card's address and the Xid number"):
            parse_scenario("x", head + f"  - xid: {bad}\n")
    for bad_number in ("'79'", "true", "0", "-1"):
        with pytest.raises(ScenarioError, match="xid needs"):
            parse_scenario("x", head + f"  - xid: {{node: w1, address: '0000:17:00.0', xid: {bad_number}}}\n")
