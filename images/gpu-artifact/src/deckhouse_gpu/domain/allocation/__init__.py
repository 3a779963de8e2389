"""A structured allocator with the kube-scheduler's semantics (k8s-dra-facts sections 3 and 4).

``model`` parses ResourceSlices once into devices and pools, ``gather`` picks a node's pools the
way the scheduler does for 1.34 or 1.35, ``claims`` reads DeviceClasses and claims, ``state`` keeps
what is already allocated, ``search`` is the backtracking allocator, ``result`` builds the
AllocationResult and ``explain`` says why a request found no device.
"""
