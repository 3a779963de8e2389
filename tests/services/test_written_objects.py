# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the components write at run time passes the API server's rules for those objects: the
Events of every component, and ResourceClaim.status.devices after prepare (the rendered chart is
checked in tests/module/test_rendered_semantics.py, ResourceSlices by domain/slice_rules)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from deckhouse_gpu.adapters.memory_kube import MemoryKube
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.ports.kube import EVENTS, RESOURCE_CLAIMS
from deckhouse_gpu.services.events import EventRecorder, event_name
from testkit.prepare_world import allocate, build_world
from tests.support.k8s_semantics import DNS1123_SUBDOMAIN
from tests.support.written_object_rules import device_status_errors, event_errors

A30 = "0000:17:00.0"


class Clock:
    def now(self) -> datetime:
        return datetime(2026, 11, 25, 12, 0, tzinfo=UTC)

    def monotonic(self) -> float:
        return 0.0


LONGEST_CARD = ("w" * 240) + "-0000-17-00-0"  # a PhysicalGPU name at the 253-character limit
REGARDING = {
    "cluster-scoped": {
        "apiVersion": "gpu.deckhouse.io/v1alpha1",
        "kind": "PhysicalGPU",
        "metadata": {"name": LONGEST_CARD, "uid": "u1"},
    },
    "namespaced": {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c1", "namespace": "ml", "uid": "u2"},
    },
}


@pytest.mark.parametrize("which", REGARDING)
def test_events_pass_the_servers_event_rules(which: str) -> None:
    api = MemoryKube()
    recorder = EventRecorder(api, "gpu-handler", "worker-1", Clock())
    recorder.record(REGARDING[which], "Warning", "PrepareFailed", "x" * 5000)
    (event,) = api.list(EVENTS).items
    assert event_errors(event) == []
    assert len(event["message"]) == 1024


def test_event_names_stay_dns_subdomains_for_any_object_name() -> None:
    for name in (LONGEST_CARD, "a" * 237 + "-b", "x", "w1-0000-17-00-0"):
        made = event_name(name)
        assert len(made) <= 253
        assert DNS1123_SUBDOMAIN.match(made), made
    assert event_name("a" * 235 + "-.b").startswith("a" * 235 + ".")  # no '-' or '.' before the suffix


def test_the_checker_refuses_a_long_name_and_a_foreign_namespace() -> None:
    event = {
        "metadata": {"name": "a" * 254, "namespace": "ml"},
        "involvedObject": {},
        "type": "Normal",
        "reason": "R",
    }
    assert event_errors(event) == [
        f"metadata.name: Invalid value: {'a' * 254!r}: must be a DNS-1123 subdomain of at most 253 characters",
        "involvedObject.namespace: Invalid value: does not match event.namespace",
    ]


def test_claim_device_status_after_prepare_passes_the_servers_rules(tmp_path) -> None:
    world = build_world(tmp_path, {A30: "a30", "0000:31:00.0": "a30"})
    whole = allocate(world.api, "whole", "gpu-0000-31-00-0")
    mig = allocate(world.api, "mig", "gpu-0000-17-00-0-mig-1g-6gb-0", "gpu-0000-17-00-0-mig-2g-12gb-2")
    refs = [ClaimRef("ns", c["metadata"]["uid"], c["metadata"]["name"]) for c in (whole, mig)]
    results = world.service().prepare(refs)
    assert all(result.error == "" for result in results.values()), results
    for name in ("whole", "mig"):
        claim = world.api.get(RESOURCE_CLAIMS, name, namespace="ns")
        assert len(claim["status"]["devices"]) == len(claim["status"]["allocation"]["devices"]["results"])
        assert device_status_errors(claim) == []


def test_the_checker_refuses_status_for_a_device_not_allocated() -> None:
    claim = {
        "status": {
            "allocation": {"devices": {"results": [{"driver": "d", "pool": "p", "device": "a"}]}},
            "devices": [
                {
                    "driver": "d",
                    "pool": "p",
                    "device": "b",
                    "conditions": [{"type": "Ready", "status": "Yes", "reason": "not camel"}],
                }
            ],
        }
    }
    errors = device_status_errors(claim)
    assert (
        errors[0]
        == "status.devices[0]: Invalid value: ('d', 'p', 'b', None): must be an allocated device in the claim"
    )
    assert any(".status: Unsupported value: 'Yes'" in e for e in errors)
    assert any(".reason: Invalid value: 'not camel'" in e for e in errors)
    assert any(".lastTransitionTime: Required value" in e for e in errors)
