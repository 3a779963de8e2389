# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the NVML and disk fault tests check after a failed call (tests/e2e/test_nvml_faults.py,
test_disk_faults.py): a fault-free reference run of the scenario, the node's state compared with
it, and the kubelet's next calls once the fault has cleared."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deckhouse_gpu.ports.kube import RESOURCE_CLAIMS
from testkit.kubeconfig import write_kubeconfig
from testkit.nvml_faults import Call
from tests.e2e.fault_node import FaultNode, Scenario


@dataclass
class Reference:
    """A fault-free prepare and unprepare of the scenario: the calls and the states they leave."""

    prepare_calls: list[Call]
    unprepare_calls: list[Call]
    before: str
    prepared: str
    released: str


def normalized(node: FaultNode) -> str:
    """The node's state with the claim's UID (in file names and the checkpoint) taken out."""
    return json.dumps(node.host(), sort_keys=True).replace(node.claim.uid, "<claim>")


def published(node: FaultNode) -> list[Any]:
    claim = node.server.kube.get(RESOURCE_CLAIMS, node.claim.name, namespace=node.claim.namespace)
    return list((claim.get("status") or {}).get("devices") or [])


_references: dict[str, Reference] = {}


def reference(server: Any, tmp: Path, scenario: Scenario) -> Reference:
    if scenario.name not in _references:
        node = FaultNode(tmp / "reference", write_kubeconfig(tmp, server.url), server, scenario)
        service = node.service()
        before = normalized(node)
        assert node.prepare(service) == ""
        prepared, split = normalized(node), len(node.faults.calls)
        assert node.unprepare(service) == ""
        calls = node.faults.calls
        _references[scenario.name] = Reference(
            calls[:split], calls[split:], before, prepared, normalized(node)
        )
    return _references[scenario.name]


def after_prepare_failed(node: FaultNode, ref: Reference) -> list[str]:
    problems = []
    entry = node.entry()
    if entry is not None and entry["state"] != "PrepareStarted":
        problems.append(f"a failed prepare left a {entry['state']} entry")
    if entry is None and normalized(node) != ref.before:
        problems.append(f"no entry, but the node changed: {normalized(node)}")
    if published(node):
        problems.append(f"status.devices lists devices of a failed prepare: {published(node)}")
    return problems


def converge(node: FaultNode, service: Any, ref: Reference, op: str, clear: Callable[[], None]) -> list[str]:
    """``clear`` ends the fault; what the kubelet does next must bring the node where a fault-free
    run does: the retried unprepare, or unprepare (the Pod deleted) and a new prepare and unprepare."""
    clear()
    if op == "unprepare":
        again = node.unprepare(service)
        return [f"the retried unprepare failed: {again}"] if again else same(node, ref.released, "released")
    problems = []
    if again := node.unprepare(service):
        problems.append(f"unprepare of the failed claim failed: {again}")
    problems += same(node, ref.before, "after unprepare of the failed claim")
    if again := node.prepare(service):
        return [*problems, f"the retried prepare failed: {again}"]
    problems += same(node, ref.prepared, "prepared")
    if not published(node):
        problems.append("status.devices empty after the retried prepare")
    if again := node.unprepare(service):
        return [*problems, f"the final unprepare failed: {again}"]
    return problems + same(node, ref.released, "released")


def same(node: FaultNode, expected: str, what: str) -> list[str]:
    found = normalized(node)
    return [] if found == expected else [f"{what}: {found} != {expected}"]
