"""Real and simulated implementations of the ports."""
