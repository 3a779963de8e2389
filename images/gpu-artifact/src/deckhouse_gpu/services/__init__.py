# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Orchestration: reconcile loops built from domain rules and ports."""
