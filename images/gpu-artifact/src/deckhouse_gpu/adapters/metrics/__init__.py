# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Each component's Prometheus metrics (prometheus_client), and the ports that count what passes
through them."""
