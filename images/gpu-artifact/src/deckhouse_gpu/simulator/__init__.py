# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The simulator: every component of the module against simulated GPU nodes in one process (make demo)."""
