# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The module's own allocation rules on top of the structured allocator (k8s_semantics.allocator):
the MIG/Physical invariant's audit, the claims gpu-dra-controller allocates, what kubectl gpu counts
and explains, and the opaque config a device is prepared with."""
