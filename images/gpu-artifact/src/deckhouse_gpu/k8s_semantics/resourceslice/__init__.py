# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The API server's validation of resource.k8s.io/v1 ResourceSlices, for Kubernetes 1.34 to 1.37."""
