"""The simulator: every component of the module against simulated GPU nodes in one process (make demo)."""
