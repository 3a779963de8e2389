# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0
