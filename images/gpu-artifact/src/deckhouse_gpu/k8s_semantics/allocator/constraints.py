# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A claim's matchAttribute and distinctAttribute constraints in the search (KUBERNETES-FACTS.md F4.4).

The rule a device can fail alone (``attributes``: it lacks an attribute a constraint compares) is
a pure check; what depends on the other devices of the claim is kept in the pass: the value every
device must match, and per request the value no other request may repeat, as the scheduler keys
them.
"""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.k8s_semantics.allocator.checks import attribute
from deckhouse_gpu.k8s_semantics.allocator.reasons import MissingAttribute, Reason
from deckhouse_gpu.k8s_semantics.allocator.search_pass import SearchPass
from deckhouse_gpu.k8s_semantics.resources.claims import Alternative, Claim, Constraint
from deckhouse_gpu.k8s_semantics.resources.model import Device
from deckhouse_gpu.k8s_semantics.resources.semantics import Semantics

Added = list[tuple[str, Any]]  # what one device added, to take back when a later constraint fails


def attributes(claim: Claim, alternative: Alternative, device: Device) -> Reason | None:
    for constraint in claim.constraints:
        if not constraint.applies(alternative):
            continue
        if constraint.match_attribute:
            if attribute(device, constraint.match_attribute) is None:
                return MissingAttribute(constraint.match_attribute, "matchAttribute")
        elif constraint.distinct_attribute and attribute(device, constraint.distinct_attribute) is None:
            return MissingAttribute(constraint.distinct_attribute, "distinctAttribute")
    return None


def constrain(
    work: SearchPass,
    claim_index: int,
    claim: Claim,
    alternative: Alternative,
    device: Device,
    semantics: Semantics,
) -> bool:
    """Adds the device to every constraint that applies, or to none when one of them refuses it."""
    added: Added = []
    for index, constraint in enumerate(claim.constraints):
        if not constraint.applies(alternative):
            continue
        if not _adds(work, claim_index, index, constraint, alternative, device, semantics, added):
            _take_back(work, added)
            return False
    return True


def _adds(
    work: SearchPass,
    claim_index: int,
    index: int,
    constraint: Constraint,
    alternative: Alternative,
    device: Device,
    semantics: Semantics,
    added: Added,
) -> bool:
    if constraint.match_attribute:
        value = attribute(device, constraint.match_attribute)
        if value is None:
            return False  # ``attributes`` rules this out first; kept for the type
        key = (claim_index, index)
        current = work.matched.get(key)
        if current is not None and current != value:
            return False
        work.matched[key] = value
        work.matched_count[key] = work.matched_count.get(key, 0) + 1
        added.append(("match", key))
        return True
    if constraint.distinct_attribute:
        value = attribute(device, constraint.distinct_attribute)
        if value is None:
            return False
        slots = {k: v for k, v in work.distinct.items() if k[:2] == (claim_index, index)}
        # 1.34 compares value pointers, which never match across devices (KUBERNETES-FACTS.md F4.4).
        if semantics.version != "1.34" and value in slots.values():
            return False
        slot = (claim_index, index, alternative.request)
        added.append(("distinct", (slot, work.distinct.get(slot))))
        work.distinct[slot] = value
        return True
    return True


def _take_back(work: SearchPass, added: Added) -> None:
    for kind, entry in reversed(added):
        if kind == "match":
            work.matched_count[entry] -= 1
            if work.matched_count[entry] == 0:
                del work.matched[entry]
        else:
            slot, previous = entry
            if previous is None:
                work.distinct.pop(slot, None)
            else:
                work.distinct[slot] = previous


def unconstrain(work: SearchPass, claim_index: int, claim: Claim, alternative: Alternative) -> None:
    """Removes a placed device from its constraints; a distinct slot goes with it, as in the scheduler."""
    for index, constraint in enumerate(claim.constraints):
        if not constraint.applies(alternative):
            continue
        if constraint.match_attribute:
            key = (claim_index, index)
            if key in work.matched_count:
                work.matched_count[key] -= 1
                if work.matched_count[key] == 0:
                    del work.matched[key]
        elif constraint.distinct_attribute:
            work.distinct.pop((claim_index, index, alternative.request), None)
