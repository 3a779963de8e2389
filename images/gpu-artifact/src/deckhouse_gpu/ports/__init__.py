# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Protocols the services depend on; adapters implement them."""
