# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import pytest

from deckhouse_gpu.simulator.scenario import (
    ScenarioError,
    builtin_names,
    load_scenario,
    numa_node_of,
    parse_scenario,
)


def test_builtin_scenarios_load_and_cover_the_catalogue():
    assert {"mixed-cluster", "single-a30"} <= set(builtin_names())
    mixed = load_scenario("mixed-cluster")
    models = {gpu.model for node in mixed.nodes for gpu in node.gpus}
    assert models == {"a30", "a100-40gb", "a100-80gb", "h100-80gb", "l40s", "t4"}
    assert any(node.machine == "vm" for node in mixed.nodes)
    assert any(not node.gpus for node in mixed.nodes)
    kinds = {step.kind for step in mixed.steps}
    assert kinds == {
        "podOnNode",
        "prepareClaim",
        "unprepareClaim",
        "labelNode",
        "setValidator",
        "removeGpu",
        "addGpu",
        "bindDriver",
        "breakNvml",
        "wait",
        "repairNvml",
    } | {
        "deleteObject",
        "deleteNode",
    }
    assert mixed.settings.health_grace_seconds == 2


def test_every_builtin_scenario_parses():
    for name in builtin_names():
        assert load_scenario(name).nodes, name


def test_scenario_from_a_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("nodes:\n  - name: n1\n    gpus: [{model: t4, address: '0000:01:00.0', driver: null}]\n")
    scenario = load_scenario(str(path))
    assert scenario.name == "mine"
    assert scenario.nodes[0].gpus[0].driver is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "a mapping with a 'nodes' list"),
        ("nodes: [{}]", r"nodes\[0\]: needs a 'name'"),
        ("nodes: [{name: a, machine: cloud}]", "machine must be one of"),
        ("nodes: [{name: a, gpus: [{model: v100, address: '0000:01:00.0'}]}]", "unknown model 'v100'"),
        ("nodes: [{name: a, gpus: [{model: t4, address: '1:0'}]}]", "not a PCI address"),
        ("nodes: [{name: a}, {name: a}]", "unique"),
        ("nodes: [{name: a}]\nsteps: [{title: x}]", "exactly one of"),
        ("nodes: [{name: a, validator: maybe}]", "validator must be one of"),
        ("nodes: [{name: a}]\nsteps: [{breakNvml: {node: a, failure: fire}}]", "failure must be one of"),
        ("nodes: [{name: a}]\nsteps: [{setValidator: {node: a}}]", "state must be one of"),
        ("nodes: [{name: a}]\nsteps: [{wait: {}}]", "wait needs seconds"),
        ("nodes: [{name: a}]\nsteps: [{prepareClaim: {node: a}}]", "needs the claim's name"),
        (
            "nodes: [{name: a}]\nsteps: [{podOnNode: {node: a, name: c}}]",
            "needs the pod's .and claim's. name and a",
        ),
        ("nodes: [{name: a}]\nsteps: [{podOnNode: {node: a, deviceClass: g}}]", "needs the pod's"),
        (
            "nodes: [{name: a}]\nsteps: [{podOnNode: {node: a, name: c, deviceClass: g, count: two}}]",
            "count is a",
        ),
        ("nodes: [{name: a}]\nsettings: {healthGraceSeconds: soon}", "are numbers"),
        (
            "nodes: [{name: a}]\nsteps: [{prepareClaim: {node: a, name: c, sharePercent: 25}}]",
            "need the devices the step allocates",
        ),
        (
            "nodes: [{name: a}]\nsteps: [{prepareClaim: {node: a, name: c, devices: [d], sharePercent: 0}}]",
            "above 0 and up to 100",
        ),
        (
            "nodes: [{name: a}]\nsteps: [{prepareClaim: {name: c, devices: [d], sharePercent: '5'}}]",
            "above 0 and up to 100",
        ),
        (
            "nodes: [{name: a}]\nsteps: [{prepareClaim: {node: a, name: c, devices: [d], config: MPS}}]",
            "config is the opaque parameters",
        ),
        (
            "nodes: [{name: a}]\nsteps: [{prepareClaim: {node: a, name: c, pod: vm}}]",
            "pod needs the Pod's name",
        ),
        (
            "nodes: [{name: a}]\nsteps: [{prepareClaim: {node: a, name: c, pod: {name: p, annotations: x}}}]",
            "annotations is a mapping",
        ),
        ("nodes: [{name: a}]\nsteps: [{setBusy: {node: a, pids: [one]}}]", "pids is a list of process IDs"),
        ("nodes: [{name: a, gpus: [{model: t4, address: '0000:01:00.0', numaNode: -2}]}]", "numaNode is a"),
        ("nodes: [{name: a, gpus: [{model: t4, address: '0000:01:00.0', numaNode: yes}]}]", "numaNode is a"),
        ("nodes: [{name: a}]\nsteps: [{addGpu: {node: a, model: t4, numaNode: one}}]", "numaNode is a"),
        ("nodes: [{name: a}]\nsettings: {kubernetesVersion: '1.33'}", "kubernetesVersion is one of 1.34 to"),
        ("nodes: [{name: a}]\nsettings: {kubernetesVersion: latest}", "kubernetesVersion is one of"),
    ],
)
def test_bad_scenarios_say_what_is_wrong(text, message):
    with pytest.raises(ScenarioError, match=message):
        parse_scenario("s", text)


