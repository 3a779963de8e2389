"""Pure data and rules: no I/O, no Kubernetes client types, no clocks."""
