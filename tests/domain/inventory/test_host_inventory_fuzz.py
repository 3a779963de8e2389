# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Fuzzing of what gpu-node-agent reads from the host: pci.ids, the sysfs files of PCI functions,
os-release, DMI and the kernel release.

Whatever the files hold, a pass never raises (the parsers raise only ``ValueError``, which the scan
turns into a skipped device), and every PhysicalGPU it would write has a valid name and labels and
a status the CRD accepts: a damaged host costs names or devices, never the inventory, and never
writes an object the API server refuses.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from deckhouse_gpu.adapters.host.sysfs_host import SysfsHost
from deckhouse_gpu.domain.inventory.desired import DesiredGPU, describe_gpu
from deckhouse_gpu.domain.inventory.host_facts import HostFacts, node_info
from deckhouse_gpu.domain.inventory.pci import PciDevice, parse_class_code, parse_hex_id
from deckhouse_gpu.domain.inventory.pciids import parse_pci_ids
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules_format import (
    check_label_key,
    check_label_value,
    is_dns_subdomain,
)
from deckhouse_gpu.services.inventory.inventory_sync import read_host
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from tests.support.crd_schema import CRD_FILE, load
from tests.support.fuzzing import fuzz, mostly
from tests.support.openapi_validator import validate

(_VERSION,) = load(CRD_FILE)["spec"]["versions"]
STATUS_SCHEMA = _VERSION["schema"]["openAPIV3Schema"]["properties"]["status"]
NVIDIA = frozenset({"10de"})
_HEX4 = st.from_regex(r"\A[0-9a-fA-F]{4}\Z")
# A name on one line: str.splitlines() also breaks at \v, \f, \x1c-\x1e, \x85, \u2028 and \u2029.
_NAME = st.text(
    st.characters(blacklist_characters="\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"), min_size=1, max_size=40
).filter(lambda t: not t.isspace())
_NOISE = st.text(max_size=30)
PCI_IDS_LINE = st.one_of(
    st.builds(lambda v, n: f"{v}  {n}", _HEX4, _NAME),  # vendor
    st.builds(lambda d, n: f"\t{d}  {n}", _HEX4, _NAME),  # device
    st.builds(lambda s, d, n: f"\t\t{s} {d}  {n}", _HEX4, _HEX4, _NAME),  # subsystem
    st.builds(lambda c, n: f"C {c}  {n}", st.from_regex(r"\A[0-9a-f]{2}\Z"), _NAME),  # class
    st.builds(lambda c, n: f"\t{c}  {n}", st.from_regex(r"\A[0-9a-f]{2}\Z"), _NAME),  # subclass
    st.just("10de  NVIDIA Corporation"),
    st.builds(lambda n: f"10de  NVIDIA\n\t20b7  {n}", _NAME),  # an A30's device line, its name fuzzed
    st.builds(lambda n: f"#{n}", _NOISE),
    _NOISE,
)
PCI_IDS = st.lists(PCI_IDS_LINE, max_size=25).map("\n".join)


def _check(gpu: DesiredGPU, node: str) -> None:
    # The name rules of our slice checker, which tests/real/test_slice_rules_vs_server.py holds to
    # the real API server's: a fuzz of thousands of names stays in-process.
    assert is_dns_subdomain(gpu.name), gpu.name
    problems: list[Any] = []
    for key, value in gpu.labels.items():
        check_label_key(key, f"metadata.labels[{key}]", problems)
        check_label_value(value, f"metadata.labels[{key}]", problems)
    assert problems == []
    assert validate(STATUS_SCHEMA, gpu.status) == [], gpu.status
    assert gpu.manifest(None)["metadata"]["name"] == gpu.name


@given(PCI_IDS, st.sampled_from(["w1", "worker-1.example.com", "a" * 253]))
@fuzz(300)
def test_any_pci_ids_gives_valid_objects(text: str, node: str) -> None:
    ids = parse_pci_ids(text, NVIDIA)
    device = PciDevice("0000:17:00.0", "030200", "10de", "20b7", "10de", "1532", "nvidia")
    gpu = describe_gpu(node, device, ids, node_info(node, HostFacts()))
    event("named" if ids.device_name("10de", "20b7") else "unnamed")
    _check(gpu, node)


@given(st.text(max_size=12) | st.binary(max_size=12).map(lambda b: b.decode("ascii", errors="replace")))
@fuzz(500)
def test_sysfs_ids_parse_or_raise_value_error(text: str) -> None:
    for parse, digits in ((parse_hex_id, 4), (parse_class_code, 6)):
        try:
            value = parse(text)
        except ValueError:
            continue
        assert re.fullmatch(f"[0-9a-f]{{{digits}}}", value), (text, value)


