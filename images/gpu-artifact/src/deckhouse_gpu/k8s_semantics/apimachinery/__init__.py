# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Kubernetes' generic object rules the module needs: quantities, merge patches, label selectors,
leases, JSON codecs."""
