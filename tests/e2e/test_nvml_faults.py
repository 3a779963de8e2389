# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""NVML failing at every call of prepare and unprepare, for every offer type (issue 16, item 2).

A fault-free run of each scenario lists the calls gpu-handler makes to the ports behind which NVML
and the PCI functions sit (testkit/nvml_faults.py); then, on a fresh node each time, the n-th of
them fails, once as a lost GPU (and every later call on the card with it, until the fault clears)
and once each as NVML's unknown error and timeout. After the failed call:

- the kubelet's answer for the claim is an error naming the card and NVML's words (the kubelet
  shows it in the Pod's events), and ResourceClaim.status.devices does not list the devices;
- the checkpoint decodes; a failed prepare left no entry and then the node is as it was, or a
  PrepareStarted entry whose records account for every MIG instance; a failed unprepare kept its
  entry, so the kubelet's retry resumes; no CDI spec, metadata file or daemon Pod is ownerless;
- once the fault clears, unprepare (the Pod deleted) gives the node back as it was, a prepare
  then succeeds exactly as a fault-free one, and its unprepare leaves what a fault-free one leaves.
"""

from __future__ import annotations

import pytest

from testkit.kubeconfig import write_kubeconfig
from testkit.nvml_faults import Call, FaultKind, nvml_text
from tests.e2e.fault_checks import Reference, after_prepare_failed, converge, reference, same
from tests.e2e.fault_node import SCENARIOS, FaultNode
from tests.e2e.test_prepare_crash_vfio import server

__all__ = ["server"]  # the module's fake API server (bound here for pytest)

# Calls whose failure may leave the call successful, the node then exactly as without the fault:
# the real ``visible`` answers False and the give-back only warns (an Event on the PhysicalGPU,
# and HardwareHealthy says NVML does not see the card); for a claim without VFIO, a function that
# sysfs cannot read is taken as not on vfio-pci (CDI discovery says what is wrong with the card).
TOLERATED = {
    "gpus.visible": ("vfio",),
    "vfio.function": ("physical", "physical-from-mig", "mig", "time-sliced", "mps"),
}
WORDS = {kind: nvml_text(kind).split(" (")[0] for kind in FaultKind} | {
    "sysfs": "[Errno 5]",
    "smi": "did not finish",
}
# Every port method that can reach NVML or the device and that some scenario calls; the test below
# fails when a scenario stops reaching one, so the enumeration cannot shrink unnoticed.
EXPECTED_SITES = {
    "mig.mig_enabled", "mig.set_mig_mode", "mig.card_busy", "mig.instances", "mig.create_instance",
    "mig.destroy_instance", "settings.set_time_slice", "settings.compute_mode", "settings.set_compute_mode",
    "gpus.processes", "gpus.visible", "vfio.function", "vfio.bind_vfio", "vfio.restore",
}  # fmt: skip


def message_problems(error: str, call: Call) -> list[str]:
    """The card and the failure's own words (NVML's, sysfs's errno, nvidia-smi's timeout)."""
    if call.card not in error or not any(words in error for words in WORDS.values()):
        return [f"the error does not name the card and the failure: {error!r}"]
    return []


def one_fault(node: FaultNode, ref: Reference, op: str, index: int, kind: FaultKind) -> list[str]:
    service = node.service()
    if op == "unprepare" and node.prepare(service):
        return ["the fault-free prepare before the unprepare failed"]
    node.faults.arm(len(node.faults.calls) + index, kind)
    error = node.prepare(service) if op == "prepare" else node.unprepare(service)
    if not node.faults.injected:
        return ["the call was not reached"]
    call = node.faults.injected[0][0]
    if not error:
        if node.scenario.name not in TOLERATED.get(call.site, ()):
            return ["the fault was swallowed: the call succeeded"]
        done = same(node, ref.prepared if op == "prepare" else ref.released, "after the tolerated fault")
        if op == "prepare" and (again := node.unprepare(service)):
            done.append(f"the unprepare after it failed: {again}")
        return done + node.leaks()
    problems = message_problems(error, call) + node.leaks()
    if op == "prepare":
        problems += after_prepare_failed(node, ref)
    if op == "unprepare" and node.entry() is None:
        problems.append(
            "a failed unprepare dropped the entry: the kubelet's retry would find nothing to undo"
        )
    return problems + converge(node, service, ref, op, node.faults.clear)


@pytest.mark.parametrize("op", ["prepare", "unprepare"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_nvml_call_of_prepare_and_unprepare_can_fail(server, tmp_path, scenario, op):
    ref = reference(server, tmp_path, scenario)
    calls = ref.prepare_calls if op == "prepare" else ref.unprepare_calls
    kubeconfig = write_kubeconfig(tmp_path, server.url)
    problems = []
    for index, call in enumerate(calls):
        for kind in FaultKind:
            node = FaultNode(tmp_path / f"{index}-{kind}", kubeconfig, server, scenario)
            found = one_fault(node, ref, op, index, kind)
            problems += [f"#{index} {call.site}({call.card}) {kind}: {problem}" for problem in found]
    assert not problems, "\n".join(problems)


def test_the_scenarios_reach_every_nvml_call_site(server, tmp_path):
    reached = set()
    for scenario in SCENARIOS:
        ref = reference(server, tmp_path, scenario)
        reached |= {call.site for call in ref.prepare_calls + ref.unprepare_calls}
    assert reached == EXPECTED_SITES
