"""Kubernetes' generic object rules the module needs: quantities, merge patches, label selectors,
leases, JSON codecs."""
