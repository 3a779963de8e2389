# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""NodePrepare/NodeUnprepare through the real pipeline on a simulated node (files, MIG, API)."""

import json
from typing import Any

import pytest

from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS
from deckhouse_gpu.simulator.host.sim_mig import MigOp
from testkit.prepare_world import BOOT_ID, PrepareWorld, allocate, build_world

A30, A30B = "0000:17:00.0", "0000:31:00.0"


@pytest.fixture
def world(tmp_path) -> PrepareWorld:
    return build_world(tmp_path, {A30: "a30", A30B: "a30"})


def ref(claim) -> ClaimRef:
    meta = claim["metadata"]
    return ClaimRef(meta["namespace"], meta["uid"], meta["name"])


def checkpoint(world) -> Any:
    return json.loads(world.checkpoint_path.read_text())["claims"]


def test_physical_claim_gets_a_valid_cdi_spec_and_a_completed_entry(world):
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0")
    result = world.service().prepare([ref(claim)])[ref(claim).uid]
    assert result.error == ""
    (device,) = result.devices
    assert (device.pool_name, device.device_name, device.request_names) == (
        "gpus/w1",
        "gpu-0000-17-00-0",
        ("gpu",),
    )
    (cdi_id,) = device.cdi_device_ids
    assert cdi_id == f"gpu.deckhouse.io/gpu={ref(claim).uid}-gpu-0000-17-00-0"
    spec = json.loads((world.cdi_root / f"gpu.deckhouse.io-gpu_{ref(claim).uid}.json").read_text())
    assert validate_spec(spec) == []
    assert checkpoint(world)[ref(claim).uid]["state"] == "PrepareCompleted"
    status = world.api.get(RESOURCE_CLAIMS, "c1", namespace="ns")["status"]
    assert status["devices"][0]["conditions"][0]["type"] == "Ready"
    assert status["allocation"]  # the scheduler's part is untouched


def test_several_mig_profiles_on_one_card_then_unprepare_switches_mig_off(world):
    small = allocate(world.api, "small", "gpu-0000-17-00-0-mig-1g-6gb-0", "gpu-0000-17-00-0-mig-1g-6gb-1")
    big = allocate(world.api, "big", "gpu-0000-17-00-0-mig-2g-12gb-2")
    service = world.service()
    results = service.prepare([ref(small), ref(big)])
    assert all(r.error == "" for r in results.values()), results
    assert world.mig.mig_enabled(A30)
    assert sorted((i.profile_id, i.placement_start) for i in world.mig.instances(A30)) == [
        (5, 2),
        (14, 0),
        (14, 1),
    ]
    assert service.modes == {A30: "MIG"}
    spec = json.loads((world.cdi_root / f"gpu.deckhouse.io-gpu_{ref(small).uid}.json").read_text())
    assert validate_spec(spec) == []
    assert any(
        "nvidia-caps" in node["path"] for d in spec["devices"] for node in d["containerEdits"]["deviceNodes"]
    )
    assert service.unprepare([ref(small)]) == {ref(small).uid: ""}
    assert [(i.profile_id, i.placement_start) for i in world.mig.instances(A30)] == [(5, 2)]
    assert world.mig.mig_enabled(A30)  # still used by "big"
    assert service.unprepare([ref(big)]) == {ref(big).uid: ""}
    assert world.mig.instances(A30) == []
    assert not world.mig.mig_enabled(A30)  # the handler switched it on, and now off again
    assert checkpoint(world) == {}
    assert not list(world.cdi_root.glob("*_*.json"))
    assert service.modes == {}


def test_prepare_is_idempotent_and_unprepare_of_unknown_is_a_noop(world):
    claim = allocate(world.api, "c1", "gpu-0000-31-00-0-mig-4g-24gb-0")
    service = world.service()
    first = service.prepare([ref(claim)])[ref(claim).uid]
    world.api.calls.clear()
    again = service.prepare([ref(claim)])[ref(claim).uid]
    assert again == first
    assert world.api.writes == 0  # short-circuit: nothing read or written
    assert len(world.mig.instances(A30B)) == 1
    assert service.unprepare([ClaimRef("ns", "unknown-uid", "gone")]) == {"unknown-uid": ""}


