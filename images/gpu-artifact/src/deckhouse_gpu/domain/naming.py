# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Stable object names and valid label values (DESIGN.md D5).

A PhysicalGPU is named after its node and PCI address, so adding or removing another card
never renames it; an offer (a ResourceSlice device) after its card's PCI address, its MIG
profile and placement. Anything that would break a Kubernetes length or charset rule is shortened
with a hash suffix, so two different inputs never collapse into one name.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 253  # DNS subdomain
MAX_LABEL_VALUE = 63
_HASH_LEN = 8

_NOT_DNS = re.compile(r"[^a-z0-9.-]+")
_NOT_LABEL = re.compile(r"[^A-Za-z0-9_.-]+")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_LEN]


def _shorten(text: str, limit: int, source: str, strip: str) -> str:
    if len(text) <= limit:
        return text
    head = text[: limit - _HASH_LEN - 1].rstrip(strip)
    return f"{head}-{_digest(source)}"


def pci_address_slug(address: str) -> str:
    """``0000:02:00.0`` -> ``0000-02-00-0``: a DNS label fragment."""
    return address.lower().replace(":", "-").replace(".", "-")


def physical_gpu_name(node_name: str, pci_address: str) -> str:
    node = _NOT_DNS.sub("-", node_name.lower()).strip(".-") or "node"
    node = re.sub(r"\.+-|-\.+", "-", node)  # no '.-' or '-.' pairs in a DNS subdomain
    name = f"{node}-{pci_address_slug(pci_address)}"
    return _shorten(name, MAX_NAME, f"{node_name}/{pci_address}", ".-")


def physical_name(address: str) -> str:
    """The card's Physical offer (and its counter set): ``gpu-0000-02-00-0``."""
    return f"gpu-{pci_address_slug(address)}"


def mig_name(address: str, profile: str, start: int) -> str:
    """A MIG offer: the card's name, the profile and the placement start (``...-mig-1g-6gb-0``)."""
    slug = re.sub(r"[^a-z0-9]+", "-", profile.lower()).strip("-")
    return f"{physical_name(address)}-mig-{slug}-{start}"


def label_value(text: str) -> str:
    """A valid label value: at most 63 characters, alphanumeric at both ends."""
    value = _NOT_LABEL.sub("-", text).strip("-_.")
    return _shorten(value, MAX_LABEL_VALUE, text, "-_.")


def model_slug(device_name: str | None, vendor_id: str, device_id: str) -> str:
    """``GA100GL [A30 PCIe]`` -> ``a30-pcie``: the marketing name in brackets, normalized.

    Without a pci.ids name the ids stand in (``10de-20b7``) so the label is never empty.
    """
    if device_name:
        bracket = re.search(r"\[([^\]]+)\]", device_name)
        base = bracket.group(1) if bracket else device_name
        slug = _NOT_ALNUM.sub("-", base.lower()).strip("-")
        if slug:
            return label_value(slug)
    return f"{vendor_id}-{device_id}"
