# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The prepare checkpoint codec: round trip, integrity, reboots, tolerant and strict reading."""

import json
from typing import Any

import pytest

from deckhouse_gpu.domain.config.mps_sharing import MpsPlan
from deckhouse_gpu.domain.config.time_slicing import TimeSliceInterval, TimeSlicePlan
from deckhouse_gpu.domain.prepare.checkpoint import (
    Checkpoint,
    ClaimEntry,
    CorruptCheckpoint,
    checksum,
    decode,
    encode,
)
from deckhouse_gpu.domain.prepare.mig_instance import MigInstance, MigRecord
from deckhouse_gpu.domain.prepare.plan import DevicePlan

BOOT = "7d3c1b2a-0000-4000-8000-000000000001"
OTHER_BOOT = "7d3c1b2a-0000-4000-8000-000000000002"
CARD = "0000:17:00.0"

MIG_PLAN = DevicePlan(
    request="gpu", pool="w1", device="gpu-0000-17-00-0-mig-1g-6gb-2", card=CARD, kind="MIG",
    profile_id=14, placement_start=2, placement_size=1,
)  # fmt: skip
PHYSICAL_PLAN = DevicePlan(
    request="whole",
    pool="w1",
    device="gpu-0000-31-00-0",
    card="0000:31:00.0",
    kind="Physical",
    share_id="s-1",
    uuid="GPU-31",
    sharing=MpsPlan(25, 6144),
)
INSTANCE = MigInstance(CARD, 5, 0, 14, 2, 1, "MIG-11111111-2222-3333-4444-555555555555")


def started(uid="uid-a", devices=(MIG_PLAN,)):
    return ClaimEntry(uid=uid, namespace="ns", name=f"claim-{uid}", state="PrepareStarted", devices=devices)


def full_checkpoint():
    mig = started("uid-a").with_mig_enabled(CARD).with_mig(MigRecord.from_instance(INSTANCE))
    mig = mig.completed({MIG_PLAN.device: ("k8s.gpu.deckhouse.io/claim=uid-a-mig",)}, "2026-11-21T12:00:00Z")
    physical = started("uid-b", (PHYSICAL_PLAN,)).with_mig_disabled(PHYSICAL_PLAN.card)
    return Checkpoint(BOOT).with_entry(mig).with_entry(physical)


def rewrite(data: bytes, change, *, rehash=True) -> bytes:
    """The file as a (newer or broken) writer would leave it: changed, then checksummed again."""
    document = json.loads(data)
    change(document)
    if rehash:
        document["checksum"] = checksum(document)
    return json.dumps(document).encode()


def test_round_trip_keeps_every_field():
    checkpoint = full_checkpoint()
    decoded = decode(encode(checkpoint), BOOT)
    assert decoded.checkpoint == checkpoint
    assert decoded.dropped_after_reboot == []
    entry = decoded.checkpoint.claims["uid-a"]
    assert entry.state == "PrepareCompleted"
    assert entry.mig == (MigRecord(CARD, 5, 0, 14, 2, 1, INSTANCE.uuid),)
    assert entry.mig_enabled_cards == (CARD,)
    assert entry.updated == "2026-11-21T12:00:00Z"
    assert decoded.checkpoint.claims["uid-b"].mig_disabled_cards == (PHYSICAL_PLAN.card,)
    shared = decoded.checkpoint.claims["uid-b"].devices[0]  # what a card must be set to after a crash
    assert (shared.uuid, shared.sharing) == ("GPU-31", MpsPlan(thread_percentage=25, memory_limit_mib=6144))


