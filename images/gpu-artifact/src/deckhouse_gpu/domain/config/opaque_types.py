# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The objects of the opaque configuration of the DRA driver ``gpu.deckhouse.io``: the data types.

DeviceClasses (``spec.config[]``), ResourceClaims (``spec.devices.config[]``) and their templates
carry ``opaque: {driver: gpu.deckhouse.io, parameters: {...}}``; Kubernetes stores ``parameters``
as any JSON object of at most 10 KiB and hands it to the driver untouched. These are the only
objects it may hold (``apiVersion: gpu.deckhouse.io/v1alpha1``)::

    kind: GPUConfig            # a whole card used through the nvidia driver (offer type Physical)
    sharing:                   # optional; left out: nothing is set on the card
      strategy: TimeSlicing    # or MPS; required when sharing is given
      timeSlicing:             # only with TimeSlicing
        interval: Default      # Default | Short | Medium | Long (nvidia-smi compute-policy 0..3)
      mps:                     # only with MPS; every field optional
        defaultActiveThreadPercentage: 50      # integer 1..100
        defaultPinnedDeviceMemoryLimit: 8Gi    # quantity, a whole number of Mi, at least 1Mi

    kind: MIGConfig            # a MIG instance (offer type MIG)
    sharing:
      strategy: MPS            # MPS only: the time-slice interval is a setting of the whole card,
      mps: {...}               # and processes in one MIG instance are time-sliced anyway

    kind: VFIOConfig           # a whole card passed to a virtual machine through vfio-pci

Sharing applies to everything that uses one device at once: the shares of a shared card
(``sharePercent``) and the Pods of one claim. ``VFIOConfig`` has no fields: vfio-pci, the whole
IOMMU group and an exclusive allocation are forced by the hardware, not choices; the kind
exists so that a claim can ask for a card for a virtual machine.

Here are the frozen dataclasses a config decodes to, the ``kind`` names (``KINDS``) and the offer
type each config is meant for; the strict decoder and the encoder are in ``opaque_config``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from deckhouse_gpu.domain.apimachinery.quantity import Quantity

DRIVER = "gpu.deckhouse.io"
API_VERSION = "gpu.deckhouse.io/v1alpha1"


class TimeSliceInterval(StrEnum):
    """How long a process runs before the card switches to the next one."""

    DEFAULT = "Default"
    SHORT = "Short"
    MEDIUM = "Medium"
    LONG = "Long"

    @property
    def nvidia_smi_value(self) -> int:
        """The argument of ``nvidia-smi compute-policy --set-timeslice``."""
        return list(TimeSliceInterval).index(self)


@dataclass(frozen=True)
class TimeSlicing:
    interval: TimeSliceInterval = TimeSliceInterval.DEFAULT


@dataclass(frozen=True)
class MPS:
    """Limits the MPS control daemon gives each client; None leaves the CUDA default (no limit)."""

    default_active_thread_percentage: int | None = None
    default_pinned_device_memory_limit: Quantity | None = None


type Sharing = TimeSlicing | MPS


@dataclass(frozen=True)
class GPUConfig:
    sharing: Sharing | None = None


@dataclass(frozen=True)
class MIGConfig:
    sharing: MPS | None = None


@dataclass(frozen=True)
class VFIOConfig:
    pass


type DeviceConfig = GPUConfig | MIGConfig | VFIOConfig
type DeviceType = Literal["Physical", "MIG"]

KINDS: dict[str, type[GPUConfig] | type[MIGConfig] | type[VFIOConfig]] = {
    "GPUConfig": GPUConfig,
    "MIGConfig": MIGConfig,
    "VFIOConfig": VFIOConfig,
}


def device_type(config: DeviceConfig) -> DeviceType:
    """The offer type (ResourceSlice attribute ``deviceType``) a config is meant for."""
    return "MIG" if isinstance(config, MIGConfig) else "Physical"
