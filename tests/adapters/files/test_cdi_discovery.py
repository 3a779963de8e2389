# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import logging
import os
import stat
from pathlib import Path

import pytest

from deckhouse_gpu.adapters.files.cdi_discovery import CdiDiscovery, DiscoveryError, stage_cdi_hook
from deckhouse_gpu.adapters.host.driver_root import MountedDriverRoot
from deckhouse_gpu.domain.prepare.container.cdi_spec import (
    CardNode,
    ClaimDevice,
    DeviceNode,
    base_spec,
    claim_spec,
)
from deckhouse_gpu.k8s_semantics.cdi.cdi_rules import validate_spec
from deckhouse_gpu.simulator.host.driver_tree import (
    DRIVER_VERSION,
    LIB_DIR,
    add_card,
    add_driver_libraries,
    add_image_hook,
    add_mig_instance,
    build_driver_root,
    build_host,
    link,
    write,
)

PCI = "0000:17:00.0"
LIBS = f"/{LIB_DIR}"


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    host = build_host(tmp_path / "host", {PCI: 0, "0000:B1:00.0": 3})
    driver = build_driver_root(tmp_path / "driver-root")
    return host, driver


def discovery(roots, host_driver_root="/run/nvidia/driver") -> CdiDiscovery:
    host, driver = roots
    return CdiDiscovery(MountedDriverRoot(driver), host, host_driver_root)


def test_plain_file_nodes_are_found_without_numbers(roots):
    assert discovery(roots).device_nodes() == (
        DeviceNode("/dev/nvidiactl"),
        DeviceNode("/dev/nvidia-uvm"),
        DeviceNode("/dev/nvidia-uvm-tools"),
        DeviceNode("/dev/nvidia-modeset"),
    )


def test_a_missing_control_node_is_logged_and_left_out(roots, caplog):
    (roots[0] / "dev/nvidia-uvm").unlink()
    with caplog.at_level(logging.INFO):
        nodes = discovery(roots).device_nodes()
    assert "/dev/nvidia-uvm" not in [node.path for node in nodes]
    assert any(getattr(record, "path", None) == "/dev/nvidia-uvm" for record in caplog.records)


def test_a_real_character_device_gives_its_numbers(roots):
    null = os.stat("/dev/null")
    (roots[0] / "dev/nvidiactl").unlink()
    link(roots[0] / "dev/nvidiactl", "/dev/null")  # a real char device standing in for nvidiactl
    assert discovery(roots).device_nodes()[0] == DeviceNode(
        "/dev/nvidiactl", os.major(null.st_rdev), os.minor(null.st_rdev)
    )


def test_the_card_minor_comes_from_the_driver_information_file(roots):
    assert discovery(roots).card_node(PCI) == CardNode(PCI, 0)
    assert discovery(roots).card_node("0000:B1:00.0").minor == 3  # /proc uses lower case


def test_a_missing_information_file_is_an_error_naming_it(roots):
    with pytest.raises(DiscoveryError, match=r"proc/driver/nvidia/gpus/0000:ca:00.0/information"):
        discovery(roots).card_node("0000:ca:00.0")


def test_an_information_file_without_the_minor_is_an_error(roots):
    write(roots[0] / "proc/driver/nvidia/gpus" / PCI / "information", "Model: A100\n")
    with pytest.raises(DiscoveryError, match="has no 'Device Minor: N' line"):
        discovery(roots).card_node(PCI)


def test_the_driver_version_is_read_from_the_nvml_soname_target(roots):
    assert discovery(roots).driver_version() == DRIVER_VERSION


