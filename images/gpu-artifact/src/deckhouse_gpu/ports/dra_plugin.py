# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubelet's DRA calls as gpu-handler's prepare service sees them (kubelet gRPC v1/v1beta1).

The gRPC adapter translates the wire messages to these and back; the service never sees protobuf.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class ClaimRef:
    namespace: str
    uid: str
    name: str


@dataclass(frozen=True)
class PreparedDevice:
    """One allocated device as the kubelet needs it: which requests, and the CDI ids to inject."""

    request_names: tuple[str, ...]
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...]
    share_id: str | None = None


@dataclass(frozen=True)
class PrepareResult:
    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""  # non-empty: the claim failed; the kubelet retries and shows it on the Pod


class DRAService(Protocol):
    def prepare(self, claims: list[ClaimRef]) -> dict[str, PrepareResult]:
        """One result per claim UID, every claim included."""
        ...

    def unprepare(self, claims: list[ClaimRef]) -> dict[str, str]:
        """An error text per claim UID ("" on success), every claim included."""
        ...


@dataclass(frozen=True)
class PluginPaths:
    """Where the kubelet looks; ``pod_uid`` set means rolling-update socket names (kubelet >= 1.33)."""

    registry_dir: str = "/var/lib/kubelet/plugins_registry"
    plugin_dir: str = "/var/lib/kubelet/plugins/gpu.deckhouse.io"
    driver: str = "gpu.deckhouse.io"
    pod_uid: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def registration_socket(self) -> str:
        name = f"{self.driver}-{self.pod_uid}-reg.sock" if self.pod_uid else f"{self.driver}-reg.sock"
        return f"{self.registry_dir}/{name}"

    @property
    def dra_socket(self) -> str:
        name = f"dra-{self.pod_uid}.sock" if self.pod_uid else "dra.sock"
        return f"{self.plugin_dir}/{name}"
