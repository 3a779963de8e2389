# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What every process serves and writes: probes, /metrics, the admission webhook, JSON logs."""
