"""The opaque configuration users put in DeviceClasses and claims (gpu.deckhouse.io/v1alpha1)."""
