# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A stand-in for dcgm-exporter on one node, for the check of the rules and dashboards against a
real Prometheus: every metric of dcgm-exporter's default counters with its real labels, for the
node's PhysicalGPUs and the MIG instances of the claims prepared there.

DEFAULT_COUNTERS is dcgm-exporter's ``etc/default-counters.csv`` (the module runs 4.1.1 with no
counters file of its own, templates/dcgm/daemonset.yaml), so a rule or panel that reads a DCGM
field the module's exporter does not serve (the ECC counters, ``DCGM_FI_PROF_*``,
``DCGM_EXP_*``, all commented out there) fails that check. Labels: ``gpu`` (the index),
``UUID``, ``pci_bus_id`` (8-digit domain), ``device`` (``nvidia<i>``), ``modelName``,
``Hostname``, ``DCGM_FI_DRIVER_VERSION``; a MIG instance adds ``GPU_I_PROFILE`` and
``GPU_I_ID``. DCGM reports framebuffer fields per MIG instance and leaves out the utilization of a
card in MIG mode, and so does this.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from deckhouse_gpu.domain.naming import mig_name

DEFAULT_COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    (
        "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
        "counter",
        "Total number of bytes transmitted through PCIe TX (in KB).",
    ),
    ("DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "counter", "Total number of bytes received through PCIe RX (in KB)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "counter",
        "Total number of NVLink bandwidth counters for all lanes.",
    ),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors",
    ),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
)
PER_INSTANCE = ("DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED")
NOT_IN_MIG_MODE = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL")


@dataclass(frozen=True)
class Instance:
    profile: str
    instance_id: int
    memory_mib: int


@dataclass(frozen=True)
class Card:
    index: int
    labels: dict[str, str]
    memory_mib: int
    instances: tuple[Instance, ...]
    utilization: float | None = None  # None: 35 % + 10 % per index


def pci_bus_id(address: str) -> str:
    """``0000:17:00.0`` -> ``00000000:17:00.0``, as DCGM prints it."""
    domain, rest = address.split(":", 1)
    return f"{int(domain, 16):08X}:{rest.upper()}"


def _instances(
    card: Mapping[str, Any], devices: Iterable[str], ids: Mapping[str, int]
) -> tuple[Instance, ...]:
    """The card's instances among ``devices``; their GPU instance IDs from ``ids`` (device name ->
    ID, what the node's driver gave), else numbered from 1 in placement order."""
    address = card["status"]["pciInfo"]["address"]
    profiles = (
        ((card["status"].get("capabilities") or {}).get("nvidia") or {}).get("mig", {}).get("profiles", ())
    )
    wanted = set(devices)
    found = [
        (placement["start"], mig_name(address, profile["name"], placement["start"]), profile)
        for profile in profiles
        for placement in profile["placements"]
        if mig_name(address, profile["name"], placement["start"]) in wanted
    ]
    return tuple(
        Instance(profile["name"], ids.get(name, number), profile["memoryMiB"])
        for number, (_start, name, profile) in enumerate(sorted(found, key=lambda item: item[0]), start=1)
    )


def node_cards(
    node: str,
    cards: Iterable[Mapping[str, Any]],
    mig_devices: Iterable[str],
    uuids: Mapping[str, str] | None = None,
    instance_ids: Mapping[str, int] | None = None,
    utilization: Mapping[str, float] | None = None,
) -> list[Card]:
    """The node's cards as DCGM numbers them (PCI order), with the MIG instances of ``mig_devices``;
    ``uuids`` (PCI address -> UUID) and ``instance_ids`` (MIG device -> GPU instance ID) as the
    node's driver has them, ``utilization`` (PCI address -> %) for cards that are not the default's."""
    devices = list(mig_devices)
    uuids, ids, busy = uuids or {}, instance_ids or {}, utilization or {}
    mine = sorted(
        (c for c in cards if (c["status"].get("nodeInfo") or {}).get("nodeName") == node),
        key=lambda c: c["status"]["pciInfo"]["address"],
    )
    found = []
    for index, card in enumerate(mine):
        status = card["status"]
        nvidia = (status.get("currentState") or {}).get("nvidia") or {}
        labels = {
            "gpu": str(index),
            "UUID": uuids.get(status["pciInfo"]["address"]) or str(nvidia.get("gpuUUID", f"GPU-{index}")),
            "pci_bus_id": pci_bus_id(status["pciInfo"]["address"]),
            "device": f"nvidia{index}",
            "modelName": str((status.get("capabilities") or {}).get("productName", "NVIDIA GPU")),
            "Hostname": node,
            "DCGM_FI_DRIVER_VERSION": str(nvidia.get("driverVersion", "")),
        }
        memory = int((status.get("capabilities") or {}).get("memoryMiB", 16384))
        address = status["pciInfo"]["address"]
        found.append(Card(index, labels, memory, _instances(card, devices, ids), busy.get(address)))
    return found


def _value(name: str, card: Card, instance: Instance | None) -> float:
    memory = instance.memory_mib if instance else card.memory_mib
    # Each instance its own figure, so a join with the wrong instance shows.
    used = memory // 4 + 100 * instance.instance_id if instance else memory // (4 + card.index)
    busy = 35.0 + 10 * card.index if card.utilization is None else card.utilization
    return {
        "DCGM_FI_DEV_SM_CLOCK": 1410.0,
        "DCGM_FI_DEV_MEM_CLOCK": 1215.0,
        "DCGM_FI_DEV_MEMORY_TEMP": 45.0 + card.index,
        "DCGM_FI_DEV_GPU_TEMP": 52.0 + card.index,
        "DCGM_FI_DEV_POWER_USAGE": 71.5 + 10 * card.index,
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 1.5e9,
        "DCGM_FI_DEV_GPU_UTIL": busy,
        "DCGM_FI_DEV_MEM_COPY_UTIL": 12.0,
        "DCGM_FI_DEV_FB_USED": float(used),
        "DCGM_FI_DEV_FB_FREE": float(memory - used),
    }.get(name, 0.0)


def exposition(cards: Iterable[Card]) -> str:
    """The Prometheus text dcgm-exporter serves for these cards."""
    cards = list(cards)
    lines = []
    for name, kind, text in DEFAULT_COUNTERS:
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        for card in cards:
            if not (card.instances and name in NOT_IN_MIG_MODE):
                lines.append(_sample(name, card.labels, _value(name, card, None)))
            if name in PER_INSTANCE:
                for instance in card.instances:
                    labels = {
                        **card.labels,
                        "GPU_I_PROFILE": instance.profile,
                        "GPU_I_ID": str(instance.instance_id),
                    }
                    lines.append(_sample(name, labels, _value(name, card, instance)))
    return "\n".join(lines) + "\n"


def _sample(name: str, labels: Mapping[str, str], value: float) -> str:
    rendered = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{name}{{{rendered}}} {value:g}"


def serve(body: str) -> ThreadingHTTPServer:
    """Serves ``body`` on ``/metrics`` at an ephemeral loopback port; ``shutdown()`` to stop."""
    encoded = body.encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            code = 200 if self.path.split("?")[0] == "/metrics" else 404
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(encoded) if code == 200 else 0))
            self.end_headers()
            if code == 200:
                self.wfile.write(encoded)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=functools.partial(server.serve_forever, poll_interval=0.1), daemon=True).start()
    return server
