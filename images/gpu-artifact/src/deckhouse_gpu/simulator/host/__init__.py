# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Simulated hosts and GPU catalogue shared by the tests and the simulator."""
