# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's prepare metrics move when the things they count happen: real prepares and
unprepares on a simulated node, measured as ``gpu-handler run`` measures them."""

from __future__ import annotations

from typing import Any

import pytest

from deckhouse_gpu.adapters.files.node_lock import NodeLock
from deckhouse_gpu.adapters.metrics.handler_metrics import HandlerMetrics
from deckhouse_gpu.adapters.metrics.metered_ports import MeteredCheckpointStore, MeteredMig
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.services.prepare.prepare_observer import PrepareObserver
from deckhouse_gpu.services.prepare.service import PrepareService
from deckhouse_gpu.simulator.host.sim_mig import MigOp
from testkit.prepare_world import PrepareWorld, allocate, allocate_share, build_world
from tests.services.prepare.sharing_world import SharingNode, time_slicing

A30, A30B = "0000:17:00.0", "0000:31:00.0"
WHOLE = "gpu-0000-17-00-0"
P = "d8_gpu_handler"


@pytest.fixture
def world(tmp_path) -> PrepareWorld:
    return build_world(tmp_path, {A30: "a30", A30B: "a30"})


def measured(world: PrepareWorld, metrics: HandlerMetrics, **extra: Any) -> PrepareService:
    """The node's service with what plugin_wiring.build_prepare adds when given metrics."""
    service = world.service(observer=PrepareObserver(metrics), **extra)
    service.store = MeteredCheckpointStore(service.store, metrics)
    service.mig = MeteredMig(service.mig, metrics)
    metrics.watch_checkpoint_file(world.checkpoint_path)
    return service


def ref(claim: dict[str, Any]) -> ClaimRef:
    meta = claim["metadata"]
    return ClaimRef(meta["namespace"], meta["uid"], meta["name"])


