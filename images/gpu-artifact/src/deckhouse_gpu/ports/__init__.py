"""Protocols the services depend on; adapters implement them."""
