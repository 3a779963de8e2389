# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import json
import os
import stat

import pytest

from deckhouse_gpu.adapters.files.cdi_writer import CdiSpecError, CdiWriter
from deckhouse_gpu.domain.prepare.container.cdi_spec import (
    CardNode,
    ClaimDevice,
    DeviceNode,
    DriverFiles,
    base_spec,
    claim_spec,
)

UID = "0f6c3f55-3c2e-4a53-9a53-2b0b1a6c9f10"
OTHER_UID = "a16c3f55-3c2e-4a53-9a53-2b0b1a6c9f10"
FILES = DriverFiles((DeviceNode("/dev/nvidiactl"),), (), (), None)
CARD = CardNode("0000:17:00.0", 0)


def base():
    spec = base_spec(FILES, [CARD])
    assert spec is not None
    return spec


def claim(uid=UID):
    return claim_spec(FILES, uid, [ClaimDevice("gpu-0", CARD)])


@pytest.fixture
def writer(tmp_path):
    return CdiWriter(tmp_path / "var/run/cdi")  # a configurable root, created on first write


def test_the_base_spec_is_written_as_json_under_its_conventional_name(writer):
    path = writer.write_base(base())
    assert path == writer.root / "gpu.deckhouse.io-gpu.json"
    assert json.loads(path.read_text()) == base()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert os.listdir(writer.root) == ["gpu.deckhouse.io-gpu.json"]  # no temporary file left


def test_the_default_root_is_etc_cdi():
    assert CdiWriter().root.as_posix() == "/etc/cdi"


def test_a_claim_spec_is_written_under_the_transient_name(writer):
    path = writer.write_claim(UID, claim())
    assert path.name == f"gpu.deckhouse.io-gpu_{UID}.json"
    assert json.loads(path.read_text())["devices"][0]["name"] == f"{UID}-gpu-0"


def test_an_invalid_spec_is_refused_and_nothing_is_written(writer):
    spec = claim()
    spec["devices"][0]["name"] = "-bad"
    spec["containerEdits"]["env"].append("NOVALUE")
    with pytest.raises(CdiSpecError, match=r"devices\[0\]\.name.*containerEdits\.env\[1\]"):
        writer.write_claim(UID, spec)
    assert not writer.root.exists() or os.listdir(writer.root) == []


def test_a_spec_of_another_kind_is_refused(writer):
    spec = claim()
    spec["kind"] = "nvidia.com/gpu"
    with pytest.raises(CdiSpecError, match=r"is not gpu\.deckhouse\.io/gpu"):
        writer.write_claim(UID, spec)


def test_rewriting_replaces_the_file_by_rename(writer):
    first = writer.write_base(base())
    inode = first.stat().st_ino
    changed = base()
    changed["devices"][0]["containerEdits"]["deviceNodes"][0]["path"] = "/dev/nvidia5"
    writer.write_base(changed)
    assert json.loads(first.read_text()) == changed
    assert first.stat().st_ino != inode  # a new file renamed over, never written in place


def test_the_data_and_the_directory_are_fsynced(writer, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def record(descriptor):
        synced.append(os.path.realpath(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", record)
    writer.write_base(base())
    assert synced[0].startswith(str(writer.root / ".gpu.deckhouse.io-gpu.json."))  # before the rename
    assert synced[-1] == str(writer.root)


def test_a_failed_rename_keeps_the_old_spec_and_removes_the_temporary(writer, monkeypatch):
    path = writer.write_base(base())
    old = path.read_text()

    def fail(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    changed = base()
    changed["devices"][0]["name"] = "gpu-other"
    with pytest.raises(OSError, match="No space left"):
        writer.write_base(changed)
    assert path.read_text() == old
    assert os.listdir(writer.root) == [path.name]


def test_the_temporary_file_is_never_read_by_a_runtime(writer, monkeypatch):
    seen = []

    def spy(source, target):
        seen.append(os.path.basename(source))
        os.rename(source, target)

    monkeypatch.setattr(os, "replace", spy)
    writer.write_claim(UID, claim())
    assert seen[0].startswith(".")
    assert not seen[0].endswith((".json", ".yaml"))


def test_deleting_a_claim_spec_and_deleting_it_again(writer):
    path = writer.write_claim(UID, claim())
    assert writer.delete_claim(UID) is True
    assert not path.exists()
    assert writer.delete_claim(UID) is False  # Unprepare twice: fine


def test_deleting_in_a_missing_root_is_fine(tmp_path):
    assert CdiWriter(tmp_path / "absent").delete_claim(UID) is False


def test_the_base_spec_can_be_removed(writer):
    writer.write_base(base())
    assert writer.delete_base() is True
    assert writer.delete_base() is False


def test_listing_finds_only_our_transient_specs(writer):
    writer.write_base(base())
    writer.write_claim(OTHER_UID, claim(OTHER_UID))
    writer.write_claim(UID, claim())
    (writer.root / f"k8s.gpu.nvidia.com-claim_{UID}.json").write_text("{}")
    (writer.root / f".gpu.deckhouse.io-gpu_{UID}.json.x1.tmp").write_text("")
    (writer.root / f"gpu.deckhouse.io-gpu_{UID}.yaml").write_text("")
    assert writer.claim_uids() == [UID, OTHER_UID]


def test_listing_a_missing_root_is_empty(tmp_path):
    assert CdiWriter(tmp_path / "absent").claim_uids() == []
