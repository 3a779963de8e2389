# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The state of one Allocate call: what is placed, charged, shared and constrained so far.

The search adds to it device by device and takes back what it undoes; explain judges devices
against a fresh one, which holds only what was allocated before the call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from deckhouse_gpu.k8s_semantics.allocator.gather import Gathered, Pool
from deckhouse_gpu.k8s_semantics.allocator.node_match import Node
from deckhouse_gpu.k8s_semantics.apimachinery.quantity import Quantity
from deckhouse_gpu.k8s_semantics.resources.claims import Alternative
from deckhouse_gpu.k8s_semantics.resources.model import Device
from deckhouse_gpu.k8s_semantics.resources.state import DeviceKey

CounterKey = tuple[str, str, str]  # pool key "driver/pool", scope (slice on 1.34), counter set


@dataclass
class Placed:
    alternative: Alternative
    device: Device
    share_id: str | None = None
    consumed: dict[str, Quantity] | None = None
    charged: bool = False  # its counters were added in this pass


@dataclass
class SearchPass:
    node: Node
    gathered: Gathered
    available: dict[CounterKey, dict[str, Fraction]]
    consuming: dict[CounterKey, dict[str, Fraction]] = field(default_factory=dict)
    allocating: set[DeviceKey] = field(default_factory=set)
    sharing: dict[DeviceKey, dict[str, Fraction]] = field(default_factory=dict)  # this call's shares
    placed: list[list[Placed]] = field(default_factory=list)  # per claim
    matched: dict[tuple[int, int], tuple[str, Any]] = field(default_factory=dict)  # (claim, constraint)
    matched_count: dict[tuple[int, int], int] = field(default_factory=dict)
    distinct: dict[tuple[int, int, str], Any] = field(default_factory=dict)
    all_devices: dict[int, list[tuple[Pool, Device]]] = field(default_factory=dict)  # per "All" alternative
    # Per alternative (by id), the one whose selectors judge its candidates, where the scheduler's
    # selection cache mixes them up (Semantics.all_subrequest_slip); itself when absent.
    selection: dict[int, Alternative] = field(default_factory=dict)
