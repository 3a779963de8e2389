# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import pytest

from deckhouse_gpu.domain.inventory.host_facts import (
    HostFacts,
    is_bare_metal,
    node_info,
    parse_os_release,
)
from deckhouse_gpu.domain.inventory.physicalgpu import OSInfo

OS_RELEASE = """\
NAME="Ubuntu"
VERSION_ID="22.04"
ID=ubuntu
PRETTY_NAME='Ubuntu 22.04.4 LTS'
# comment
BROKEN="unterminated
garbage line
"""


def test_parse_os_release_handles_quotes_and_skips_bad_lines():
    values = parse_os_release(OS_RELEASE)
    assert values["ID"] == "ubuntu"
    assert values["VERSION_ID"] == "22.04"
    assert values["PRETTY_NAME"] == "Ubuntu 22.04.4 LTS"
    assert "BROKEN" not in values


@pytest.mark.parametrize(
    ("vendor", "product", "expected"),
    [
        ("Supermicro", "SYS-420GP-TNR", True),
        ("Dell Inc.", "PowerEdge XE9680", True),
        ("QEMU", "Standard PC (Q35 + ICH9, 2009)", False),
        ("Red Hat", "KVM", False),
        ("VMware, Inc.", "VMware Virtual Platform", False),
        ("Microsoft Corporation", "Virtual Machine", False),
        ("Amazon EC2", "g5.xlarge", False),
        ("Google", "Google Compute Engine", False),
        ("OpenStack Foundation", "OpenStack Nova", False),
        (None, None, False),  # fail-closed: without DMI we cannot prove bare metal
        ("", "", False),
    ],
)
def test_bare_metal_heuristic(vendor, product, expected):
    assert is_bare_metal(vendor, product) is expected


def test_node_info_leaves_out_what_is_missing():
    info = node_info("w1", HostFacts())
    assert info.node_name == "w1"
    assert info.os is None
    assert info.kernel_release is None
    assert info.bare_metal is False


def test_node_info_from_all_sources():
    facts = HostFacts(OS_RELEASE, "6.8.0-45-generic\n", "Supermicro", "SYS-420GP-TNR")
    info = node_info("w1", facts)
    assert info.os == OSInfo("ubuntu", "22.04", "Ubuntu 22.04.4 LTS")
    assert info.kernel_release == "6.8.0-45-generic"
    assert info.bare_metal is True