def test_file_layout_is_versioned_with_a_checksum_and_omits_empty_options():
    document = json.loads(encode(full_checkpoint()))
    assert document["version"] == 1
    assert document["bootID"] == BOOT
    assert document["checksum"].startswith("sha256:")
    assert document["checksum"] == checksum(document)
    assert document["claims"]["uid-b"]["devices"] == [
        {"request": "whole", "pool": "w1", "device": "gpu-0000-31-00-0", "card": "0000:31:00.0",
         "kind": "Physical", "shareID": "s-1", "uuid": "GPU-31", "sharing": "MPS",
         "mpsThreadPercentage": 25, "mpsMemoryLimitMiB": 6144},
    ]  # fmt: skip
    assert document["claims"]["uid-a"]["mig"][0]["gpuInstanceID"] == 5
    assert document["claims"]["uid-a"]["cdiDeviceIDs"] == {
        MIG_PLAN.device: ["k8s.gpu.deckhouse.io/claim=uid-a-mig"]
    }


def test_encoding_is_deterministic():
    assert encode(full_checkpoint()) == encode(full_checkpoint())


def test_empty_checkpoint_round_trips():
    assert decode(encode(Checkpoint(BOOT)), BOOT).checkpoint == Checkpoint(BOOT)


def test_tampered_content_fails_the_checksum():
    def tamper(document):
        document["claims"]["uid-a"]["mig"][0]["gpuInstanceID"] = 6

    with pytest.raises(CorruptCheckpoint, match="checksum mismatch") as caught:
        decode(rewrite(encode(full_checkpoint()), tamper, rehash=False), BOOT)
    assert "sha256:" in caught.value.reason


def test_a_single_flipped_byte_is_caught():
    data = bytearray(encode(full_checkpoint()))
    index = data.index(b"claim-uid-b")
    data[index] = ord("C")
    with pytest.raises(CorruptCheckpoint, match="checksum mismatch"):
        decode(bytes(data), BOOT)


def test_unknown_fields_of_a_newer_writer_are_read_past():
    def newer(document):
        document["writer"] = "gpu-handler v2"
        document["claims"]["uid-a"]["gpuDirect"] = {"group": 42}
        document["claims"]["uid-a"]["devices"][0]["migDevice"] = "1g.6gb"
        document["claims"]["uid-a"]["mig"][0]["engines"] = ["NVDEC"]

    decoded = decode(rewrite(encode(full_checkpoint()), newer), BOOT)
    assert decoded.checkpoint == full_checkpoint()


def test_optional_collections_may_be_absent():
    def sparse(document):
        for key in ("mig", "migEnabledCards", "migDisabledCards", "cdiDeviceIDs", "updated"):
            del document["claims"]["uid-b"][key]

    decoded = decode(rewrite(encode(full_checkpoint()), sparse), BOOT)
    assert decoded.checkpoint.claims["uid-b"] == started("uid-b", (PHYSICAL_PLAN,))


def test_a_file_written_before_mig_mode_off_was_recorded_still_reads():
    def older(document):
        for entry in document["claims"].values():
            del entry["migDisabledCards"]

    decoded = decode(rewrite(encode(full_checkpoint()), older), BOOT)
    assert [entry.mig_disabled_cards for entry in decoded.checkpoint.claims.values()] == [(), ()]
    assert decoded.checkpoint.claims["uid-a"] == full_checkpoint().claims["uid-a"]


def test_entries_of_another_boot_are_not_prepared_and_come_back_separately():
    decoded = decode(encode(full_checkpoint()), OTHER_BOOT)
    assert decoded.checkpoint == Checkpoint(OTHER_BOOT)
    assert [entry.uid for entry in decoded.dropped_after_reboot] == ["uid-a", "uid-b"]
    assert decoded.dropped_after_reboot[0].cdi_device_ids  # what the caller cleans up


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "not JSON"),
        (b'{"version": 1, "claims": {', "not JSON"),
        (b"\xff\xfe garbage", "not JSON"),
        (b"[1, 2]", "expected a JSON object at the top, got list"),
        (b'{"claims": {}}', "version: missing"),
        (b'{"version": "1"}', "version: expected an integer, got str"),
        (b'{"version": true}', "version: expected an integer, got bool"),
        (b'{"version": 2, "checksum": "sha256:00"}', "unknown version 2 (this reader knows 1)"),
        (b'{"version": 1, "bootID": "b", "claims": {}}', "checksum: missing"),
        (b'{"version": 1, "checksum": "md5:abc"}', "checksum: unsupported algorithm"),
    ],
)
def test_corrupt_files_raise_with_a_reason(data, reason):
    with pytest.raises(CorruptCheckpoint) as caught:
        decode(data, BOOT)
    assert reason in caught.value.reason
    assert str(caught.value) == caught.value.reason


