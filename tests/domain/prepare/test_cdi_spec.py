# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import pytest

from deckhouse_gpu.domain.prepare.container.cdi_spec import (
    BASE_SPEC_FILE,
    KIND,
    CardNode,
    ClaimDevice,
    DeviceNode,
    DriverFile,
    DriverFiles,
    MigCaps,
    base_device_name,
    base_spec,
    claim_device_name,
    claim_spec,
    claim_spec_file,
    claim_uid_of,
    host_path,
    qualified_id,
)
from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec

LIB = "/usr/lib/x86_64-linux-gnu"
VERSION = "580.82.07"
HOOK = "/var/lib/kubelet/plugins/gpu.deckhouse.io/nvidia-cdi-hook"
UID_DIGIT = "0f6c3f55-3c2e-4a53-9a53-2b0b1a6c9f10"
UID_LETTER = "a16c3f55-3c2e-4a53-9a53-2b0b1a6c9f10"


def library(stem, *links, directory=LIB):
    real = f"{directory}/{stem}.so.{VERSION}"
    return DriverFile(real, f"/driver-root{real}", tuple(links))


def driver_files(host_root="/run/nvidia/driver", hook=HOOK, libraries=None):
    return DriverFiles(
        device_nodes=(DeviceNode("/dev/nvidiactl", 195, 255), DeviceNode("/dev/nvidia-uvm")),
        libraries=(
            (library("libnvidia-ml", "libnvidia-ml.so.1"), library("libcuda", "libcuda.so.1"))
            if libraries is None
            else libraries
        ),
        binaries=(DriverFile("/usr/bin/nvidia-smi", "/driver-root/usr/bin/nvidia-smi"),),
        hook_path=hook,
        host_driver_root=host_root,
    )


CARDS = [CardNode("0000:b1:00.0", 1, 195), CardNode("0000:17:00.0", 0)]


def base(files=None):
    spec = base_spec(files or driver_files(), CARDS)
    assert spec is not None
    return spec


def test_the_base_spec_validates_and_names_cards_by_pci_address():
    spec = base_spec(driver_files(), CARDS)
    assert spec is not None
    assert validate_spec(spec) == []
    assert spec["kind"] == KIND == "gpu.deckhouse.io/gpu"
    assert [device["name"] for device in spec["devices"]] == ["gpu-0000-17-00-0", "gpu-0000-b1-00-0"]
    assert spec["devices"][0]["containerEdits"] == {"deviceNodes": [{"path": "/dev/nvidia0"}]}
    assert spec["devices"][1]["containerEdits"]["deviceNodes"] == [
        {"path": "/dev/nvidia1", "type": "c", "major": 195, "minor": 1}
    ]


def test_the_base_spec_declares_the_oldest_version_the_library_loads():
    assert base()["cdiVersion"] == "0.3.0"


def test_no_cards_means_no_base_spec():
    assert base_spec(driver_files(), []) is None


def test_common_edits_void_nvidia_visible_devices_and_carry_control_nodes():
    edits = base()["containerEdits"]
    assert edits["env"] == ["NVIDIA_VISIBLE_DEVICES=void"]
    assert edits["deviceNodes"] == [
        {"path": "/dev/nvidiactl", "type": "c", "major": 195, "minor": 255},
        {"path": "/dev/nvidia-uvm"},  # numbers unknown: the runtime stats the host's node
    ]


def test_mounts_read_the_host_driver_root_and_keep_the_container_path():
    mounts = base()["containerEdits"]["mounts"]
    assert mounts[0] == {
        "hostPath": f"/run/nvidia/driver{LIB}/libnvidia-ml.so.{VERSION}",
        "containerPath": f"{LIB}/libnvidia-ml.so.{VERSION}",
        "options": ["ro", "nosuid", "nodev", "rbind", "rprivate"],
    }
    assert mounts[2]["hostPath"] == "/run/nvidia/driver/usr/bin/nvidia-smi"
    assert mounts[2]["containerPath"] == "/usr/bin/nvidia-smi"


def test_with_the_driver_on_the_host_root_host_and_container_paths_match():
    mounts = base(driver_files(host_root="/"))["containerEdits"]["mounts"]
    assert all(mount["hostPath"] == mount["containerPath"] for mount in mounts)


def test_a_path_outside_the_driver_root_mount_is_refused():
    with pytest.raises(ValueError, match="not under the driver root mount"):
        host_path(driver_files(), "/usr/lib/libcuda.so.1")


def test_hooks_link_sonames_then_refresh_the_loader_cache():
    hooks = base()["containerEdits"]["hooks"]
    assert [hook["hookName"] for hook in hooks] == ["createContainer", "createContainer"]
    assert all(hook["path"] == HOOK for hook in hooks)
    assert hooks[0]["args"] == [
        "nvidia-cdi-hook",
        "create-symlinks",
        "--link",
        f"libnvidia-ml.so.{VERSION}::{LIB}/libnvidia-ml.so.1",
        "--link",
        f"libcuda.so.{VERSION}::{LIB}/libcuda.so.1",
        "--link",
        f"libcuda.so.{VERSION}::{LIB}/libcuda.so",  # always, as applications dlopen it
    ]
    assert hooks[1]["args"] == ["nvidia-cdi-hook", "update-ldcache", "--folder", LIB]