def value(metrics: HandlerMetrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(f"{P}_{name}", labels) or 0.0


def test_a_whole_card_prepared_then_unprepared(world):
    metrics = HandlerMetrics()
    service = measured(world, metrics)
    assert value(metrics, "checkpoint_size_bytes") == 0  # no checkpoint file yet
    claim = ref(allocate(world.api, "c1", WHOLE))
    assert service.prepare([claim])[claim.uid].error == ""
    assert value(metrics, "prepare_duration_seconds_count", offer_type="Physical") == 1
    assert value(metrics, "prepared_claims", offer_type="Physical") == 1
    assert value(metrics, "prepared_claims", offer_type="MIG") == 0
    assert value(metrics, "checkpoint_size_bytes") == world.checkpoint_path.stat().st_size > 0
    assert service.prepare([claim])[claim.uid].error == ""  # the kubelet's retry is a prepare too
    assert value(metrics, "prepare_duration_seconds_count", offer_type="Physical") == 2
    assert service.unprepare([claim]) == {claim.uid: ""}
    assert value(metrics, "unprepare_duration_seconds_count", offer_type="Physical") == 1
    assert value(metrics, "prepared_claims", offer_type="Physical") == 0
    assert value(metrics, "prepare_errors_total", reason="api", offer_type="Physical") == 0


def test_mig_instances_created_and_destroyed_are_counted(world):
    metrics = HandlerMetrics()
    service = measured(world, metrics)
    claim = ref(allocate(world.api, "m", f"{WHOLE}-mig-1g-6gb-0", f"{WHOLE}-mig-1g-6gb-1"))
    assert service.prepare([claim])[claim.uid].error == ""
    assert value(metrics, "mig_instances_created_total") == 2
    assert value(metrics, "prepared_claims", offer_type="MIG") == 1
    assert service.unprepare([claim]) == {claim.uid: ""}
    assert value(metrics, "mig_instances_destroyed_total") == 2
    assert value(metrics, "unprepare_duration_seconds_count", offer_type="MIG") == 1


def test_a_claim_conflicting_with_a_prepared_one_is_a_conflict_error(world):
    metrics = HandlerMetrics()
    service = measured(world, metrics)
    mig, whole = allocate(world.api, "mig", f"{WHOLE}-mig-1g-6gb-0"), allocate(world.api, "whole", WHOLE)
    results = service.prepare([ref(mig), ref(whole)])
    assert results[ref(whole).uid].error
    assert value(metrics, "prepare_errors_total", reason="conflict", offer_type="Physical") == 1
    # a failure took its time too
    assert value(metrics, "prepare_duration_seconds_count", offer_type="Physical") == 1
    assert value(metrics, "prepare_duration_seconds_count", offer_type="MIG") == 1


def test_a_failing_mig_create_is_a_mig_error(world):
    metrics = HandlerMetrics()
    service = measured(world, metrics)
    world.mig.inner.fail_next(A30, MigOp.CREATE, "Insufficient Resources")
    claim = ref(allocate(world.api, "m", f"{WHOLE}-mig-1g-6gb-0"))
    assert "cannot create" in service.prepare([claim])[claim.uid].error
    assert value(metrics, "prepare_errors_total", reason="mig", offer_type="MIG") == 1
    assert value(metrics, "mig_errors_total", operation="create_instance") == 1
    assert value(metrics, "mig_instances_created_total") == 0
    assert value(metrics, "prepared_claims", offer_type="MIG") == 0


@pytest.mark.parametrize(
    ("claim", "reason"),
    [
        (ClaimRef("ns", "x", "gone"), "api"),  # the claim cannot be read
        (ClaimRef("ns", "other-uid", "c1"), "allocation"),  # replaced by another claim of that name
    ],
)
def test_claims_that_cannot_be_planned_are_errors_of_unknown_type(world, claim, reason):
    metrics = HandlerMetrics()
    allocate(world.api, "c1", WHOLE)
    assert measured(world, metrics).prepare([claim])[claim.uid].error
    assert value(metrics, "prepare_errors_total", reason=reason, offer_type="Unknown") == 1


def test_a_device_the_node_does_not_offer_is_an_allocation_error(world):
    metrics = HandlerMetrics()
    claim = ref(allocate(world.api, "c1", "gpu-0000-99-00-0"))
    assert "not an offer" in measured(world, metrics).prepare([claim])[claim.uid].error
    assert value(metrics, "prepare_errors_total", reason="allocation", offer_type="Unknown") == 1


def test_a_node_lock_held_too_long_fails_every_claim_of_the_call_as_lock_errors(world):
    metrics = HandlerMetrics()
    service = measured(world, metrics, lock_timeout=0.05)
    claims = [ref(allocate(world.api, name, WHOLE)) for name in ("a", "b")]
    with NodeLock(world.lock_path):
        results = service.prepare(claims)
        assert all("LockTimeout" in r.error for r in results.values())
        assert service.unprepare(claims[:1])
    assert value(metrics, "prepare_errors_total", reason="lock", offer_type="Unknown") == 2
    assert value(metrics, "unprepare_errors_total", reason="lock", offer_type="Unknown") == 1
    assert value(metrics, "prepare_duration_seconds_count", offer_type="Unknown") == 0  # nothing was done


def test_an_unprepare_whose_instance_cannot_be_destroyed_is_a_mig_error(world):
    metrics = HandlerMetrics()
    service = measured(world, metrics)
    claim = ref(allocate(world.api, "m", f"{WHOLE}-mig-1g-6gb-0"))
    assert service.prepare([claim])[claim.uid].error == ""
    world.mig.inner.fail_next(A30, MigOp.DESTROY, "In use by another client")
    assert service.unprepare([claim])[claim.uid]
    assert value(metrics, "unprepare_errors_total", reason="mig", offer_type="MIG") == 1
    assert value(metrics, "mig_errors_total", operation="destroy_instance") == 1
    assert value(metrics, "prepared_claims", offer_type="MIG") == 1  # still prepared: the kubelet retries
    assert service.unprepare([claim]) == {claim.uid: ""}
    assert value(metrics, "prepared_claims", offer_type="MIG") == 0


def test_a_share_is_counted_as_shared(world):
    metrics = HandlerMetrics()
    node = SharingNode(world)
    service = measured(world, metrics, sharing=node.host)
    claim = ref(allocate_share(world.api, "s", WHOLE, "50", time_slicing()))
    assert service.prepare([claim])[claim.uid].error == ""
    assert value(metrics, "prepared_claims", offer_type="Shared") == 1
    assert value(metrics, "prepare_duration_seconds_count", offer_type="Shared") == 1


def test_a_restarted_handler_reports_what_the_checkpoint_holds(world):
    claim = ref(allocate(world.api, "c1", WHOLE))
    assert world.service().prepare([claim])[claim.uid].error == ""
    metrics = HandlerMetrics()
    measured(world, metrics).start()
    assert value(metrics, "prepared_claims", offer_type="Physical") == 1


def test_the_steps_a_failure_is_blamed_on_are_every_step_of_prepare():
    from deckhouse_gpu.domain.prepare.metrics import OTHER, step_reason  # noqa: PLC0415
    from deckhouse_gpu.services.prepare.prepare_observer import STEP_NAMES  # noqa: PLC0415

    unnamed = [step for step in STEP_NAMES if step_reason(step) == OTHER]
    assert unnamed == [], "give these prepare steps a reason in domain/prepare/metrics.py"