_FILE = st.one_of(
    st.sampled_from(["0x10de\n", "0x030200\n", "0x20b7", "0x0302", "-1\n", "0\n", "1\n", "0x10DE", ""]),
    st.text(max_size=16),
    st.binary(max_size=16),
)
_SYSFS_FILES = ("class", "vendor", "device", "subsystem_vendor", "subsystem_device", "numa_node")


@st.composite
def host_changes(draw: st.DrawFn) -> dict[str, Any]:
    """Fuzzed contents for an A30's sysfs files (left alone, replaced or removed), its driver and
    IOMMU group link names, and the node's os-release, DMI and kernel release."""
    files = {
        name: draw(mostly(st.just(None), st.one_of(_FILE, st.just(b"<removed>")))) for name in _SYSFS_FILES
    }
    return {
        "files": files,
        "driver": draw(
            st.one_of(
                st.none(), st.sampled_from(["nvidia", "vfio-pci", "x"]), st.from_regex(r"\A[\w.-]{1,20}\Z")
            )
        ),
        "iommu": draw(st.one_of(st.none(), st.integers(0, 300).map(str), st.from_regex(r"\A[\w.-]{1,12}\Z"))),
        "os_release": draw(
            st.one_of(st.none(), st.text(max_size=60), st.just('ID=ubuntu\nVERSION_ID="24.04"\n'))
        ),
        "dmi": draw(st.one_of(st.none(), st.text(max_size=30))),
        "kernel": draw(st.one_of(st.none(), st.text(max_size=30))),
        "pci_ids": draw(st.one_of(st.none(), PCI_IDS)),
    }


def _write(path: Path, content: str | bytes | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        path.unlink(missing_ok=True)
    else:
        # Text with lone surrogates becomes bytes that are not UTF-8, as a damaged file's may be.
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))


def _apply(root: Path, builder: HostBuilder, changes: dict[str, Any]) -> None:
    directory = builder.device_dir("0000:17:00.0")
    for name, content in changes["files"].items():
        if content is not None:
            _write(directory / name, None if content == b"<removed>" else content)
    builder.bind_driver("0000:17:00.0", None)
    if changes["driver"] is not None:
        (builder.sys / "bus/pci/drivers" / changes["driver"]).mkdir(parents=True, exist_ok=True)
        os.symlink(builder.sys / "bus/pci/drivers" / changes["driver"], directory / "driver")
    if changes["iommu"] is not None:
        os.symlink(builder.sys / "kernel/iommu_groups" / changes["iommu"], directory / "iommu_group")
    _write(root / "etc/os-release", changes["os_release"])
    _write(root / "sys/class/dmi/id/sys_vendor", changes["dmi"])
    _write(root / "proc/sys/kernel/osrelease", changes["kernel"])
    if changes["pci_ids"] is not None:
        _write(root / "usr/share/misc/pci.ids", changes["pci_ids"])


@pytest.fixture(scope="module")
def tree() -> Iterator[tuple[Path, HostBuilder]]:
    """One host for every example; each example damages it and puts it back."""
    root = Path(tempfile.mkdtemp(prefix="gpu-fuzz-"))
    builder = HostBuilder(root).standard_node()
    builder.add_gpu("t4", "0000:31:00.0")  # untouched: it must survive its neighbour's damage
    yield root, builder
    shutil.rmtree(root, ignore_errors=True)


@given(changes=host_changes())
@fuzz(150)
def test_a_damaged_host_is_read_without_failing(
    tree: tuple[Path, HostBuilder], changes: dict[str, Any]
) -> None:
    root, builder = tree
    builder.add_gpu("a30", "0000:17:00.0")
    (builder.device_dir("0000:17:00.0") / "iommu_group").unlink(missing_ok=True)
    builder.standard_node()
    _apply(root, builder, changes)
    inventory = read_host(SysfsHost(root), "w1")
    addresses = [gpu.address for gpu in inventory.gpus]
    assert "0000:31:00.0" in addresses
    assert [e.address for e in inventory.errors] in ([], ["0000:17:00.0"])
    event(f"a30: {'read' if '0000:17:00.0' in addresses else 'skipped' if inventory.errors else 'not a GPU'}")
    for gpu in inventory.gpus:
        _check(gpu, "w1")
