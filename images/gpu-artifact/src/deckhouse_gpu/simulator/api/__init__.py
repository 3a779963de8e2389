# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""An in-memory API server with the real one's semantics that the module needs: the simulator's and the
tests' cluster."""
