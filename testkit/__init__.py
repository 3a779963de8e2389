# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What the tests and the benchmarks share: simulated objects and worlds, a local HTTP fake of the
API server, kubeconfigs, waiting helpers. Neither the module's code nor the benchmarks import
``tests``; both may import this package."""
