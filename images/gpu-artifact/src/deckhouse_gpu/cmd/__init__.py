# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Console entry points: argument parsing and wiring only."""