def test_update_ldcache_names_each_library_directory_once():
    libraries = (
        library("libcuda"),
        library("libnvidia-ml"),
        library("libnvidia-cfg", directory="/usr/lib64"),
    )
    hooks = base(driver_files(libraries=libraries))["containerEdits"]["hooks"]
    assert hooks[-1]["args"][2:] == ["--folder", LIB, "--folder", "/usr/lib64"]


def test_nvidia_ctk_as_the_hook_takes_the_hook_subcommand():
    hooks = base(driver_files(hook="/usr/bin/nvidia-ctk"))["containerEdits"]["hooks"]
    assert hooks[-1]["args"][:3] == ["nvidia-ctk", "hook", "update-ldcache"]


def test_without_a_hook_or_without_libraries_there_are_no_hooks():
    assert "hooks" not in base(driver_files(hook=None))["containerEdits"]
    assert "hooks" not in base(driver_files(libraries=()))["containerEdits"]


def test_a_claim_spec_names_devices_after_the_claim_and_validates():
    spec = claim_spec(driver_files(), UID_LETTER, [ClaimDevice("gpu-0", CARDS[1])])
    assert validate_spec(spec) == []
    assert spec["devices"] == [
        {"name": f"{UID_LETTER}-gpu-0", "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia0"}]}}
    ]
    assert spec["containerEdits"] == base()["containerEdits"]
    assert qualified_id(claim_device_name(UID_LETTER, "gpu-0")) == f"gpu.deckhouse.io/gpu={UID_LETTER}-gpu-0"


def test_a_mig_device_gets_its_parent_node_and_both_caps_nodes():
    mig = ClaimDevice("mig-1g-10gb-0", CARDS[0], MigCaps(gi_minor=12, ci_minor=13, major=508))
    spec = claim_spec(driver_files(), UID_LETTER, [mig])
    assert validate_spec(spec) == []
    assert spec["devices"][0]["containerEdits"] == {
        "deviceNodes": [
            {"path": "/dev/nvidia1", "type": "c", "major": 195, "minor": 1},
            {"path": "/dev/nvidia-caps/nvidia-cap12", "type": "c", "major": 508, "minor": 12},
            {"path": "/dev/nvidia-caps/nvidia-cap13", "type": "c", "major": 508, "minor": 13},
        ]
    }


def test_mig_caps_without_a_known_major_leave_the_numbers_to_the_runtime():
    spec = claim_spec(driver_files(), UID_LETTER, [ClaimDevice("mig-0", CARDS[1], MigCaps(3, 4))])
    assert spec["devices"][0]["containerEdits"]["deviceNodes"][1:] == [
        {"path": "/dev/nvidia-caps/nvidia-cap3"},
        {"path": "/dev/nvidia-caps/nvidia-cap4"},
    ]


def test_no_cuda_visible_devices_anywhere_in_a_mig_claim():
    devices = [
        ClaimDevice("mig-a", CARDS[0], MigCaps(12, 13)),
        ClaimDevice("mig-b", CARDS[0], MigCaps(21, 22)),
    ]
    text = str(claim_spec(driver_files(), UID_LETTER, devices))
    assert "CUDA_VISIBLE_DEVICES" not in text


def test_a_claim_uid_starting_with_a_digit_needs_version_0_5_0():
    assert claim_spec(driver_files(), UID_DIGIT, [ClaimDevice("gpu-0", CARDS[1])])["cdiVersion"] == "0.5.0"
    assert claim_spec(driver_files(), UID_LETTER, [ClaimDevice("gpu-0", CARDS[1])])["cdiVersion"] == "0.3.0"


def test_a_claim_without_devices_is_a_caller_bug():
    with pytest.raises(ValueError, match="at least one device"):
        claim_spec(driver_files(), UID_LETTER, [])


def test_file_names_follow_the_cdi_convention():
    assert BASE_SPEC_FILE == "gpu.deckhouse.io-gpu.json"
    assert claim_spec_file(UID_DIGIT) == f"gpu.deckhouse.io-gpu_{UID_DIGIT}.json"
    assert claim_spec_file("ns/name") == "gpu.deckhouse.io-gpu_ns_name.json"


def test_claim_uids_are_read_back_only_from_transient_spec_names():
    assert claim_uid_of(claim_spec_file(UID_DIGIT)) == UID_DIGIT
    assert claim_uid_of(BASE_SPEC_FILE) is None
    assert claim_uid_of("gpu.deckhouse.io-gpu_.json") is None
    assert claim_uid_of(f"k8s.gpu.nvidia.com-claim_{UID_DIGIT}.json") is None
    assert claim_uid_of(f".gpu.deckhouse.io-gpu_{UID_DIGIT}.json.x.tmp") is None


def test_base_device_names_are_valid_cdi_names():
    assert base_device_name("0000:17:00.0") == "gpu-0000-17-00-0"