def test_libraries_are_the_versioned_files_with_their_links(roots):
    libraries = {Path(item.container_path).name: item for item in discovery(roots).libraries()}
    cuda = libraries[f"libcuda.so.{DRIVER_VERSION}"]
    assert cuda.container_path == f"{LIBS}/libcuda.so.{DRIVER_VERSION}"
    assert cuda.mounted_at == str(roots[1] / LIB_DIR / f"libcuda.so.{DRIVER_VERSION}")
    assert cuda.links == ("libcuda.so", "libcuda.so.1")
    assert libraries[f"libnvidia-nvvm.so.{DRIVER_VERSION}"].links == ("libnvidia-nvvm.so.4",)
    assert libraries[f"libnvidia-gpucomp.so.{DRIVER_VERSION}"].links == ()


def test_libraries_of_an_older_driver_left_behind_are_not_mounted(roots):
    add_driver_libraries(roots[1], version="550.54.15", with_links=False)
    paths = [item.container_path for item in discovery(roots).libraries()]
    assert paths
    assert not [path for path in paths if "550.54.15" in path]


def test_a_directory_link_does_not_mount_a_library_twice(tmp_path):
    driver = tmp_path / "driver-root"
    add_driver_libraries(driver, lib_dir="usr/lib64")
    link(driver / "lib64", "/usr/lib64")  # absolute: read inside the driver root
    found = CdiDiscovery(MountedDriverRoot(driver), tmp_path).libraries()
    assert len({item.container_path for item in found}) == len(found)
    assert all(item.container_path.startswith("/usr/lib64/") for item in found)


