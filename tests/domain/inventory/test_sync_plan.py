# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from deckhouse_gpu.domain.inventory.desired import describe_gpu
from deckhouse_gpu.domain.inventory.host_facts import HostFacts, node_info
from deckhouse_gpu.domain.inventory.pci import PciDevice
from deckhouse_gpu.domain.inventory.sync_plan import plan_sync

NODE = node_info("w1", HostFacts())


def gpu(address: str, driver: str = "nvidia"):
    return describe_gpu("w1", PciDevice(address, "030200", "10de", "20b7", driver=driver), None, NODE)


def stored(desired, uid="uid"):
    meta = {"name": desired.name, "uid": uid, "labels": dict(desired.labels), "resourceVersion": "1"}
    return {"metadata": meta, "status": dict(desired.status)}


def plan(desired, objects, unreadable=frozenset(), removed=frozenset(), absences=None, threshold=2):
    return plan_sync("w1", desired, objects, unreadable, removed, absences or {}, threshold)


def test_new_cards_are_created_in_name_order():
    result = plan([gpu("0000:b1:00.0"), gpu("0000:17:00.0")], [])
    assert [g.address for g in result.create] == ["0000:17:00.0", "0000:b1:00.0"]
    assert not result.update
    assert not result.delete


def test_unchanged_cards_produce_no_work():
    cards = [gpu("0000:17:00.0")]
    result = plan(cards, [stored(cards[0])])
    assert not result.create
    assert not result.update
    assert not result.delete
    assert not result.suspected_gone


def test_changed_card_is_updated():
    result = plan([gpu("0000:17:00.0", "vfio-pci")], [stored(gpu("0000:17:00.0"))])
    assert [g.name for g, _ in result.update] == ["w1-0000-17-00-0"]


def test_udev_remove_deletes_at_once():
    result = plan([], [stored(gpu("0000:17:00.0"), uid="u1")], removed=frozenset({"0000:17:00.0"}))
    assert [(r.name, r.uid) for r in result.delete] == [("w1-0000-17-00-0", "u1")]
    assert "removed" in result.delete[0].reason


def test_silent_absence_needs_consecutive_scans():
    objects = [stored(gpu("0000:17:00.0"))]
    first = plan([], objects)
    assert not first.delete
    assert first.suspected_gone == {"w1-0000-17-00-0": 1}
    second = plan([], objects, absences=first.suspected_gone)
    assert [r.name for r in second.delete] == ["w1-0000-17-00-0"]
    assert "2 consecutive scans" in second.delete[0].reason


def test_a_card_seen_again_resets_its_absence():
    card = gpu("0000:17:00.0")
    back = plan([card], [stored(card)], absences={card.name: 1})
    assert not back.suspected_gone
    assert not back.delete
    again = plan([], [stored(card)], absences=back.suspected_gone)
    assert not again.delete


def test_unreadable_card_is_never_deleted():
    objects = [stored(gpu("0000:17:00.0"))]
    result = plan([], objects, unreadable=frozenset({"0000:17:00.0"}), absences={"w1-0000-17-00-0": 5})
    assert not result.delete
    assert not result.suspected_gone


def test_objects_of_another_node_are_left_alone():
    other = describe_gpu(
        "w2", PciDevice("0000:17:00.0", "030200", "10de", "20b7"), None, node_info("w2", HostFacts())
    )
    result = plan([], [stored(other)], removed=frozenset({"0000:17:00.0"}), threshold=1)
    assert not result.delete


def test_object_without_status_counts_as_absent_when_not_on_host():
    orphan = {"metadata": {"name": "w1-0000-99-00-0", "uid": "u9"}}
    result = plan([], [orphan], threshold=1)
    assert [r.name for r in result.delete] == ["w1-0000-99-00-0"]
