# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What a container gets for a prepared device: its CDI spec, the driver's files it mounts, the device
metadata files (KEP-5304) and the attributes they carry."""
