# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

from datetime import UTC, datetime

from deckhouse_gpu.domain.inventory.physicalgpu import PRINTER_COLUMNS
from deckhouse_gpu.domain.inventory.printer_columns import age, render_table, resolve

OBJ = {
    "metadata": {"name": "w1-0000-17-00-0", "creationTimestamp": "2026-11-21T11:00:00Z"},
    "status": {
        "nodeInfo": {"nodeName": "w1"},
        "pciInfo": {"address": "0000:17:00.0", "device": {"id": "20b7", "name": "GA100GL [A30 PCIe]"}},
        "conditions": [
            {"type": "DriverReady", "status": "True"},
            {"type": "HardwareHealthy", "status": "Unknown"},
        ],
    },
}
NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)


def test_resolve_paths_and_filters():
    assert resolve(OBJ, ".status.pciInfo.device.name") == "GA100GL [A30 PCIe]"
    assert resolve(OBJ, '.status.conditions[?(@.type=="HardwareHealthy")].status') == "Unknown"
    assert resolve(OBJ, '.status.conditions[?(@.type=="Missing")].status') is None
    assert resolve(OBJ, ".status.capabilities.memoryMiB") is None


def test_age_like_kubectl():
    assert age("2026-11-21T11:59:30Z", NOW) == "30s"
    assert age("2026-11-21T11:55:00Z", NOW) == "5m"
    assert age("2026-11-21T09:00:00Z", NOW) == "3h"
    assert age("2026-11-18T12:00:00Z", NOW) == "3d"


def test_table_has_default_columns_and_wide_ones_on_request():
    table = render_table([OBJ], PRINTER_COLUMNS, NOW).splitlines()
    assert table[0].split() == [
        "NAME",
        "NODE",
        "MODEL",
        "MEMORY(MIB)",
        "MIG",
        "DRIVERREADY",
        "HARDWAREHEALTHY",
        "AGE",
    ]
    assert table[1].split() == [
        "w1-0000-17-00-0",
        "w1",
        "GA100GL",
        "[A30",
        "PCIe]",
        "<none>",
        "<none>",
        "True",
        "Unknown",
        "60m",
    ]
    wide = render_table([OBJ], PRINTER_COLUMNS, NOW, wide=True).splitlines()
    assert "ADDRESS" in wide[0]
    assert "0000:17:00.0" in wide[1]
