# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Pure data and rules: no I/O, no Kubernetes client types, no clocks."""
