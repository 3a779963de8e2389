"""Orchestration: reconcile loops built from domain rules and ports."""
