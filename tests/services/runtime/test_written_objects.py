# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Event names stay valid whatever object an Event is about. Whether the server accepts the Events
and ResourceClaim.status.devices the components write is tests/real/test_written_objects.py (a
real kube-apiserver of each version); this is the in-process check over many names."""

from __future__ import annotations

from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules_format import is_dns_subdomain
from deckhouse_gpu.services.runtime.events import event_name

LONGEST_CARD = ("w" * 240) + "-0000-17-00-0"  # a PhysicalGPU name at the 253-character limit


def test_event_names_stay_dns_subdomains_for_any_object_name() -> None:
    for name in (LONGEST_CARD, "a" * 237 + "-b", "x", "w1-0000-17-00-0"):
        made = event_name(name)
        assert is_dns_subdomain(made), made
    assert event_name("a" * 235 + "-.b").startswith("a" * 235 + ".")  # no '-' or '.' before the suffix
