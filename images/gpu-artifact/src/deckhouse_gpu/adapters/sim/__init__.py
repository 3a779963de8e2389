"""Simulated hosts and GPU catalogue shared by the tests and the simulator."""
