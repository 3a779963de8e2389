# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The demo shows who uses each GPU: after each prepare and unprepare, the prepared-device info
the simulated gpu-handler serves on its /metrics (read back over HTTP), and at the end the devices
joined with made-up DCGM figures."""

import io
import re

from deckhouse_gpu.simulator.cli import main

INFO = "d8_gpu_handler_prepared_device_info"


def _steps(text: str) -> list[str]:
    return re.split(r"\nStep \d+: ", text)[1:]


def test_two_shares_of_one_card_appear_with_their_pods_and_go_at_unprepare():
    out = io.StringIO()
    assert main(["--scenario", "sharing"], out=out) == 0
    steps = _steps(out.getvalue())
    small, large, refused, small_gone, large_gone = steps[1:6]
    assert "1 prepared-device series" in small
    assert re.search(rf'{INFO}\{{.*pod="mps-small-0".*share_percent="25"\}} 1', small)
    assert "2 prepared-device series" in large
    assert 'pod="mps-large-0"' in large
    assert 'offer_type="Shared"' in large
    assert 'pci_bus_id="00000000:17:00.0"' in large
    assert "2 prepared-device series" in refused  # the refused claim never shows
    assert "1 prepared-device series" in small_gone
    assert "mps-small-0" not in small_gone.split(INFO, 1)[1]
    assert "0 prepared-device series" in large_gone
    tail = out.getvalue().rsplit("who uses the GPUs", 1)[1]
    assert "No device is prepared now" in tail
    assert "pod:d8_gpu_device_utilization_percent:max" in tail  # where to look in a cluster
