# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Kubernetes (and CDI) semantics the module re-implements, fenced off from its own rules: CEL, the
structured allocator, apimachinery quantities and labels, the ResourceSlice and CDI rules.

It imports nothing of the module (.importlinter); README.md beside this file says, per part, which
upstream code and version it follows and which test keeps it in step."""
