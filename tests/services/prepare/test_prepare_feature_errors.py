# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A feature's port reports a failed change of the node by a ``HostChangeError`` of its own
(ports/host_change.py, DESIGN.md D20): prepare and unprepare tell the kubelet by that base, so a new
feature's error needs no edit of services/prepare/service.py, and the claim's entry stays for the
kubelet's retry."""

from __future__ import annotations

import json
import logging

import pytest

from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.host_change import HostChangeError
from deckhouse_gpu.ports.mig import MigError
from deckhouse_gpu.ports.sharing import SharingError
from deckhouse_gpu.ports.vfio import VfioError
from deckhouse_gpu.services.prepare import prepare_steps, service
from deckhouse_gpu.services.prepare.host_release import FeatureRelease, Releasing
from testkit.prepare_world import allocate, build_world

A30 = "0000:17:00.0"


class FanError(HostChangeError):
    """What the port of a feature the service has never heard of raises."""


def test_the_features_ports_raise_one_base() -> None:
    assert all(issubclass(error, HostChangeError) for error in (MigError, SharingError, VfioError))


@pytest.mark.parametrize("error", [FanError, MigError, SharingError, VfioError])
def test_an_unprepare_a_features_port_fails_is_reported_and_retried(tmp_path, monkeypatch, error) -> None:
    world = build_world(tmp_path, {A30: "a30"})
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0")
    ref = ClaimRef("ns", claim["metadata"]["uid"], "c1")
    assert world.service().prepare([ref])[ref.uid].error == ""

    def fail(releasing: Releasing) -> None:
        raise error(f"card {A30}: the fan would not spin down")

    monkeypatch.setattr(service, "RELEASES", (*service.RELEASES, FeatureRelease(settings=fail)))
    errors = world.service().unprepare([ref])
    assert (
        errors[ref.uid] == f"unprepare failed, the kubelet retries: card {A30}: the fan would not spin down"
    )
    assert ref.uid in json.loads(world.checkpoint_path.read_text())["claims"]  # kept for the retry

    monkeypatch.setattr(service, "RELEASES", service.RELEASES[:-1])
    assert world.service().unprepare([ref]) == {ref.uid: ""}


def test_a_prepare_a_features_port_fails_is_told_without_a_trace(tmp_path, monkeypatch, caplog) -> None:
    caplog.set_level(logging.WARNING)  # a command test before may have left the root at ERROR
    world = build_world(tmp_path, {A30: "a30"})
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0")
    ref = ClaimRef("ns", claim["metadata"]["uid"], "c1")
    steps = prepare_steps.PREPARE_STEPS

    class FailingStep:
        name = "spin-fan"

        def run(self, ctx: object) -> None:
            raise FanError(f"card {A30}: the fan would not spin up")

        def undo(self, ctx: object) -> None:
            pass

    monkeypatch.setattr(service, "PREPARE_STEPS", (FailingStep(), *steps))
    result = world.service().prepare([ref])[ref.uid]
    assert result.error == f"card {A30}: the fan would not spin up"
    assert [r.message for r in caplog.records if r.name == service.__name__] == ["prepare failed"]
    assert not any(r.exc_info for r in caplog.records)  # an expected failure, not a crash
