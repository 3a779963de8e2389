#!/usr/bin/env python3
# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""An example libvirt QEMU hook that reads the VFIO payloads of gpu.deckhouse.io (docs/VFIO.md).

libvirt runs /etc/libvirt/hooks/qemu with the domain name, the operation and the sub-operation as
arguments and the domain XML on stdin. On "prepare begin", before QEMU starts, this hook reads every
payload mounted into the container (/var/run/gpu.deckhouse.io/vfio/*.json), logs each card the
domain gets (model, memory, IOMMU group, NUMA node, functions), warns about a prepared card the
domain does not pass through, and stops the start (exit 1) when a function of a card is not on
vfio-pci (QEMU would fail on it). Every other operation is left alone (exit 0).

Install it as /etc/libvirt/hooks/qemu (executable) in the image that runs libvirt (KubeVirt's
virt-launcher). GPU_VFIO_PAYLOAD_DIR and GPU_VFIO_SYSFS point it elsewhere, for a test.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

PAYLOAD_DIR = Path(os.environ.get("GPU_VFIO_PAYLOAD_DIR", "/var/run/gpu.deckhouse.io/vfio"))
SYSFS = Path(os.environ.get("GPU_VFIO_SYSFS", "/sys/bus/pci/devices"))
KNOWN_VERSIONS = ("gpu.deckhouse.io/v1alpha1",)


def payloads() -> list[dict[str, Any]]:
    found = []
    for path in sorted(PAYLOAD_DIR.glob("*.json")):
        document = json.loads(path.read_text())
        if document.get("apiVersion") in KNOWN_VERSIONS and document.get("kind") == "VFIOPassthrough":
            found.append(document)
    return found


def passed_through(domain_xml: str) -> set[str]:
    """PCI addresses of the domain's <hostdev type='pci'> sources, as 0000:3b:00.0."""
    addresses = set()
    domain = ElementTree.fromstring(domain_xml)  # noqa: S314 - libvirt's own domain XML, not user input
    for source in domain.iterfind("./devices/hostdev[@type='pci']/source/address"):
        parts = [int(source.get(key, "0"), 16) for key in ("domain", "bus", "slot", "function")]
        addresses.add(f"{parts[0]:04x}:{parts[1]:02x}:{parts[2]:02x}.{parts[3]}")
    return addresses


def driver(address: str) -> str | None:
    link = SYSFS / address / "driver"
    return os.path.basename(os.readlink(link)) if link.is_symlink() else None


def check(domain_xml: str) -> list[str]:
    """Problems that must stop the start; each card found is logged on the way."""
    attached = passed_through(domain_xml)
    problems = []
    for document in payloads():
        for device in document["devices"]:
            functions = device["functions"]
            print(
                f"gpu.deckhouse.io: {device['name']} ({device['productName']}, {device['memoryMiB']} MiB) "
                f"IOMMU group {device['iommuGroup']}, NUMA node {functions[0]['numaNode']}: "
                + ", ".join(f"{f['pciAddress']} (was {f['originalDriver']})" for f in functions),
                file=sys.stderr,
            )
            if device["pciAddress"] not in attached:
                print(
                    f"gpu.deckhouse.io: warning: {device['pciAddress']} is not in the domain", file=sys.stderr
                )
            for function in functions:
                if driver(function["pciAddress"]) != "vfio-pci":
                    problems.append(f"{function['pciAddress']} is not on vfio-pci")
    return problems


def main(argv: list[str]) -> int:
    operation = argv[2:4]
    if operation != ["prepare", "begin"]:
        return 0
    problems = check(sys.stdin.read())
    for problem in problems:
        print(f"gpu.deckhouse.io: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
