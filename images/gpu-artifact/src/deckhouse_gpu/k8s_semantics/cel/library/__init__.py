# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""CEL's standard functions and operators, and the libraries Kubernetes adds (strings, lists, Quantity,
Semver)."""
