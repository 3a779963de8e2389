# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import json

import pytest
import yaml

from deckhouse_gpu.cmd.gpu_node_agent import main
from deckhouse_gpu.simulator.host.host_builder import HostBuilder


def test_dry_run_prints_the_objects_and_exits_zero(host: HostBuilder, capsys):
    host.add_gpu("a30", "0000:17:00.0")
    host.add_gpu("t4", "0000:b1:00.0", driver="vfio-pci")
    assert main(["--once", "--dry-run", "--host-root", str(host.root), "--node-name", "worker-1"]) == 0
    out = capsys.readouterr().out
    objects = list(yaml.safe_load_all(out))
    assert [o["metadata"]["name"] for o in objects] == ["worker-1-0000-17-00-0", "worker-1-0000-b1-00-0"]
    assert objects[1]["status"]["currentState"]["driverType"] == "VFIO"
    assert objects[0]["status"]["pciInfo"]["address"] == "0000:17:00.0"
    assert out.startswith("# node worker-1: 2 GPU(s) among 14 PCI functions")


def test_dry_run_reports_bad_devices_in_output_and_logs(host: HostBuilder, capsys):
    host.add_gpu("a30", "0000:17:00.0")
    host.add_gpu("a30", "0000:31:00.0")
    host.write_device_file("0000:31:00.0", "class", "not-hex")
    assert main(["--once", "--dry-run", "--host-root", str(host.root), "--node-name", "w1"]) == 0
    captured = capsys.readouterr()
    assert "# skipped 0000:31:00.0: class: not a 24-bit PCI class code" in captured.out
    assert [o["metadata"]["name"] for o in yaml.safe_load_all(captured.out)] == ["w1-0000-17-00-0"]
    log_lines = [json.loads(line) for line in captured.err.splitlines()]
    skipped = [line for line in log_lines if line["msg"] == "device skipped"]
    assert skipped[0]["pciAddress"] == "0000:31:00.0"
    assert skipped[0]["level"] == "warning"
    assert skipped[0]["component"] == "gpu-node-agent"


def test_dry_run_of_a_wrong_host_root_fails_clearly(tmp_path, capsys):
    assert main(["--once", "--dry-run", "--host-root", str(tmp_path), "--node-name", "w1"]) == 1
    assert "cannot list" in capsys.readouterr().out


def test_node_without_gpus_prints_no_objects(host: HostBuilder, capsys):
    assert main(["--once", "--dry-run", "--host-root", str(host.root), "--node-name", "w1"]) == 0
    assert list(yaml.safe_load_all(capsys.readouterr().out)) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--once", "--dry-run"], "--node-name"),
        (["--dry-run", "--node-name", "w1"], "--dry-run needs --once"),
        (["--node-name", "w1", "--absence-threshold", "0"], "at least 1"),
    ],
)
def test_bad_arguments_are_rejected(argv, message, capsys, monkeypatch):
    monkeypatch.delenv("NODE_NAME", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
