"""Preparing claims on a node: the plan, the guard against conflicts, the checkpoint and the CDI specs."""