def _set(path, value):
    def change(document):
        target = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_set(["bootID"], 7), "bootID: expected a string, got int"),
        (_set(["claims"], []), "claims: expected an object, got list"),
        (_set(["claims", "uid-a"], "x"), "claims.uid-a: expected an object, got str"),
        (_set(["claims", "uid-a", "uid"], "uid-z"), "claims.uid-a: the entry's uid is 'uid-z'"),
        (_set(["claims", "uid-a", "state"], "Prepared"), "claims.uid-a.state: 'Prepared' is not one of"),
        (_set(["claims", "uid-a", "namespace"], None), "claims.uid-a.namespace: missing"),
        (_set(["claims", "uid-a", "devices"], {}), "claims.uid-a.devices: expected a list, got dict"),
        (
            _set(["claims", "uid-a", "devices", 0, "kind"], "VFIO"),
            "claims.uid-a.devices[0].kind: 'VFIO' is not",
        ),
        (
            _set(["claims", "uid-a", "devices", 0, "profileID"], "14"),
            "claims.uid-a.devices[0].profileID: expected an integer, got str",
        ),
        (_set(["claims", "uid-a", "mig", 0, "uuid"], None), "claims.uid-a.mig[0].uuid: missing"),
        (
            _set(["claims", "uid-b", "devices", 0, "sharing"], "Spatial"),
            "claims.uid-b.devices[0].sharing: 'Spatial' is not one of TimeSlicing, MPS",
        ),
        (
            _set(["claims", "uid-b", "devices", 0, "timeSlice"], "Forever"),
            "claims.uid-b.devices[0].timeSlice: 'Forever' is not one of Default, Short",
        ),
        (
            _set(["claims", "uid-b", "devices", 0, "mpsThreadPercentage"], "25"),
            "claims.uid-b.devices[0].mpsThreadPercentage: expected an integer, got str",
        ),
        (
            _set(["claims", "uid-a", "mig", 0, "placementSize"], 1.5),
            "claims.uid-a.mig[0].placementSize: expected an integer, got float",
        ),
        (
            _set(["claims", "uid-a", "migEnabledCards"], [1]),
            "claims.uid-a.migEnabledCards: expected a list of str",
        ),
        (
            _set(["claims", "uid-b", "migDisabledCards"], "0000:31:00.0"),
            "claims.uid-b.migDisabledCards: expected a list of str",
        ),
        (
            _set(["claims", "uid-a", "cdiDeviceIDs", MIG_PLAN.device], "x"),
            f"claims.uid-a.cdiDeviceIDs.{MIG_PLAN.device}: expected a list of strings",
        ),
    ],
)
def test_wrong_types_with_a_valid_checksum_raise_naming_the_path(change, reason):
    with pytest.raises(CorruptCheckpoint) as caught:
        decode(rewrite(encode(full_checkpoint()), change), BOOT)
    assert reason in caught.value.reason


def test_entry_helpers_return_copies():
    entry = started()
    record = MigRecord.from_instance(INSTANCE)
    with_mig = entry.with_mig(record)
    assert entry.mig == ()
    assert with_mig.with_mig(record).mig == (record,)  # re-recording after a retry does not double
    assert with_mig.without_mig(record.key).mig == ()
    assert entry.with_mig_enabled(CARD).with_mig_enabled(CARD).mig_enabled_cards == (CARD,)
    assert entry.with_mig_disabled(CARD).with_mig_disabled(CARD).mig_disabled_cards == (CARD,)
    assert entry.mig_disabled_cards == ()
    moved = entry.with_state("PrepareCompleted", "2026-11-21T12:00:01Z")
    assert (moved.state, moved.updated, entry.state) == (
        "PrepareCompleted",
        "2026-11-21T12:00:01Z",
        "PrepareStarted",
    )
    assert moved.with_state("PrepareStarted").updated == "2026-11-21T12:00:01Z"


