# Copyright (c) 2026 Flant JSC
# SPDX-License-Identifier: Apache-2.0

"""A structured allocator with the kube-scheduler's semantics (KUBERNETES-FACTS.md F3, F4).

``model`` parses ResourceSlices once into devices and pools, ``gather`` picks a node's pools the
way the scheduler does for 1.34 or 1.35, ``claims`` reads DeviceClasses and claims, ``state`` keeps
what is already allocated. ``search`` is the backtracking allocator over a ``search_pass``; what
happens to one device is ``placement``, which applies the per-device rules (``rules``, ``checks``,
``counters``, ``constraints``), each returning None or a ``reasons`` Reason. ``result`` builds the
AllocationResult and ``explain`` says, with the same rules, why a request found no device.
"""
