"""Errors of the replication state machines: illegal transitions, raised before any state
changes (the state is left as it was)."""

from __future__ import annotations


class ReplicationStateError(Exception):
    """Base class: a method was called in a state that does not allow it."""


class UnknownReplicaError(ReplicationStateError):
    """A fetch or proposal named a broker that is not a replica of the partition."""


class IsrChangePendingError(ReplicationStateError):
    """An ISR change was proposed while another one is still waiting for the controller."""


class InvalidIsrError(ReplicationStateError):
    """A proposed or committed ISR breaks an invariant (empty, duplicates, leader missing,
    not a subset of the replicas)."""