def test_checkpoint_helpers():
    checkpoint = full_checkpoint()
    assert [entry.uid for entry in checkpoint.entries_in("PrepareStarted")] == ["uid-b"]
    assert [entry.uid for entry in checkpoint.entries_in("PrepareCompleted")] == ["uid-a"]
    assert checkpoint.owned_mig() == {(CARD, 5, 0)}
    assert set(checkpoint.without("uid-a").claims) == {"uid-b"}
    assert set(checkpoint.claims) == {"uid-a", "uid-b"}
    assert checkpoint.without("missing") == checkpoint
    assert checkpoint.get("uid-a") is checkpoint.claims["uid-a"]
    assert checkpoint.get("missing") is None
    half_done = started("uid-c").with_mig(MigRecord(CARD, 6, 0, 14, 3, 1, "MIG-c"))
    assert checkpoint.with_entry(half_done).owned_mig() == {(CARD, 5, 0), (CARD, 6, 0)}


# A checkpoint as the version before the strategies owned their plans wrote it (DESIGN.md D20):
# each device's sharing as ``sharing`` and the strategy's own flat fields beside it.
WRITTEN_BEFORE = {
    "version": 1,
    "bootID": BOOT,
    "claims": {
        "uid-s": {
            "uid": "uid-s",
            "namespace": "ml",
            "name": "shares",
            "state": "PrepareCompleted",
            "devices": [
                {"request": "a", "pool": "gpus/w1", "device": "gpu-0000-31-00-0", "card": "0000:31:00.0",
                 "kind": "Physical", "shareID": "s-1", "uuid": "GPU-31", "sharing": "TimeSlicing",
                 "timeSlice": "Long"},
                {"request": "b", "pool": "gpus/w1", "device": "gpu-0000-32-00-0", "card": "0000:32:00.0",
                 "kind": "Physical", "shareID": "s-2", "uuid": "GPU-32", "sharing": "MPS",
                 "mpsThreadPercentage": 25, "mpsMemoryLimitMiB": 6144},
                {"request": "c", "pool": "gpus/w1", "device": "gpu-0000-17-00-0-mig-1g-6gb-2",
                 "card": CARD, "kind": "MIG", "profileID": 14, "placementStart": 2, "placementSize": 1,
                 "sharing": "MPS"},
                {"request": "d", "pool": "gpus/w1", "device": "gpu-0000-33-00-0", "card": "0000:33:00.0",
                 "kind": "Physical", "shareID": "s-4"},
            ],
            "mig": [],
            "migEnabledCards": [],
            "migDisabledCards": [],
            "cdiDeviceIDs": {},
            "updated": "2026-12-01T10:00:00Z",
            "vfio": [],
        }
    },
}  # fmt: skip


def written_before() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(json.dumps(WRITTEN_BEFORE))
    document["checksum"] = checksum(document)
    return document


def test_a_checkpoint_of_the_version_before_loads_with_each_strategys_plan():
    devices = decode(json.dumps(written_before()).encode(), BOOT).checkpoint.claims["uid-s"].devices
    assert [device.sharing for device in devices] == [
        TimeSlicePlan(TimeSliceInterval.LONG),
        MpsPlan(thread_percentage=25, memory_limit_mib=6144),
        MpsPlan(),
        None,
    ]


def test_what_is_written_is_what_the_version_before_wrote_so_a_downgrade_reads_it():
    loaded = decode(json.dumps(written_before()).encode(), BOOT).checkpoint
    assert json.loads(encode(loaded)) == written_before()


def test_a_time_sliced_device_without_its_interval_is_at_the_default_as_before():
    def without_interval(document):
        del document["claims"]["uid-s"]["devices"][0]["timeSlice"]

    data = rewrite(json.dumps(written_before()).encode(), without_interval)
    device = decode(data, BOOT).checkpoint.claims["uid-s"].devices[0]
    assert device.sharing == TimeSlicePlan(TimeSliceInterval.DEFAULT)
