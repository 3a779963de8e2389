# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's device-taint switches: ``run --device-taints`` (env DRA_DEVICE_TAINTS, from the
module setting ``dra.deviceTaints``) and ``render-slices --no-device-taints``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from deckhouse_gpu.cmd.gpu_handler.main import main, parse_args
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from testkit.gpu_objects import ready_card


def lost_card() -> dict[str, object]:
    card = ready_card("w1", "0000:17:00.0", "a30")
    (health,) = [c for c in card["status"]["conditions"] if c["type"] == "HardwareHealthy"]
    health.update(status="Unknown", reason="NVMLQueryFailed", message="0000:17:00.0: GPU is lost")
    return card


@pytest.mark.parametrize(("flags", "tainted"), [([], True), (["--no-device-taints"], False)])
def test_render_slices_taints_an_unhealthy_card_or_leaves_it_out(tmp_path: Path, capsys, flags, tainted):
    path = tmp_path / "cards.yaml"
    path.write_text(yaml.safe_dump_all([lost_card(), ready_card("w1", "0000:31:00.0", "a30")]))
    assert main(["render-slices", "--k8s-version", "1.35", "--physicalgpus", str(path), *flags]) == 0
    slices = list(yaml.safe_load_all(capsys.readouterr().out))
    assert validate_pool(slices, 35) == []
    devices = [d for s in slices for d in s["spec"].get("devices", [])]
    lost = [d for d in devices if d["name"].startswith("gpu-0000-17-00-0")]
    assert bool(lost) is tainted
    taint = {"key": "gpu.deckhouse.io/unhealthy", "value": "GPULost", "effect": "NoExecute"}
    assert all(d["taints"] == [taint] for d in lost)
    assert not any("taints" in d for d in devices if d not in lost)


def test_run_takes_the_taint_mode_from_the_flag_or_the_environment(monkeypatch):
    monkeypatch.delenv("DRA_DEVICE_TAINTS", raising=False)
    assert parse_args(["run", "--node-name", "w1"]).device_taints == "auto"
    monkeypatch.setenv("DRA_DEVICE_TAINTS", "off")
    assert parse_args(["run", "--node-name", "w1"]).device_taints == "off"
    assert parse_args(["run", "--node-name", "w1", "--device-taints", "on"]).device_taints == "on"
    with pytest.raises(SystemExit):
        parse_args(["run", "--node-name", "w1", "--device-taints", "maybe"])
