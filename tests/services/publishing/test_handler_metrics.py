# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's loop metrics move when their things happen: slice publishes (changed, unchanged,
failed), a node's fallback when the API server drops a DRA feature's fields, NVML errors of the
capabilities pass and API write failures, as ``gpu-handler run`` wires them."""

from __future__ import annotations

from typing import Any

from deckhouse_gpu.adapters.metrics.api_write_metrics import MeteredKube
from deckhouse_gpu.adapters.metrics.handler_metrics import HandlerMetrics
from deckhouse_gpu.adapters.metrics.metered_ports import MeteredNVML
from deckhouse_gpu.domain.inventory.health.hardware_health import HealthSettings
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS, Unavailable
from deckhouse_gpu.services.publishing.capabilities import CapabilitiesPass
from deckhouse_gpu.services.publishing.handler import HandlerLoop, HandlerSettings
from deckhouse_gpu.services.publishing.slice_publisher import PublisherSettings, SlicePublisher
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.services.runtime.health import HealthState
from deckhouse_gpu.simulator.api.feature_gates import gates_off
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.sim_nvml import SimulatedNVML
from testkit.gpu_objects import node_cards

P = "d8_gpu_handler"


class Node:
    """One node's handler loop on the in-memory API and a simulated NVML, measured."""

    def __init__(self, clock: Any, settings: PublisherSettings | None = None) -> None:
        self.kube = MemoryKube()
        self.kube.create(NODES, {"metadata": {"name": "w1"}})
        cards = node_cards("w1", "a30", 2)
        for card in cards:
            status = card.pop("status")
            self.kube.create(PHYSICAL_GPUS, card)
            self.kube.patch(PHYSICAL_GPUS, card["metadata"]["name"], {"status": status}, subresource="status")
        self.nvml = SimulatedNVML({"0000:10:00.0": "a30", "0000:18:00.0": "a30"}, node_name="w1")
        self.metrics = HandlerMetrics()
        api = MeteredKube(self.kube, self.metrics)
        events = EventRecorder(api, "gpu-handler", "w1", clock)
        capabilities = CapabilitiesPass(
            api, MeteredNVML(self.nvml, self.metrics), "w1", events, clock, HealthSettings(0, (5,))
        )
        publisher = SlicePublisher(api, "w1", events, settings or PublisherSettings())
        self.loop = HandlerLoop(
            capabilities, HealthState(), clock, HandlerSettings(), publisher, observer=self.metrics
        )

    def value(self, name: str, **labels: str) -> float:
        return self.metrics.registry.get_sample_value(f"{P}_{name}", labels) or 0.0


def test_publishes_count_as_changed_then_unchanged_then_failed(clock):
    node = Node(clock)
    assert node.value("slice_publishes_total", result="changed") == 0  # present before the first
    assert node.loop._pass([]).ok
    assert node.value("slice_publishes_total", result="changed") == 1
    assert node.value("api_writes_total", resource="ResourceSlice") == 2
    assert node.loop._pass([]).ok
    assert node.value("slice_publishes_total", result="unchanged") == 1
    node.kube.patch(NODES, "w1", {"metadata": {"labels": {"gpu.deckhouse.io/mig": "false"}}})
    node.kube.fail_next("create", Unavailable("etcd timeout"))  # the pool without MIG offers
    assert not node.loop._pass([]).ok
    assert node.value("slice_publishes_total", result="error") == 1
    assert node.value("api_write_errors_total", resource="ResourceSlice", error="Unavailable") == 1
    assert node.loop._pass([]).ok  # the retry
    assert node.value("slice_publishes_total", result="changed") == 2
    assert node.value("dra_feature_fallback", feature="DRAPartitionableDevices") == 0


def test_a_node_falling_back_from_a_dropped_feature_says_so_until_restarted(clock):
    node = Node(clock)
    node.kube.drop_fields = gates_off(partitionable=True)
    assert node.loop._pass([]).ok
    assert node.value("dra_feature_fallback", feature="DRAPartitionableDevices") == 1
    assert node.value("dra_feature_fallback", feature="DRAConsumableCapacity") == 0
    node.loop._pass([])
    assert node.value("dra_feature_fallback", feature="DRAPartitionableDevices") == 1


def test_a_feature_switched_off_by_the_settings_is_not_a_fallback(clock):
    node = Node(clock, PublisherSettings(partitionable="off"))
    assert node.loop._pass([]).ok
    assert node.value("dra_feature_fallback", feature="DRAPartitionableDevices") == 0


def test_nvml_errors_count_by_query_and_error(clock):
    node = Node(clock)
    node.nvml.fail_device("0000:10:00.0", "GPU is lost")
    node.loop._pass([])
    assert node.value("nvml_errors_total", query="snapshot", error="NVMLQueryFailed") == 1
    assert node.value("nvml_errors_total", query="driver", error="NVMLUnavailable") == 0


def test_nvml_unavailable_counts_once_per_pass_not_per_card(clock):
    node = Node(clock)
    node.nvml.fail_library()
    node.loop._pass([])
    assert node.value("nvml_errors_total", query="driver", error="NVMLUnavailable") == 1
    assert node.value("nvml_errors_total", query="snapshot", error="NVMLUnavailable") == 0


def test_dropped_claim_device_status_is_a_gauge_of_the_last_write():
    metrics = HandlerMetrics()

    def dropped() -> float | None:
        return metrics.registry.get_sample_value(f"{P}_claim_device_status_dropped")

    assert dropped() == 0  # exported from the start: the alert's "unless" finds the node
    metrics.observe_device_status(False)
    assert dropped() == 1
    metrics.observe_device_status(True)  # the gate was switched on again
    assert dropped() == 0
