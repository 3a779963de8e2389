"""The GPU inventory: PhysicalGPU objects, what sysfs and NVML say about each card, its conditions."""
