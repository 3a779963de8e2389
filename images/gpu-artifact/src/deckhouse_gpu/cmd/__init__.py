"""Console entry points: argument parsing and wiring only."""
