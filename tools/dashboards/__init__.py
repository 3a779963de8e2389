# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The generator of the module's Grafana dashboards (monitoring/grafana-dashboards/main/*.json).

Built with grafana-foundation-sdk, Grafana's own typed builders (the variant for Grafana 10.4);
`tools/gen-dashboards` writes the JSON, and tests/module/test_dashboards.py fails when the
committed files differ from what this package makes. It is a development tool: the module's
runtime (deckhouse_gpu) never imports it.
"""