def test_without_nvml_there_are_no_libraries(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    driver = tmp_path / "driver-root"
    write(driver / LIB_DIR / f"libcuda.so.{DRIVER_VERSION}")
    assert CdiDiscovery(MountedDriverRoot(driver), tmp_path).libraries() == ()
    assert "no versioned libnvidia-ml.so.1" in caplog.text


def test_binaries_are_mounted_where_users_call_them_read_from_the_link_target(roots):
    driver = roots[1]
    (driver / "usr/bin/nvidia-smi").unlink()
    write(driver / "opt/nvidia/nvidia-smi.real")
    link(driver / "usr/bin/nvidia-smi", "/opt/nvidia/nvidia-smi.real")
    smi = discovery(roots).binaries()[0]
    assert smi.container_path == "/usr/bin/nvidia-smi"
    assert smi.mounted_at == str(driver / "opt/nvidia/nvidia-smi.real")


def test_a_missing_binary_is_logged_and_left_out(roots, caplog):
    with caplog.at_level(logging.INFO):
        names = [Path(item.container_path).name for item in discovery(roots).binaries()]
    assert "nvidia-cuda-mps-server" not in names  # the fixture driver has none
    assert "nvidia-smi" in names
    assert any(getattr(record, "binary", None) == "nvidia-cuda-mps-server" for record in caplog.records)


def test_mig_caps_minors_come_from_the_access_files(roots):
    add_mig_instance(roots[0], card_minor=0, gi=1, ci=0, gi_minor=12, ci_minor=13)
    caps = discovery(roots).mig_caps(0, 1, 0)
    assert (caps.gi_minor, caps.ci_minor, caps.major) == (12, 13, None)


def test_a_missing_compute_instance_access_file_is_an_error_naming_it(roots):
    add_mig_instance(roots[0], card_minor=0, gi=1, ci=0, gi_minor=12, ci_minor=13)
    with pytest.raises(DiscoveryError, match=r"capabilities/gpu0/mig/gi1/ci2/access"):
        discovery(roots).mig_caps(0, 1, 2)


def test_discovered_files_build_specs_that_validate_and_read_the_host_driver_root(roots):
    found = discovery(roots)
    files = found.driver_files("/var/lib/kubelet/plugins/gpu.deckhouse.io/nvidia-cdi-hook")
    base = base_spec(files, [found.card_node(PCI)])
    assert base is not None
    assert validate_spec(base) == []
    mounts = {mount["containerPath"]: mount["hostPath"] for mount in base["containerEdits"]["mounts"]}
    assert (
        mounts[f"{LIBS}/libcuda.so.{DRIVER_VERSION}"]
        == f"/run/nvidia/driver{LIBS}/libcuda.so.{DRIVER_VERSION}"
    )
    assert mounts["/usr/bin/nvidia-smi"] == "/run/nvidia/driver/usr/bin/nvidia-smi"
    add_mig_instance(roots[0], card_minor=0, gi=1, ci=0, gi_minor=12, ci_minor=13)
    mig = ClaimDevice("mig-1g-10gb-0", found.card_node(PCI), found.mig_caps(0, 1, 0))
    claim = claim_spec(files, "a16c3f55-3c2e-4a53-9a53-2b0b1a6c9f10", [mig])
    assert validate_spec(claim) == []
    assert [node["path"] for node in claim["devices"][0]["containerEdits"]["deviceNodes"]] == [
        "/dev/nvidia0",
        "/dev/nvidia-caps/nvidia-cap12",
        "/dev/nvidia-caps/nvidia-cap13",
    ]


def test_a_card_whose_node_is_missing_still_gets_its_minor(roots, caplog):
    caplog.set_level(logging.WARNING)  # a command test before may have left the root at ERROR
    add_card(roots[0], "0000:ca:00.0", 7)
    (roots[0] / "dev/nvidia7").unlink()
    assert discovery(roots).card_node("0000:ca:00.0") == CardNode("0000:ca:00.0", 7)
    assert "card device node missing" in caplog.text


def test_a_configured_hook_path_is_used_as_is(tmp_path):
    plugin = tmp_path / "plugin"
    assert stage_cdi_hook("/usr/local/bin/nvidia-cdi-hook", tmp_path / "missing", plugin) == (
        "/usr/local/bin/nvidia-cdi-hook"
    )
    assert not plugin.exists()


def test_the_image_hook_is_copied_into_the_plugin_directory(tmp_path):
    image = add_image_hook(tmp_path / "image/usr/bin/nvidia-cdi-hook")
    plugin = tmp_path / "plugin"
    path = stage_cdi_hook(None, image, plugin, "/var/lib/kubelet/plugins/gpu.deckhouse.io")
    assert path == "/var/lib/kubelet/plugins/gpu.deckhouse.io/nvidia-cdi-hook"
    copy = plugin / "nvidia-cdi-hook"
    assert copy.read_bytes() == image.read_bytes()
    assert stat.S_IMODE(copy.stat().st_mode) == 0o755
    assert stage_cdi_hook("", image, plugin) == str(copy)  # empty NVIDIA_CDI_HOOK_PATH: staged too


def test_a_new_hook_replaces_the_old_copy_by_rename(tmp_path):
    plugin = tmp_path / "plugin"
    stage_cdi_hook(None, add_image_hook(tmp_path / "old", "#!/bin/sh\necho old\n"), plugin)
    before = (plugin / "nvidia-cdi-hook").stat().st_ino
    stage_cdi_hook(None, add_image_hook(tmp_path / "new", "#!/bin/sh\necho new\n"), plugin)
    assert (plugin / "nvidia-cdi-hook").read_text().endswith("new\n")
    assert (plugin / "nvidia-cdi-hook").stat().st_ino != before  # a running copy keeps its inode
    assert sorted(os.listdir(plugin)) == ["nvidia-cdi-hook"]


def test_an_unchanged_hook_is_not_copied_again(tmp_path):
    image = add_image_hook(tmp_path / "image-hook")
    plugin = tmp_path / "plugin"
    stage_cdi_hook(None, image, plugin)
    before = (plugin / "nvidia-cdi-hook").stat().st_ino
    stage_cdi_hook(None, image, plugin)
    assert (plugin / "nvidia-cdi-hook").stat().st_ino == before


def test_a_missing_image_hook_leaves_the_specs_without_hooks(tmp_path, caplog):
    assert stage_cdi_hook(None, tmp_path / "absent", tmp_path / "plugin") is None
    assert "cannot stage nvidia-cdi-hook" in caplog.text
    assert not list((tmp_path / "plugin").glob(".*"))
