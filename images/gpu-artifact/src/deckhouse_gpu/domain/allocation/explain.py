# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Why claims do not fit a node: per request, what stopped each device (beyond the scheduler,
which only says "cannot allocate all claims").

Every candidate device of the node is judged alone against what is already allocated, by the
search's own rules (``placement``) in the scheduler's order; the first that fails is its reason.
Devices that fit alone but still gave no solution are blamed on the combination (counts,
constraints between devices, other requests sharing counters).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from deckhouse_gpu.k8s_semantics.allocator.checks import SelectorFailure
from deckhouse_gpu.k8s_semantics.allocator.gather import Pool
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.allocator.reasons import Reason, SelectorError
from deckhouse_gpu.k8s_semantics.allocator.search import Allocator
from deckhouse_gpu.k8s_semantics.allocator.search_pass import SearchPass
from deckhouse_gpu.k8s_semantics.resources.claims import Alternative, Claim
from deckhouse_gpu.k8s_semantics.resources.model import Device
from deckhouse_gpu.k8s_semantics.resources.state import AllocatedState


def device_reason(
    allocator: Allocator,
    work: SearchPass,
    state: AllocatedState,
    claim_index: int,
    claim: Claim,
    alternative: Alternative,
    pool: Pool,
    device: Device,
) -> Reason | None:
    """The first rule the device fails alone, or None when the search could place it."""
    placer = allocator.placer
    try:
        reason = placer.candidate(work, state, claim_index, alternative, device)
    except SelectorFailure as error:
        return SelectorError(str(error))
    return reason if reason is not None else placer.alone(work, state, claim, alternative, pool, device)


def explain(allocator: Allocator, claims: Sequence[Claim], node: Node, state: AllocatedState) -> list[str]:
    work = allocator.start(claims, node, state)
    gathered = work.gathered
    lines = [f"pool {problem} is invalid and was skipped" for problem in gathered.invalid]
    for pool in gathered.pools:
        if pool.incomplete:
            lines.append(f"pool {pool.driver}/{pool.name} is incomplete (slices still being published)")
    if not gathered.pools:
        lines.append(f"node {node.name} has no ResourceSlices")
    for claim_index, claim in enumerate(claims):
        for request in claim.requests:
            for alternative in request.alternatives:
                reasons: Counter[str] = Counter()
                fitting = 0
                total = 0
                for pool in gathered.pools:
                    for device in pool.candidates:
                        total += 1
                        reason = device_reason(
                            allocator, work, state, claim_index, claim, alternative, pool, device
                        )
                        if reason is None:
                            fitting += 1
                        else:
                            reasons[str(reason)] += 1
                wanted = "all" if alternative.all_devices else str(alternative.count)
                line = f"claim {claim.ref} request {alternative.name} (wants {wanted}): "
                line += f"{fitting} of {total} devices fit alone"
                if reasons:
                    line += "; " + "; ".join(f"{count} {reason}" for reason, count in reasons.most_common())
                if fitting and (alternative.all_devices or fitting >= alternative.count):
                    line += "; those do not fit together with the other requests or the constraints"
                lines.append(line)
    return lines
