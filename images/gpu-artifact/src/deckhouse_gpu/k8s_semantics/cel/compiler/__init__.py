# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""CEL expressions compiled into Python closures, with cel-go's type checks and cost model."""
