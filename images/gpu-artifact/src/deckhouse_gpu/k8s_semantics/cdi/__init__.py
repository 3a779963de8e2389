# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The container-device-interface (CDI) spec rules a container runtime's CDI library applies when it
loads a spec."""