def test_conflicting_claims_are_refused_by_the_guard_with_a_clear_error(world):
    mig = allocate(world.api, "mig", "gpu-0000-17-00-0-mig-1g-6gb-0")
    whole = allocate(world.api, "whole", "gpu-0000-17-00-0")
    service = world.service()
    results = service.prepare([ref(mig), ref(whole)])
    assert results[ref(mig).uid].error == ""
    assert "has MIG instances prepared for claim ns/mig" in results[ref(whole).uid].error
    assert ref(whole).uid not in checkpoint(world)


def test_a_failing_mig_create_leaves_nothing_behind(world):
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0-mig-1g-6gb-0", "gpu-0000-17-00-0-mig-1g-6gb-1")
    service = world.service()
    # The first instance is created, the second fails: the first must be undone too.
    world.mig.inner.fail_next(A30, MigOp.CREATE, "Insufficient Resources")
    first_create = world.mig.inner.create_instance
    calls = []

    def create_then_fail(card, profile_id, start):
        calls.append(start)
        if len(calls) == 1:
            world.mig.inner.clear_failures()
            return first_create(card, profile_id, start)
        world.mig.inner.fail_next(A30, MigOp.CREATE, "Insufficient Resources")
        return first_create(card, profile_id, start)

    world.mig.inner.create_instance = create_then_fail
    result = service.prepare([ref(claim)])[ref(claim).uid]
    assert "cannot create" in result.error
    assert world.mig.instances(A30) == []
    assert not world.mig.mig_enabled(A30)
    assert checkpoint(world) == {}
    world.mig.inner.create_instance = first_create
    world.mig.inner.clear_failures()
    assert service.prepare([ref(claim)])[ref(claim).uid].error == ""  # the kubelet's retry works


def test_a_card_the_driver_never_registered_fails_mig_prepare_naming_the_file(world):
    info = world.root / "host/proc/driver/nvidia/gpus" / A30 / "information"
    info.unlink()
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0-mig-1g-6gb-0")
    result = world.service().prepare([ref(claim)])[ref(claim).uid]
    assert f"cannot read {info}: No such file or directory" in result.error
    assert "is the card bound to the nvidia driver" in result.error
    assert "KeyError" not in result.error
    assert world.mig.instances(A30) == []
    assert not world.mig.mig_enabled(A30)
    assert checkpoint(world) == {}


def test_busy_card_cannot_switch_to_mig(world):
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0-mig-1g-6gb-0")
    world.nvml.set_busy(A30)
    result = world.service().prepare([ref(claim)])[ref(claim).uid]
    assert "processes run on it" in result.error
    assert not world.mig.mig_enabled(A30)


def test_replaced_or_unallocated_claims_are_refused(world):
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0")
    stale = ClaimRef("ns", "another-uid", "c1")
    assert "was replaced" in world.service().prepare([stale])["another-uid"].error
    missing = ClaimRef("ns", "x", "nope")
    assert "not found" in world.service().prepare([missing])["x"].error
    assert ref(claim).uid not in checkpoint(world) if world.checkpoint_path.exists() else True


def test_after_a_reboot_old_entries_are_not_prepared_and_their_specs_go(world):
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0")
    world.service().prepare([ref(claim)])
    world.reboot("another-boot-id")
    service = world.service()
    service.start()
    assert checkpoint(world) == {}
    assert not list(world.cdi_root.glob("*_*.json"))
    assert BOOT_ID not in world.checkpoint_path.read_text()


def test_start_destroys_mig_instances_and_specs_no_claim_owns(world):
    world.mig.set_mig_mode(A30, True)
    orphan = world.mig.create_instance(A30, 14, 3)
    (world.cdi_root / "gpu.deckhouse.io-gpu_orphan-uid.json").parent.mkdir(parents=True, exist_ok=True)
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0-mig-1g-6gb-0")
    service = world.service()
    service.prepare([ref(claim)])
    world.service().start()
    remaining = world.mig.instances(A30)
    assert orphan.uuid not in [i.uuid for i in remaining]
    assert [(i.profile_id, i.placement_start) for i in remaining] == [(14, 0)]


