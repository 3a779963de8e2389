# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Node facts for ``status.nodeInfo``: OS from os-release, kernel release, bare metal or VM."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from deckhouse_gpu.domain.inventory.physicalgpu import NodeInfo, OSInfo

# Substrings of DMI sys_vendor/product_name that hypervisors and clouds report (lowercased).
# DESIGN.md S7.5 plus common ones seen in the field.
VIRTUAL_DMI_MARKERS: tuple[str, ...] = (
    "kvm",
    "vmware",
    "virtualbox",
    "qemu",
    "bochs",
    "xen",
    "amazon ec2",
    "google",
    "microsoft corporation",
    "openstack",
    "parallels",
    "bhyve",
    "digitalocean",
    "hetzner vserver",
    "red hat enterprise virtualization",
)


@dataclass(frozen=True)
class HostFacts:
    """Raw strings read from the host; None where the source was missing or unreadable."""

    os_release: str | None = None
    kernel_release: str | None = None
    dmi_sys_vendor: str | None = None
    dmi_product_name: str | None = None


def parse_os_release(text: str) -> dict[str, str]:
    """KEY=value lines with shell quoting, as os-release(5) defines; bad lines are skipped."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        try:
            parts = shlex.split(value)
        except ValueError:
            continue
        values[key.strip()] = parts[0] if parts else ""
    return values


def is_bare_metal(sys_vendor: str | None, product_name: str | None) -> bool:
    """Fail-closed: without DMI, or with a hypervisor's name in it, the node is not bare metal.

    VFIO passthrough is allowed only on bare metal, so a wrong True is worse than a wrong False.
    """
    if not sys_vendor and not product_name:
        return False
    text = f"{sys_vendor or ''} {product_name or ''}".lower()
    return not any(marker in text for marker in VIRTUAL_DMI_MARKERS)


def node_info(node_name: str, facts: HostFacts) -> NodeInfo:
    os_info = None
    if facts.os_release is not None:
        release = parse_os_release(facts.os_release)
        os_info = OSInfo(
            id=release.get("ID") or None,
            version=release.get("VERSION_ID") or None,
            name=release.get("PRETTY_NAME") or release.get("NAME") or None,
        )
        if os_info == OSInfo():
            os_info = None
    kernel = facts.kernel_release.strip() if facts.kernel_release else None
    return NodeInfo(
        node_name=node_name,
        os=os_info,
        kernel_release=kernel or None,
        bare_metal=is_bare_metal(facts.dmi_sys_vendor, facts.dmi_product_name),
    )
