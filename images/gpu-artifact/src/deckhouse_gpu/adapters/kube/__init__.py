# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The Kubernetes API: the kubernetes client's transport, JSON decoding, identities, and the Pods gpu-
handler runs."""
