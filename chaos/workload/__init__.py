"""Chaos workloads: producers, consumers, the leader observer and the final read."""
