# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Preparing claims on a node: the plan, the guard against conflicts, the checkpoint and the CDI specs."""
