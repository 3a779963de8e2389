# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What kubectl gpu reads of a cluster and answers (DESIGN.md D12)."""
