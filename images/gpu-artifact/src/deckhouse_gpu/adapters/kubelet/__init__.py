# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The kubelet's gRPC: plugin registration, the DRA service and the device health stream (grpcio)."""
