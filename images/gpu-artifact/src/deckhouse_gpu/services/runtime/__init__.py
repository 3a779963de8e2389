# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""The controller runtime every component shares: informers and watches, work queues, trigger loops,
leader election, status writes without lost updates, Events and health."""
