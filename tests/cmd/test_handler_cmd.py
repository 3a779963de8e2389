# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from deckhouse_gpu.cmd.gpu_node_agent import main as agent_main
from deckhouse_gpu.k8s_semantics.resourceslice.slice_rules import validate_pool
from deckhouse_gpu.ports.kube import NODES, PHYSICAL_GPUS
from deckhouse_gpu.simulator.gpu_handler import main
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from testkit.fake_apiserver import FakeApiServer
from testkit.gpu_objects import ready_card
from testkit.kubeconfig import write_kubeconfig


@pytest.fixture
def physicalgpus(host: HostBuilder, tmp_path: Path, capsys) -> Path:
    """What gpu-node-agent's dry-run prints for a node with an A30 (nvidia) and an H100 (vfio-pci)."""
    host.add_gpu("a30", "0000:17:00.0")
    host.add_gpu("h100-80gb", "0000:65:00.0", driver="vfio-pci")
    assert agent_main(["--once", "--dry-run", "--host-root", str(host.root), "--node-name", "w1"]) == 0
    path = tmp_path / "pgpu.yaml"
    path.write_text(capsys.readouterr().out)
    return path


def test_snapshot_dry_run_fills_capabilities_of_ready_nvidia_cards(physicalgpus, capsys):
    argv = [
        "snapshot",
        "--dry-run",
        "--nvml-sim",
        "a30,h100-80gb",
        "--physicalgpus",
        str(physicalgpus),
        "--assume-driver-ready",
    ]
    assert main(argv) == 0
    a30, h100 = yaml.safe_load_all(capsys.readouterr().out)
    assert a30["status"]["capabilities"]["productName"] == "NVIDIA A30"
    assert a30["status"]["pciInfo"]["address"] == "0000:17:00.0"  # the agent's fields are kept
    healthy = {c["type"]: c for c in a30["status"]["conditions"]}["HardwareHealthy"]
    assert (healthy["status"], healthy["reason"]) == ("True", "NVMLHealthy")
    gated = {c["type"]: c for c in h100["status"]["conditions"]}["HardwareHealthy"]
    assert (gated["status"], gated["reason"]) == ("Unknown", "DriverTypeNotNvidia")
    assert "capabilities" not in h100["status"]


def test_snapshot_without_driver_ready_says_so(physicalgpus, capsys):
    assert (
        main(["snapshot", "--dry-run", "--nvml-sim", "a30,h100-80gb", "--physicalgpus", str(physicalgpus)])
        == 0
    )
    a30 = next(yaml.safe_load_all(capsys.readouterr().out))
    assert "capabilities" not in a30["status"]
    assert a30["status"]["conditions"][-1]["reason"] == "DriverNotReady"


def test_snapshot_accepts_a_kubectl_list(physicalgpus, tmp_path, capsys):
    items = list(yaml.safe_load_all(physicalgpus.read_text()))
    listed = tmp_path / "list.yaml"
    listed.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    assert main(["snapshot", "--dry-run", "--nvml-sim", "a30,t4", "--physicalgpus", str(listed)]) == 0
    assert len(list(yaml.safe_load_all(capsys.readouterr().out))) == 2


