# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A claim's release loops over the registered features' ``FeatureRelease`` parts
(services/prepare/host_release.py, DESIGN.md D20): phase by phase, each phase in the order the features
are registered, the CDI spec between the settings and the files; the registered features give
back in the order the release named them in before the registry."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast
from unittest.mock import create_autospec

import pytest

from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.plan import DevicePlan
from deckhouse_gpu.ports.claim_cdi import ClaimCDI
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.mig import MigControl
from deckhouse_gpu.services.prepare.host_release import (
    FeatureRelease,
    HostPorts,
    Releasing,
    clean_unowned,
    forget,
    release,
)
from deckhouse_gpu.services.prepare.prepare_context import PrepareContext
from deckhouse_gpu.services.prepare.prepare_steps import FEATURES
from deckhouse_gpu.services.prepare.service import RELEASES

PLAN = DevicePlan("gpu", "node-a", "gpu-0000-01-00-0", "0000:01:00.0", "Physical")
ENTRY = ClaimEntry("uid-1", "default", "claim", "PrepareStarted", (PLAN,))
CLAIM_PHASES = ("holders", "devices", "settings", "files")
START_PHASES = ("unowned_holders", "unowned_devices", "unowned_files")


def recording(name: str, calls: list[str], cdi: ClaimCDI) -> FeatureRelease:
    def part(phase: str) -> Callable[..., None]:
        return lambda *args: calls.append(f"{name}.{phase}")

    cdi.delete_claim.side_effect = lambda uid: calls.append(f"cdi.delete {uid}")  # type: ignore[attr-defined]
    cdi.claims_with_specs.return_value = {"uid-1", "gone"}  # type: ignore[attr-defined]
    return FeatureRelease(
        holders=part("holders"),
        devices=part("devices"),
        settings=part("settings"),
        files=part("files"),
        unowned_holders=part("unowned_holders"),
        unowned_devices=part("unowned_devices"),
        unowned_files=part("unowned_files"),
        forget=part("forget"),
    )


def test_a_release_runs_each_phase_across_the_features_then_drops_the_entry() -> None:
    calls: list[str] = []
    cdi = create_autospec(ClaimCDI, instance=True)
    parts = (recording("a", calls, cdi), FeatureRelease(), recording("b", calls, cdi))
    saved: list[Checkpoint] = []
    before = Checkpoint("boot").with_entry(ENTRY)

    after = release(ENTRY, before, HostPorts(cast(MigControl, object()), cdi), saved.append, parts)

    assert calls == [
        "a.holders", "b.holders", "a.devices", "b.devices", "a.settings", "b.settings",
        "cdi.delete uid-1", "a.files", "b.files",
    ]  # fmt: skip
    assert after == Checkpoint("boot") == saved[-1]


def test_a_part_moves_the_checkpoint_on_for_the_parts_after_it() -> None:
    cdi = create_autospec(ClaimCDI, instance=True)
    other = ClaimEntry("uid-2", "default", "other", "PrepareCompleted", (PLAN,))
    seen: list[set[str]] = []

    def adds(state: Releasing) -> None:
        state.checkpoint = state.checkpoint.with_entry(other)

    def reads(state: Releasing) -> None:
        seen.append(set(state.checkpoint.claims))

    parts = (FeatureRelease(holders=adds), FeatureRelease(devices=reads))
    after = release(
        ENTRY,
        Checkpoint("b").with_entry(ENTRY),
        HostPorts(cast(MigControl, object()), cdi),
        lambda c: None,
        parts,
    )
    assert seen == [{"uid-1", "uid-2"}]
    assert set(after.claims) == {"uid-2"}


def test_the_cleanup_at_start_and_an_unknown_claims_unprepare_loop_over_the_features() -> None:
    calls: list[str] = []
    cdi = create_autospec(ClaimCDI, instance=True)
    parts = (recording("a", calls, cdi), recording("b", calls, cdi))
    ports = HostPorts(cast(MigControl, object()), cdi)

    clean_unowned(Checkpoint("boot").with_entry(ENTRY), ports, ["0000:01:00.0"], parts)
    assert calls == [
        "a.unowned_holders", "b.unowned_holders", "a.unowned_devices", "b.unowned_devices",
        "cdi.delete gone", "a.unowned_files", "b.unowned_files",
    ]  # fmt: skip

    calls.clear()
    forget("uid-9", ports, parts)
    assert calls == ["cdi.delete uid-9", "a.forget", "b.forget"]


def named_parts(phase: str) -> list[str]:
    return [part.__name__ for release_ in RELEASES if (part := getattr(release_, phase)) is not None]


def test_the_registered_features_give_back_in_the_order_the_release_named_them_before() -> None:
    assert tuple(feature.release for feature in FEATURES) == RELEASES
    # Before the registry: MPS daemons stopped, functions back from vfio-pci, MIG instances and
    # modes, card settings, the CDI spec, the metadata files.
    assert {phase: named_parts(phase) for phase in (*CLAIM_PHASES, *START_PHASES, "forget")} == {
        "holders": ["stop_daemons", "give_back_functions"],
        "devices": ["release_mig"],
        "settings": ["settle_released_cards"],
        "files": ["delete_files"],
        "unowned_holders": ["give_back_leftovers"],
        "unowned_devices": ["clean_mig"],
        "unowned_files": ["delete_unowned_files"],
        "forget": ["forget_files", "forget_payload"],
    }
    # An entry of an earlier boot: released as before without VFIO (a reboot unbinds vfio-pci).
    assert [f.name for f in FEATURES if not f.release.survives_reboot] == ["vfio"]


def test_a_context_without_its_features_refuses_to_release_rather_than_half_release() -> None:
    cdi = create_autospec(ClaimCDI, instance=True)
    ctx = PrepareContext(
        ClaimRef("default", "uid-1", "claim"), Checkpoint("boot").with_entry(ENTRY), lambda c: None,
        cast(MigControl, object()), cdi, "now",
    )  # fmt: skip
    with pytest.raises(RuntimeError, match="without its features"):
        ctx.release_entry(ENTRY)
    cdi.delete_claim.assert_not_called()
