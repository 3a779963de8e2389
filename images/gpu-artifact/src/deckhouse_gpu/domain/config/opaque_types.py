# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The objects of the opaque configuration of the DRA driver ``gpu.deckhouse.io``: the data types,
and how they are spelled.

DeviceClasses (``spec.config[]``), ResourceClaims (``spec.devices.config[]``) and their templates
carry ``opaque: {driver: gpu.deckhouse.io, parameters: {...}}``; Kubernetes stores ``parameters``
as any JSON object of at most 10 KiB and hands it to the driver untouched. These are the only
objects it may hold::

    apiVersion: resource.gpu.deckhouse.io/v1alpha1
    kind: GpuConfig            # a whole card used through the nvidia driver (offer type Physical)
    sharing:                   # optional; left out: nothing is set on the card
      strategy: TimeSlicing    # or MPS; required when sharing is given
      timeSlicing:             # only with TimeSlicing
        interval: Default      # Default | Short | Medium | Long (nvidia-smi compute-policy 0..3)
      mps:                     # only with MPS; every field optional
        defaultActiveThreadPercentage: 50      # integer 1..100
        defaultPinnedDeviceMemoryLimit: 8Gi    # quantity, a whole number of Mi, at least 1Mi

    kind: MigDeviceConfig      # a MIG instance (offer type MIG)
    sharing:
      strategy: MPS            # MPS only: the time-slice interval is a setting of the whole card,
      mps: {...}               # and processes in one MIG instance are time-sliced anyway

    kind: VfioDeviceConfig     # a whole card passed to a virtual machine through vfio-pci

Two spellings name the same three objects (``SPELLINGS``), with the same fields:

- canonical, ``resource.gpu.deckhouse.io/v1alpha1`` with ``GpuConfig``, ``MigDeviceConfig``,
  ``VfioDeviceConfig``: the pattern of NVIDIA's DRA driver (``resource.nvidia.com``, same kind
  names), which Deckhouse's virtualization module follows when it asks for a card for a VM
  (``VfioDeviceConfig`` with no fields). What the module writes itself (``encode``, generated
  DeviceClasses, the docs) uses it: import ``API_VERSION`` and the ``*_KIND`` names from here.
- legacy, ``gpu.deckhouse.io/v1alpha1`` with ``GPUConfig``, ``MIGConfig``, ``VFIOConfig``: the
  first spelling, accepted for good, since stored classes and claims cannot be rewritten.

A kind belongs to its group, as in Kubernetes: ``VFIOConfig`` under the canonical group, or
``VfioDeviceConfig`` under the legacy one, is refused with a message naming the right pair.
Only the kind names follow NVIDIA: the fields are ours (``sharing.timeSlicing``, not NVIDIA's
``timeSlicingConfig``), in both spellings.

Sharing applies to everything that uses one device at once: the shares of a shared card
(``sharePercent``) and the Pods of one claim. ``VfioDeviceConfig`` has no fields: vfio-pci, the
whole IOMMU group and an exclusive allocation are forced by the hardware, not choices; the kind
exists so that a claim can ask for a card for a virtual machine.

Here are the frozen dataclasses a config decodes to (named after the legacy kinds, which the
code used first), the kind names of both spellings and the offer type each config is meant for;
the strict decoder and the encoder are in ``opaque_config``, the settings of each sharing strategy
in its own module, registered in ``features`` (DESIGN.md D20).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from deckhouse_gpu.domain.config.sharing_strategy import SharingConfig

DRIVER = "gpu.deckhouse.io"
GROUP = "resource.gpu.deckhouse.io"
API_VERSION = f"{GROUP}/v1alpha1"  # the canonical spelling: what the module writes
GPU_KIND, MIG_KIND, VFIO_KIND = "GpuConfig", "MigDeviceConfig", "VfioDeviceConfig"
LEGACY_API_VERSION = "gpu.deckhouse.io/v1alpha1"  # the first spelling, accepted for good


# The sharing settings are each strategy's (domain/config/time_slicing.py, mps_sharing.py); which
# strategies a kind's config may name is the registry's (domain/config/features.py).
type Sharing = SharingConfig


@dataclass(frozen=True)
class GPUConfig:
    sharing: Sharing | None = None


@dataclass(frozen=True)
class MIGConfig:
    sharing: Sharing | None = None


@dataclass(frozen=True)
class VFIOConfig:
    pass


type DeviceConfig = GPUConfig | MIGConfig | VFIOConfig
type DeviceType = Literal["Physical", "MIG"]

type ConfigType = type[GPUConfig] | type[MIGConfig] | type[VFIOConfig]

# apiVersion -> kind -> the config it names. The canonical spelling comes first: messages name it first.
SPELLINGS: dict[str, dict[str, ConfigType]] = {
    API_VERSION: {GPU_KIND: GPUConfig, MIG_KIND: MIGConfig, VFIO_KIND: VFIOConfig},
    LEGACY_API_VERSION: {"GPUConfig": GPUConfig, "MIGConfig": MIGConfig, "VFIOConfig": VFIOConfig},
}
KINDS = SPELLINGS[API_VERSION]  # the canonical kinds


def kind_of(config: DeviceConfig | ConfigType, api_version: str = API_VERSION) -> str:
    """The kind that names ``config`` (an instance or its class) in the spelling of ``api_version``."""
    wanted = config if isinstance(config, type) else type(config)
    return next(kind for kind, known in SPELLINGS[api_version].items() if known is wanted)


def api_version_of(kind: str) -> str | None:
    """The apiVersion whose spelling has exactly this kind; None for a kind of neither."""
    return next((version for version, kinds in SPELLINGS.items() if kind in kinds), None)


def device_type(config: DeviceConfig) -> DeviceType:
    """The offer type (ResourceSlice attribute ``deviceType``) a config is meant for."""
    return "MIG" if isinstance(config, MIGConfig) else "Physical"
