# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Offers follow what is prepared (DESIGN.md D2 b): prepare reports each change of the cards' modes to the
handler loop, which republishes; no callback travels through cmd/."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deckhouse_gpu.domain.offers.card_offers import ActiveMode
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.services.publishing.handler import HandlerLoop, HandlerSettings
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.services.runtime.trigger_loop import Trigger
from testkit.prepare_world import allocate, build_world

A30 = "0000:17:00.0"


class RecordingLoop(HandlerLoop):
    """The real loop, with its wake-ups recorded instead of running passes."""

    def __init__(self, clock: Any) -> None:
        super().__init__(capabilities=None, health=HealthState(), clock=clock, settings=HandlerSettings())  # type: ignore[arg-type]
        self.triggers: list[Trigger] = []

    def notify(self, trigger: Trigger) -> None:
        self.triggers.append(trigger)


class Reports:
    def __init__(self) -> None:
        self.seen: list[dict[str, ActiveMode]] = []

    def follow_modes(self, modes: Mapping[str, ActiveMode]) -> None:
        self.seen.append(dict(modes))


def test_the_loop_republishes_only_when_the_modes_change(clock) -> None:
    loop = RecordingLoop(clock)
    loop.follow_modes({A30: "MIG"})
    loop.follow_modes({A30: "MIG"})
    assert loop.active_modes() == {A30: "MIG"}
    assert [t.source for t in loop.triggers] == ["prepare"]
    loop.follow_modes({})
    assert loop.active_modes() == {}
    assert len(loop.triggers) == 2
    loop.active_modes()[A30] = "Physical"  # a caller's copy: the loop's state stays
    assert loop.active_modes() == {}


def test_prepare_and_unprepare_report_each_mode_change_once(tmp_path) -> None:
    world = build_world(tmp_path, {A30: "a30"})
    reports = Reports()
    service = world.service(offers=reports)
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0-mig-1g-6gb-0")
    ref = ClaimRef("ns", claim["metadata"]["uid"], "c1")
    assert service.prepare([ref])[ref.uid].error == ""
    assert service.prepare([ref])[ref.uid].error == ""  # the kubelet's retry changes nothing
    assert service.unprepare([ref]) == {ref.uid: ""}
    assert reports.seen == [{A30: "MIG"}, {}]


def test_a_real_loop_behind_prepare_learns_the_modes(tmp_path, clock) -> None:
    world = build_world(tmp_path, {A30: "a30"})
    loop = RecordingLoop(clock)
    service = world.service(offers=loop)
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0")
    ref = ClaimRef("ns", claim["metadata"]["uid"], "c1")
    assert service.prepare([ref])[ref.uid].error == ""
    assert loop.active_modes() == {A30: "Physical"}
    assert [t.source for t in loop.triggers] == ["prepare"]
