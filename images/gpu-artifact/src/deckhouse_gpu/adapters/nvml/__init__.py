# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""NVIDIA's management library (pynvml), nvidia-smi and the MPS control daemon on a real GPU node."""
