"""Why claims do not fit a node: per request, what stopped each device (beyond the scheduler,
which only says "cannot allocate all claims").

Every candidate device of the node is judged alone against what is already allocated, with the
first check that fails in the scheduler's order; devices that fit alone but still gave no
solution are blamed on the combination (counts, constraints, other requests sharing counters).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

from deckhouse_gpu.domain.allocation import capacity
from deckhouse_gpu.domain.allocation.checks import SelectorFailure, selectors_match, untolerated_taint
from deckhouse_gpu.domain.allocation.claims import Alternative, Claim
from deckhouse_gpu.domain.allocation.gather import Pool, gather
from deckhouse_gpu.domain.allocation.model import Device
from deckhouse_gpu.domain.allocation.node_match import Node
from deckhouse_gpu.domain.allocation.search import Allocator, SearchPass
from deckhouse_gpu.domain.allocation.state import AllocatedState
from deckhouse_gpu.domain.apimachinery.quantity import Quantity

_SHORT = 60


def _short(expression: str) -> str:
    flat = " ".join(expression.split())
    return flat if len(flat) <= _SHORT else flat[: _SHORT - 3] + "..."


def _counter_reason(allocator: Allocator, work: SearchPass, pool: Pool, device: Device) -> str | None:
    for set_name, counters in device.consumes:
        left = work.available.get(allocator.counter_key(pool, device, set_name))
        if left is None:
            return f"counter set {set_name} not found"
        for name, amount in counters.items():
            if name not in left or amount.value > left[name]:
                have = Quantity.exact(max(left.get(name, Fraction(0)), Fraction(0)), amount.binary)
                return f"counters exhausted ({set_name}/{name}: needs {amount}, {have} left)"
    return None


def _capacity_reason(state: AllocatedState, alternative: Alternative, device: Device) -> str | None:
    missing = [name for name in alternative.capacity if name not in device.capacity]
    if missing:
        return f"no capacity {missing[0]}"
    shared = state.shares.get(device.key, {})
    for name, cap in device.capacity.items():
        amount = capacity.consumed(cap, alternative.capacity.get(name))
        if capacity.violates(cap, amount):
            return f"capacity {name}: {amount} breaks the request policy"
        used = shared.get(name, Fraction(0))
        if amount.value + used > cap.value.value:
            left = Quantity.exact(max(cap.value.value - used, Fraction(0)), cap.value.binary)
            return f"capacity {name}: needs {amount}, {left} left"
    return None


def device_reason(
    allocator: Allocator,
    work: SearchPass,
    state: AllocatedState,
    alternative: Alternative,
    pool: Pool,
    device: Device,
) -> str | None:
    """The first check the device fails alone, or None when it would fit."""
    semantics = allocator.semantics
    if device.binding_conditions:
        return "needs binding conditions"
    if device.key in state.in_use:
        return "in use"
    try:
        failed = selectors_match(allocator.matcher, alternative, device)
    except SelectorFailure as error:
        return f"selector error: {error}"
    if failed is not None:
        if failed in alternative.device_class.selectors:
            return f"not of DeviceClass {alternative.device_class.name}"
        return f"request selector false: {_short(failed)}"
    if device.consumes:
        if not semantics.partitionable:
            return "consumes counters, but partitionable devices are off"
        multi = device.allow_multiple and semantics.consumable
        if not (multi and device.key in state.shares):
            reason = _counter_reason(allocator, work, pool, device)
            if reason:
                return reason
    if semantics.taints:
        taint = untolerated_taint(device, alternative.tolerations, semantics)
        if taint is not None:
            return f"taint {taint.key}={taint.value}:{taint.effect} not tolerated"
    if semantics.consumable:
        return _capacity_reason(state, alternative, device)
    return None


def explain(allocator: Allocator, claims: Sequence[Claim], node: Node, state: AllocatedState) -> list[str]:
    gathered = gather(allocator.inventory, node, allocator.semantics)
    work = SearchPass(node, gathered, allocator.availability(gathered, state))
    lines = [f"pool {problem} is invalid and was skipped" for problem in gathered.invalid]
    for pool in gathered.pools:
        if pool.incomplete:
            lines.append(f"pool {pool.driver}/{pool.name} is incomplete (slices still being published)")
    if not gathered.pools:
        lines.append(f"node {node.name} has no ResourceSlices")
    for claim in claims:
        for request in claim.requests:
            for alternative in request.alternatives:
                reasons: Counter[str] = Counter()
                fitting = 0
                total = 0
                for pool in gathered.pools:
                    for device in pool.candidates:
                        total += 1
                        reason = device_reason(allocator, work, state, alternative, pool, device)
                        if reason is None:
                            fitting += 1
                        else:
                            reasons[reason] += 1
                wanted = "all" if alternative.all_devices else str(alternative.count)
                line = f"claim {claim.ref} request {alternative.name} (wants {wanted}): "
                line += f"{fitting} of {total} devices fit alone"
                if reasons:
                    line += "; " + "; ".join(f"{count} {reason}" for reason, count in reasons.most_common())
                if fitting and (alternative.all_devices or fitting >= alternative.count):
                    line += "; those do not fit together with the other requests or the constraints"
                lines.append(line)
    return lines
