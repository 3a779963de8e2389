# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What gpu-handler keeps on the node's disk: the checkpoint, CDI specs, device metadata, VFIO
payloads, its lock."""