def test_corrupt_checkpoint_is_set_aside_and_nothing_is_destroyed(world):
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0-mig-1g-6gb-0")
    world.service().prepare([ref(claim)])
    world.checkpoint_path.write_text("{garbage")
    service = world.service()
    service.start()
    assert len(world.mig.instances(A30)) == 1  # a running Pod may still use it
    assert list(world.checkpoint_path.parent.glob("checkpoint.json.corrupt-*"))


def test_a_whole_card_left_in_mig_mode_is_switched_back_before_it_is_given_out(world):
    world.mig.set_mig_mode(A30, True)
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0")
    assert world.service().prepare([ref(claim)])[ref(claim).uid].error == ""
    assert not world.mig.mig_enabled(A30)


def test_a_whole_card_with_foreign_mig_instances_is_refused(world):
    world.mig.set_mig_mode(A30, True)
    world.mig.create_instance(A30, 14, 0)  # made by hand, no claim owns it
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0")
    error = world.service().prepare([ref(claim)])[ref(claim).uid].error
    assert "MIG instances that no claim of this driver prepared" in error


def test_a_corrupt_checkpoint_kept_aside_protects_instances_on_later_restarts(world):
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0-mig-1g-6gb-0")
    world.service().prepare([ref(claim)])
    world.checkpoint_path.write_text("{garbage")
    world.service().start()
    world.service().start()  # a second restart: the checkpoint is valid (empty) again
    assert len(world.mig.instances(A30)) == 1


def test_a_lock_held_elsewhere_fails_every_claim_of_the_call_cleanly(world, monkeypatch):
    claims = [allocate(world.api, f"c{i}", "gpu-0000-17-00-0") for i in range(2)]
    service = world.service()

    def busy():
        raise TimeoutError("node lock pu.lock is held by PID 42; gave up after 5.0 s")

    monkeypatch.setattr(service, "lock", busy)
    results = service.prepare([ref(c) for c in claims])
    assert all("held by PID 42" in r.error for r in results.values())
    assert set(results) == {ref(c).uid for c in claims}


def with_config(world, claim, parameters):
    allocation = claim["status"]["allocation"]
    allocation["devices"]["config"] = [
        {"source": "FromClaim", "opaque": {"driver": "gpu.deckhouse.io", "parameters": parameters}}
    ]
    meta = claim["metadata"]
    return world.api.patch(
        RESOURCE_CLAIMS,
        meta["name"],
        {"status": {"allocation": allocation}},
        subresource="status",
        namespace=meta["namespace"],
    )


def test_an_invalid_opaque_config_fails_prepare_before_the_card_changes(world):
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0-mig-1g-6gb-0")
    bad = {
        "apiVersion": "gpu.deckhouse.io/v1alpha1",
        "kind": "MIGConfig",
        "sharing": {"strategy": "TimeSlicing"},
    }
    claim = with_config(world, claim, bad)
    error = world.service().prepare([ref(claim)])[ref(claim).uid].error
    assert error.startswith("device gpu-0000-17-00-0-mig-1g-6gb-0: allocation config[0]: sharing.strategy:")
    assert not world.mig.mig_enabled(A30)
    assert world.mig.instances(A30) == []
    assert not world.checkpoint_path.exists() or checkpoint(world) == {}


def test_a_valid_sharing_config_is_accepted_and_vfio_needs_a_handler_that_passes_cards_through(world):
    claim = allocate(world.api, "c1", "gpu-0000-17-00-0")
    mps = {"apiVersion": "gpu.deckhouse.io/v1alpha1", "kind": "GPUConfig", "sharing": {"strategy": "MPS"}}
    claim = with_config(world, claim, mps)
    assert world.service().prepare([ref(claim)])[ref(claim).uid].error == ""
    other = allocate(world.api, "c2", "gpu-0000-31-00-0")
    other = with_config(world, other, {"apiVersion": "gpu.deckhouse.io/v1alpha1", "kind": "VFIOConfig"})
    error = world.service().prepare([ref(other)])[ref(other).uid].error
    assert error == "the claim asks for VFIO, but this gpu-handler runs without VFIO support"
