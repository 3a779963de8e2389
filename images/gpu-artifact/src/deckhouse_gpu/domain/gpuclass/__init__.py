# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""GPUClass: the administrator's class of GPUs, and the DeviceClass of the same name it becomes
(DESIGN.md D14). ``spec`` reads and checks the object, ``render`` makes the DeviceClass,
``status`` words the Ready condition."""

from __future__ import annotations

GROUP = "gpu.deckhouse.io"
VERSION = "v1alpha1"
KIND = "GPUClass"
PLURAL = "gpuclasses"
API_VERSION = f"{GROUP}/{VERSION}"
