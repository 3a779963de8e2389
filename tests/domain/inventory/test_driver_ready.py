# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""DriverReady decided from validator pods: every reason, terminating pods, several pods per node."""

import pytest

from deckhouse_gpu.domain.inventory.driver_ready import (
    REASON_MISSING,
    REASON_NOT_READY,
    REASON_READY,
    card_node,
    is_ready,
    updated_conditions,
    validated_by_nvidia_validator,
    verdict,
    why_not_ready,
)
from deckhouse_gpu.domain.inventory.physicalgpu import ConditionStatus
from tests.support.controller_objects import card, crashing_status, pod, ready_status

DELETING = "2026-11-21T12:00:00Z"


def test_ready_pod_on_the_node_makes_the_driver_ready():
    decided = verdict("w1", [pod("val-a", "w1", ready_status())])
    assert decided.status is ConditionStatus.TRUE
    assert decided.reason == REASON_READY
    assert "d8-gpu/val-a" in decided.message


def test_pods_on_other_nodes_do_not_count():
    decided = verdict("w1", [pod("val-b", "w2", ready_status()), pod("val-x", None, ready_status())])
    assert decided.status is ConditionStatus.UNKNOWN
    assert decided.reason == REASON_MISSING
    assert "check that the node is not opted out" in decided.message
    assert "node w1" in decided.message


def test_no_pods_at_all_is_unknown_not_false():
    assert verdict("w1", []).status is ConditionStatus.UNKNOWN


def test_crashing_validator_names_pod_reason_and_last_termination():
    decided = verdict("w1", [pod("val-a", "w1", crashing_status("NVRM: API mismatch"))])
    assert decided.status is ConditionStatus.FALSE
    assert decided.reason == REASON_NOT_READY
    message = decided.message
    assert "d8-gpu/val-a" in message
    assert "phase Pending" in message
    assert "init container driver-validation waiting: CrashLoopBackOff" in message
    assert "last termination: NVRM: API mismatch" in message
    assert "kubectl -n d8-gpu logs val-a" in message


def test_message_leaves_out_what_changes_at_every_restart():
    first, later = crashing_status(), crashing_status()
    later["initContainerStatuses"][0]["restartCount"] = 8
    later["initContainerStatuses"][0]["state"]["waiting"]["message"] = "back-off 10m0s restarting"
    assert verdict("w1", [pod("v", "w1", first)]) == verdict("w1", [pod("v", "w1", later)])


def test_running_but_not_ready_pod_explains_with_the_ready_condition():
    status = {
        "phase": "Running",
        "conditions": [
            {"type": "Ready", "status": "False", "message": "containers with unready status: [validator]"}
        ],
        "containerStatuses": [{"name": "validator", "ready": False, "state": {"running": {}}}],
    }
    assert (
        why_not_ready(pod("v", "w1", status)) == "phase Running; containers with unready status: [validator]"
    )


def test_exited_container_reports_its_exit_code():
    status = {
        "phase": "Failed",
        "containerStatuses": [
            {
                "name": "validator",
                "ready": False,
                "state": {"terminated": {"exitCode": 2, "message": "no GPU"}},
            }
        ],
    }
    assert why_not_ready(pod("v", "w1", status)) == (
        "phase Failed; container validator exited with code 2; last termination: no GPU"
    )


def test_pod_without_status_is_not_ready():
    decided = verdict("w1", [pod("v", "w1")])
    assert decided.status is ConditionStatus.FALSE
    assert "phase Unknown" in decided.message


def test_terminating_ready_pod_is_not_ready():
    leaving = pod("val-old", "w1", ready_status(), deletionTimestamp=DELETING)
    assert not is_ready(leaving)
    decided = verdict("w1", [leaving])
    assert decided.status is ConditionStatus.FALSE
    assert "terminating" in decided.message


def test_any_ready_pod_among_several_wins():
    pods = [
        pod("val-old", "w1", ready_status(), deletionTimestamp=DELETING),
        pod("val-new", "w1", crashing_status()),
        pod("val-two", "w1", ready_status()),
    ]
    decided = verdict("w1", pods)
    assert decided.status is ConditionStatus.TRUE
    assert "d8-gpu/val-two" in decided.message


def test_not_ready_message_prefers_the_replacement_over_the_terminating_pod():
    pods = [
        pod(
            "val-old",
            "w1",
            ready_status(),
            deletionTimestamp=DELETING,
            creationTimestamp="2026-11-01T00:00:00Z",
        ),
        pod("val-new", "w1", crashing_status(), creationTimestamp="2026-11-21T00:00:00Z"),
    ]
    decided = verdict("w1", pods)
    assert decided.status is ConditionStatus.FALSE
    assert decided.message.startswith("validator pod d8-gpu/val-new on node w1 is not ready")
    assert "(and 1 other validator pod(s) not ready)" in decided.message


def test_newest_pod_is_described_first():
    pods = [
        pod("val-a", "w1", crashing_status("old"), creationTimestamp="2026-11-01T00:00:00Z"),
        pod("val-b", "w1", crashing_status("new"), creationTimestamp="2026-11-20T00:00:00Z"),
    ]
    assert "d8-gpu/val-b" in verdict("w1", pods).message


def test_ready_condition_false_is_not_ready():
    status = ready_status()
    status["conditions"] = [{"type": "Ready", "status": "False"}]
    assert not is_ready(pod("v", "w1", status))


def test_card_node_from_status_then_label():
    assert card_node(card("c", "w1")) == "w1"
    labelled_only = card("c", "w2")
    del labelled_only["status"]
    assert card_node(labelled_only) == "w2"
    assert card_node({"metadata": {"name": "c"}}) is None


@pytest.mark.parametrize(
    ("labels", "vendor_id", "expected"),
    [
        ({"gpu.deckhouse.io/vendor": "nvidia"}, None, True),
        ({"gpu.deckhouse.io/vendor": "amd"}, "1002", False),
        ({}, "10de", True),
        ({}, "8086", False),
        ({}, None, True),
    ],
)
def test_only_nvidia_cards_are_judged_by_the_nvidia_validator(labels, vendor_id, expected):
    obj = {"metadata": {"name": "c", "labels": labels}, "status": {}}
    if vendor_id:
        obj["status"]["pciInfo"] = {"vendor": {"id": vendor_id}}
    assert validated_by_nvidia_validator(obj) is expected


def test_updated_conditions_keeps_others_and_moves_transition_time_only_on_status_change():
    obj = card("c", "w1")
    obj["metadata"]["generation"] = 3
    healthy = {
        "type": "HardwareHealthy",
        "status": "True",
        "reason": "NVMLHealthy",
        "message": "",
        "lastTransitionTime": "t0",
    }
    obj["status"]["conditions"] = [healthy]
    ready = verdict("w1", [pod("v", "w1", ready_status())])
    first = updated_conditions(obj, ready, "t1")
    assert first is not None
    assert first[0] == healthy
    assert first[1]["lastTransitionTime"] == "t1"
    assert first[1]["observedGeneration"] == 3
    obj["status"]["conditions"] = first
    assert updated_conditions(obj, ready, "t2") is None  # nothing would change
    reworded = ready.__class__(ready.status, ready.reason, "another pod is ready")
    second = updated_conditions(obj, reworded, "t3")
    assert second is not None
    assert second[1]["lastTransitionTime"] == "t1"  # same status: the transition time stays
    missing = verdict("w1", [])
    third = updated_conditions(obj, missing, "t4")
    assert third is not None
    assert third[1]["lastTransitionTime"] == "t4"
