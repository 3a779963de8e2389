# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""What ``kubectl gpu`` shows (DESIGN.md D12): cards and what they hold (``cards``), how many more
claims of each class fit (``capacity``), why a pending Pod's claims fit no node (``pending``), and
which claims hold a device or a counter set (``holders``). Pure: listed objects in, rows out."""
