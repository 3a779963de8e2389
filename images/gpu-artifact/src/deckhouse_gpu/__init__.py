# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""Components of the Deckhouse ``gpu`` module.

Layers (each imports only the ones below it): ``domain`` (pure data and rules), ``ports``
(protocols), ``adapters`` (real and simulated I/O), ``services`` (orchestration), ``cmd``
(argument parsing and wiring).
"""
