# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A simulated GPU node on disk for the end-to-end tests, what its files say, and prepare processes.

The node is a host root as ``gpu-handler run --nvml-sim ... --host-root`` sees it: sysfs with
nvidia-bound A30s, the driver installed at the root, a boot ID. What prepare leaves there is read
back from the files, never from a process's memory: the checkpoint, the CDI specs, the simulated
MIG state and the /proc capability tree of the MIG instances.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from deckhouse_gpu.domain.prepare.container.cdi_spec import claim_spec_file
from deckhouse_gpu.ports.dra_plugin import ClaimRef
from deckhouse_gpu.simulator.host.host_builder import HostBuilder
from deckhouse_gpu.simulator.host.sim_mig_state import STATE_FILE
from deckhouse_gpu.simulator.host.sim_vfio import PARKED

NODE = "w1"
CARD_A, CARD_B = "0000:17:00.0", "0000:31:00.0"  # A30s, device minors 0 and 1
PLUGIN_DIR = "var/lib/kubelet/plugins/gpu.deckhouse.io"
REPO = Path(__file__).resolve().parents[2]


def build_host(root: Path, boot_id: str = "6d7f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b") -> HostBuilder:
    host = HostBuilder(root).standard_node().install_nvidia_driver(boot_id)
    host.add_gpu("a30", CARD_A)
    host.add_gpu("a30", CARD_B)
    return host


def handler_args(root: Path, kubeconfig: str) -> list[str]:
    """What ``gpu-handler run`` gets on the simulated node, the kubelet plugin included: a model for
    each card of the nvidia driver, those a VFIO claim moved to vfio-pci included (they stay out of
    the new process's NVML until they are back), not one an administrator bound to vfio-pci."""
    devices = root / "sys/bus/pci/devices"
    drivers = {card: (devices / card / "driver").resolve().name for card in (CARD_A, CARD_B)}
    known = [card for card, name in drivers.items() if name == "nvidia" or (root / PARKED / card).exists()]
    return ["--node-name", NODE, "--kubeconfig", kubeconfig, "--nvml-sim", ",".join(["a30"] * len(known)),
            "--host-root", str(root), "--cdi-root", "/etc/cdi",
            "--mps-image", "registry.example/gpu-handler:test"]  # fmt: skip


def ref(claim: dict[str, Any]) -> ClaimRef:
    meta = claim["metadata"]
    return ClaimRef(meta["namespace"], meta["uid"], meta["name"])


def checkpoint_claims(root: Path) -> dict[str, Any]:
    path = root / PLUGIN_DIR / "checkpoint.json"
    return json.loads(path.read_text())["claims"] if path.exists() else {}


def checkpoint_boot_id(root: Path) -> str:
    return str(json.loads((root / PLUGIN_DIR / "checkpoint.json").read_text())["bootID"])


def cdi_spec(root: Path, uid: str) -> dict[str, Any] | None:
    path = root / "etc/cdi" / claim_spec_file(uid)
    return json.loads(path.read_text()) if path.exists() else None


def claim_specs(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "etc/cdi").glob("gpu.deckhouse.io-gpu_*.json"))


def metadata_files(root: Path) -> list[str]:
    """The device metadata files (KEP-5304) under the plugin directory: ``<claim UID>/<request>``."""
    base = root / PLUGIN_DIR / "dra-device-metadata"
    return sorted(str(p.parent.relative_to(base)) for p in base.glob("*/*/metadata.json"))


def mig_state(root: Path) -> dict[str, Any]:
    """The simulated cards' MIG part by address; a card never changed is off and empty."""
    path = root / STATE_FILE
    cards = json.loads(path.read_text())["cards"] if path.exists() else {}
    off = {"migCurrent": False, "migPending": False, "instances": []}
    return {address: cards.get(address, off) for address in (CARD_A, CARD_B)}


def placements(root: Path, card: str) -> list[tuple[int, int]]:
    """(profile ID, placement start) of every MIG instance on the card, sorted."""
    return sorted((i["profileID"], i["placementStart"]) for i in mig_state(root)[card]["instances"])


def gi_dirs(root: Path, minor: int) -> list[int]:
    """GPU instance ids the driver's /proc capability tree shows for the card."""
    base = root / f"proc/driver/nvidia/capabilities/gpu{minor}/mig"
    return sorted(int(p.name[2:]) for p in base.glob("gi*")) if base.exists() else []


class Launcher:
    """One prepare process (tests/e2e/prepare_launcher.py): calls over a pipe, None once it died."""

    def __init__(self, root: Path, kubeconfig: str, *trap: str) -> None:
        command = [sys.executable, "-m", "tests.e2e.prepare_launcher", *trap, "--",
                   *handler_args(root, kubeconfig)]  # fmt: skip
        self.process = subprocess.Popen(
            command,
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.read() == "ready", self.stderr()

    def read(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        return json.loads(line)["result"] if line else None

    def send(self, op: str, *claims: ClaimRef) -> None:
        assert self.process.stdin is not None
        command = {"op": op, "claims": [[c.namespace, c.uid, c.name] for c in claims]}
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def call(self, op: str, *claims: ClaimRef) -> Any:
        self.send(op, *claims)
        return self.read()

    def killed(self) -> bool:
        """True when the process died of SIGKILL (and was reaped)."""
        return self.process.wait(timeout=30) == -9

    def stderr(self) -> str:
        if self.process.poll() is None:
            return "(still running)"
        assert self.process.stderr is not None
        return self.process.stderr.read()

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout=30)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
