# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Real and simulated implementations of the ports."""
