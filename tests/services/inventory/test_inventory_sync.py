# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from typing import Any

import pytest

from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.ports.kube import EVENTS, NODES, PHYSICAL_GPUS, Resource, Unavailable
from deckhouse_gpu.services.inventory.inventory_sync import InventorySync
from deckhouse_gpu.services.runtime.events import EventRecorder
from deckhouse_gpu.simulator.api.memory_kube import MemoryKube
from deckhouse_gpu.simulator.host.host_builder import HostBuilder


@pytest.fixture
def api() -> MemoryKube:
    kube = MemoryKube()
    kube.create(NODES, {"metadata": {"name": "w1"}})
    return kube


def make_sync(api, host: HostBuilder, clock, threshold: int = 2) -> InventorySync:
    return InventorySync(
        api, SysfsHost(host.root), "w1", EventRecorder(api, "gpu-node-agent", "w1", clock), threshold
    )


def gpus(api) -> dict[str, dict[str, Any]]:
    return {obj["metadata"]["name"]: obj for obj in api.list(PHYSICAL_GPUS).items}


def reasons(api) -> list[str]:
    events = sorted(
        api.list(EVENTS, namespace="default").items, key=lambda e: int(e["metadata"]["resourceVersion"])
    )
    return [e["reason"] for e in events]


def test_first_pass_creates_one_object_per_card_owned_by_the_node(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    host.add_gpu("h100-80gb", "0000:65:00.0", driver="vfio-pci")
    report = make_sync(api, host, clock).sync()
    assert report.ok
    assert sorted(report.created) == ["w1-0000-17-00-0", "w1-0000-65-00-0"]
    objects = gpus(api)
    node_uid = api.get(NODES, "w1")["metadata"]["uid"]
    a30 = objects["w1-0000-17-00-0"]
    assert a30["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "w1", "uid": node_uid}
    ]
    assert a30["metadata"]["labels"]["gpu.deckhouse.io/device"] == "a30-pcie"
    assert a30["status"]["pciInfo"]["device"]["name"] == "GA100GL [A30 PCIe]"
    assert a30["status"]["nodeInfo"]["bareMetal"] is True
    assert objects["w1-0000-65-00-0"]["status"]["currentState"]["driverType"] == "VFIO"
    assert reasons(api) == ["PhysicalGPUCreated", "PhysicalGPUCreated"]


def test_a_pass_without_changes_writes_nothing(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    sync = make_sync(api, host, clock)
    sync.sync()
    api.calls.clear()
    report = sync.sync()
    assert report.ok
    assert (report.created, report.updated, report.deleted) == ([], [], [])
    assert api.writes == 0


def test_driver_change_updates_only_agent_fields_and_keeps_handler_fields(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0", driver="vfio-pci")
    sync = make_sync(api, host, clock)
    sync.sync()
    name = "w1-0000-17-00-0"
    handler_status = {
        "capabilities": {"productName": "NVIDIA A30"},
        "currentState": {"nvidia": {"gpuUUID": "GPU-1"}},
        "conditions": [{"type": "HardwareHealthy", "status": "True"}],
    }
    api.patch(PHYSICAL_GPUS, name, {"status": handler_status}, subresource="status")
    host.bind_driver("0000:17:00.0", "nvidia")
    report = sync.sync()
    assert report.updated == [name]
    status = gpus(api)[name]["status"]
    assert status["currentState"] == {
        "nvidia": {"gpuUUID": "GPU-1"},
        "driverType": "Nvidia",
        "driverName": "nvidia",
    }
    assert status["capabilities"] == {"productName": "NVIDIA A30"}
    assert status["conditions"] == [{"type": "HardwareHealthy", "status": "True"}]
    assert reasons(api)[-1] == "PhysicalGPUDriverChanged"


class RacingKube(MemoryKube):
    """Another writer changes the object right before the agent's first status patch."""

    def __init__(self) -> None:
        super().__init__()
        self.raced = False

    def patch(self, resource: Resource, name: str, patch, subresource=None, namespace=None):
        if subresource == "status" and not self.raced and "metadata" in patch:
            self.raced = True
            super().patch(
                resource, name, {"status": {"capabilities": {"memoryMiB": 24576}}}, subresource="status"
            )
        return super().patch(resource, name, patch, subresource, namespace)


def test_conflicting_writer_is_not_overwritten(host, clock):
    api = RacingKube()
    api.create(NODES, {"metadata": {"name": "w1"}})
    host.add_gpu("a30", "0000:17:00.0")
    report = make_sync(api, host, clock).sync()
    assert report.ok
    status = gpus(api)["w1-0000-17-00-0"]["status"]
    assert status["capabilities"] == {"memoryMiB": 24576}
    assert status["pciInfo"]["address"] == "0000:17:00.0"
    assert api.raced


def test_udev_remove_deletes_and_records_an_event(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    host.add_gpu("a30", "0000:31:00.0")
    sync = make_sync(api, host, clock)
    sync.sync()
    host.remove_device("0000:31:00.0")
    report = sync.sync(removed=frozenset({"0000:31:00.0"}))
    assert report.deleted == ["w1-0000-31-00-0"]
    assert list(gpus(api)) == ["w1-0000-17-00-0"]
    assert reasons(api)[-1] == "PhysicalGPUDeleted"


def test_silent_disappearance_needs_two_scans(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    sync = make_sync(api, host, clock)
    sync.sync()
    host.remove_device("0000:17:00.0")
    first = sync.sync()
    assert first.suspected_gone == {"w1-0000-17-00-0": 1}
    assert "w1-0000-17-00-0" in gpus(api)
    assert sync.sync().deleted == ["w1-0000-17-00-0"]
    assert gpus(api) == {}


def test_garbage_in_sysfs_keeps_the_existing_object(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    sync = make_sync(api, host, clock, threshold=1)
    sync.sync()
    host.write_device_file("0000:17:00.0", "vendor", "garbage")
    report = sync.sync()
    assert report.ok
    assert [e.address for e in report.device_errors] == ["0000:17:00.0"]
    assert report.deleted == []
    assert "w1-0000-17-00-0" in gpus(api)


def test_unreadable_host_deletes_nothing(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    sync = make_sync(api, host, clock, threshold=1)
    sync.sync()
    host.bus_devices.rename(host.bus_devices.with_name("gone"))
    report = sync.sync()
    assert not report.ok
    assert "cannot list" in report.failures[0]
    assert "w1-0000-17-00-0" in gpus(api)


def test_one_cards_api_failure_does_not_block_the_others(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    host.add_gpu("a30", "0000:31:00.0")
    api.fail_next("create", Unavailable("etcd timeout"))
    sync = make_sync(api, host, clock)
    report = sync.sync()
    assert not report.ok
    assert report.created == ["w1-0000-31-00-0"]
    assert "etcd timeout" in report.failures[0]
    retry = sync.sync()
    assert retry.ok
    assert retry.created == ["w1-0000-17-00-0"]


def test_list_failure_fails_the_pass(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    api.fail_next("list", Unavailable("connection refused"))
    report = make_sync(api, host, clock).sync()
    assert not report.ok
    assert gpus(api) == {}


def test_missing_node_creates_without_owner_then_adds_it(host, clock):
    api = MemoryKube()
    host.add_gpu("a30", "0000:17:00.0")
    sync = make_sync(api, host, clock)
    assert sync.sync().ok
    assert "ownerReferences" not in gpus(api)["w1-0000-17-00-0"]["metadata"]
    api.create(NODES, {"metadata": {"name": "w1"}})
    assert sync.sync().updated == ["w1-0000-17-00-0"]
    refs = gpus(api)["w1-0000-17-00-0"]["metadata"]["ownerReferences"]
    assert refs[0]["uid"] == api.get(NODES, "w1")["metadata"]["uid"]


def test_a_node_deleted_and_created_anew_owns_the_cards_created_again(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    sync = make_sync(api, host, clock)
    sync.sync()
    api.delete(NODES, "w1")  # the garbage collector takes the card with it
    new_uid = api.create(NODES, {"metadata": {"name": "w1"}})["metadata"]["uid"]
    report = sync.sync()
    assert report.created == ["w1-0000-17-00-0"]
    # An owner naming the old Node's uid would have the collector delete the card at once.
    refs = gpus(api)["w1-0000-17-00-0"]["metadata"]["ownerReferences"]
    assert [ref["uid"] for ref in refs] == [new_uid]
    assert not report.ownerless


def test_cards_created_while_the_node_is_away_are_reported_ownerless(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    sync = make_sync(api, host, clock)
    sync.sync()
    api.delete(NODES, "w1")
    report = sync.sync()
    assert report.created == ["w1-0000-17-00-0"]
    assert report.ownerless
    new_uid = api.create(NODES, {"metadata": {"name": "w1"}})["metadata"]["uid"]
    report = sync.sync()
    assert report.updated == ["w1-0000-17-00-0"]
    assert not report.ownerless
    assert gpus(api)["w1-0000-17-00-0"]["metadata"]["ownerReferences"][0]["uid"] == new_uid


def test_a_pass_with_its_cards_in_place_does_not_read_the_node_again(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    sync = make_sync(api, host, clock)
    sync.sync()
    api.calls.clear()
    sync.sync()
    assert api.calls["get"] == 0


def test_node_deletion_garbage_collects_the_objects(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    make_sync(api, host, clock).sync()
    api.delete(NODES, "w1")
    assert gpus(api) == {}


def test_object_deleted_by_hand_is_recreated(api, host, clock):
    host.add_gpu("a30", "0000:17:00.0")
    sync = make_sync(api, host, clock)
    sync.sync()
    api.delete(PHYSICAL_GPUS, "w1-0000-17-00-0")
    assert sync.sync().created == ["w1-0000-17-00-0"]
