# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""gpu-handler's kubelet plugin: prepare and unprepare as pipelines of steps, each with its undo."""
