# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The GPUClass's Ready condition: each reason, and a status written only when it changes."""

from __future__ import annotations

from deckhouse_gpu.domain.gpuclass import status


def test_the_reasons() -> None:
    assert status.ready("c", status.Matching(3, 2)) == status.Verdict(
        True, status.DEVICE_CLASS_READY, "DeviceClass c selects 3 devices on 2 nodes"
    )
    nothing = status.ready("c", status.Matching())
    assert (nothing.ready, nothing.reason) == (True, status.NO_MATCHING_DEVICES)
    assert not status.invalid(["spec.x: bad"]).ready
    assert status.invalid(["spec.x: bad"]).message.startswith("spec.x: bad")
    assert status.name_taken("c").reason == status.DEVICE_CLASS_NAME_TAKEN
    assert (
        "belongs to DeviceClass other"
        in status.extended_resource_taken("gpu.deckhouse.io/x", "other").message
    )
    assert status.rejected("c", "too long").message == "the API server refused DeviceClass c: too long"


def test_the_status_is_patched_only_when_it_changes() -> None:
    verdict = status.ready("c", status.Matching(1, 1))
    first = status.status_patch(None, verdict, 3, "2026-01-01T00:00:00Z", "whole card", status.Matching(1, 1))
    assert first["observedGeneration"] == 3
    assert first["conditions"] == [
        {
            "type": "Ready",
            "status": "True",
            "reason": "DeviceClassReady",
            "message": verdict.message,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 3,
        }
    ]
    assert (
        status.status_patch(first, verdict, 3, "2026-01-02T00:00:00Z", "whole card", status.Matching(1, 1))
        == {}
    )
    # Only the count moved: the condition keeps its transition time.
    more = status.ready("c", status.Matching(2, 1))
    patch = status.status_patch(first, more, 3, "2026-01-02T00:00:00Z", "whole card", status.Matching(2, 1))
    assert patch["devices"] == 2
    assert patch["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    # Not ready: the counts go.
    down = status.status_patch(first, status.name_taken("c"), 4, "2026-01-03T00:00:00Z", "whole card", None)
    assert (down["devices"], down["nodes"], down["conditions"][0]["status"]) == (None, None, "False")
    assert down["conditions"][0]["lastTransitionTime"] == "2026-01-03T00:00:00Z"
