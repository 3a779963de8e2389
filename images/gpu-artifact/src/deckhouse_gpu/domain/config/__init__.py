# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The opaque configuration users put in DeviceClasses and claims (gpu.deckhouse.io/v1alpha1)."""