def test_the_sharing_scenario_gives_shares_their_percent_and_config():
    steps = [step for step in load_scenario("sharing").steps if step.kind == "prepareClaim"]
    assert [(step.args["sharePercent"], step.args["config"]["sharing"]["strategy"]) for step in steps] == [
        (25, "MPS"),
        (75, "MPS"),
        (25, "TimeSlicing"),
    ]


def test_unknown_scenario_lists_the_known_ones():
    with pytest.raises(ScenarioError, match="mixed-cluster"):
        load_scenario("nope")


def test_the_vm_scenario_passes_a_card_through_and_meets_the_refusals():
    vm = load_scenario("vm")
    worker, guest = vm.nodes
    assert (worker.iommu, guest.iommu, guest.machine) == (True, True, "vm")
    assert [gpu.audio for gpu in worker.gpus] == [True, False]
    kinds = [step.kind for step in vm.steps]
    # First a Deckhouse VM's card through a GPUClass, then the claims KubeVirt and others bring.
    assert kinds[:3] == ["gpuClass", "vmPod", "deletePod"]
    assert kinds[3:] == ["prepareClaim", "prepareClaim", "setBusy", "prepareClaim", "unprepareClaim"]
    first = vm.steps[3].args
    assert first["pod"]["annotations"] == {"gpu.deckhouse.io/vfio": "true"}
    assert vm.steps[4].args["config"] == {"kind": "VfioDeviceConfig"}
    assert vm.steps[5].args["pids"] == [31337]


@pytest.mark.parametrize(
    ("version", "minor"), [("1.34", 34), ("1.35", 35), ("1.36", 36), ("1.37.1", 37), ("1.38", 37)]
)
def test_every_known_kubernetes_version_runs_and_a_newer_one_runs_as_the_newest(version, minor):
    scenario = parse_scenario("s", f"nodes: [{{name: a}}]\nsettings: {{kubernetesVersion: '{version}'}}")
    assert scenario.settings.kubernetes_minor == minor


def test_numa_node_is_what_the_scenario_says_or_what_the_machine_implies():
    scenario = parse_scenario(
        "s",
        "nodes:\n"
        "  - {name: a, gpus: [{model: t4, address: '0000:17:00.0'}, {model: t4, address: '0000:b1:00.0'},"
        " {model: t4, address: '0000:ca:00.0', numaNode: 3}]}\n",
    )
    gpus = scenario.nodes[0].gpus
    assert [gpu.numa_node for gpu in gpus] == [None, None, 3]
    # a two-socket server: buses below 0x80 hang off socket 0, the rest off socket 1
    assert [numa_node_of("bare-metal", gpu.address, gpu.numa_node) for gpu in gpus] == [0, 1, 3]
    assert numa_node_of("bare-metal", "0000:7f:00.0") == 0
    assert numa_node_of("bare-metal", "0000:80:00.0") == 1
    # a virtual machine shows no NUMA affinity unless the scenario gives one
    assert numa_node_of("vm", "0000:00:05.0") == -1
    assert numa_node_of("vm", "0000:00:05.0", 1) == 1