@pytest.mark.parametrize(
    ("models", "content", "message"),
    [
        ("a30", None, "1 models ('a30') for 2 PCI addresses"),
        ("a30,v100", None, "v100"),
        ("a30", "kind: Pod\n", "expected PhysicalGPU objects"),
        ("a30", "a: [", "not valid YAML"),
    ],
)
def test_snapshot_bad_input_is_reported_clearly(physicalgpus, tmp_path, capsys, models, content, message):
    path = physicalgpus
    if content is not None:
        path = tmp_path / "bad.yaml"
        path.write_text(content)
    assert main(["snapshot", "--dry-run", "--nvml-sim", models, "--physicalgpus", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_snapshot_of_a_missing_file(capsys):
    assert main(["snapshot", "--dry-run", "--nvml-sim", "a30", "--physicalgpus", "/nonexistent.yaml"]) == 2
    assert "cannot read /nonexistent.yaml" in capsys.readouterr().err


def test_prestart_finds_the_driver_files(tmp_path, capsys):
    root = tmp_path / "driver-root"
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    (root / "usr/bin/nvidia-smi").write_text("")
    (root / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1").write_text("")
    assert (
        main(
            [
                "prestart",
                "--driver-root-mount",
                str(root),
                "--max-attempts",
                "1",
                "--interval-seconds",
                "0.01",
            ]
        )
        == 0
    )
    assert (
        "libnvidia-ml.so.1: " + str(root / "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
        in capsys.readouterr().out
    )


def test_prestart_gives_up_with_hints(tmp_path, capsys):
    assert (
        main(
            [
                "prestart",
                "--driver-root-mount",
                str(tmp_path),
                "--max-attempts",
                "2",
                "--interval-seconds",
                "0.01",
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert "nvidia-smi" in err
    assert "libnvidia-ml.so.1" in err


def test_run_process_fills_the_api_and_stops_on_sigterm(tmp_path, short_root):
    host = HostBuilder(short_root / "host").standard_node().install_nvidia_driver()
    host.add_gpu("a30", "0000:17:00.0")
    with FakeApiServer() as server:
        server.kube.create(NODES, {"metadata": {"name": "w1"}})
        kubeconfig = write_kubeconfig(tmp_path, server.url)
        agent = subprocess.run(
            [sys.executable, "-m", "deckhouse_gpu.cmd.gpu_node_agent", "--once", "--node-name", "w1",
             "--host-root", str(host.root), "--kubeconfig", kubeconfig],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert agent.returncode == 0, agent.stderr
        name = "w1-0000-17-00-0"
        ready = [
            {
                "type": "DriverReady",
                "status": "True",
                "reason": "ValidatorReady",
                "message": "",
                "lastTransitionTime": "2026-11-21T00:00:00Z",
            }
        ]
        server.kube.patch(PHYSICAL_GPUS, name, {"status": {"conditions": ready}}, subresource="status")
        handler = subprocess.Popen(
            [sys.executable, "-m", "deckhouse_gpu.simulator.gpu_handler", "run", "--node-name", "w1",
             "--kubeconfig", kubeconfig, "--nvml-sim", "a30", "--host-root", str(host.root),
             "--health-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"],
            stderr=subprocess.PIPE, text=True, env={**os.environ, "LOG_LEVEL": "info"},
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                status = server.kube.get(PHYSICAL_GPUS, name)["status"]
                if "capabilities" in status:
                    break
                time.sleep(0.05)
            assert status["capabilities"]["productName"] == "NVIDIA A30"
            assert (
                status["conditions"][0]["reason"] == "ValidatorReady"
            )  # the controller's condition survives
        finally:
            handler.send_signal(signal.SIGTERM)
            handler.communicate(timeout=10)
        assert handler.returncode == 0


def test_render_slices_prints_valid_pools_for_each_version(host, tmp_path, capsys):
    card = ready_card("w1", "0000:17:00.0", "a30")
    path = tmp_path / "cards.yaml"
    path.write_text(yaml.safe_dump_all([card, ready_card("w2", "0000:17:00.0", "t4")]))
    printed = {}
    for version, minor in (("1.34", 34), ("1.35", 35), ("1.36", 36), ("1.37", 37), ("1.38", 38)):
        assert main(["render-slices", "--k8s-version", version, "--physicalgpus", str(path)]) == 0
        printed[minor] = capsys.readouterr().out
        slices = list(yaml.safe_load_all(printed[minor]))
        assert {s["spec"]["pool"]["name"] for s in slices} == {"gpus/w1", "gpus/w2"}
        for node in ("w1", "w2"):
            assert validate_pool([s for s in slices if s["spec"]["nodeName"] == node], minor) == []
    # 1.36 and 1.37 keep the 1.35 layout; a newer version is rendered as 1.37.
    assert printed[34] != printed[35] == printed[36] == printed[37] == printed[38]


@pytest.mark.parametrize("version", ["1.33", "1", "v2.0", "newest"])
def test_render_slices_refuses_a_version_older_than_1_34_or_not_a_version(tmp_path, capsys, version):
    path = tmp_path / "cards.yaml"
    path.write_text(yaml.safe_dump(ready_card("w1", "0000:17:00.0", "a30")))
    with pytest.raises(SystemExit) as exit_info:
        main(["render-slices", "--k8s-version", version, "--physicalgpus", str(path)])
    assert exit_info.value.code == 2
    assert "--k8s-version" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "expected_devices"),
    [
        ([], 14),
        (["--no-partitionable"], 1),
        (["--node-labels", "gpu.deckhouse.io/sharing=true"], 1),
        (["--node-labels", "gpu.deckhouse.io/mig=false"], 1),
    ],
)
def test_render_slices_flags(tmp_path, capsys, flags, expected_devices):
    path = tmp_path / "cards.yaml"
    path.write_text(yaml.safe_dump(ready_card("w1", "0000:17:00.0", "a30")))
    assert main(["render-slices", "--k8s-version", "1.35", "--physicalgpus", str(path), *flags]) == 0
    slices = list(yaml.safe_load_all(capsys.readouterr().out))
    assert sum(len(s["spec"].get("devices", [])) for s in slices) == expected_devices


def test_render_slices_without_consumable_capacity_shares_nothing(tmp_path, capsys):
    path = tmp_path / "cards.yaml"
    path.write_text(yaml.safe_dump(ready_card("w1", "0000:17:00.0", "a30")))
    argv = ["render-slices", "--k8s-version", "1.35", "--physicalgpus", str(path),
            "--node-labels", "gpu.deckhouse.io/sharing=true", "--no-consumable-capacity"]  # fmt: skip
    assert main(argv) == 0
    devices = [d for s in yaml.safe_load_all(capsys.readouterr().out) for d in s["spec"].get("devices", [])]
    assert not any(d.get("allowMultipleAllocations") for d in devices)


def test_render_slices_output_is_what_allocate_reads(tmp_path, capsys):
    # The commands read each other's output: the slices go straight into a dry-run allocation.
    from deckhouse_gpu.cmd.gpu_dra_controller import main as dra_controller  # noqa: PLC0415

    cards = tmp_path / "cards.yaml"
    cards.write_text(yaml.safe_dump(ready_card("w1", "0000:17:00.0", "a30")))
    assert main(["render-slices", "--k8s-version", "1.35", "--physicalgpus", str(cards)]) == 0
    slices = tmp_path / "slices.yaml"
    slices.write_text(capsys.readouterr().out)
    claims = tmp_path / "claims.yaml"
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu-a30", "count": 1}}
    claims.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"namespace": "ml", "name": "one"},
                "spec": {"devices": {"requests": [request]}},
            }
        )
    )
    classes = Path(__file__).resolve().parents[2] / "docs" / "examples" / "deviceclasses.yaml"
    argv = ["allocate", "--slices", str(slices), "--classes", str(classes), "--claims", str(claims)]
    assert dra_controller.main(argv) == 0
    report = yaml.safe_load(capsys.readouterr().out)
    (placed,) = report["claims"]
    assert placed["allocation"]["devices"]["results"][0]["device"] == "gpu-0000-17-00-0"
