# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A tolerant parser of the pci.ids database (vendor, device, subsystem and class names).

Only the vendors the module inventories are indexed in full; other vendors keep just their
name. A malformed line is skipped: a damaged file costs names, never the inventory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_VENDOR = re.compile(r"^([0-9a-fA-F]{4})\s+(\S.*)$")
_DEVICE = re.compile(r"^\t([0-9a-fA-F]{4})\s+(\S.*)$")
_SUBSYSTEM = re.compile(r"^\t\t([0-9a-fA-F]{4})\s+([0-9a-fA-F]{4})\s+(\S.*)$")
_CLASS = re.compile(r"^C\s+([0-9a-fA-F]{2})\s+(\S.*)$")
_SUBCLASS = re.compile(r"^\t([0-9a-fA-F]{2})\s+(\S.*)$")


@dataclass
class PciIds:
    vendors: dict[str, str] = field(default_factory=dict)
    devices: dict[tuple[str, str], str] = field(default_factory=dict)
    subsystems: dict[tuple[str, str, str, str], str] = field(default_factory=dict)
    classes: dict[str, str] = field(default_factory=dict)  # "03" and "0302"
    skipped_lines: int = 0

    def vendor_name(self, vendor_id: str) -> str | None:
        return self.vendors.get(vendor_id)

    def device_name(self, vendor_id: str, device_id: str) -> str | None:
        return self.devices.get((vendor_id, device_id))

    def subsystem_name(self, vendor_id: str, device_id: str, sub_vendor: str, sub_device: str) -> str | None:
        return self.subsystems.get((vendor_id, device_id, sub_vendor, sub_device))

    def class_name(self, class_code: str) -> str | None:
        """The subclass name if known (``3D controller``), else the base class name."""
        return self.classes.get(class_code[:4]) or self.classes.get(class_code[:2])


def parse_pci_ids(text: str, vendors_in_full: frozenset[str]) -> PciIds:
    ids = PciIds()
    vendor: str | None = None  # current vendor block, only when indexed in full
    device: str | None = None
    base_class: str | None = None  # current class block once the C section has begun
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if base_class is not None or line.startswith("C "):
            base_class = _parse_class_line(ids, line, base_class)
            continue
        if not line.startswith("\t"):
            match = _VENDOR.match(line)
            if match is None:
                ids.skipped_lines += 1
                vendor = device = None
                continue
            vendor_id = match.group(1).lower()
            ids.vendors[vendor_id] = match.group(2).strip()
            vendor = vendor_id if vendor_id in vendors_in_full else None
            device = None
        elif vendor is not None:
            device = _parse_device_line(ids, line, vendor, device)
    return ids


def _parse_device_line(ids: PciIds, line: str, vendor: str, device: str | None) -> str | None:
    if line.startswith("\t\t"):
        match = _SUBSYSTEM.match(line)
        if match is None or device is None:
            ids.skipped_lines += 1
            return device
        key = (vendor, device, match.group(1).lower(), match.group(2).lower())
        ids.subsystems[key] = match.group(3).strip()
        return device
    match = _DEVICE.match(line)
    if match is None:
        ids.skipped_lines += 1
        return None
    device_id = match.group(1).lower()
    ids.devices[(vendor, device_id)] = match.group(2).strip()
    return device_id


def _parse_class_line(ids: PciIds, line: str, base_class: str | None) -> str | None:
    if line.startswith("C "):
        match = _CLASS.match(line)
        if match is None:
            ids.skipped_lines += 1
            return ""  # stay in the class section, but attach no subclasses to a broken class
        base = match.group(1).lower()
        ids.classes[base] = match.group(2).strip()
        return base
    if line.startswith("\t\t"):
        return base_class  # programming interfaces are not used
    match = _SUBCLASS.match(line)
    if match is None or not base_class:
        ids.skipped_lines += 1
        return base_class
    ids.classes[base_class + match.group(1).lower()] = match.group(2).strip()
    return base_class
