# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The checkpoint file: atomic replacement, corrupt files moved aside, the boot ID from the host."""

import json
import logging
import os
from datetime import timedelta
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.files.checkpoint_file import BootIdUnreadable, FileCheckpointStore
from deckhouse_gpu.domain.prepare.checkpoint import Checkpoint, ClaimEntry
from deckhouse_gpu.domain.prepare.plan import DevicePlan

BOOT = "0b7c1a52-5a7e-4bd4-9a53-1b0f0f0c0001"
PLAN = DevicePlan(request="gpu", pool="w1", device="gpu-0000-17-00-0", card="0000:17:00.0", kind="Physical")


def entry(uid, state="PrepareCompleted"):
    return ClaimEntry(uid=uid, namespace="ns", name=uid, state=state, devices=(PLAN,))


@pytest.fixture
def host_root(tmp_path):
    root = tmp_path / "host"
    (root / "proc/sys/kernel/random").mkdir(parents=True)
    (root / "proc/sys/kernel/random/boot_id").write_text(BOOT + "\n")
    return root


@pytest.fixture
def store(tmp_path, host_root, clock):
    return FileCheckpointStore(tmp_path / "plugin/checkpoint.json", host_root=host_root, clock=clock)


def test_missing_file_is_an_empty_checkpoint(store):
    decoded = store.load()
    assert decoded.checkpoint == Checkpoint(BOOT)
    assert (decoded.dropped_after_reboot, decoded.corrupt_reason) == ([], "")
    assert not store.path.exists()


def test_save_then_load(store):
    checkpoint = Checkpoint(BOOT).with_entry(entry("a")).with_entry(entry("b", "PrepareStarted"))
    store.save(checkpoint)
    assert store.load().checkpoint == checkpoint
    assert json.loads(store.path.read_bytes())["bootID"] == BOOT
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["checkpoint.json"]  # no temporaries left


def test_boot_id_is_read_from_the_host_root(store, host_root):
    assert store.boot_id() == BOOT
    (host_root / "proc/sys/kernel/random/boot_id").write_text("another\n")
    assert store.boot_id() == BOOT  # read once: it cannot change while we run


def test_after_a_reboot_entries_are_dropped(tmp_path, store, host_root, clock):
    store.save(Checkpoint(BOOT).with_entry(entry("a")))
    (host_root / "proc/sys/kernel/random/boot_id").write_text("after-reboot\n")
    rebooted = FileCheckpointStore(store.path, host_root=host_root, clock=clock)
    decoded = rebooted.load()
    assert decoded.checkpoint == Checkpoint("after-reboot")
    assert [e.uid for e in decoded.dropped_after_reboot] == ["a"]


def test_unreadable_boot_id_is_an_error_naming_the_path(tmp_path):
    store = FileCheckpointStore(tmp_path / "checkpoint.json", boot_id_path=str(tmp_path / "nope"))
    with pytest.raises(BootIdUnreadable, match="nope"):
        store.load()
    (tmp_path / "nope").write_text("\n")
    with pytest.raises(BootIdUnreadable, match="empty"):
        store.load()


def test_default_boot_id_is_the_kernels():
    store = FileCheckpointStore("/nonexistent/checkpoint.json")
    assert store.boot_id() == Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def test_crash_between_write_and_rename_leaves_the_old_file(store, monkeypatch):
    old = Checkpoint(BOOT).with_entry(entry("a"))
    store.save(old)
    before = store.path.read_bytes()

    def crash(source, target):
        raise OSError("power lost")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="power lost"):
        store.save(old.with_entry(entry("b")))
    monkeypatch.undo()
    assert store.path.read_bytes() == before
    assert store.load().checkpoint == old
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["checkpoint.json"]


def test_crash_during_the_write_leaves_the_old_file(store, monkeypatch):
    store.save(Checkpoint(BOOT).with_entry(entry("a")))
    before = store.path.read_bytes()

    def crash(descriptor):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        store.save(Checkpoint(BOOT))
    monkeypatch.undo()
    assert store.path.read_bytes() == before


def test_temporary_files_left_by_a_killed_writer_are_removed_on_load(store):
    store.save(Checkpoint(BOOT).with_entry(entry("a")))
    leftover = store.path.parent / ".checkpoint.json.k3j2l1.tmp"
    leftover.write_bytes(b'{"half": ')
    assert store.load().checkpoint.get("a") is not None
    assert not leftover.exists()


def test_save_syncs_the_file_and_then_the_directory(store, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def recording(descriptor):
        synced.append(os.path.isdir(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", recording)
    store.save(Checkpoint(BOOT))
    assert synced == [False, True]


def test_corrupt_file_is_moved_aside_and_an_empty_checkpoint_returned(store, caplog):
    store.save(Checkpoint(BOOT).with_entry(entry("a")))
    store.path.write_bytes(store.path.read_bytes().replace(b'"ns"', b'"NS"'))
    with caplog.at_level(logging.ERROR):
        decoded = store.load()
    assert decoded.checkpoint == Checkpoint(BOOT)
    assert "checksum mismatch" in decoded.corrupt_reason
    assert not store.path.exists()
    (aside,) = store.corrupt_copies()
    assert aside.name == "checkpoint.json.corrupt-20261121T120000.000000Z"
    assert b'"NS"' in aside.read_bytes()  # kept as found, for people to look at
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "checksum mismatch" in record.getMessage()
    assert str(aside) in record.getMessage()
    store.save(Checkpoint(BOOT).with_entry(entry("b")))  # and the handler carries on
    assert set(store.load().checkpoint.claims) == {"b"}


def test_at_most_three_corrupt_copies_are_kept(store, clock):
    names = []
    for attempt in range(5):
        clock.moment += timedelta(seconds=1)
        store.path.parent.mkdir(parents=True, exist_ok=True)
        store.path.write_bytes(b"garbage %d" % attempt)
        assert "not JSON" in store.load().corrupt_reason
        names.append(store.corrupt_copies()[-1].name)
    kept = store.corrupt_copies()
    assert [p.name for p in kept] == names[-3:]
    assert [p.read_bytes() for p in kept] == [b"garbage 2", b"garbage 3", b"garbage 4"]


def test_corruptions_within_one_clock_tick_do_not_overwrite_each_other(store):
    for attempt in range(4):  # the fixture clock never moves
        store.path.parent.mkdir(parents=True, exist_ok=True)
        store.path.write_bytes(b"garbage %d" % attempt)
        store.load()
    kept = store.corrupt_copies()
    assert [p.read_bytes() for p in kept] == [b"garbage 1", b"garbage 2", b"garbage 3"]
    assert kept[-1].name.endswith("Z-3")
